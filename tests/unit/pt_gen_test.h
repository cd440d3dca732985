/* A unit test's ptspin trace (pt_gen.h: N iterations, raw and in a perf.data) in its
 * temporary directory, with the paths the decoder is given. */
#ifndef PT_GEN_TEST_H
#define PT_GEN_TEST_H

#include <stdio.h>

#include "pt_gen.h"
#include "xp_test.h"

struct ptgen_test {
	char spin[512];		/* build/progs/ptspin */
	char elfarg[600];	/* --elf's argument: spin:PTGEN_BASE */
	char trace[1100];	/* the raw trace */
	char perfdata[1100];	/* the same in a perf.data */
};

/* A cmocka setup's part: the temporary directory and the trace of n iterations;
 * 0 or -1. */
static inline int ptgen_test_setup(void **state, struct ptgen_test *t, long n)
{
	if (xp_test_tmp_setup(state) || xp_test_path(t->trace, sizeof(t->trace), "trace.pt") ||
	    xp_test_path(t->perfdata, sizeof(t->perfdata), "perf.data"))
		return -1;
	snprintf(t->spin, sizeof(t->spin), "%s/build/progs/ptspin", XP_SRCDIR);
	snprintf(t->elfarg, sizeof(t->elfarg), "%s:%#llx", t->spin, PTGEN_BASE);
	return ptgen_write(t->spin, n, xp_test_tmp()) ? 0 : -1;
}

#endif
