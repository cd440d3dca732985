/* The packet walker (decoders/pt/dpt_fast.c) against libipt's block decoder alone:
 * the same events, field by field (pt_diff.h), on traces libipt's encoder writes for
 * a simulated run of hand-assembled code: plain stretches the walker takes, and the
 * packets it leaves to libipt (OVF, CYC, MTC, TSC, interrupts, PSB+ with more in
 * them, corruption) at random places, decoded whole, in time slices, and in the
 * pieces of a parallel decode.  Then every report, byte for byte, of `decode` with
 * --pt-decoder fast (the default) and libipt: on tests/unit/pt_gen.h's ptspin trace
 * (the bench's, raw and in a perf.data) and the shipped step trace, -j1 and -j2. */
#include <sys/stat.h>

#include "xp_test.h"

#include "pt_diff.h"
#include "pt_enc.h"
#include "pt_gen_test.h"

/* At BASE (upper bits set, so IP compression matters):
 * 0x00: dec ecx           ff c9
 * 0x02: jnz 0x10          75 0c
 * 0x04: call 0x20         e8 17 00 00 00
 * 0x09: jmp 0x00          eb f5
 * 0x0b: nop x5
 * 0x10: syscall           0f 05
 * 0x12: jmp *%rax         ff e0
 * 0x14: nop x12
 * 0x20: nop               90
 * 0x21: ret               c3 */
static const uint8_t code[] = {
	0xff, 0xc9, 0x75, 0x0c, 0xe8, 0x17, 0x00, 0x00, 0x00, 0xeb, 0xf5,
	0x90, 0x90, 0x90, 0x90, 0x90,
	0x0f, 0x05, 0xff, 0xe0,
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0x90, 0xc3,
};
#define BASE 0x7f1234561000ULL
/* instruction starts a TIP may go to */
static const uint8_t targets[] = { 0x00, 0x02, 0x04, 0x09, 0x0b, 0x0e, 0x10, 0x12, 0x20, 0x21 };

static char codefile[1024];
static struct ptgen_test pg;
/* the bench's trace timed as on hardware (pt_gen.h: TSC, TMA, CBR, MTCs), in timed/ */
static char timed_dir[1024], timed_trace[1100], timed_perfdata[1100];

static int setup(void **state)
{
	if (ptgen_test_setup(state, &pg, 20000) || xp_test_path(codefile, sizeof(codefile), "code.bin") ||
	    xp_test_path(timed_dir, sizeof(timed_dir), "timed"))
		return -1;
	struct ptgen_opts topt = { .timed = 1 };
	snprintf(timed_trace, sizeof(timed_trace), "%s/trace.pt", timed_dir);
	snprintf(timed_perfdata, sizeof(timed_perfdata), "%s/perf.data", timed_dir);
	if (mkdir(timed_dir, 0755) || !ptgen_write_opts(pg.spin, 20000, timed_dir, &topt))
		return -1;
	FILE *f = fopen(codefile, "wb");
	int ok = f && fwrite(code, 1, sizeof(code), f) == sizeof(code);
	return (f ? fclose(f) : 0) != 0 || !ok ? -1 : 0;
}

static struct dpt_image *make_image(void)
{
	struct dpt_image *img = dpt_image_new("test");
	assert_non_null(img);
	assert_int_equal(dpt_image_add_file(img, codefile, 0, sizeof(code), BASE), 0);
	return img;
}

/* What may be mixed into a run (bits of struct gen.mix). */
enum {
	MIX_OVF = 1, MIX_CYC = 2, MIX_MTC = 4, MIX_TSC = 8, MIX_IRQ = 16, MIX_PSB_TSC = 32,
	MIX_PAD = 64, MIX_TNT64 = 128,
	/* with gen.timed: a TMA with no TSC before it (libipt fails it) */
	MIX_TMA = 256,
	MIX_CBR = 512,		/* a frequency change */
};
#define MIX_KINDS 10

