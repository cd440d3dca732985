/* Probe facts from a key=value file, so tests (and bug reports) can replay a machine:
 *   kernel=6.1.0-18-amd64   machine=x86_64   paranoid=2   mlock_kb=516   yama_scope=1|none
 *   euid=1000   cap_perfmon=0   cap_sys_admin=0   cap_sys_ptrace=0
 *   hw_cycles=ok|ENOENT|<errno>  (also hw_instructions, lbr, cpu_clock, pt, ptrace, uprobe, pfm)
 *   pfm_pmus=skl perf perf_raw
 * '#' starts a comment line.  Absent keys stay unknown / not run. */
#include "probe/probe.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const char *name;
	int err;
} errnos[] = {
	{ "EPERM", EPERM }, { "ENOENT", ENOENT }, { "ESRCH", ESRCH }, { "EIO", EIO },
	{ "E2BIG", E2BIG }, { "ECHILD", ECHILD }, { "ENOMEM", ENOMEM }, { "EACCES", EACCES },
	{ "EBUSY", EBUSY }, { "ENODEV", ENODEV }, { "EINVAL", EINVAL }, { "EMFILE", EMFILE },
	{ "ENOSPC", ENOSPC }, { "ENOSYS", ENOSYS }, { "EOPNOTSUPP", EOPNOTSUPP },
	{ "EOVERFLOW", EOVERFLOW },
};

const char *probe_errno_name(int err)
{
	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (errnos[i].err == err)
			return errnos[i].name;
	return NULL;
}

int probe_errno_parse(const char *s)
{
	char *end;
	long v;

	for (size_t i = 0; i < sizeof(errnos) / sizeof(errnos[0]); i++)
		if (strcmp(errnos[i].name, s) == 0)
			return errnos[i].err;
	if (strcmp(s, "ENOTSUP") == 0)
		return ENOTSUP;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > 4095)
		return -EINVAL;
	return (int)v;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

static int parse_check(const char *s, struct probe_check *c)
{
	int err;

	c->note[0] = 0;
	if (strcmp(s, "ok") == 0) {
		c->status = PROBE_OK;
		c->err = 0;
		return 0;
	}
	err = probe_errno_parse(s);
	if (err < 0)
		return -EINVAL;
	c->status = PROBE_FAIL;
	c->err = err;
	return 0;
}

static int apply(struct probe_facts *f, const char *key, const char *val)
{
	static const struct {
		const char *key;
		size_t off;
	} checks[] = {
		{ "hw_cycles", offsetof(struct probe_facts, hw_cycles) },
		{ "hw_instructions", offsetof(struct probe_facts, hw_instructions) },
		{ "lbr", offsetof(struct probe_facts, lbr) },
		{ "cpu_clock", offsetof(struct probe_facts, cpu_clock) },
		{ "pt", offsetof(struct probe_facts, pt) },
		{ "ptrace", offsetof(struct probe_facts, ptrace) },
		{ "uprobe", offsetof(struct probe_facts, uprobe) },
		{ "pfm", offsetof(struct probe_facts, pfm) },
	};
	static const struct {
		const char *key;
		size_t off;
		int lo, hi;
	} ints[] = {
		{ "paranoid", offsetof(struct probe_facts, paranoid), -1, 4 },
		{ "mlock_kb", offsetof(struct probe_facts, mlock_kb), 0, INT_MAX },
		{ "euid", offsetof(struct probe_facts, euid), 0, INT_MAX },
		{ "cap_perfmon", offsetof(struct probe_facts, cap_perfmon), 0, 1 },
		{ "cap_sys_admin", offsetof(struct probe_facts, cap_sys_admin), 0, 1 },
		{ "cap_sys_ptrace", offsetof(struct probe_facts, cap_sys_ptrace), 0, 1 },
	};

	for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
		if (strcmp(key, checks[i].key) == 0)
			return parse_check(val, (struct probe_check *)((char *)f + checks[i].off));
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		if (strcmp(key, ints[i].key) == 0)
			return parse_int(val, ints[i].lo, ints[i].hi, (int *)((char *)f + ints[i].off));
	if (strcmp(key, "yama_scope") == 0) {
		if (strcmp(val, "none") == 0) {
			f->yama_scope = -1;
			return 0;
		}
		return parse_int(val, 0, 3, &f->yama_scope);
	}
	if (strcmp(key, "kernel") == 0 && strlen(val) < sizeof(f->kernel)) {
		strcpy(f->kernel, val);
		return 0;
	}
	if (strcmp(key, "machine") == 0 && strlen(val) < sizeof(f->machine)) {
		strcpy(f->machine, val);
		return 0;
	}
	if (strcmp(key, "pfm_pmus") == 0 && strlen(val) < sizeof(f->pfm_pmus)) {
		strcpy(f->pfm_pmus, val);
		return 0;
	}
	return -EINVAL;
}

static char *trim(char *s)
{
	size_t n;

	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	return s;
}

int probe_file_read(const char *path, struct probe_facts *f, int *line)
{
	char buf[1024];
	FILE *fp;
	int ret = 0;

	*line = 0;
	probe_facts_init(f, "not in the probe file");
	snprintf(f->source, sizeof(f->source), "probe file %s", path);
	fp = fopen(path, "re");
	if (!fp)
		return -errno;
	while (fgets(buf, sizeof(buf), fp)) {
		char *s, *eq;

		++*line;
		if (!strchr(buf, '\n') && !feof(fp)) {
			ret = -EINVAL;	/* over-long line */
			break;
		}
		s = trim(buf);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			ret = -EINVAL;
			break;
		}
		*eq = 0;
		ret = apply(f, trim(s), trim(eq + 1));
		if (ret)
			break;
	}
	fclose(fp);
	if (!ret)
		*line = 0;
	return ret;
}
