#include "record/rec_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/jit.h"
#include "session/ms_store.h"

/* The mark says, to whoever finds it, why it is there. */
static const char mark_text[] = "written by xptrace record: `xptrace record -f` may replace this "
				"directory as long as it holds only what a recording writes\n";

int rec_dir_mark(const char *dir)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s/%s", dir, REC_DIR_MARK) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	int r = write(fd, mark_text, sizeof(mark_text) - 1) == (ssize_t)sizeof(mark_text) - 1 ? 0 : -EIO;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

int rec_dir_what(const char *path, char *what, size_t n)
{
	struct stat st;
	char to[PATH_MAX];
	ssize_t l;

	if (lstat(path, &st) < 0)
		return -errno;
	if (S_ISDIR(st.st_mode))
		return 0;
	if (S_ISREG(st.st_mode))
		snprintf(what, n, "a regular file");
	else if (!S_ISLNK(st.st_mode))
		snprintf(what, n, "%s", S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISSOCK(st.st_mode) ? "a socket" :
				      "a device");
	else if ((l = readlink(path, to, sizeof(to) - 1)) < 0)
		snprintf(what, n, "a symlink");
	else
		snprintf(what, n, "a %ssymlink to '%.*s'", stat(path, &st) < 0 ? "dangling " : "", (int)l,
			 to);
	return -ENOTDIR;
}

static int not_trace(char *why, size_t n, const char *fmt, const char *arg)
{
	snprintf(why, n, fmt, arg);
	return -EPERM;
}

/* Where in a trace directory an entry sits decides what it may be. */
enum place {
	TOP,	   /* the mark, perf.data, the store's directories */
	BUILD_ID,  /* .build-id/: xx/ directories */
	BUILD_ID2, /* .build-id/xx/: symlinks named by the rest of the build-id */
	JIT,	   /* jit/: copies of jitdumps and perf maps */
	SNAPSHOT,  /* a mapping's path, then <build-id>/elf (or vdso) */
};

static int is_hex(const char *s, size_t min, size_t max)
{
	size_t l = strspn(s, "0123456789abcdef");
	return s[l] == 0 && l >= min && l <= max;
}

/* ms_copy_file and the snapshots write through NAME.tmp: a killed recording may leave one. */
static int is_name(const char *s, const char *name)
{
	size_t l = strlen(name);
	return strncmp(s, name, l) == 0 && (s[l] == 0 || strcmp(s + l, ".tmp") == 0);
}

static int jit_file(const char *s)
{
	char base[NAME_MAX + 1];
	int32_t pid;
	int p, k = 0;

	snprintf(base, sizeof(base), "%s", s);
	size_t l = strlen(base);
	if (l > 4 && strcmp(base + l - 4, ".tmp") == 0)
		base[l - 4] = 0;
	return jit_dump_name(base, &pid) ||
	       (sscanf(base, "perf-%d.map%n", &p, &k) == 1 && k > 0 && base[k] == 0 && p > 0);
}

static int walk(int dfd, enum place at, const char *parent, char *rel, size_t len, char *why,
		size_t n);

/* Whether the entry `name` of a directory at `at` is something a recording writes. */
static int check_entry(int dfd, enum place at, const char *parent, const char *name, char *rel,
		       size_t len, char *why, size_t n)
{
	struct stat st;
	enum place sub = SNAPSHOT;
	int ok = 0;

	if (snprintf(rel + len, PATH_MAX - len, "%s%s", len ? "/" : "", name) >= (int)(PATH_MAX - len))
		return not_trace(why, n, "it holds '%s...', a path too long to check", rel);
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return not_trace(why, n, "'%s' cannot be checked", rel);
	if (S_ISDIR(st.st_mode)) {
		switch (at) {
		case TOP:
			ok = 1;
			sub = strcmp(name, ".build-id") == 0 ? BUILD_ID : strcmp(name, "jit") == 0 ? JIT :
												     SNAPSHOT;
			break;
		case BUILD_ID:
			ok = is_hex(name, 2, 2);
			sub = BUILD_ID2;
			break;
		case SNAPSHOT:
			ok = 1;
			break;
		default:
			break;
		}
		if (ok)
			return walk(dfd, sub, name, rel, strlen(rel), why, n);
	} else if (S_ISLNK(st.st_mode)) {
		ok = at == BUILD_ID2 && is_hex(name, 2, 2 * MS_BUILD_ID_MAX - 2);
	} else if (S_ISREG(st.st_mode)) {
		ok = (at == TOP && (strcmp(name, REC_DIR_MARK) == 0 || strcmp(name, "perf.data") == 0)) ||
		     (at == JIT && jit_file(name)) ||
		     (at == SNAPSHOT && is_hex(parent, 2, 2 * MS_BUILD_ID_MAX) &&
		      (is_name(name, "elf") || is_name(name, "vdso")));
	}
	return ok ? 0 : not_trace(why, n, "it holds '%s', which no recording writes", rel);
}

/* Checks every entry under `parent` (opened relative to dfd); rel is its path in the
 * trace directory, len its length. */
static int walk(int dfd, enum place at, const char *parent, char *rel, size_t len, char *why,
		size_t n)
{
	int fd = openat(dfd, parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *e;
	int rc = 0;

	if (!d) {
		rc = -errno;
		if (fd >= 0)
			close(fd);
		snprintf(why, n, "'%s' cannot be read: %s", len ? rel : ".", strerror(-rc));
		return -EPERM;
	}
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		rc = check_entry(dirfd(d), at, parent, e->d_name, rel, len, why, n);
		rel[len] = 0;
	}
	closedir(d);
	return rc;
}

int rec_dir_is_trace(const char *dir, char *why, size_t n)
{
	struct stat st;
	char what[PATH_MAX + 32], rel[PATH_MAX] = "";

	int r = rec_dir_what(dir, what, sizeof(what));
	if (r == -ENOTDIR)
		return not_trace(why, n, "it is %s", what);
	if (r < 0)
		return not_trace(why, n, "%s", strerror(-r));
	if (snprintf(rel, sizeof(rel), "%s/%s", dir, REC_DIR_MARK) >= (int)sizeof(rel) ||
	    lstat(rel, &st) < 0 || !S_ISREG(st.st_mode))
		return not_trace(why, n, "it has no %s, the mark xptrace record leaves in every "
				 "trace directory (a trace recorded by an xptrace older than the mark has "
				 "none: remove it by hand)", REC_DIR_MARK);
	rel[0] = 0;
	return walk(AT_FDCWD, TOP, dir, rel, 0, why, n);
}

int rec_dir_outside_cwd(const char *dir)
{
	char d[PATH_MAX], cwd[PATH_MAX];
	if (!realpath(dir, d) || !getcwd(cwd, sizeof(cwd)))
		return 0;	/* nothing to compare: rename() will say what is wrong */
	size_t l = strlen(d);
	if (strncmp(cwd, d, l) == 0 && (cwd[l] == 0 || cwd[l] == '/' || l == 1))
		return -EPERM;
	return 0;
}
