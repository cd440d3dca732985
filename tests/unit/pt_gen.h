/* Test and benchmark helper: the Intel PT a user-space trace of build/progs/ptspin
 * running `spin(N)` contains (libipt's encoder, PSB+ every 4 KiB, no timing, no return
 * compression; or timed as perf's default intel_pt config records on hardware, see
 * struct ptgen_opts), written twice:
 *   OUT/trace.pt     raw, for `xptrace decode --pt` and the bare libipt loops;
 *   OUT/perf.data    per-thread intel_pt perf.data (COMM, MMAP2, AUXTRACE_INFO,
 *                    AUXTRACE) that perf script decodes (Debian's perf 6.1 does).
 * The binary is mapped at PTGEN_BASE in both; the trace has 6N + 2 instructions. */
#ifndef PT_GEN_H
#define PT_GEN_H

#include <fcntl.h>
#include <stddef.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/pd_write.h"
#include "pt_enc.h"

#define PTGEN_BASE 0x555555554000ULL
#define PTGEN_PMU_TYPE 8
#define PTGEN_PID 4242

static inline uint64_t ptgen_sym(Elf *elf, const char *name)
{
	Elf_Scn *scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB)
			continue;
		Elf_Data *d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			if (gelf_getsym(d, (int)i, &s) && strcmp(elf_strptr(elf, sh.sh_link, s.st_name), name) == 0)
				return s.st_value;
		}
	}
	fprintf(stderr, "ptgen: no symbol %s\n", name);
	return 0;
}

/* The sample_id fields a sideband record carries (sample_id_all). */
struct ptgen_sid {
	uint64_t sample_type;
	uint32_t pid;		/* tid too */
	uint64_t time;
	uint64_t id;
	uint32_t cpu;
};

/* A sideband record: `body` padded to 8 bytes, then the sample_id fields. */
static inline int ptgen_record(struct pd_writer *w, uint16_t type, uint16_t misc, const void *body,
			       size_t n, const struct ptgen_sid *sid)
{
	uint64_t buf[(4096 + 256) / 8];
	struct perf_event_header *h = (void *)buf;
	if (n > 4096)
		return -1;
	size_t sz = (sizeof(*h) + n + 7) & ~(size_t)7;
	memset(buf, 0, sizeof(buf));
	memcpy(h + 1, body, n);
	sz += pd_id_sample((char *)buf + sz, sid->sample_type, sid->pid, sid->pid, sid->time, sid->id, sid->cpu);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)sz;
	return pd_writer_record(w, h);
}

static inline int ptgen_comm(struct pd_writer *w, const char *comm, const struct ptgen_sid *sid)
{
	struct { uint32_t pid, tid; char comm[16]; } c = { sid->pid, sid->pid, "" };
	snprintf(c.comm, sizeof(c.comm), "%s", comm);
	return ptgen_record(w, PERF_RECORD_COMM, PERF_RECORD_MISC_USER, &c, 8 + strlen(c.comm) + 1, sid);
}

/* An r-x private mapping of `path` (what an executable or a jitdump mapping is). */
static inline int ptgen_mmap2(struct pd_writer *w, uint64_t addr, uint64_t len, uint64_t pgoff,
			      const char *path, const struct ptgen_sid *sid)
{
	struct {
		uint32_t pid, tid;
		uint64_t addr, len, pgoff;
		uint32_t maj, min;
		uint64_t ino, ino_generation;
		uint32_t prot, flags;
		char filename[4000];
	} mm;
	memset(&mm, 0, sizeof(mm));
	mm.pid = mm.tid = sid->pid;
	mm.addr = addr;
	mm.len = len;
	mm.pgoff = pgoff;
	mm.prot = 5;	/* PROT_READ | PROT_EXEC */
	mm.flags = 2;	/* MAP_PRIVATE */
	snprintf(mm.filename, sizeof(mm.filename), "%s", path);
	return ptgen_record(w, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, &mm,
			    offsetof(typeof(mm), filename) + strlen(mm.filename) + 1, sid);
}

/* A process: its COMM at `t_comm`, then `path` mapped r-x at `addr` at `t_map` (with
 * the pid, id and cpu of `sid`). */
static inline int ptgen_process(struct pd_writer *w, struct ptgen_sid sid, const char *comm, uint64_t t_comm,
				uint64_t t_map, uint64_t addr, uint64_t len, const char *path)
{
	sid.time = t_comm;
	if (ptgen_comm(w, comm, &sid) < 0)
		return -1;
	sid.time = t_map;
	return ptgen_mmap2(w, addr, len, 0, path, &sid);
}