struct gen {
	struct pte e;
	uint64_t rnd;
	uint64_t ip;		/* offset in code of the next instruction */
	int enabled;
	uint64_t last_ip;	/* the encoder's IP compression state (what we chose) */
	uint64_t tnt;
	int ntnt, tnt_max;
	uint64_t tsc;
	unsigned mix;
	int psb_per_mille;	/* chance of a PSB+ before an instruction */
	int mix_per_mille;	/* chance of one of `mix` before an instruction */
	/* timed: the trace of a machine with MTC (perf's default): each PSB+ holds a TSC,
	 * then (most often) a TMA; MTCs (MIX_MTC) follow the crystal clock ctc, at
	 * MTCFreq mtc_freq, now and then jumping (wrap-arounds) */
	int timed;
	unsigned mtc_freq;
	uint32_t ctc;
	int mtc_per_mille;	/* chance of an MTC before an instruction */
};

static uint32_t rnd(struct gen *g, uint32_t n)
{
	g->rnd = g->rnd * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(g->rnd >> 33) % n;
}

static void flush_tnt(struct gen *g)
{
	if (!g->ntnt)
		return;
	struct pt_packet p = { .type = g->ntnt > 6 ? ppt_tnt_64 : ppt_tnt_8 };
	p.payload.tnt.payload = g->tnt;
	p.payload.tnt.bit_size = (uint8_t)g->ntnt;
	pte_pkt(&g->e, &p);
	g->tnt = 0;
	g->ntnt = 0;
}

/* An IP packet, compressed as much as the last IP allows (or not, at random). */
static void ip_pkt(struct gen *g, enum pt_packet_type t, uint64_t ip)
{
	enum pt_ip_compression ipc = pt_ipc_sext_48;
	if (g->last_ip && (g->last_ip >> 16) == (ip >> 16) && rnd(g, 2))
		ipc = pt_ipc_update_16;
	else if (g->last_ip && (g->last_ip >> 32) == (ip >> 32) && rnd(g, 2))
		ipc = pt_ipc_update_32;
	flush_tnt(g);
	pte_ip(&g->e, t, ipc, ip);
	g->last_ip = ip;
}

static void tma_pkt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_tma };
	p.payload.tma.ctc = (uint16_t)g->ctc;
	p.payload.tma.fc = (uint16_t)rnd(g, 512);
	pte_pkt(&g->e, &p);
}

/* A TSC; timed: then a TMA (or not: the MTCs up to the next TMA are ignored), and now
 * and then a TSC that goes back (a reset). */
static void tsc_pkt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_tsc };
	g->tsc += 1 + rnd(g, 5000);
	if (g->timed && !rnd(g, 20))
		g->tsc -= g->tsc / 2;
	p.payload.tsc.tsc = g->tsc;
	flush_tnt(g);
	pte_pkt(&g->e, &p);
	if (g->timed && rnd(g, 8))
		tma_pkt(g);
}

static void tsx_idle_pkt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_tsx;
	pte_pkt(&g->e, &p);
}

static void cbr_pkt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_cbr };
	p.payload.cbr.ratio = (uint8_t)(20 + rnd(g, 20));
	pte_pkt(&g->e, &p);
}

static void mtc_pkt(struct gen *g)
{
	struct pt_packet p = { .type = ppt_mtc };
	if (!g->timed) {
		p.payload.mtc.ctc = (uint8_t)rnd(g, 256);
	} else {
		uint32_t step = rnd(g, 10) ? 1 + rnd(g, 3) : rnd(g, 400);
		g->ctc += step << g->mtc_freq;
		p.payload.mtc.ctc = (uint8_t)(g->ctc >> g->mtc_freq);
	}
	pte_pkt(&g->e, &p);
}

static void psb(struct gen *g, int with_tsc)
{
	flush_tnt(g);
	pte_simple(&g->e, ppt_psb);
	g->last_ip = 0;
	if (with_tsc || g->timed)
		tsc_pkt(g);
	/* timed, as hardware: a CBR too, before or after the MODE.Exec (libipt's status
	 * updates come in their order), and a MODE.TSX or not (TSX-capable machines) */
	int cbr = g->timed ? (int)rnd(g, 3) : 0, tsx = g->timed ? (int)rnd(g, 3) : 0;
	if (cbr == 1)
		cbr_pkt(g);
	if (tsx == 1)
		tsx_idle_pkt(g);
	pte_mode64(&g->e);
	if (cbr == 2)
		cbr_pkt(g);
	if (tsx == 2)
		tsx_idle_pkt(g);
	if (g->enabled)
		ip_pkt(g, ppt_fup, BASE + g->ip);
	pte_simple(&g->e, ppt_psbend);
}

