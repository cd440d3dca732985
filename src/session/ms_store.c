/* Module store in perf's build-id cache layout (see ms_store.h). */
#include "session/ms_store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xp_grow.h"

struct ms_entry {
	char *name;
	uint8_t bid[MS_BUILD_ID_MAX];
	size_t bid_size;
};

/* A copy postponed until ms_store_flush(): the open fd keeps the mapped inode alive
 * even if its path is deleted meanwhile. */
struct ms_pending {
	int fd;
	char *dst;
	char *name;	/* as stored: to name it and drop its paths if the copy fails */
	uint8_t bid[MS_BUILD_ID_MAX];
	size_t bid_size;
};

/* A postponed copy that failed: its entry and paths are gone, the user is told. */
struct ms_failed {
	char *name;
	int err;
};

struct ms_store {
	char *dir;
	struct ms_entry *ents;
	size_t n, cap;
	uint64_t copied;
	int defer;
	struct ms_pending *pend;
	size_t npend, cappend;
	struct ms_failed *failed;
	size_t nfailed, capfailed;
};

static int mkdir_p(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int ms_store_open(struct ms_store **out, const char *dir)
{
	struct ms_store *s;
	char p[PATH_MAX];
	int r;

	*out = NULL;
	if (snprintf(p, sizeof(p), "%s/.build-id", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	r = mkdir_p(p);
	if (r < 0)
		return r;
	s = calloc(1, sizeof(*s));
	if (!s || !(s->dir = strdup(dir))) {
		free(s);
		return -ENOMEM;
	}
	*out = s;
	return 0;
}

void ms_store_close(struct ms_store *s)
{
	if (!s)
		return;
	ms_store_flush(s);
	free(s->pend);
	for (size_t i = 0; i < s->nfailed; i++)
		free(s->failed[i].name);
	free(s->failed);
	for (size_t i = 0; i < s->n; i++)
		free(s->ents[i].name);
	free(s->ents);
	free(s->dir);
	free(s);
}

int ms_store_has(const struct ms_store *s, const uint8_t *bid, size_t bid_size)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ents[i].bid_size == bid_size && memcmp(s->ents[i].bid, bid, bid_size) == 0)
			return 1;
	return 0;
}

size_t ms_store_count(const struct ms_store *s)
{
	return s->n;
}

int ms_store_entry(const struct ms_store *s, size_t i, const char **name, const uint8_t **bid,
		   size_t *bid_size)
{
	if (i >= s->n)
		return -EINVAL;
	*name = s->ents[i].name;
	*bid = s->ents[i].bid;
	*bid_size = s->ents[i].bid_size;
	return 0;
}

uint64_t ms_store_bytes_copied(const struct ms_store *s)
{
	return s->copied;
}

/* The name under which the file lives in the store: absolute, no "..", no " (deleted)". */
static int clean_name(const char *name, char *out, size_t outsz)
{
	size_t len;

	if (snprintf(out, outsz, "%s", name) >= (int)outsz)
		return -EINVAL;
	len = strlen(out);
	if (len > 10 && strcmp(out + len - 10, " (deleted)") == 0)
		out[len - 10] = 0;
	if (strcmp(out, "[vdso]") == 0)
		return 0;
	if (out[0] != '/' || strstr(out, "/../") || strstr(out, "//") ||
	    (len >= 3 && strcmp(out + strlen(out) - 3, "/..") == 0))
		return -EINVAL;
	return 0;
}

static int add_entry(struct ms_store *s, const char *name, const uint8_t *bid, size_t bid_size)
{
	if (XP_GROW(s->ents, s->cap, s->n + 1) < 0)
		return -ENOMEM;
	s->ents[s->n].name = strdup(name);
	if (!s->ents[s->n].name)
		return -ENOMEM;
	memcpy(s->ents[s->n].bid, bid, bid_size);
	s->ents[s->n].bid_size = bid_size;
	s->n++;
	return 1;
}

/* DIR/<name>/<hex>/<leaf> and DIR/.build-id/<xx>/<rest> -> ../../<name>/<hex> (perf
 * appends the leaf: elf, vdso, kallsyms). */
static int make_paths(struct ms_store *s, const char *name, const char *hex, const char *leaf,
		      char *file, size_t filesz)
{
	char d[PATH_MAX], link[PATH_MAX + 64], target[PATH_MAX];
	int r;

	if (snprintf(d, sizeof(d), "%s%s%s/%s", s->dir, name[0] == '/' ? "" : "/", name, hex) >=
	    (int)sizeof(d))
		return -ENAMETOOLONG;
	r = mkdir_p(d);
	if (r < 0)
		return r;
	if (snprintf(file, filesz, "%s/%s", d, leaf) >= (int)filesz)
		return -ENAMETOOLONG;
	snprintf(d, sizeof(d), "%s/.build-id/%.2s", s->dir, hex);
	r = mkdir_p(d);
	if (r < 0)
		return r;
	snprintf(link, sizeof(link), "%s/%s", d, hex + 2);
	if (snprintf(target, sizeof(target), "../..%s%s/%s", name[0] == '/' ? "" : "/", name,
		     hex) >= (int)sizeof(target))
		return -ENAMETOOLONG;
	unlink(link);
	if (symlink(target, link) < 0)
		return -errno;
	return 0;
}

/* Undoes make_paths() for a snapshot that could not be made: a .build-id link to a
 * directory without the file would send perf to nothing instead of to the original
 * path.  Directories are removed only when empty (another build-id may share them). */
static void drop_paths(struct ms_store *s, const char *name, const uint8_t *bid, size_t bid_size)
{
	char hex[2 * MS_BUILD_ID_MAX + 1], p[PATH_MAX + 64];
	size_t root = strlen(s->dir);

	ms_hex(hex, bid, bid_size);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s", s->dir, hex, hex + 2);
	unlink(p);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s", s->dir, hex);
	rmdir(p);
	if (snprintf(p, sizeof(p), "%s%s%s/%s", s->dir, name[0] == '/' ? "" : "/", name, hex) >=
	    (int)sizeof(p))
		return;
	for (char *slash; strlen(p) > root && rmdir(p) == 0 && (slash = strrchr(p, '/'));)
		*slash = 0;
}

static int copy_fd(int in, int out, uint64_t *copied)
{
	char buf[65536];
	ssize_t n;

	for (;;) {
		ssize_t k = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
		if (k > 0) {
			*copied += (uint64_t)k;
			continue;
		}
		if (k == 0)
			return 0;
		if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
			return -errno;
		break;
	}
	while ((n = read(in, buf, sizeof(buf))) > 0) {
		for (ssize_t off = 0; off < n;) {
			ssize_t k = write(out, buf + off, (size_t)(n - off));
			if (k < 0)
				return -errno;
			off += k;
		}
		*copied += (uint64_t)n;
	}
	return n < 0 ? -errno : 0;
}

/* Copies from `in` to dst through dst.tmp (never a half file under the final name). */
static int copy_to(uint64_t *copied, int in, const char *dst, mode_t mode)
{
	char tmp[PATH_MAX];
	int out, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (out < 0)
		return -errno;
	r = copy_fd(in, out, copied);
	if (close(out) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, dst) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

int ms_copy_file(const char *src, const char *dst)
{
	uint64_t copied = 0;
	int in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	int r = copy_to(&copied, in, dst, 0644);
	close(in);
	return r;
}

static int defer_copy(struct ms_store *s, int in, const char *dst, const char *name,
		      const uint8_t *bid, size_t bid_size)
{
	if (XP_GROW(s->pend, s->cappend, s->npend + 1) < 0)
		return -ENOMEM;
	struct ms_pending *p = &s->pend[s->npend];
	p->dst = strdup(dst);
	p->name = strdup(name);
	if (!p->dst || !p->name) {
		free(p->dst);
		free(p->name);
		return -ENOMEM;
	}
	memcpy(p->bid, bid, bid_size);
	p->bid_size = bid_size;
	p->fd = in;
	s->npend++;
	return 0;
}

/* Reflink (no data moves, and later edits of the original do not reach us), else
 * hardlink (same filesystem), else a copy: now, or at ms_store_flush() in deferred
 * mode.  Takes ownership of `in`. */
static int snapshot_file(struct ms_store *s, int in, const char *src, const char *dst,
			 const char *name, const uint8_t *bid, size_t bid_size)
{
	char tmp[PATH_MAX];
	int out, r;

	if (snprintf(tmp, sizeof(tmp), "%s.tmp", dst) >= (int)sizeof(tmp)) {
		close(in);
		return -ENAMETOOLONG;
	}
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (out < 0) {
		r = -errno;
		close(in);
		return r;
	}
	if (ioctl(out, FICLONE, in) == 0) {
		close(in);
		r = close(out) < 0 ? -errno : 0;
		if (r == 0 && rename(tmp, dst) < 0)
			r = -errno;
		if (r < 0)
			unlink(tmp);
		return r;
	}
	close(out);
	unlink(tmp);
	unlink(dst);
	if (linkat(AT_FDCWD, src, AT_FDCWD, dst, AT_SYMLINK_FOLLOW) == 0) {
		close(in);
		return 0;
	}
	if (s->defer) {
		r = defer_copy(s, in, dst, name, bid, bid_size);
		if (r == 0)
			return 0;
	}
	r = copy_to(&s->copied, in, dst, 0755);
	close(in);
	return r;
}

void ms_store_defer_copies(struct ms_store *s, int on)
{
	s->defer = on;
}

/* Forgets the entry of a snapshot that failed: it is neither counted nor linked. */
static void drop_entry(struct ms_store *s, const uint8_t *bid, size_t bid_size)
{
	for (size_t i = 0; i < s->n; i++) {
		if (s->ents[i].bid_size != bid_size || memcmp(s->ents[i].bid, bid, bid_size) != 0)
			continue;
		free(s->ents[i].name);
		memmove(&s->ents[i], &s->ents[i + 1], (s->n - i - 1) * sizeof(s->ents[0]));
		s->n--;
		return;
	}
}

int ms_store_flush(struct ms_store *s)
{
	int first = 0;

	for (size_t i = 0; i < s->npend; i++) {
		struct ms_pending *p = &s->pend[i];
		int r = copy_to(&s->copied, p->fd, p->dst, 0755);
		if (r < 0) {
			if (!first)
				first = r;
			drop_paths(s, p->name, p->bid, p->bid_size);
			drop_entry(s, p->bid, p->bid_size);
			if (XP_GROW(s->failed, s->capfailed, s->nfailed + 1) == 0) {
				s->failed[s->nfailed].name = p->name;
				s->failed[s->nfailed++].err = r;
				p->name = NULL;
			}
		}
		close(p->fd);
		free(p->dst);
		free(p->name);
	}
	s->npend = 0;
	return first;
}

const char *ms_store_failed(const struct ms_store *s, size_t i, int *err)
{
	if (i >= s->nfailed)
		return NULL;
	*err = s->failed[i].err;
	return s->failed[i].name;
}

static int add_file(struct ms_store *s, const char *name, const char *src, const uint8_t *bid,
		    size_t bid_size)
{
	uint8_t fbid[MS_BUILD_ID_MAX];
	size_t fsize = 0;
	char clean[PATH_MAX], hex[2 * MS_BUILD_ID_MAX + 1], file[PATH_MAX];
	int r, fd;

	if (clean_name(name, clean, sizeof(clean)) < 0)
		return -EINVAL;
	if (bid && (bid_size == 0 || bid_size > MS_BUILD_ID_MAX))
		return -EINVAL;
	if (bid && ms_store_has(s, bid, bid_size))
		return 0;
	r = ms_build_id_file(src ? src : clean, fbid, &fsize);
	if (r < 0)
		return r;
	if (bid && (fsize != bid_size || memcmp(fbid, bid, bid_size) != 0))
		return -ESTALE;
	if (!bid && ms_store_has(s, fbid, fsize))
		return 0;
	ms_hex(hex, fbid, fsize);
	r = make_paths(s, clean, hex, "elf", file, sizeof(file));
	if (r < 0) {
		drop_paths(s, clean, fbid, fsize);
		return r;
	}
	fd = open(src ? src : clean, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		drop_paths(s, clean, fbid, fsize);
		return -ENOENT;
	}
	r = snapshot_file(s, fd, src ? src : clean, file, clean, fbid, fsize);
	if (r < 0) {
		drop_paths(s, clean, fbid, fsize);
		return r;
	}
	return add_entry(s, clean, fbid, fsize);
}

int ms_store_add_file(struct ms_store *s, const char *name, const char *src, const uint8_t *bid,
		      size_t bid_size)
{
	int r = add_file(s, name, src, bid, bid_size);

	/* a process's map_files entries go when it exits, which no check before the open
	 * can rule out (`true` exits while its mappings are read): then the file by its
	 * name, as the mapping named it (its build-id, when the record has one, checked) */
	if (src && r == -ENOENT)
		r = add_file(s, name, NULL, bid, bid_size);
	return r;
}

int ms_store_add_image(struct ms_store *s, const char *name, const void *img, size_t size,
		       const uint8_t *bid, size_t bid_size)
{
	uint8_t fbid[MS_BUILD_ID_MAX];
	size_t fsize = 0;
	char clean[PATH_MAX], hex[2 * MS_BUILD_ID_MAX + 1], file[PATH_MAX], tmp[PATH_MAX + 8];
	int r, fd;

	if (clean_name(name, clean, sizeof(clean)) < 0)
		return -EINVAL;
	r = ms_build_id_mem(img, size, fbid, &fsize);
	if (r < 0)
		return r;
	if (bid && (fsize != bid_size || memcmp(fbid, bid, bid_size) != 0))
		return -ESTALE;
	if (ms_store_has(s, fbid, fsize))
		return 0;
	ms_hex(hex, fbid, fsize);
	r = make_paths(s, clean, hex, strcmp(clean, "[vdso]") == 0 ? "vdso" : "elf", file,
		       sizeof(file));
	if (r < 0) {
		drop_paths(s, clean, fbid, fsize);
		return r;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", file);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		r = -errno;
		drop_paths(s, clean, fbid, fsize);
		return r;
	}
	for (size_t off = 0; off < size;) {
		ssize_t k = write(fd, (const char *)img + off, size - off);
		if (k < 0) {
			r = -errno;
			break;
		}
		off += (size_t)k;
	}
	if (close(fd) < 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, file) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		drop_paths(s, clean, fbid, fsize);
		return r;
	}
	s->copied += size;
	return add_entry(s, clean, fbid, fsize);
}

int ms_store_add_vdso(struct ms_store *s)
{
	const void *img;
	size_t size;
	int r = ms_vdso_self(&img, &size);

	if (r < 0)
		return r;
	return ms_store_add_image(s, "[vdso]", img, size, NULL, 0);
}