/* How the trace is written (ptgen_write: the defaults, zeros). */
struct ptgen_opts {
	size_t psb_period;	/* bytes between PSB+ (0: 4096) */
	/* timed as perf records with tsc=1,mtc=1,mtc_period=3 (no CYC): each PSB+ holds a
	 * TSC, a TMA and a CBR, an MTC follows every 16th iteration's TNT (the crystal
	 * clock 8 << 3 ticks further on, a TSC tick being 2 crystal ticks:
	 * AUXTRACE_INFO's TSC:CTC ratio 200:100, with the max non-turbo ratio) */
	int timed;
	/* with timed: a CYC before each TIP (3 + i % 4 cycles) and TNT (2 + i % 3), as
	 * with perf's cyc=1 */
	int cyc;
};

#define PTGEN_MTC_FREQ 3
#define PTGEN_TSC_CTC_N 200
#define PTGEN_TSC_CTC_D 100

/* A PSB+ of the timed trace at crystal clock ctc. */
static inline void ptgen_timed_psb(struct pte *e, uint64_t ctc)
{
	struct pt_packet p = { .type = ppt_tma };
	pte_tsc(e, 1000000 + ctc * PTGEN_TSC_CTC_N / PTGEN_TSC_CTC_D);
	p.payload.tma.ctc = (uint16_t)ctc;
	pte_pkt(e, &p);
	struct pt_packet cbr = { .type = ppt_cbr };
	cbr.payload.cbr.ratio = 24;
	pte_pkt(e, &cbr);
}

static inline void ptgen_cyc(struct pte *e, uint64_t cycles)
{
	struct pt_packet p = { .type = ppt_cyc };
	p.payload.cyc.value = cycles;
	pte_pkt(e, &p);
}