static void mix_one(struct gen *g)
{
	unsigned kinds[MIX_KINDS], n = 0;
	for (unsigned b = 0; b < MIX_KINDS; b++)
		if (g->mix & (1u << b))
			kinds[n++] = 1u << b;
	if (!n)
		return;
	struct pt_packet p;
	memset(&p, 0, sizeof(p));
	switch (kinds[rnd(g, n)]) {
	case MIX_OVF:
		if (!g->enabled)
			return;
		flush_tnt(g);
		pte_simple(&g->e, ppt_ovf);
		ip_pkt(g, ppt_fup, BASE + g->ip);
		return;
	case MIX_CYC:
		p.type = ppt_cyc;
		p.payload.cyc.value = 1 + rnd(g, 300);
		break;
	case MIX_MTC:
		flush_tnt(g);
		mtc_pkt(g);
		return;
	case MIX_TMA:
		flush_tnt(g);
		tma_pkt(g);
		return;
	case MIX_CBR:
		flush_tnt(g);
		cbr_pkt(g);
		return;
	case MIX_TSC:
		tsc_pkt(g);
		return;
	case MIX_IRQ:	/* an interrupt at ip, to somewhere */
		if (!g->enabled)
			return;
		ip_pkt(g, ppt_fup, BASE + g->ip);
		g->ip = targets[rnd(g, sizeof(targets))];
		ip_pkt(g, ppt_tip, BASE + g->ip);
		return;
	case MIX_PSB_TSC:
		psb(g, 1);
		return;
	case MIX_PAD:
		p.type = ppt_pad;
		break;
	default:
		return;
	}
	flush_tnt(g);
	pte_pkt(&g->e, &p);
}

