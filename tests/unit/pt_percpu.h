/* Test helper: a per-cpu intel_pt perf.data with timestamps, as `perf record -a -e
 * intel_pt/tsc/u` writes it (one AUX queue per cpu, PERF_RECORD_SWITCH_CPU_WIDE
 * sideband, TSC packets, AUXTRACE_INFO with the TSC bit and a TSC -> perf time
 * conversion), where two processes running build/progs/ptspin's spin(N) interleave on
 * two cpus and both migrate:
 *
 *   TSC     cpu 0                          cpu 1
 *   1000    A (pid/tid 100) spin(4) ...
 *   1100                                   B (pid/tid 200) spin(3) ...
 *   1200    ... A goes on (PSB+, TSC,
 *           within a basic block)
 *   1300                                   ... B goes on (PSB+, TSC)
 *   1650    B spin(1)
 *   1700                                   A spin(2)
 *
 * so the instructions in time order come in runs (cpu, tid, count) of PTPC_RUNS,
 * while queue after queue would give cpu 0's three runs first.  Each run is in a time
 * range of its own (TSC packets only, no MTC/CYC): the order does not depend on how a
 * decoder spreads time over the instructions between two timestamps.
 * The AUXTRACE records come first: perf queues AUX data as it reads it, but flushes
 * sideband (the switches) by time, which must find every queue filled.
 * PTPC_LOSE: 4096 bytes of cpu 1's AUX data are lost after B's first run (its second
 * chunk's offset jumps; a PSB+ with TSC 1690 starts what follows).
 * PTPC_PER_THREAD: the same runs recorded per thread (`perf record -e intel_pt/tsc/u
 * --per-thread`): one AUX queue per thread, no cpu, no switch records. */
#ifndef PT_PERCPU_H
#define PT_PERCPU_H

#include "pt_gen.h"

#define PTPC_RUNS "0 100 18\n1 200 7\n0 100 8\n1 200 13\n0 200 8\n1 100 14\n"
#define PTPC_LOSE 1
#define PTPC_PER_THREAD 2

/* TSC -> perf time: time_zero + tsc * mult >> shift (perf's tsc_to_perf_time) */
#define PTPC_SHIFT 1
#define PTPC_MULT 3
#define PTPC_ZERO 1000000ULL

static inline uint64_t ptpc_time(uint64_t tsc)
{
	return PTPC_ZERO + (tsc >> PTPC_SHIFT) * PTPC_MULT +
	       (((tsc & ((1ULL << PTPC_SHIFT) - 1)) * PTPC_MULT) >> PTPC_SHIFT);
}

/* spin(n) from its entry, a PSB+ with TSC `mid_tsc` after iteration `mid` (0: none);
 * mid < 0: inside iteration -mid + 1's last block, between its dec and jnz (a PSB+
 * within a basic block, as hardware puts them anywhere). */
static inline void ptpc_spin(struct pte *e, uint64_t spin, uint64_t loop, uint64_t after,
			     uint64_t tsc, long n, long mid, uint64_t mid_tsc)
{
	pte_tsc(e, tsc);
	pte_mode64(e);
	pte_ip(e, ppt_tip_pge, pt_ipc_sext_48, spin);
	for (long i = 1; i <= n; i++) {
		pte_ip(e, ppt_tip, pt_ipc_update_16, after);	/* leaf's ret */
		if (mid < 0 && i == -mid + 1) {
			pte_simple(e, ppt_psb);
			pte_tsc(e, mid_tsc);
			pte_mode64(e);
			pte_ip(e, ppt_fup, pt_ipc_sext_48, after + 3);	/* dec %rdi is 3 bytes */
			pte_simple(e, ppt_psbend);
		}
		pte_tnt(e, i < n ? "T" : "N");			/* jnz spin_loop */
		if (i == mid) {
			pte_simple(e, ppt_psb);
			pte_tsc(e, mid_tsc);
			pte_mode64(e);
			pte_ip(e, ppt_fup, pt_ipc_sext_48, loop);
			pte_simple(e, ppt_psbend);
		}
	}
	pte_ip(e, ppt_tip_pgd, pt_ipc_suppressed, 0);	/* spin's ret leaves the trace */
}

/* The file up to its AUX data: ptspin's addresses (spin, spin_loop, spin_after_call)
 * in sym[], the PT event as attr.  NULL on failure. */