static inline size_t ptgen_write_opts(const char *work, long n, const char *outdir, const struct ptgen_opts *o)
{
	char path[4096];
	size_t ret = 0;
	char *abs = realpath(work, NULL);
	int fd = open(work, O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
	if (!elf || !abs || n < 1) {
		fprintf(stderr, "ptgen: cannot read %s\n", work);
		goto out;
	}
	uint64_t spin = PTGEN_BASE + ptgen_sym(elf, "spin"), loop = PTGEN_BASE + ptgen_sym(elf, "spin_loop");
	uint64_t after = PTGEN_BASE + ptgen_sym(elf, "spin_after_call");
	if (spin == PTGEN_BASE || loop == PTGEN_BASE || after == PTGEN_BASE)
		goto out;
	/* the executable segment, for MMAP2 */
	size_t nph;
	uint64_t seg_off = 0, seg_vaddr = 0, seg_len = 0;
	elf_getphdrnum(elf, &nph);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
			seg_off = ph.p_offset & ~0xfffULL;
			seg_vaddr = ph.p_vaddr & ~0xfffULL;
			seg_len = ((ph.p_vaddr + ph.p_memsz + 0xfff) & ~0xfffULL) - seg_vaddr;
		}
	}

	/* the trace */
	struct pte e;
	size_t cap = (size_t)n * 5 + (size_t)n / 512 + 4096;
	size_t period = o->psb_period ? o->psb_period : 4096;
	uint64_t ctc = 0x1234;
	if (o->timed)
		cap += (size_t)n / 4 + (size_t)n / 8;
	if (o->cyc)
		cap += (size_t)n * 2;
	if (period < 4096)	/* a PSB+ (at most 64 bytes) each period at worst */
		cap += ((size_t)n * 16 / period + 1) * 64;
	pte_init(&e, cap);
	pte_simple(&e, ppt_psb);
	if (o->timed)
		ptgen_timed_psb(&e, ctc);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, spin);
	size_t last_psb = 0;
	for (long i = 1; i <= n; i++) {
		if (o->cyc)
			ptgen_cyc(&e, 3 + (uint64_t)i % 4);
		pte_ip(&e, ppt_tip, pt_ipc_update_16, after);	/* leaf's ret */
		if (o->cyc)
			ptgen_cyc(&e, 2 + (uint64_t)i % 3);
		pte_tnt(&e, i < n ? "T" : "N");			/* jnz spin_loop */
		if (o->timed && !(i % 16)) {
			struct pt_packet mtc = { .type = ppt_mtc };
			ctc += 8 << PTGEN_MTC_FREQ;
			mtc.payload.mtc.ctc = (uint8_t)(ctc >> PTGEN_MTC_FREQ);
			pte_pkt(&e, &mtc);
		}
		if (i < n && pte_len(&e) - last_psb >= period) {
			last_psb = pte_len(&e);
			pte_simple(&e, ppt_psb);
			if (o->timed)
				ptgen_timed_psb(&e, ctc);
			pte_mode64(&e);
			pte_ip(&e, ppt_fup, pt_ipc_sext_48, loop);
			pte_simple(&e, ppt_psbend);
		}
	}
	pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);	/* spin's ret leaves the trace */
	if (e.failed) {
		fprintf(stderr, "ptgen: encoder failed\n");
		goto out_pt;
	}
	size_t len = pte_len(&e);
	snprintf(path, sizeof(path), "%s/trace.pt", outdir);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(e.buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "ptgen: cannot write %s\n", path);
		goto out_pt;
	}

	/* the same trace in a per-thread intel_pt perf.data */
	struct pd_writer *w;
	snprintf(path, sizeof(path), "%s/perf.data", outdir);
	if (pd_writer_create(&w, path) < 0)
		goto out_pt;
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PTGEN_PMU_TYPE;
	attr.size = PD_ATTR_SIZE;
	attr.config = 1ULL | 1ULL << 11 | 1ULL << 13;	/* pt, noretcomp, branch */
	if (o->timed)	/* tsc, mtc, mtc_period */
		attr.config |= 1ULL << 10 | 1ULL << 9 | (uint64_t)PTGEN_MTC_FREQ << 14;
	if (o->cyc)
		attr.config |= 1ULL << 1;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	attr.sample_period = 1;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	attr.sample_id_all = 1;
	attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
	int idx = pd_writer_add_attr(w, &attr, "intel_pt//u");
	pd_writer_add_id(w, idx, 1000, -1, PTGEN_PID);
	pd_writer_feat_host(w);
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	priv[PD_PT_PMU_TYPE] = PTGEN_PMU_TYPE;
	priv[PD_PT_TIME_MULT] = 1;
	priv[PD_PT_CAP_USER_TIME_ZERO] = 1;
	priv[PD_PT_TSC_BIT] = 1ULL << 10;
	priv[PD_PT_NORETCOMP_BIT] = 1ULL << 11;
	priv[PD_PT_MTC_BIT] = 1ULL << 9;
	priv[PD_PT_MTC_FREQ_BITS] = o->timed ? 0xfULL << 14 : 14;
	priv[PD_PT_CYC_BIT] = 1ULL << 1;
	if (o->timed) {
		priv[PD_PT_TSC_CTC_N] = PTGEN_TSC_CTC_N;
		priv[PD_PT_TSC_CTC_D] = PTGEN_TSC_CTC_D;
		priv[PD_PT_MAX_NONTURBO_RATIO] = 24;
	}
	pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, PD_PT_INFO_WORDS);
	if (o->timed) {	/* perf's decoder converts TSCs with it (it crashes without) */
		struct pd_time_conv_event tc;
		memset(&tc, 0, sizeof(tc));
		tc.time_mult = 1;
		tc.cap_user_time_zero = 1;
		pd_writer_time_conv(w, &tc);
	}
	struct ptgen_sid sid = { attr.sample_type, PTGEN_PID, 0, 1000, 0 };
	ptgen_comm(w, "decode-speed-wo", &sid);
	ptgen_mmap2(w, PTGEN_BASE + seg_vaddr, seg_len, seg_off, abs, &sid);
	pd_writer_finished_round(w);
	/* AUXTRACE records of at most 1 MiB, like perf's per-read chunks */
	for (size_t off = 0; off < len;) {
		size_t k = len - off < (1u << 20) ? len - off : (1u << 20);
		struct pd_auxtrace_event ev;
		memset(&ev, 0, sizeof(ev));
		ev.offset = off;
		/* perf takes the TSC's upper bits from the reference (the TSC when the data
		 * was read): it crashes on 0 with TSC on */
		ev.reference = o->timed ? 1ULL << 40 : off;
		ev.idx = 0;
		ev.tid = PTGEN_PID;
		ev.cpu = (uint32_t)-1;
		if (pd_writer_auxtrace(w, &ev, e.buf + off, k) < 0)
			break;
		off += k;
	}
	pd_writer_finished_round(w);
	if (pd_writer_close(w) < 0)
		fprintf(stderr, "ptgen: cannot write %s\n", path);
	else
		ret = len;
out_pt:
	pte_free(&e);
out:
	if (elf)
		elf_end(elf);
	if (fd >= 0)
		close(fd);
	free(abs);
	return ret;
}

/* Returns the size of the PT stream written, 0 on failure (reported on stderr). */
static inline size_t ptgen_write(const char *work, long n, const char *outdir)
{
	struct ptgen_opts o = { 0 };
	return ptgen_write_opts(work, n, outdir, &o);
}

#endif