/* Simulates `steps` instructions of the code from offset 0, writing their trace. */
static void gen_run(struct gen *g, int steps)
{
	g->ip = 0;
	g->enabled = 1;
	psb(g, 0);
	for (int s = 0; s < steps && !g->e.failed; s++) {
		if (g->enabled && (int)rnd(g, 1000) < g->psb_per_mille)
			psb(g, 0);
		if ((int)rnd(g, 1000) < g->mix_per_mille)
			mix_one(g);
		if (g->timed && (int)rnd(g, 1000) < g->mtc_per_mille) {
			flush_tnt(g);
			mtc_pkt(g);
		}
		if (!g->enabled) {	/* back from the kernel, at the syscall's next */
			flush_tnt(g);
			pte_mode64(&g->e);
			if (g->mix & MIX_TSC && rnd(g, 2))
				tsc_pkt(g);
			g->enabled = 1;
			g->ip = 0x12;
			ip_pkt(g, ppt_tip_pge, BASE + g->ip);
			continue;
		}
		switch (g->ip) {
		case 0x02: {
			int t = (int)rnd(g, 2);
			g->tnt = g->tnt << 1 | (uint64_t)t;
			if (++g->ntnt == g->tnt_max)
				flush_tnt(g);
			g->ip = t ? 0x10 : 0x04;
			break;
		}
		case 0x04: g->ip = 0x20; break;
		case 0x09: g->ip = 0x00; break;
		case 0x10:	/* syscall: tracing (user only) stops */
			flush_tnt(g);
			pte_ip(&g->e, ppt_tip_pgd, pt_ipc_suppressed, 0);
			g->enabled = 0;
			break;
		case 0x12:
		case 0x21:
			g->ip = targets[rnd(g, sizeof(targets))];
			ip_pkt(g, ppt_tip, BASE + g->ip);
			break;
		case 0x00: g->ip = 0x02; break;
		default: g->ip++; break;	/* the nops */
		}
	}
	flush_tnt(g);
	if (g->enabled && rnd(g, 2))
		pte_ip(&g->e, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

static void gen_init_timed(struct gen *g, uint64_t seed, unsigned mix, int steps, int timed, unsigned mtc_freq)
{
	memset(g, 0, sizeof(*g));
	g->rnd = seed;
	g->mix = mix;
	g->timed = timed;
	g->mtc_freq = mtc_freq;
	if (timed) {
		g->ctc = rnd(g, 1u << 20);
		g->mtc_per_mille = 20 + (int)rnd(g, 200);
	}
	g->tsc = 1000000;
	g->tnt_max = mix & MIX_TNT64 ? 47 : 6;
	g->psb_per_mille = 5 + (int)rnd(g, 60);
	g->mix_per_mille = mix ? 2 + (int)rnd(g, 20) : 0;
	pte_init(&g->e, (size_t)steps * 24 + 4096);
	gen_run(g, steps);
	assert_false(g->e.failed);
}

static void gen_init(struct gen *g, uint64_t seed, unsigned mix, int steps)
{
	gen_init_timed(g, seed, mix, steps, 0, 0);
}

static void assert_same(const uint8_t *buf, size_t len, struct dpt_image *img, const struct dpt_options *o,
			uint64_t slice, uint64_t *walked, uint64_t seed)
{
	long d = ptd_both(buf, len, img, o, slice, walked);
	if (d >= 0) {
		fprintf(stderr, "seed %" PRIu64 ": the walker and libipt differ at event %ld\n", seed, d);
		const char *dump = getenv("PTFAST_DUMP");	/* the trace, to look at */
		FILE *f = dump ? fopen(dump, "wb") : NULL;
		if (f) {
			fwrite(buf, 1, len, f);
			fclose(f);
		}
	}
	assert_true(d < 0);
}

/* The decode settings a run is compared in; mtc_freq >= 0: with MTCFreq and CPUID
 * 0x15's ratio, so that libipt makes time (and tick events) from MTC. */
static void variants_mtc(const uint8_t *buf, size_t len, struct dpt_image *img, uint64_t seed, uint64_t *walked,
			 int mtc_freq)
{
	struct dpt_options o;
	uint64_t w = 0;
	dpt_options_init(&o);
	o.pid = o.tid = 7;
	if (mtc_freq >= 0) {
		o.mtc_freq = (uint8_t)mtc_freq;
		o.cpuid_0x15_eax = 2 + (uint32_t)(seed % 3);
		o.cpuid_0x15_ebx = 84 + 2 * (uint32_t)(seed % 50);
	}
	assert_same(buf, len, img, &o, 0, &w, seed);
	*walked += w;
	o.strict = 1;
	assert_same(buf, len, img, &o, 0, NULL, seed);
	o.strict = 0;
	o.ignore = 1u << XEV_CALL | 1u << XEV_RETURN;
	assert_same(buf, len, img, &o, 0, NULL, seed);
	o.ignore = 0;
	/* perf.data's settings: ns, split at pauses, in slices */
	o.have_time_conv = 1;
	o.time_shift = 10;
	o.time_mult = 700;
	o.time_zero = 5;
	o.split_at_pause = 1;
	assert_same(buf, len, img, &o, 997, NULL, seed);
	o.split_at_pause = 0;
	assert_same(buf, len, img, &o, 3, NULL, seed);
	o.have_time_conv = 0;
	if (mtc_freq >= 0) {	/* perf.data gives the nominal ratio too (no CYC: no use) */
		o.nom_freq = 24;
		assert_same(buf, len, img, &o, 0, NULL, seed);
		o.nom_freq = 0;
	}
	/* the pieces of -j, some 300 bytes each */
	long d = ptd_pieces(buf, len, img, &o, 300, NULL);
	if (d >= 0)
		fprintf(stderr, "seed %" PRIu64 ": pieces differ at event %ld\n", seed, d);
	assert_true(d < 0);
}

static void variants(const uint8_t *buf, size_t len, struct dpt_image *img, uint64_t seed, uint64_t *walked)
{
	variants_mtc(buf, len, img, seed, walked, -1);
}

/* Plain runs: the walker takes every stretch but the last two (libipt ends a trace,
 * from the last PSB+ the walker took before it). */
static void test_plain_runs_are_walked(void **state)
{
	(void)state;
	struct dpt_image *img = make_image();
	for (uint64_t seed = 1; seed <= 40; seed++) {
		struct gen g;
		gen_init(&g, seed, seed & 1 ? MIX_TNT64 : 0, 3000);
		size_t len = pte_len(&g.e);
		uint64_t walked = 0;
		struct dpt_split s;
		assert_int_equal(dpt_split(g.e.buf, len, 1, false, &s), 0);
		variants(g.e.buf, len, img, seed, &walked);
		assert_true(s.npsbs > 5);
		assert_int_equal(walked, s.npsbs - 2);
		dpt_split_free(&s);
		pte_free(&g.e);
	}
	dpt_image_free(img);
}

/* Each kind of packet the walker leaves to libipt, mixed in at random. */
static void test_handover_cases(void **state)
{
	(void)state;
	static const unsigned mixes[] = {
		MIX_OVF, MIX_CYC, MIX_MTC, MIX_TSC, MIX_IRQ, MIX_PSB_TSC, MIX_PAD,
		MIX_OVF | MIX_IRQ | MIX_TSC | MIX_PAD | MIX_TNT64,
		MIX_CYC | MIX_MTC | MIX_TSC | MIX_PSB_TSC,
		/* a TMA after a PSB+ without TSC in a trace with TSCs: libipt fails it
		 * synchronised there, not having run up to it (fuzz_pt_diff) */
		MIX_TSC | MIX_TMA,
	};
	struct dpt_image *img = make_image();
	uint64_t walked = 0;
	for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++)
		for (uint64_t seed = 100; seed < 112; seed++) {
			struct gen g;
			gen_init(&g, seed * 31 + m, mixes[m], 2000);
			variants(g.e.buf, pte_len(&g.e), img, seed * 31 + m, &walked);
			pte_free(&g.e);
		}
	assert_true(walked > 0);	/* the stretches without them were the walker's */
	dpt_image_free(img);
}

/* Traces timed as perf records them on hardware (TSC, TMA, CBR, maybe MODE.TSX in each
 * PSB+, MTCs), decoded with the CPUID ratio, so that libipt makes time from MTC and tick events at
 * the branches whose time moved: MTCFreq 0 to 14 (TMA standing for an MTC up to 8),
 * CTC wrap-arounds and jumps, MTCs between a TSC and its TMA or with no TMA, TSCs
 * going back, and mixed with what the walker leaves to libipt.  The walker takes the
 * plain timed stretches. */
static void test_mtc_timing(void **state)
{
	(void)state;
	static const unsigned freqs[] = { 0, 3, 8, 9, 14 };
	static const unsigned mixes[] = {
		MIX_MTC, MIX_MTC | MIX_TNT64, MIX_MTC | MIX_TSC, MIX_MTC | MIX_TMA, MIX_MTC | MIX_OVF,
		MIX_MTC | MIX_IRQ | MIX_PAD, MIX_MTC | MIX_CBR, MIX_MTC | MIX_PSB_TSC | MIX_TSC | MIX_OVF | MIX_IRQ,
	};
	struct dpt_image *img = make_image();
	for (size_t fi = 0; fi < sizeof(freqs) / sizeof(freqs[0]); fi++)
		for (size_t m = 0; m < sizeof(mixes) / sizeof(mixes[0]); m++)
			for (uint64_t seed = 1; seed <= 4; seed++) {
				struct gen g;
				uint64_t sd = seed * 1009 + m * 31 + fi, walked = 0;
				gen_init_timed(&g, sd, mixes[m], 2000, 1, freqs[fi]);
				variants_mtc(g.e.buf, pte_len(&g.e), img, sd, &walked, (int)freqs[fi]);
				if (mixes[m] == MIX_MTC) {
					/* most stretches but the last two: libipt keeps a few after a
					 * PSB+ with its CBR first and no branch before it (a PSB+ right
					 * after another), and hands back at the next PSB+ it can */
					struct dpt_split sp;
					assert_int_equal(dpt_split(g.e.buf, pte_len(&g.e), 1, false, &sp), 0);
					assert_true(walked * 10 >= (sp.npsbs - 2) * 8);
					dpt_split_free(&sp);
				}
				pte_free(&g.e);
			}
	dpt_image_free(img);
}

/* Timing packets libipt's packet decoder refuses (a TMA with its reserved byte or FC
 * bits above 9 set, a CBR with its reserved byte set) in timed PSB+ and between: libipt
 * takes what they end, in slices too (the walker took such a PSB+: fuzz_pt_diff). */
static void test_bad_timing_packets(void **state)
{
	(void)state;
	struct dpt_image *img = make_image();
	for (uint64_t seed = 700; seed < 716; seed++) {
		struct gen g;
		gen_init_timed(&g, seed, MIX_MTC | MIX_TSC | MIX_CBR, 1500, 1, 3);
		size_t len = pte_len(&g.e), hit = 0;
		for (size_t i = 0; i + 7 <= len; i++) {
			uint8_t *q = g.e.buf + i;
			if (q[0] != 0x02 || (q[1] != 0x73 && q[1] != 0x03) || rnd(&g, 4))
				continue;
			if (q[1] == 0x03)
				q[3] = 1;
			else if (rnd(&g, 2))
				q[4] = (uint8_t)(1 + rnd(&g, 255));
			else
				q[6] |= 2;
			hit++;
		}
		assert_true(hit > 0);
		uint64_t walked = 0;
		variants_mtc(g.e.buf, len, img, seed, &walked, 3);
		pte_free(&g.e);
	}
	dpt_image_free(img);
}

/* A PSB+ after a FUP with no TIP yet (fuzz_pt_diff): libipt keeps the FUP as the
 * source of an asynchronous branch bound to the TIP after the second PSB+, and having
 * read past that PSB+ before handing out the first one's status update.  The walker
 * took over there on that update, as if nothing were waiting, and ended at the third
 * PSB+'s TNT ("no memory mapped at this address", 1 byte lost) where libipt fails the
 * return of `call 0x20` (the code never gets to the FUP's IP): its query finds the
 * third PSB+'s events first, at its PSBEND. */
static void psb3(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_mode64(e);
	pte_ip(e, ppt_fup, pt_ipc_sext_48, BASE + 0x04);
}

static void test_fup_waits_across_psb(void **state)
{
	(void)state;
	struct dpt_image *img = make_image();
	struct pte e;
	pte_init(&e, 4096);
	psb3(&e);
	pte_simple(&e, ppt_psbend);
	pte_ip(&e, ppt_fup, pt_ipc_update_16, BASE + 0x0b);
	psb3(&e);
	pte_simple(&e, ppt_psbend);
	pte_ip(&e, ppt_tip, pt_ipc_update_16, BASE + 0x14);
	psb3(&e);
	size_t psbend = pte_len(&e);
	pte_simple(&e, ppt_psbend);
	pte_tnt(&e, "NNNNN");
	assert_false(e.failed);
	size_t len = pte_len(&e);

	struct dpt_options o;
	dpt_options_init(&o);
	o.pid = o.tid = 7;
	struct ptd_rec r = { 0 };
	ptd_decode(e.buf, len, img, &o, 0, &r, NULL);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.ev[0].kind, XEV_BLOCK);
	assert_int_equal(r.ev[0].ip, BASE + 0x04);
	assert_int_equal(r.ev[0].insns, 1);
	assert_int_equal(r.ev[1].kind, XEV_CALL);
	assert_int_equal(r.ev[1].addr, BASE + 0x20);
	assert_int_equal(r.ev[2].kind, XEV_BLOCK);
	assert_int_equal(r.ev[2].ip, BASE + 0x20);
	assert_int_equal(r.ev[2].end, BASE + 0x21);
	assert_int_equal(r.ev[2].insns, 2);
	assert_int_equal(r.ev[3].kind, XEV_GAP);
	assert_string_equal(r.ev[3].reason, pt_errstr(pte_bad_query));
	assert_int_equal(r.ev[3].offset, psbend);
	assert_int_equal(r.ev[3].lost, len - psbend);
	free(r.ev);
	uint64_t walked = 0;
	variants(e.buf, len, img, 0, &walked);
	pte_free(&e);
	dpt_image_free(img);
}

