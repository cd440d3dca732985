/* Intel PT perf_event_attr from sysfs; see x86_pt_attr.h. */
#include "record/hw/x86_pt_attr.h"
#include "record/hw/x86_attr.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void x86_pt_cfg_init(struct x86_pt_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->cyc = c->mtc = c->tsc = c->noretcomp = c->branch = -1;
	c->cyc_thresh = c->mtc_period = c->psb_period = -1;
}

int x86_pt_probe(const char *sysfs_root, struct pmu *pt, char *err, size_t errlen)
{
	int rc = pmu_read(sysfs_root, "intel_pt", pt);

	if (rc == -ENOENT) {
		snprintf(err, errlen, "no intel_pt PMU in sysfs: this CPU or hypervisor does not "
			 "expose Intel PT");
		return rc;
	}
	if (rc) {
		snprintf(err, errlen, "reading the intel_pt PMU: %s", strerror(-rc));
		return rc;
	}
	if (pt->type < 0) {
		pmu_free(pt);
		snprintf(err, errlen, "the intel_pt PMU has no readable type");
		return -ENOENT;
	}
	return 0;
}

int x86_pt_opts_parse(const char *s, struct x86_pt_cfg *c, char *err, size_t errlen)
{
	static const struct {
		const char *name;
		int is_value;	/* takes a number; flags take an optional 0/1 */
	} known[] = {
		{ "cyc", 0 }, { "mtc", 0 }, { "tsc", 0 }, { "noretcomp", 0 }, { "branch", 0 },
		{ "cyc_thresh", 1 }, { "mtc_period", 1 }, { "psb_period", 1 },
	};
	char buf[512];
	char *save = NULL;

	if (snprintf(buf, sizeof(buf), "%s", s) >= (int)sizeof(buf))
		return x86_attr_fail(err, errlen, -EINVAL, "option list too long");
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		char *end;
		unsigned long long v = 1;
		size_t i;

		if (eq)
			*eq = 0;
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (strcmp(tok, known[i].name) == 0)
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return x86_attr_fail(err, errlen, -EINVAL, "unknown option '%s' (known: cyc, cyc_thresh=N, "
				    "mtc, mtc_period=N, tsc, noretcomp, psb_period=N, branch)", tok);
		if (known[i].is_value && !eq)
			return x86_attr_fail(err, errlen, -EINVAL, "'%s' needs a value: %s=N", tok, tok);
		if (eq) {
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end || v > 63 ||
			    (!known[i].is_value && v > 1))
				return x86_attr_fail(err, errlen, -EINVAL, "'%s=%s': expected %s", tok, eq + 1,
					    known[i].is_value ? "a small number" : "0 or 1");
		}
		switch (i) {
		case 0: c->cyc = (int)v; break;
		case 1: c->mtc = (int)v; break;
		case 2: c->tsc = (int)v; break;
		case 3: c->noretcomp = (int)v; break;
		case 4: c->branch = (int)v; break;
		case 5: c->cyc_thresh = (int64_t)v; break;
		case 6: c->mtc_period = (int64_t)v; break;
		case 7: c->psb_period = (int64_t)v; break;
		}
	}
	return 0;
}

static int cap(const struct pmu *pt, const char *name, uint64_t *v)
{
	if (pmu_cap_u64(pt, name, v) < 0)
		*v = 0;
	return *v != 0;
}

/* "0-13" or "0,3,6,9" from a cap bitmap, for messages. */
static void bitmap_str(uint64_t bits, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = 0;
	for (int i = 0; i < 64 && used < len; i++) {
		int j = i;

		if (!(bits >> i & 1))
			continue;
		while (j + 1 < 64 && (bits >> (j + 1) & 1))
			j++;
		used += snprintf(buf + used, len - used, "%s%d", used ? "," : "", i);
		if (j > i + 1 && used < len)
			used += snprintf(buf + used, len - used, "-%d", j);
		else if (j == i + 1 && used < len)
			used += snprintf(buf + used, len - used, ",%d", j);
		i = j;
	}
	if (!used)
		snprintf(buf, len, "none");
}