static inline struct pd_writer *ptpc_open(const char *path, const char *spin_path, int per_thread,
					  uint64_t sym[3], struct perf_event_attr *attr)
{
	int fd = open(spin_path, O_RDONLY);
	if (fd < 0)
		return NULL;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	sym[0] = PTGEN_BASE + ptgen_sym(elf, "spin");
	sym[1] = PTGEN_BASE + ptgen_sym(elf, "spin_loop");
	sym[2] = PTGEN_BASE + ptgen_sym(elf, "spin_after_call");
	elf_end(elf);
	close(fd);
	if (sym[0] == PTGEN_BASE || sym[1] == PTGEN_BASE || sym[2] == PTGEN_BASE)
		return NULL;

	struct pd_writer *w;
	if (pd_writer_create(&w, path) < 0)
		return NULL;
	memset(attr, 0, sizeof(*attr));
	attr->type = PTGEN_PMU_TYPE;
	attr->size = PD_ATTR_SIZE;
	attr->config = 1 | 1ULL << 10 | 1ULL << 11 | 1ULL << 13;	/* pt, tsc, noretcomp, branch */
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			    PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	attr->sample_period = 1;
	attr->exclude_kernel = attr->exclude_hv = 1;
	attr->sample_id_all = attr->mmap = attr->mmap2 = attr->comm = attr->task = 1;
	attr->context_switch = !per_thread;
	int idx = pd_writer_add_attr(w, attr, "intel_pt/tsc/u");
	pd_writer_add_id(w, idx, 1000, per_thread ? -1 : 0, per_thread ? 100 : -1);
	pd_writer_add_id(w, idx, 1001, per_thread ? -1 : 1, per_thread ? 200 : -1);
	pd_writer_feat_host(w);
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	priv[PD_PT_PMU_TYPE] = PTGEN_PMU_TYPE;
	priv[PD_PT_TIME_SHIFT] = PTPC_SHIFT;
	priv[PD_PT_TIME_MULT] = PTPC_MULT;
	priv[PD_PT_TIME_ZERO] = PTPC_ZERO;
	priv[PD_PT_CAP_USER_TIME_ZERO] = 1;
	priv[PD_PT_TSC_BIT] = 1ULL << 10;
	priv[PD_PT_NORETCOMP_BIT] = 1ULL << 11;
	priv[PD_PT_HAVE_SCHED_SWITCH] = per_thread ? 0 : 2;	/* context_switch on the PT event */
	priv[PD_PT_PER_CPU_MMAPS] = !per_thread;
	priv[PD_PT_MTC_BIT] = 1ULL << 9;
	priv[PD_PT_MTC_FREQ_BITS] = 0xfULL << 14;
	priv[PD_PT_CYC_BIT] = 1ULL << 1;
	pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, PD_PT_INFO_WORDS);
	return w;
}

/* A switch record: from `tsc` on, `cpu` runs `pid` (out: it switches out to idle). */
static inline void ptpc_switch(struct pd_writer *w, const struct perf_event_attr *attr, uint32_t cpu,
			       uint32_t pid, uint64_t tsc, int out)
{
	uint32_t next[2] = { 0, 0 };	/* the other task: idle */
	struct ptgen_sid sid = { attr->sample_type, pid, ptpc_time(tsc), 1000 + cpu, cpu };
	ptgen_record(w, PERF_RECORD_SWITCH_CPU_WIDE, out ? PERF_RECORD_MISC_SWITCH_OUT : 0, next,
		     sizeof(next), &sid);
}