/* Bytes flipped anywhere: both report the same gaps and resume alike. */
static void test_corruption(void **state)
{
	(void)state;
	struct dpt_image *img = make_image();
	for (uint64_t seed = 500; seed < 560; seed++) {
		struct gen g;
		gen_init(&g, seed, seed & 1 ? MIX_IRQ | MIX_OVF : 0, 1500);
		size_t len = pte_len(&g.e);
		for (int k = 0; k < 1 + (int)(seed % 4); k++)
			g.e.buf[rnd(&g, (uint32_t)len)] ^= (uint8_t)(1 + rnd(&g, 255));
		uint64_t walked = 0;
		variants(g.e.buf, len, img, seed, &walked);
		pte_free(&g.e);
	}
	dpt_image_free(img);
}

/* The raw trace `reports_equal(NULL, ...)` decodes: pg.trace, or the timed one with
 * its MTCFreq and ratio (ptxed's options). */
static int raw_timed;

/* The report of `view` in `format` on `jobs` threads with --pt-decoder `dec`, of the
 * raw trace (input NULL) or a perf.data or trace directory. */
static char *report(const char *input, const char *view, const char *format, const char *jobs, const char *dec)
{
	const char *out;
	/* inline frames are libdw's reading of DWARF, the same for both decoders and most of
	 * a step trace's decode (libc6-dbg): left out where a view has them */
	static const char *const inl[] = { "functions", "calltree", "calls", "annotate", "routines" };
	const char *noinl = NULL;
	for (size_t i = 0; i < sizeof(inl) / sizeof(inl[0]); i++)
		if (!strncmp(view, inl[i], strlen(inl[i])))
			noinl = "no-inline";
	int rc = input ? xp_test_engine(&out, input, view, "format", format, "jobs", jobs, "pt-decoder", dec,
					noinl, "", NULL) :
		!raw_timed ? xp_test_engine(&out, NULL, view, "pt", pg.trace, "elf", pg.elfarg, "format", format,
					    "jobs", jobs, "pt-decoder", dec, NULL) :
		xp_test_engine(&out, NULL, view, "pt", timed_trace, "elf", pg.elfarg, "mtc-freq", "3",
			       "cpuid-0x15.eax", "100", "cpuid-0x15.ebx", "200", "tsc-hz", "2000000000", "format",
			       format, "jobs", jobs, "pt-decoder", dec, NULL);
	assert_int_equal(rc, 0);
	char *copy = strdup(out);
	assert_non_null(copy);
	return copy;
}

