/* The intel_pt PERF_RECORD_AUXTRACE_INFO private words a hardware recording carries,
 * laid out as perf's intel-pt.c reads them (pd_format.h: PD_PT_*): the PMU type, the
 * perf-clock <-> TSC conversion of the first mmap page, the config masks of tsc,
 * noretcomp, mtc, mtc_period and cyc (masks, not bit numbers, as perf writes them),
 * the TSC:CTC ratio and max non-turbo ratio from sysfs, and the address filter string
 * (NUL-padded to 8 bytes) after the 17 words. */
#ifndef COL_PT_INFO_H
#define COL_PT_INFO_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/pmu.h"

struct col_pt_layout {
	int snapshot;		/* --snapshot */
	int per_cpu;		/* per-cpu mmaps (-a, or a command followed with inherit) */
	int cpu_wide;		/* -a: switch records are CPU-wide */
	const char *filter;	/* kernel filter string or NULL */
};

/* Reads the time conversion from a perf_event_mmap_page the way perf does (seqlock on
 * pc->lock).  Returns 0 with cap_user_time_zero set when the kernel offers it. */
int col_pt_time_conv(const struct perf_event_mmap_page *pc, uint64_t *shift, uint64_t *mult,
		     uint64_t *zero, int *cap_zero);

/* Fills `words` (capacity `max`); returns the number of u64 words, or -ENOSPC. */
int col_pt_info_words(const char *sysfs_root, const struct pmu *pt,
		      const struct perf_event_attr *attr, const struct perf_event_mmap_page *pc,
		      const struct col_pt_layout *l, uint64_t *words, size_t max);

#endif
