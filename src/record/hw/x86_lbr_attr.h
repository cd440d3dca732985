/* perf_event_attr for branch-stack sampling: Intel LBR and AMD BRS / LbrExtV2, wherever
 * the kernel's cpu PMU offers branch stacks (it then publishes caps/branches, the stack
 * depth). */
#ifndef X86_LBR_ATTR_H
#define X86_LBR_ATTR_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct x86_lbr_info {
	char pmu[32];		/* "cpu", or "cpu_core" on hybrid parts */
	int type;		/* the cpu PMU's type */
	unsigned depth;		/* caps/branches */
	int intel;		/* caps/pmu_name present: Intel's core PMU */
	int call_stack;		/* LBR call-stack mode exists (Intel, Haswell and later) */
	char pmu_name[32];
};

/* Reads the cpu PMU under `sysfs_root`.  -ENOENT with the reason in err when the machine
 * has no branch stacks. */
int x86_lbr_probe(const char *sysfs_root, struct x86_lbr_info *info, char *err, size_t errlen);

struct x86_lbr_cfg {
	int user, kernel;	/* -u/-k; user only when neither is given */
	int call_stack;		/* -g lbr */
	int hw_index;		/* the kernel knows PERF_SAMPLE_BRANCH_HW_INDEX (5.7+) */
	uint64_t period;	/* sample every N events; 0: use freq */
	uint64_t freq;		/* samples per second when period is 0; 0: 4000 */
	int has_event;		/* `event` below replaces cycles as the sampled event */
	uint32_t ev_type;
	uint64_t ev_config;
};

int x86_lbr_attr(const struct x86_lbr_info *info, const struct x86_lbr_cfg *c,
		 struct perf_event_attr *attr, char *err, size_t errlen);

#endif