/* Sets a field the user or the defaults want; a missing format file is an error only
 * when the user asked for it. */
static int set(const struct pmu *pt, const char *name, uint64_t v, int asked,
	       struct perf_event_attr *attr, char *err, size_t errlen)
{
	int rc = pmu_set(pt, name, v, attr);

	if (rc == -ENOENT && !asked)
		return 0;
	if (rc == -ENOENT)
		return x86_attr_fail(err, errlen, -EINVAL, "the intel_pt PMU has no '%s' field "
			    "(format/%s missing: the kernel is too old for it)", name, name);
	if (rc < 0)
		return x86_attr_fail(err, errlen, -EINVAL, "%s=%" PRIu64 " does not fit format/%s", name, v, name);
	return 0;
}

static int check_value(const struct pmu *pt, const char *name, int64_t v, const char *capname,
		       char *err, size_t errlen)
{
	uint64_t bits;
	char ok[128];

	if (pmu_cap_u64(pt, capname, &bits) < 0)
		return x86_attr_fail(err, errlen, -EINVAL, "%s=%" PRId64 ": caps/%s is missing, so the accepted "
			    "values are unknown", name, v, capname);
	if (v < 0 || v > 63 || !(bits >> v & 1)) {
		bitmap_str(bits, ok, sizeof(ok));
		return x86_attr_fail(err, errlen, -EINVAL, "%s=%" PRId64 ": this CPU accepts %s (caps/%s = %" PRIx64 ")",
			    name, v, ok, capname, bits);
	}
	return 0;
}

int x86_pt_attr(const struct pmu *pt, const struct x86_pt_cfg *c, struct perf_event_attr *attr,
		char *err, size_t errlen)
{
	uint64_t v;
	int psb_cyc = cap(pt, "psb_cyc", &v);
	int mtc_cap = cap(pt, "mtc", &v);
	int cyc, mtc, rc;
	int64_t mtc_period = c->mtc_period, psb_period = c->psb_period;

	if (pt->type < 0)
		return x86_attr_fail(err, errlen, -EINVAL, "intel_pt/type is missing or unreadable");
	if (c->cyc == 1 && !psb_cyc)
		return x86_attr_fail(err, errlen, -EINVAL, "cyc: this CPU has no cycle-accurate mode (caps/psb_cyc = 0)");
	if (c->mtc == 1 && !mtc_cap)
		return x86_attr_fail(err, errlen, -EINVAL, "mtc: this CPU has no MTC packets (caps/mtc = 0)");
	cyc = c->cyc == 1;
	mtc = c->mtc >= 0 ? c->mtc : mtc_cap;
	if (c->cyc_thresh >= 0) {
		if (!cyc)
			return x86_attr_fail(err, errlen, -EINVAL, "cyc_thresh=%" PRId64 " needs cyc", c->cyc_thresh);
		if ((rc = check_value(pt, "cyc_thresh", c->cyc_thresh, "cycle_thresholds", err, errlen)))
			return rc;
	}
	if (mtc_period >= 0) {
		if (!mtc)
			return x86_attr_fail(err, errlen, -EINVAL, "mtc_period=%" PRId64 " needs mtc", mtc_period);
		if ((rc = check_value(pt, "mtc_period", mtc_period, "mtc_periods", err, errlen)))
			return rc;
	} else if (mtc && pmu_cap_u64(pt, "mtc_periods", &v) == 0 && (v >> 3 & 1)) {
		mtc_period = 3;
	}
	if (psb_period >= 0) {
		if (!psb_cyc)
			return x86_attr_fail(err, errlen, -EINVAL, "psb_period=%" PRId64 ": this CPU has a fixed PSB "
				    "period (caps/psb_cyc = 0)", psb_period);
		if ((rc = check_value(pt, "psb_period", psb_period, "psb_periods", err, errlen)))
			return rc;
	} else if (psb_cyc && pmu_cap_u64(pt, "psb_periods", &v) == 0 && (v >> 3 & 1)) {
		psb_period = 3;
	}
	if (c->nfilters && !cap(pt, "ip_filtering", &v))
		return x86_attr_fail(err, errlen, -EINVAL, "address filters: this CPU has no IP filtering "
			    "(caps/ip_filtering = 0)");

	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	attr->type = (uint32_t)pt->type;
	/* `pt` (passthrough) makes the kernel honour our branch bit instead of forcing it. */
	if ((rc = set(pt, "pt", 1, 0, attr, err, errlen)) ||
	    (rc = set(pt, "branch", c->branch >= 0 ? (uint64_t)c->branch : 1, c->branch == 0,
		      attr, err, errlen)) ||
	    (rc = set(pt, "tsc", c->tsc >= 0 ? (uint64_t)c->tsc : 1, c->tsc == 1, attr, err, errlen)) ||
	    (rc = set(pt, "mtc", (uint64_t)mtc, c->mtc == 1, attr, err, errlen)) ||
	    (rc = set(pt, "cyc", (uint64_t)cyc, cyc, attr, err, errlen)) ||
	    (rc = set(pt, "noretcomp", c->noretcomp == 1, c->noretcomp == 1, attr, err, errlen)))
		return rc;
	if (mtc_period >= 0 &&
	    (rc = set(pt, "mtc_period", (uint64_t)mtc_period, c->mtc_period >= 0, attr, err, errlen)))
		return rc;
	if (psb_period >= 0 &&
	    (rc = set(pt, "psb_period", (uint64_t)psb_period, c->psb_period >= 0, attr, err, errlen)))
		return rc;
	if (c->cyc_thresh >= 0 &&
	    (rc = set(pt, "cyc_thresh", (uint64_t)c->cyc_thresh, 1, attr, err, errlen)))
		return rc;

	attr->sample_period = 1;
	/* IP and ADDR: `perf script` checks its printed fields against the PT event. */
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
			    PERF_SAMPLE_ADDR | PERF_SAMPLE_IDENTIFIER;
	x86_attr_sideband(attr);
	attr->exclude_kernel = !(c->kernel == 1);
	attr->exclude_user = c->kernel == 1 && c->user != 1;
	attr->context_switch = 1;
	return 0;
}

