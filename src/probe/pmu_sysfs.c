/* Reading PMUs from <root>/sys/bus/event_source/devices. */
#include "probe/pmu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Every sysfs attribute we read fits in a page; anything longer is not what we expect. */
#define ATTR_MAX 4096

int pmu_path(const char *sysfs_root, const char *rel, char *buf, size_t size)
{
	const char *root = sysfs_root && *sysfs_root ? sysfs_root : "/";
	size_t rl = strlen(root);
	int n;

	while (*rel == '/')
		rel++;
	n = snprintf(buf, size, "%s%s%s", root, rl && root[rl - 1] == '/' ? "" : "/", rel);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* Reads a small text file, trailing whitespace removed.  -ENAMETOOLONG when it does not
 * fit in buf. */
static int read_text(const char *path, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC), ret = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		n = read(fd, buf + len, size - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			break;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len == size) {
			ret = -ENAMETOOLONG;
			break;
		}
	}
	close(fd);
	if (ret)
		return ret;
	while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t'))
		len--;
	buf[len] = 0;
	return 0;
}

/* A name from a directory we can safely append to a path. */
static int plain_name(const char *name)
{
	return name[0] && name[0] != '.' && !strchr(name, '/');
}

static int pmu_dir(const char *sysfs_root, const char *pmu, const char *sub, char *buf,
		   size_t size)
{
	char rel[512];
	int n = snprintf(rel, sizeof(rel), "%s/%s%s%s", PMU_DEVICES_DIR, pmu, sub ? "/" : "",
			 sub ? sub : "");

	if (n < 0 || (size_t)n >= sizeof(rel))
		return -ENAMETOOLONG;
	return pmu_path(sysfs_root, rel, buf, size);
}

int pmu_attr_read(const char *sysfs_root, const char *pmu_name, const char *attr, char *buf,
		  size_t size)
{
	char path[4096];
	int ret;

	if (!plain_name(pmu_name) || size == 0)
		return -EINVAL;
	ret = pmu_dir(sysfs_root, pmu_name, attr, path, sizeof(path));
	if (ret)
		return ret;
	return read_text(path, buf, size);
}

static int read_int(const char *sysfs_root, const char *pmu, const char *attr, int *out)
{
	char buf[64], *end;
	long v;
	int ret = pmu_attr_read(sysfs_root, pmu, attr, buf, sizeof(buf));

	if (ret)
		return ret;
	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || *end || v < 0 || v > 0x7fffffff)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int by_field_name(const void *a, const void *b)
{
	return strcmp(((const struct pmu_field *)a)->name, ((const struct pmu_field *)b)->name);
}

static int by_cap_name(const void *a, const void *b)
{
	return strcmp(((const struct pmu_cap *)a)->name, ((const struct pmu_cap *)b)->name);
}

static int by_pmu_name(const void *a, const void *b)
{
	return strcmp(((const struct pmu *)a)->name, ((const struct pmu *)b)->name);
}

