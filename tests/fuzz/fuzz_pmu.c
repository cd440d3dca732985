/* libFuzzer harness: the sysfs PMU reader (src/probe/pmu_sysfs.c, pmu_format.c) on a
 * fuzzed tree, as `xptrace info --sysfs-root DIR` and every attr builder read it.
 *
 * Input: NUL-separated pairs "PMU/FILE" NUL CONTENT NUL ..., each written as
 * DIR/sys/bus/event_source/devices/PMU/FILE (FILE: type, nr_addr_filters, format/NAME,
 * caps/NAME, or any attribute file).  Names are kept to what sysfs holds ([A-Za-z0-9_.-]
 * components, no "." or ".."), so the tree stays under DIR.  Then every PMU is read,
 * every format field set to 1 and to its widest value and read back, every cap read
 * as a number, and every content also parsed as a format spec directly. */
#include <errno.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/pmu.h"

#define MAX_FILES 64

static char root[64], devices[128];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void cleanup(void)
{
	rm_tree(root);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR");
	snprintf(root, sizeof(root), "%s/xpfuzz-pmu-%d", tmp && strlen(tmp) < 32 ? tmp : "/tmp", getpid());
	snprintf(devices, sizeof(devices), "%s/" PMU_DEVICES_DIR, root);
	atexit(cleanup);
	return 0;
}

/* A relative path of 1 to 3 sysfs-like components. */
static bool good_name(const char *s, size_t n)
{
	size_t comp = 0, parts = 1;
	if (!n || n > 80)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '/') {
			if (!comp || (comp == 1 && s[i - 1] == '.') || (comp == 2 && s[i - 1] == '.' && s[i - 2] == '.') ||
			    ++parts > 3)
				return false;
			comp = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
			   c == '-' || c == '.') {
			comp++;
		} else {
			return false;
		}
	}
	return comp && !(comp == 1 && s[n - 1] == '.') && !(comp == 2 && s[n - 1] == '.' && s[n - 2] == '.');
}

/* mkdir -p of the directories of `path` (below `devices`). */
static int write_entry(const char *name, const char *text, size_t len)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", devices, name);
	for (char *p = path + strlen(devices) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		if (mkdir(path, 0700) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;	/* e.g. a file where a directory was written before */
	fwrite(text, 1, len, f);
	fclose(f);
	return 0;
}

static void exercise(const struct pmu *p)
{
	char buf[128];
	uint64_t words[PMU_NWORDS] = { 0 }, v;
	struct perf_event_attr attr;

	for (size_t i = 0; i < p->nfields; i++) {
		const struct pmu_field *f = &p->fields[i];
		memset(&attr, 0, sizeof(attr));
		pmu_set(p, f->name, 1, &attr);
		pmu_set(p, f->name, f->width >= 64 ? UINT64_MAX : (1ull << f->width) - 1, &attr);
		pmu_set(p, f->name, f->width >= 64 ? 0 : 1ull << f->width, &attr);
		if (pmu_field_put(f, 3, words) == 0 && pmu_field_get(f, words) != 3)
			abort();	/* a field that takes a value gives it back */
		pmu_field_format(f, buf, sizeof(buf));
		if (pmu_field_find(p, f->name) == NULL)
			abort();
	}
	for (size_t i = 0; i < p->ncaps; i++) {
		pmu_cap_u64(p, p->caps[i].name, &v);
		pmu_cap_str(p, p->caps[i].name);
	}
	pmu_cap_base(p->name);
	pmu_attr_read(root, p->name, "max_nonturbo_ratio", buf, sizeof(buf));
	pmu_attr_read(root, p->name, "cpus", buf, 4);
}

/* The files of one input: what writing its pairs in order leaves, a later pair of a
 * name replacing the content of an earlier one, a pair whose path needs a directory
 * where a file is (or the reverse) written nowhere. */
struct file {
	char name[81];
	const char *text;
	size_t len;
};

static bool is_dir_of(const char *dir, const char *path)
{
	size_t n = strlen(dir);
	return strncmp(dir, path, n) == 0 && path[n] == '/';
}

static int accept(struct file *f, int n, const char *name, size_t nlen, const char *text, size_t len)
{
	char nm[81];
	memcpy(nm, name, nlen);
	nm[nlen] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(f[i].name, nm) == 0) {
			f[i].text = text;
			f[i].len = len;
			return n;
		}
		if (is_dir_of(f[i].name, nm) || is_dir_of(nm, f[i].name))
			return n;
	}
	memcpy(f[n].name, nm, nlen + 1);
	f[n].text = text;
	f[n].len = len;
	return n + 1;
}

