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

/* What --mode step costs, as bench/step-speed measured it (2-core VM, bundled workload
 * of 341K instructions, 61K branches): shown by `xptrace info`. */
#define STEP_COST_TEXT \
	"0.22 stops per branch, ~5 us per executed branch, 27x faster than single-stepping " \
	"(bench/step-speed); no cycle timing; -p not supported"
#define STEP_COST_STOPS_PER_BRANCH 0.22
#define STEP_COST_US_PER_BRANCH 5.4
#define STEP_COST_SPEEDUP 27.0

/* config of the intel_pt attr for a psb period in bytes (a power of two, 2K..64K). */
uint64_t col_step_pt_config(uint64_t psb_period);

#endif
