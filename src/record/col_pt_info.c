/* AUXTRACE_INFO words for hardware Intel PT recordings; see col_pt_info.h. */
#include "record/col_pt_info.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "perfdata/pd_format.h"

int col_pt_time_conv(const struct perf_event_mmap_page *pc, uint64_t *shift, uint64_t *mult,
		     uint64_t *zero, int *cap_zero)
{
	uint32_t seq;
	int tries = 0;

	do {
		seq = __atomic_load_n(&pc->lock, __ATOMIC_ACQUIRE);
		*shift = pc->time_shift;
		*mult = pc->time_mult;
		*zero = pc->time_zero;
		*cap_zero = pc->cap_user_time_zero;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (++tries > 1000)
			return -EAGAIN;
	} while (__atomic_load_n(&pc->lock, __ATOMIC_RELAXED) != seq || (seq & 1));
	if (!*cap_zero) {
		*shift = *mult = *zero = 0;
		return -EOPNOTSUPP;
	}
	return 0;
}

static uint64_t mask_of(const struct pmu *pt, const char *name)
{
	const struct pmu_field *f = pmu_field_find(pt, name);

	return f && f->word == PMU_CONFIG ? f->mask : 0;
}

/* Value 1 of a one-bit field, as perf's intel_pt_parse_terms() gives it. */
static uint64_t bit_of(const struct pmu *pt, const char *name)
{
	uint64_t m = mask_of(pt, name);

	return m & -m;
}

int col_pt_info_words(const char *sysfs_root, const struct pmu *pt,
		      const struct perf_event_attr *attr, const struct perf_event_mmap_page *pc,
		      const struct col_pt_layout *l, uint64_t *words, size_t max)
{
	uint64_t shift = 0, mult = 0, zero = 0, n = 0, d = 0, ratio = 0;
	int cap_zero = 0;
	char buf[64];
	size_t flen = l->filter ? strlen(l->filter) : 0;
	size_t fwords = flen ? (flen + 1 + 7) / 8 : 0;
	int tsc_on = (attr->config & bit_of(pt, "tsc")) != 0;

	if (max < PD_PT_INFO_WORDS + fwords)
		return -ENOSPC;
	if (pc && col_pt_time_conv(pc, &shift, &mult, &zero, &cap_zero))
		cap_zero = 0;
	/* "den:num" of CPUID leaf 0x15 (eax:ebx); perf's TSC_CTC_N is ebx. */
	if (pmu_attr_read(sysfs_root, "intel_pt", "tsc_art_ratio", buf, sizeof(buf)) == 0 &&
	    sscanf(buf, "%lu:%lu", (unsigned long *)&d, (unsigned long *)&n) != 2)
		n = d = 0;
	if (pmu_attr_read(sysfs_root, "intel_pt", "max_nonturbo_ratio", buf, sizeof(buf)) == 0 &&
	    sscanf(buf, "%lu", (unsigned long *)&ratio) != 1)
		ratio = 0;
	memset(words, 0, (PD_PT_INFO_WORDS + fwords) * sizeof(*words));
	words[PD_PT_PMU_TYPE] = attr->type;
	words[PD_PT_TIME_SHIFT] = shift;
	words[PD_PT_TIME_MULT] = mult;
	words[PD_PT_TIME_ZERO] = zero;
	words[PD_PT_CAP_USER_TIME_ZERO] = cap_zero;
	words[PD_PT_TSC_BIT] = bit_of(pt, "tsc");
	words[PD_PT_NORETCOMP_BIT] = bit_of(pt, "noretcomp");
	/* perf: 0 per-thread; with timing, 2 for switch records of a task, 3 CPU-wide. */
	words[PD_PT_HAVE_SCHED_SWITCH] = !l->per_cpu || !tsc_on || !attr->context_switch ? 0 :
					 l->cpu_wide ? 3 : 2;
	words[PD_PT_SNAPSHOT_MODE] = !!l->snapshot;
	words[PD_PT_PER_CPU_MMAPS] = !!l->per_cpu;
	words[PD_PT_MTC_BIT] = bit_of(pt, "mtc");
	words[PD_PT_MTC_FREQ_BITS] = mask_of(pt, "mtc_period");
	words[PD_PT_TSC_CTC_N] = n;
	words[PD_PT_TSC_CTC_D] = d;
	words[PD_PT_CYC_BIT] = bit_of(pt, "cyc");
	words[PD_PT_MAX_NONTURBO_RATIO] = ratio;
	words[PD_PT_FILTER_STR_LEN] = flen;
	if (flen)
		memcpy(&words[PD_PT_INFO_WORDS], l->filter, flen);
	return (int)(PD_PT_INFO_WORDS + fwords);
}