/* The ASan build compares the -j2 reports only, the plain build both: those 104
 * decodes under ASan were the suite's longest unit test (30 CPU s). */
#ifdef __SANITIZE_ADDRESS__
#define REPORT_JOBS_FIRST 2
#else
#define REPORT_JOBS_FIRST 1
#endif

static void reports_equal(const char *input, const char *annotate)
{
	static const struct { const char *view, *format; } cases[] = {
		{ "blocks", "text" }, { "blocks", "jsonl" }, { "blocks", "callgrind" }, { "functions", "text" },
		{ "functions", "jsonl" }, { "calltree", "text" }, { "calltree", "callgrind" }, { "insn", "text" },
		{ "insn", "jsonl" }, { "annotate", "text" }, { "calls", "jsonl" }, { "ranges", "text" },
		{ "routines", "text" },
	};
	setenv("XPTRACE_PIECE_SIZE", "4096", 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *view = strcmp(cases[i].view, "annotate") ? cases[i].view : annotate;
		for (int j = REPORT_JOBS_FIRST; j <= 2; j++) {
			const char *jobs = j == 1 ? "1" : "2";
			char *fast = report(input, view, cases[i].format, jobs, "fast");
			char *lib = report(input, view, cases[i].format, jobs, "libipt");
			assert_true(strlen(lib) > 100);
			if (strcmp(fast, lib) != 0)
				fail_msg("%s --%s --format %s -j%s: --pt-decoder fast differs from libipt",
					 input ? input : "raw", cases[i].view, cases[i].format, jobs);
			free(fast);
			free(lib);
		}
	}
	unsetenv("XPTRACE_PIECE_SIZE");
}