int x86_pt_check_buffers(uint64_t data_bytes, uint64_t aux_bytes, unsigned nr_mmaps,
			 unsigned ncpus, uint64_t mlock_kb, int privileged, char *err, size_t errlen)
{
	const uint64_t page = 4096;
	uint64_t need_kb, limit_kb;

	if (data_bytes < page || (data_bytes & (data_bytes - 1)))
		return x86_attr_fail(err, errlen, -EINVAL, "data buffer %" PRIu64 " KiB: must be a power of two of "
			    "at least 4 KiB", data_bytes / 1024);
	if (aux_bytes < page || (aux_bytes & (aux_bytes - 1)))
		return x86_attr_fail(err, errlen, -EINVAL, "AUX buffer %" PRIu64 " KiB: must be a power of two of "
			    "at least 4 KiB", aux_bytes / 1024);
	if (privileged)
		return 0;
	/* The kernel charges each data ring one page more (the header page). */
	need_kb = (uint64_t)nr_mmaps * ((data_bytes + page) / 1024 + aux_bytes / 1024);
	limit_kb = mlock_kb * (ncpus ? ncpus : 1);
	if (need_kb > limit_kb)
		return x86_attr_fail(err, errlen, -EINVAL, "%u buffer(s) of %" PRIu64 " KiB data + %" PRIu64
			    " KiB AUX need %" PRIu64 " KiB locked, over perf_event_mlock_kb "
			    "(%" PRIu64 " KiB x %u cpus = %" PRIu64 " KiB)",
			    nr_mmaps, data_bytes / 1024, aux_bytes / 1024, need_kb, mlock_kb,
			    ncpus ? ncpus : 1, limit_kb);
	return 0;
}

int x86_read_mlock_kb(const char *root, uint64_t *kb)
{
	char path[4096];
	FILE *f;
	int rc;

	if (pmu_path(root, "proc/sys/kernel/perf_event_mlock_kb", path, sizeof(path)))
		return -ENAMETOOLONG;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	rc = fscanf(f, "%" SCNu64, kb) == 1 ? 0 : -EINVAL;
	fclose(f);
	return rc;
}
