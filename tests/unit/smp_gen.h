/* Test helper: perf.data files of samples in build/progs/ptspin (mapped at PTGEN_BASE
 * as process SMPG_PID "spinner"), written with src/perfdata/pd_write.h as perf record
 * writes them: one cpu-clock event, COMM + MMAP2, then PERF_RECORD_SAMPLEs with a
 * callchain and/or a branch stack.  Addresses come from ptspin's symbol table
 * (struct smpg_syms), so expected reports follow from `objdump -d ptspin`. */
#ifndef SMP_GEN_H
#define SMP_GEN_H

#include "pt_gen.h"

#define SMPG_PID 4242
#define SMPG_ID 1000

/* ptspin's functions and labels where the files map it */
struct smpg_syms {
	char path[1024];
	uint64_t spin, spin_loop, after_call, leaf, main;
};

static inline void smpg_syms(struct smpg_syms *s)
{
	snprintf(s->path, sizeof(s->path), "%s/build/progs/ptspin", XP_SRCDIR);
	int fd = open(s->path, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	s->spin = PTGEN_BASE + ptgen_sym(elf, "spin");
	s->spin_loop = PTGEN_BASE + ptgen_sym(elf, "spin_loop");
	s->after_call = PTGEN_BASE + ptgen_sym(elf, "spin_after_call");
	s->leaf = PTGEN_BASE + ptgen_sym(elf, "leaf");
	s->main = PTGEN_BASE + ptgen_sym(elf, "main");
	elf_end(elf);
	close(fd);
	assert_true(s->spin > PTGEN_BASE && s->leaf > PTGEN_BASE && s->main > PTGEN_BASE);
}

/* For a cmocka group setup: the test's directory (xp_test_tmp_setup), `data` (size n)
 * the path of a perf.data in it, *s ptspin's symbols.  0 or -1. */
static inline int smpg_setup(char *data, size_t n, struct smpg_syms *s)
{
	if (xp_test_tmp_setup(NULL) || xp_test_path(data, n, "perf.data"))
		return -1;
	smpg_syms(s);
	return 0;
}

/* A writer to `path` with one cpu-clock event of `sample_type` (IDENTIFIER, IP, TID,
 * TIME, CPU, PERIOD always; add CALLCHAIN and/or BRANCH_STACK) and the process mapped;
 * *st: the sample_type. */
static inline struct pd_writer *smpg_open(const char *path, const struct smpg_syms *s, uint64_t extra,
					  uint64_t *st)
{
	struct pd_writer *w;
	struct perf_event_attr attr;

	assert_int_equal(pd_writer_create(&w, path), 0);
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.size = PD_ATTR_SIZE;
	attr.sample_period = 1000;
	attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | extra;
	if (extra & PERF_SAMPLE_BRANCH_STACK)
		attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
	attr.sample_id_all = attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
	int idx = pd_writer_add_attr(w, &attr, "cpu-clock");
	assert_int_equal(idx, 0);
	assert_int_equal(pd_writer_add_id(w, idx, SMPG_ID, -1, SMPG_PID), 0);
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ attr.sample_type, SMPG_PID, 0, SMPG_ID, 0 }, "spinner",
				       10, 20, PTGEN_BASE, 0x10000, s->path), 0);
	*st = attr.sample_type;
	return w;
}

/* One sample of thread `tid` (of SMPG_PID) at `time`: ip, period, then the callchain
 * (PERF_SAMPLE_CALLCHAIN: `nchain` addresses after PERF_CONTEXT_USER, leaf first) and
 * the branch stack (PERF_SAMPLE_BRANCH_STACK: `nbr` entries, the latest first), as
 * st selects. */
static inline void smpg_sample(struct pd_writer *w, uint64_t st, uint32_t tid, uint64_t time, uint64_t ip,
			       uint64_t period, const uint64_t *chain, unsigned nchain,
			       const struct perf_branch_entry *br, unsigned nbr)
{
	uint64_t buf[512];
	unsigned n = 1;

	assert_true(nchain + 3 * nbr < 400);
	buf[n++] = SMPG_ID;				/* IDENTIFIER */
	buf[n++] = ip;					/* IP */
	buf[n++] = (uint64_t)tid << 32 | SMPG_PID;	/* TID: pid, tid */
	buf[n++] = time;				/* TIME */
	buf[n++] = 0;					/* CPU: cpu 0, res */
	buf[n++] = period;				/* PERIOD */
	if (st & PERF_SAMPLE_CALLCHAIN) {
		buf[n++] = nchain + 1;
		buf[n++] = PERF_CONTEXT_USER;
		for (unsigned i = 0; i < nchain; i++)
			buf[n++] = chain[i];
	}
	if (st & PERF_SAMPLE_BRANCH_STACK) {
		buf[n++] = nbr;
		memcpy(&buf[n], br, nbr * sizeof(*br));
		n += nbr * sizeof(*br) / 8;
	}
	struct perf_event_header *h = (void *)buf;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(n * 8);
	assert_int_equal(pd_writer_record(w, h), 0);
}

#endif