/* The tree is the previous input's, changed into this one's: the files it does not name
 * are removed with the directories no file needs any more, and only new or changed
 * files are written (a whole new tree of ~30 files and directories per input cost
 * 3x the reading, and most mutations keep most files). */
static struct file prev[MAX_FILES];
static char *prev_text[MAX_FILES];
static int nprev = -1;	/* -1: no tree (the first input, or one failed) */

static int find(const struct file *f, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(f[i].name, name) == 0)
			return i;
	return -1;
}

static bool dir_needed(const struct file *f, int n, const char *dir)
{
	for (int i = 0; i < n; i++)
		if (is_dir_of(dir, f[i].name))
			return true;
	return false;
}

static bool new_tree(void)
{
	rm_tree(root);
	snprintf(devices, sizeof(devices), "%s/sys/bus/event_source/devices", root);
	for (char *p = devices + strlen(root); (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(devices, 0700);
		*p = '/';
	}
	snprintf(devices, sizeof(devices), "%s/" PMU_DEVICES_DIR, root);
	return mkdir(devices, 0700) == 0;
}

static void remove_gone(const struct file *f, int n)
{
	char path[256];
	size_t top = strlen(devices);

	for (int i = 0; i < nprev; i++) {
		if (find(f, n, prev[i].name) >= 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", devices, prev[i].name);
		unlink(path);
		/* deepest first; one still holding an old file goes with that file */
		for (char *p; (p = strrchr(path, '/')) && p > path + top;) {
			*p = '\0';
			if (dir_needed(f, n, path + top + 1))
				break;
			rmdir(path);
		}
	}
}

static void write_tree(const struct file *f, int n)
{
	char *text[MAX_FILES] = { 0 };
	bool ok = true;

	if (nprev >= 0)
		remove_gone(f, n);
	else if (!new_tree())
		return;
	for (int i = 0; i < n; i++) {
		int j = find(prev, nprev, f[i].name);
		if (j >= 0 && f[i].len == prev[j].len && memcmp(f[i].text, prev_text[j], f[i].len) == 0) {
			text[i] = prev_text[j];
			prev_text[j] = NULL;
			continue;
		}
		/* accept() left no conflict: a failure is the disk's */
		ok = ok && write_entry(f[i].name, f[i].text, f[i].len) == 0 &&
		     (text[i] = malloc(f[i].len ? f[i].len : 1));
		if (text[i])
			memcpy(text[i], f[i].text, f[i].len);
	}
	for (int i = 0; i < MAX_FILES; i++) {
		free(prev_text[i]);
		prev_text[i] = text[i];
		if (i < n) {
			prev[i] = f[i];
			prev[i].text = text[i];
		}
	}
	nprev = ok ? n : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *s = (const char *)data, *end = s + size;
	char *copy = NULL;
	struct file files[MAX_FILES];
	int nfiles = 0;

	for (int n = 0; s < end && n < MAX_FILES; n++) {
		const char *name = s, *nul = memchr(s, '\0', (size_t)(end - s));
		if (!nul)
			break;
		const char *text = nul + 1, *tend = text < end ? memchr(text, '\0', (size_t)(end - text)) : NULL;
		if (!tend)
			tend = end;
		size_t len = (size_t)(tend - text);
		s = tend + 1;
		if (!good_name(name, (size_t)(nul - name)))
			continue;
		nfiles = accept(files, nfiles, name, (size_t)(nul - name), text, len);
		/* the content as a format spec, directly */
		free(copy);
		if ((copy = strndup(text, len))) {
			struct pmu_field f;
			char buf[128];
			copy[strcspn(copy, "\n")] = '\0';
			if (pmu_field_parse("f", copy, &f) == 0)
				pmu_field_format(&f, buf, sizeof(buf));
		}
	}
	free(copy);
	write_tree(files, nfiles);

	struct pmu_list l;
	if (pmu_list_read(root, &l) == 0) {
		for (size_t i = 0; i < l.n; i++) {
			exercise(&l.pmus[i]);
			if (pmu_list_find(&l, l.pmus[i].name) == NULL)
				abort();
		}
		pmu_list_free(&l);
	}
	struct pmu p;
	if (pmu_read(root, "intel_pt", &p) == 0) {
		exercise(&p);
		pmu_free(&p);
	}
	return 0;
}
