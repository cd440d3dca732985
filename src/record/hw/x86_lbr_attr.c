/* Branch-stack sampling attr; see x86_lbr_attr.h. */
#include "record/hw/x86_lbr_attr.h"
#include "record/hw/x86_attr.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "probe/pmu.h"

/* Intel core PMUs before Haswell have LBRs but no call-stack mode. */
static int has_call_stack(const char *pmu_name)
{
	static const char *const old[] = { "core2", "nehalem", "westmere", "sandybridge",
					   "ivybridge", "generic_arch_v1", "generic_arch_v2" };

	for (size_t i = 0; i < sizeof(old) / sizeof(old[0]); i++)
		if (strcmp(pmu_name, old[i]) == 0)
			return 0;
	return 1;
}

int x86_lbr_probe(const char *sysfs_root, struct x86_lbr_info *info, char *err, size_t errlen)
{
	static const char *const names[] = { "cpu", "cpu_core" };
	struct pmu p;
	uint64_t depth;
	const char *pn;
	int rc = -ENOENT;

	memset(info, 0, sizeof(*info));
	for (size_t i = 0; i < 2 && rc; i++)
		rc = pmu_read(sysfs_root, names[i], &p);
	if (rc == -ENOENT)
		return x86_attr_fail(err, errlen, -ENOENT, "no cpu PMU in sysfs: this machine (or its "
			    "hypervisor) exposes no hardware counters, so no branch stacks");
	if (rc)
		return x86_attr_fail(err, errlen, rc, "reading the cpu PMU: %s", strerror(-rc));
	snprintf(info->pmu, sizeof(info->pmu), "%s", p.name);
	info->type = p.type;
	pn = pmu_cap_str(&p, "pmu_name");
	if (pn) {
		info->intel = 1;
		snprintf(info->pmu_name, sizeof(info->pmu_name), "%s", pn);
	}
	if (pmu_cap_u64(&p, "branches", &depth) < 0 || depth == 0) {
		pmu_free(&p);
		return x86_attr_fail(err, errlen, -ENOENT, "the %s PMU offers no branch stack (no "
			    "caps/branches): this CPU or hypervisor has no LBR/BRS", info->pmu);
	}
	info->depth = (unsigned)depth;
	info->call_stack = info->intel && has_call_stack(info->pmu_name);
	pmu_free(&p);
	return 0;
}

int x86_lbr_attr(const struct x86_lbr_info *info, const struct x86_lbr_cfg *c,
		 struct perf_event_attr *attr, char *err, size_t errlen)
{
	int kernel = c->kernel == 1, user = !kernel || c->user == 1;

	if (c->call_stack && !info->call_stack)
		return x86_attr_fail(err, errlen, -EINVAL, "-g lbr: %s has no LBR call-stack mode "
			    "(Intel Haswell or later only); use -g fp or -g dwarf",
			    info->intel ? info->pmu_name : "this CPU");
	if (c->call_stack && !user)
		return x86_attr_fail(err, errlen, -EINVAL, "-g lbr records user call stacks: drop -k or add -u");
	memset(attr, 0, sizeof(*attr));
	attr->size = sizeof(*attr);
	if (c->has_event) {
		attr->type = c->ev_type;
		attr->config = c->ev_config;
	} else {
		attr->type = PERF_TYPE_HARDWARE;
		attr->config = PERF_COUNT_HW_CPU_CYCLES;
	}
	if (c->period) {
		attr->sample_period = c->period;
	} else {
		attr->freq = 1;
		attr->sample_freq = c->freq ? c->freq : 4000;
	}
	attr->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			    PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
			    PERF_SAMPLE_BRANCH_STACK;
	if (c->call_stack) {
		/* What perf asks for in -g lbr: the stack of calls, no cycle or flag fields. */
		attr->sample_type |= PERF_SAMPLE_CALLCHAIN;
		attr->exclude_callchain_kernel = !kernel;
		attr->branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_CALL_STACK |
					   PERF_SAMPLE_BRANCH_NO_CYCLES | PERF_SAMPLE_BRANCH_NO_FLAGS;
	} else {
		attr->branch_sample_type = PERF_SAMPLE_BRANCH_ANY |
					   (user ? PERF_SAMPLE_BRANCH_USER : 0) |
					   (kernel ? PERF_SAMPLE_BRANCH_KERNEL : 0);
	}
	if (c->hw_index)
		attr->branch_sample_type |= PERF_SAMPLE_BRANCH_HW_INDEX;
	x86_attr_sideband(attr);
	attr->exclude_kernel = !kernel;
	attr->exclude_user = !user;
	/* as the sample mode: the clock of jitdump timestamps (perf record -k mono) */
	attr->use_clockid = 1;
	attr->clockid = CLOCK_MONOTONIC;
	return 0;
}
