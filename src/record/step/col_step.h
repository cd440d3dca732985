/* --mode step: the ptrace branch tracer (src/record/step/stp.h) writing a per-thread
 * Intel PT recording (src/record/step/ptw.c) into perf.data, laid out like
 * `perf record --per-thread -e intel_pt//u` (see docs/trace-format.md). */
#ifndef COL_STEP_H
#define COL_STEP_H

#include <stdint.h>

/* The intel_pt PMU type written into the attr and AUXTRACE_INFO.  Real machines get a
 * dynamic type from sysfs; perf only needs both places to agree. */
#define STEP_PT_PMU_TYPE 8

/* intel_pt config bits (sysfs format/ of the intel_pt PMU, stable since Linux 4.1). */
#define STEP_PT_CFG_PT (1ull << 0)
#define STEP_PT_CFG_TSC (1ull << 10)
#define STEP_PT_CFG_NORETCOMP (1ull << 11)
#define STEP_PT_CFG_BRANCH (1ull << 13)
#define STEP_PT_CFG_PSB_SHIFT 24	/* psb_period: config:24-27, 2^(n+11) bytes */

#define STEP_DEFAULT_PSB_PERIOD 4096

/* What --mode step costs, in words only: the stops per branch depend on the program
 * (0.001 to 0.02 measured, more in code of vector instructions), so `record -v` prints
 * the figure of each recording instead. */
#define STEP_COST_TEXT \
	"the command stops under ptrace at branches (record -v prints the stops per branch " \
	"measured); no cycle timing; -p not supported"

/* config of the intel_pt attr for a psb period in bytes (a power of two, 2K..64K). */
uint64_t col_step_pt_config(uint64_t psb_period);

#endif