/* Writes `path` for the ptspin binary at `spin_path`; returns 0 or -1. */
static inline int ptpc_write(const char *path, const char *spin_path, int flags)
{
	int per_thread = flags & PTPC_PER_THREAD;
	uint64_t sym[3];
	struct perf_event_attr attr;
	struct pd_writer *w = ptpc_open(path, spin_path, per_thread, sym, &attr);
	if (!w)
		return -1;
	uint64_t spin = sym[0], loop = sym[1], after = sym[2];

	/* the AUX data of each cpu, or thread: (TSC, spin's N, PSB+ after iteration, its TSC) */
	static const struct { uint64_t tsc; long n, mid; uint64_t mid_tsc; } run[2][2][2] = {
		{ { { 1000, 4, -2, 1200 }, { 1650, 1, 0, 0 } },	/* cpu 0: A, B */
		  { { 1100, 3, 1, 1300 }, { 1700, 2, 0, 0 } } },	/* cpu 1: B, A */
		{ { { 1000, 4, -2, 1200 }, { 1700, 2, 0, 0 } },	/* A */
		  { { 1100, 3, 1, 1300 }, { 1650, 1, 0, 0 } } },	/* B */
	};
	for (uint32_t q = 0; q < 2; q++) {
		struct pte e;
		pte_init(&e, 4096);
		pte_simple(&e, ppt_psb);
		pte_tsc(&e, q ? 1050 : 950);
		pte_simple(&e, ppt_psbend);
		size_t split = 0;
		for (int i = 0; i < 2; i++) {
			if (i && q == 1 && (flags & PTPC_LOSE)) {
				split = pte_len(&e);
				pte_simple(&e, ppt_psb);
				pte_tsc(&e, 1690);
				pte_simple(&e, ppt_psbend);
			}
			const typeof(run[0][0][0]) *r = &run[per_thread ? 1 : 0][q][i];
			ptpc_spin(&e, spin, loop, after, r->tsc, r->n, r->mid, r->mid_tsc);
		}
		struct pd_auxtrace_event ev;
		memset(&ev, 0, sizeof(ev));
		/* perf takes the TSC's upper byte from the reference (the TSC when the
		 * data was read): without one it ignores the first TSC packet */
		ev.reference = 2000;
		ev.idx = q;
		ev.tid = per_thread ? 100 + 100 * q : (uint32_t)-1;
		ev.cpu = per_thread ? (uint32_t)-1 : q;
		int bad = e.failed;
		if (split) {
			bad = bad || pd_writer_auxtrace(w, &ev, e.buf, split) < 0;
			/* perf's offsets count the trace without the chunk's padding to 8 */
			ev.offset = ((split + 7) & ~(size_t)7) + 4096;
		}
		bad = bad || pd_writer_auxtrace(w, &ev, e.buf + split, pte_len(&e) - split) < 0;
		pte_free(&e);
		if (bad) {
			pd_writer_free(w);
			return -1;
		}
	}

	for (uint32_t pid = 100; pid <= 200; pid += 100) {
		ptgen_process(w, (struct ptgen_sid){ attr.sample_type, pid, 0, 1000, 0 }, "spinner", ptpc_time(10),
			      ptpc_time(20), PTGEN_BASE, 0x10000, spin_path);
	}
	/* who runs where: in (the task switching in), out (next: the idle task) */
	static const struct { uint32_t cpu, pid; uint64_t tsc; int out; } sw[] = {
		{ 0, 100, 900, 0 }, { 1, 200, 1050, 0 }, { 1, 200, 1400, 1 },
		{ 0, 100, 1500, 1 }, { 0, 200, 1550, 0 }, { 1, 100, 1600, 0 },
	};
	for (size_t i = 0; !per_thread && i < sizeof(sw) / sizeof(sw[0]); i++)
		ptpc_switch(w, &attr, sw[i].cpu, sw[i].pid, sw[i].tsc, sw[i].out);
	pd_writer_finished_round(w);
	return pd_writer_close(w) < 0 ? -1 : 0;
}

/* A long per-cpu trace (benchmarks, parallel decode): `slices` time slices on each of
 * the two cpus, each one call of spin(iters) with a TSC of its own; A and B take turns
 * on both cpus (slice s: cpu 0 runs A when s is even, cpu 1 the other one), cpu 1's
 * slices 50 TSC ticks after cpu 0's, so in time order the slices alternate between
 * the cpus.  spin is called 2 * slices times, leaf 2 * slices * iters times. */
static inline int ptpc_write_long(const char *path, const char *spin_path, long slices, long iters)
{
	uint64_t sym[3];
	struct perf_event_attr attr;
	struct pd_writer *w = ptpc_open(path, spin_path, 0, sym, &attr);
	if (!w)
		return -1;
	for (uint32_t q = 0; q < 2; q++) {
		struct pte e;
		pte_init(&e, (size_t)slices * ((size_t)iters * 4 + 64) + 64);
		for (long sl = 0; sl < slices; sl++) {
			uint64_t tsc = 1000 + (uint64_t)sl * 100 + q * 50;
			if (sl % 64 == 0) {	/* PSB+ now and then, as hardware writes them */
				pte_simple(&e, ppt_psb);
				pte_tsc(&e, tsc - 1);
				pte_simple(&e, ppt_psbend);
			}
			ptpc_spin(&e, sym[0], sym[1], sym[2], tsc, iters, 0, 0);
		}
		struct pd_auxtrace_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.reference = 1000 + (uint64_t)slices * 100 + 100;
		ev.idx = q;
		ev.tid = (uint32_t)-1;
		ev.cpu = q;
		int bad = e.failed || pd_writer_auxtrace(w, &ev, e.buf, pte_len(&e)) < 0;
		pte_free(&e);
		if (bad) {
			pd_writer_free(w);
			return -1;
		}
	}
	for (uint32_t pid = 100; pid <= 200; pid += 100)
		ptgen_process(w, (struct ptgen_sid){ attr.sample_type, pid, 0, 1000, 0 }, "spinner", ptpc_time(10),
			      ptpc_time(20), PTGEN_BASE, 0x10000, spin_path);
	for (long sl = 0; sl < slices; sl++)
		for (uint32_t q = 0; q < 2; q++)
			ptpc_switch(w, &attr, q, (sl + q) % 2 ? 200 : 100, 1000 + (uint64_t)sl * 100 + q * 50 - 10, 0);
	pd_writer_finished_round(w);
	return pd_writer_close(w) < 0 ? -1 : 0;
}

#endif