/* Calls fn(ctx, name, text) for each file in <pmu>/<sub>/; a missing directory is empty. */
static int for_each_file(const char *sysfs_root, const char *pmu, const char *sub,
			 int (*fn)(void *ctx, const char *name, const char *text), void *ctx)
{
	char dir[4096], path[4096 + 256], *text;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	ret = pmu_dir(sysfs_root, pmu, sub, dir, sizeof(dir));
	if (ret)
		return ret;
	d = opendir(dir);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
	text = malloc(ATTR_MAX);
	if (!text) {
		closedir(d);
		return -ENOMEM;
	}
	while ((de = readdir(d)) != NULL) {
		if (!plain_name(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		ret = fn(ctx, de->d_name, read_text(path, text, ATTR_MAX) == 0 ? text : NULL);
		if (ret)
			break;
	}
	free(text);
	closedir(d);
	return ret;
}

static int add_field(void *ctx, const char *name, const char *text)
{
	struct pmu *p = ctx;
	struct pmu_field f, *grown;

	if (!text || pmu_field_parse(name, text, &f) != 0) {
		p->nbad_formats++;
		return 0;
	}
	grown = realloc(p->fields, (p->nfields + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->fields = grown;
	f.name = strdup(name);
	if (!f.name)
		return -ENOMEM;
	p->fields[p->nfields++] = f;
	return 0;
}

static int add_cap(void *ctx, const char *name, const char *text)
{
	struct pmu *p = ctx;
	struct pmu_cap c, *grown;

	if (!text)	/* unreadable cap: leave it out rather than invent a value */
		return 0;
	grown = realloc(p->caps, (p->ncaps + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->caps = grown;
	c.name = strdup(name);
	c.value = strdup(text);
	if (!c.name || !c.value) {
		free(c.name);
		free(c.value);
		return -ENOMEM;
	}
	p->caps[p->ncaps++] = c;
	return 0;
}

int pmu_read(const char *sysfs_root, const char *name, struct pmu *out)
{
	char dir[4096];
	struct stat st;
	int ret;

	memset(out, 0, sizeof(*out));
	if (!plain_name(name))
		return -EINVAL;
	ret = pmu_dir(sysfs_root, name, NULL, dir, sizeof(dir));
	if (ret)
		return ret;
	if (stat(dir, &st) != 0)
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOENT;
	out->name = strdup(name);
	if (!out->name)
		return -ENOMEM;
	if (read_int(sysfs_root, name, "type", &out->type) != 0)
		out->type = -1;
	if (read_int(sysfs_root, name, "nr_addr_filters", &out->nr_addr_filters) != 0)
		out->nr_addr_filters = -1;
	ret = for_each_file(sysfs_root, name, "format", add_field, out);
	if (!ret)
		ret = for_each_file(sysfs_root, name, "caps", add_cap, out);
	if (ret) {
		pmu_free(out);
		return ret;
	}
	if (out->nfields)
		qsort(out->fields, out->nfields, sizeof(*out->fields), by_field_name);
	if (out->ncaps)
		qsort(out->caps, out->ncaps, sizeof(*out->caps), by_cap_name);
	return 0;
}

void pmu_free(struct pmu *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nfields; i++)
		free(p->fields[i].name);
	for (size_t i = 0; i < p->ncaps; i++) {
		free(p->caps[i].name);
		free(p->caps[i].value);
	}
	free(p->fields);
	free(p->caps);
	free(p->name);
	memset(p, 0, sizeof(*p));
}

int pmu_list_read(const char *sysfs_root, struct pmu_list *out)
{
	char dir[4096];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	memset(out, 0, sizeof(*out));
	ret = pmu_path(sysfs_root, PMU_DEVICES_DIR, dir, sizeof(dir));
	if (ret)
		return ret;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		struct pmu p, *grown;

		if (!plain_name(de->d_name))
			continue;
		ret = pmu_read(sysfs_root, de->d_name, &p);
		if (ret == -ENOENT || ret == -ENOTDIR) {	/* a stray file, not a PMU */
			ret = 0;
			continue;
		}
		if (ret)
			break;
		grown = realloc(out->pmus, (out->n + 1) * sizeof(*grown));
		if (!grown) {
			pmu_free(&p);
			ret = -ENOMEM;
			break;
		}
		out->pmus = grown;
		out->pmus[out->n++] = p;
	}
	closedir(d);
	if (ret) {
		pmu_list_free(out);
		return ret;
	}
	if (out->n)
		qsort(out->pmus, out->n, sizeof(*out->pmus), by_pmu_name);
	return 0;
}

void pmu_list_free(struct pmu_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		pmu_free(&l->pmus[i]);
	free(l->pmus);
	memset(l, 0, sizeof(*l));
}

const struct pmu *pmu_list_find(const struct pmu_list *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->pmus[i].name, name) == 0)
			return &l->pmus[i];
	return NULL;
}

const char *pmu_cap_str(const struct pmu *p, const char *name)
{
	for (size_t i = 0; i < p->ncaps; i++)
		if (strcmp(p->caps[i].name, name) == 0)
			return p->caps[i].value;
	return NULL;
}

int pmu_cap_base(const char *pmu_name)
{
	/* arch/x86/events/intel/pt.c pt_cap_show(): "%x\n". */
	return strcmp(pmu_name, "intel_pt") == 0 ? 16 : 10;
}

int pmu_cap_u64(const struct pmu *p, const char *name, uint64_t *out)
{
	const char *s = pmu_cap_str(p, name);
	int base;
	char *end;
	unsigned long long v;

	if (!s)
		return -ENOENT;
	base = pmu_cap_base(p->name);
	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, base);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}
