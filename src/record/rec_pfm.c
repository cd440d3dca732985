/* libpfm4 event names -> perf_event_attr.  Kept apart: libpfm4's headers carry their own
 * copy of perf_event.h, which clashes with <linux/perf_event.h>; the attr crosses as
 * bytes (same kernel ABI, libpfm4's copy is a prefix of the current struct). */
#include <perfmon/pfmlib_perf_event.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "record/rec_pfm.h"

/* pfm_initialize() returns at once when libpfm4 is up already; called every time
 * because `xptrace info`'s probe (probe_live.c) terminates it after its check. */
static int pfm_start(char *why, size_t whylen)
{
	int r = pfm_initialize();

	if (r != PFM_SUCCESS) {
		snprintf(why, whylen, "libpfm4 failed to initialize: %s", pfm_strerror(r));
		return -EIO;
	}
	return 0;
}

int rec_pfm_encode(const char *name, void *attr, size_t attr_size, char *why, size_t whylen)
{
	struct perf_event_attr a;
	pfm_perf_encode_arg_t arg;
	int r;

	if (pfm_start(why, whylen) < 0)
		return -EIO;
	memset(&a, 0, sizeof(a));
	memset(&arg, 0, sizeof(arg));
	arg.attr = &a;
	arg.size = sizeof(arg);
	r = pfm_get_os_event_encoding(name, PFM_PLM3, PFM_OS_PERF_EVENT_EXT, &arg);
	if (r != PFM_SUCCESS) {
		snprintf(why, whylen, "%s", pfm_strerror(r));
		return r == PFM_ERR_NOMEM ? -ENOMEM : -EINVAL;	/* an event libpfm4 cannot encode */
	}
	memset(attr, 0, attr_size);
	memcpy(attr, &a, sizeof(a) < attr_size ? sizeof(a) : attr_size);
	return 0;
}

int rec_pfm_known_anywhere(const char *name)
{
	char base[128], why[128];
	const char *s = strstr(name, "::");
	size_t n;

	if (pfm_start(why, sizeof(why)) < 0)
		return 0;
	s = s ? s + 2 : name;
	n = strcspn(s, ":.");	/* "inst_retired.any", "inst_retired:any:u" */
	if (n == 0 || n >= sizeof(base))
		return 0;
	memcpy(base, s, n);
	base[n] = 0;
	/* every PMU table libpfm4 has, present on this machine or not */
	for (int p = 0; p < PFM_PMU_MAX; p++) {
		pfm_pmu_info_t pi;
		memset(&pi, 0, sizeof(pi));
		pi.size = sizeof(pi);
		if (pfm_get_pmu_info((pfm_pmu_t)p, &pi) != PFM_SUCCESS)
			continue;
		for (int i = pi.first_event; i != -1; i = pfm_get_event_next(i)) {
			pfm_event_info_t ei;
			memset(&ei, 0, sizeof(ei));
			ei.size = sizeof(ei);
			if (pfm_get_event_info(i, PFM_OS_NONE, &ei) == PFM_SUCCESS &&
			    strcasecmp(ei.name, base) == 0)
				return 1;
		}
	}
	return 0;
}