static void test_reports_raw(void **state)
{
	(void)state;
	reports_equal(NULL, "annotate=spin");
}

static void test_reports_perf_data(void **state)
{
	(void)state;
	reports_equal(pg.perfdata, "annotate=spin");
}

/* perf.data gives the TSC:CTC ratio: libipt makes time from MTC and tick events, the
 * walker as it. */
static void test_reports_timed_perf_data(void **state)
{
	(void)state;
	reports_equal(timed_perfdata, "annotate=spin");
}

/* The same raw, with ptxed's options for MTC. */
static void test_reports_timed_raw(void **state)
{
	(void)state;
	raw_timed = 1;
	reports_equal(NULL, "annotate=spin");
	raw_timed = 0;
}

static void test_reports_step_trace(void **state)
{
	(void)state;
	reports_equal(XP_SRCDIR "/traces/step-basic", "annotate=main");
}

static size_t code_fallback(void *ctx, uint64_t addr, uint8_t *buf, size_t n)
{
	(void)ctx;
	if (addr < BASE || addr - BASE >= sizeof(code))
		return 0;
	size_t k = sizeof(code) - (addr - BASE) < n ? sizeof(code) - (addr - BASE) : n;
	memcpy(buf, code + (addr - BASE), k);
	return k;
}

/* Code the image's fallback gives (JIT code, anonymous mappings: it may change with
 * the time) is libipt's: the walker takes no stretch of it, the events are the same. */
