/* libpfm4 event names -> perf_event_attr.  Kept apart: libpfm4's headers carry their own
 * copy of perf_event.h, which clashes with <linux/perf_event.h>; the attr crosses as
 * bytes (same kernel ABI, libpfm4's copy is a prefix of the current struct). */
#include <perfmon/pfmlib_perf_event.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "record/rec_pfm.h"

int rec_pfm_encode(const char *name, void *attr, size_t attr_size, char *why, size_t whylen)
{
	static int initialized;
	struct perf_event_attr a;
	pfm_perf_encode_arg_t arg;
	int r;

	if (!initialized) {
		r = pfm_initialize();
		if (r != PFM_SUCCESS) {
			snprintf(why, whylen, "libpfm4 failed to initialize: %s", pfm_strerror(r));
			return -EIO;
		}
		initialized = 1;
	}
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