static void test_fallback_code_is_libipts(void **state)
{
	(void)state;
	struct dpt_image *img = dpt_image_new("test");
	assert_non_null(img);
	dpt_image_set_fallback(img, code_fallback, NULL);
	struct gen g;
	gen_init(&g, 77, 0, 3000);
	uint64_t walked = 1;
	struct dpt_options o;
	dpt_options_init(&o);
	assert_same(g.e.buf, pte_len(&g.e), img, &o, 0, &walked, 77);
	assert_int_equal(walked, 0);
	pte_free(&g.e);
	dpt_image_free(img);
}

/* The walker takes the bench's trace: all its PSB+ stretches but the first (its PSB+
 * has no IP: tracing starts after it, with a TIP.PGE; libipt hands over at the next)
 * and the last two. */
static void test_bench_trace_is_walked(void **state)
{
	(void)state;
	FILE *f = fopen(pg.trace, "rb");
	assert_non_null(f);
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct dpt_image *img = dpt_image_new("test");
	assert_int_equal(dpt_image_add_elf(img, pg.spin, 1, PTGEN_BASE, NULL, NULL), 0);
	struct dpt_split s;
	assert_int_equal(dpt_split(buf, len, 1, false, &s), 0);
	struct dpt_options o;
	dpt_options_init(&o);
	uint64_t walked = 0;
	assert_same(buf, len, img, &o, 0, &walked, 0);
	assert_true(s.npsbs >= 10);
	assert_int_equal(walked, s.npsbs - 3);
	dpt_split_free(&s);
	dpt_image_free(img);
}

/* The timed bench trace with its ratio: the walker takes it as the untimed one (all its
 * stretches but the first and the last two), the events libipt's, ticks included. */
static void test_timed_bench_trace_is_walked(void **state)
{
	(void)state;
	FILE *f = fopen(timed_trace, "rb");
	assert_non_null(f);
	static uint8_t buf[1 << 20];
	size_t len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	struct dpt_image *img = dpt_image_new("test");
	assert_int_equal(dpt_image_add_elf(img, pg.spin, 1, PTGEN_BASE, NULL, NULL), 0);
	struct dpt_split s;
	assert_int_equal(dpt_split(buf, len, 1, false, &s), 0);
	struct dpt_options o;
	dpt_options_init(&o);
	o.mtc_freq = PTGEN_MTC_FREQ;
	o.cpuid_0x15_eax = PTGEN_TSC_CTC_D;
	o.cpuid_0x15_ebx = PTGEN_TSC_CTC_N;
	o.nom_freq = 24;
	uint64_t walked = 0;
	assert_same(buf, len, img, &o, 0, &walked, 0);
	assert_true(s.npsbs >= 10);
	assert_int_equal(walked, s.npsbs - 3);
	o.have_time_conv = 1;	/* perf.data's: in slices, split at pauses */
	o.time_mult = 1;
	o.split_at_pause = 1;
	assert_same(buf, len, img, &o, 500, NULL, 0);
	dpt_split_free(&s);
	dpt_image_free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain_runs_are_walked),
		cmocka_unit_test(test_handover_cases),
		cmocka_unit_test(test_mtc_timing),
		cmocka_unit_test(test_bad_timing_packets),
		cmocka_unit_test(test_fup_waits_across_psb),
		cmocka_unit_test(test_corruption),
		cmocka_unit_test(test_fallback_code_is_libipts),
		cmocka_unit_test(test_bench_trace_is_walked),
		cmocka_unit_test(test_timed_bench_trace_is_walked),
		cmocka_unit_test(test_reports_raw),
		cmocka_unit_test(test_reports_perf_data),
		cmocka_unit_test(test_reports_timed_perf_data),
		cmocka_unit_test(test_reports_timed_raw),
		cmocka_unit_test(test_reports_step_trace),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
