/* The PT decoder against traces made by libipt's encoder over hand-assembled code:
 * exact event sequences for both decoders, gaps and resynchronisation. */
#include "xp_test.h"

#include <unistd.h>

#include "decoders/pt/dpt.h"
#include "pt_enc.h"

/* 0x1000: mov ecx,3 ; 0x1005: dec ecx ; 0x1007: jnz 0x1005 ; 0x1009: call 0x1010 ;
 * 0x100e: ret ; 0x100f: nop ; 0x1010: ret */
static const uint8_t code[] = {
	0xb9, 0x03, 0x00, 0x00, 0x00,
	0xff, 0xc9,
	0x75, 0xfc,
	0xe8, 0x02, 0x00, 0x00, 0x00,
	0xc3,
	0x90,
	0xc3,
};
#define BASE 0x1000

struct rec {
	char text[65536];
	size_t len;
	int n;
};

static int rec_fn(void *ctx, const struct xev *ev)
{
	struct rec *r = ctx;
	char line[160];
	static const char *kinds[] = { "BLOCK", "BRANCH", "CALL", "RETURN", "SAMPLE", "GAP",
				       "ENABLE", "DISABLE", "INTERRUPT", "TIME", "END", "POWER", "TSX" };
	switch (ev->kind) {
	case XEV_BLOCK:
		snprintf(line, sizeof(line), "BLOCK %#lx-%#lx %lu%s\n", (unsigned long)ev->ip,
			 (unsigned long)ev->end, (unsigned long)ev->insns,
			 ev->bytes ? (ev->nbytes == 0 ? " nobytes" : "") : "");
		break;
	case XEV_BRANCH: case XEV_CALL: case XEV_RETURN: case XEV_INTERRUPT:
		snprintf(line, sizeof(line), "%s %#lx->%#lx%s%s\n", kinds[ev->kind],
			 (unsigned long)ev->ip, (unsigned long)ev->addr,
			 ev->flags & XEV_F_COND ? " cond" : "",
			 ev->flags & XEV_F_COND ? (ev->flags & XEV_F_TAKEN ? " T" : " N") : "");
		break;
	case XEV_GAP:
		snprintf(line, sizeof(line), "GAP @%lu lost %lu (%s)\n", (unsigned long)ev->offset,
			 (unsigned long)ev->lost, ev->reason);
		break;
	default:
		snprintf(line, sizeof(line), "%s %#lx %#lx\n", kinds[ev->kind],
			 (unsigned long)ev->ip, (unsigned long)ev->addr);
		break;
	}
	size_t l = strlen(line);
	if (r->len + l < sizeof(r->text)) {
		memcpy(r->text + r->len, line, l + 1);
		r->len += l;
	}
	r->n++;
	return 0;
}

static char codefile[1024];

static struct dpt_image *make_image(void)
{
	struct dpt_image *img = dpt_image_new("test");
	assert_non_null(img);
	assert_int_equal(dpt_image_add_file(img, codefile, 0, sizeof(code), BASE), 0);
	return img;
}

/* the code, in a file of the test's directory */
static int setup(void **state)
{
	if (xp_test_tmp_setup(state) || xp_test_path(codefile, sizeof(codefile), "code.bin"))
		return -1;
	FILE *f = fopen(codefile, "wb");
	int ok = f && fwrite(code, 1, sizeof(code), f) == sizeof(code);
	return (f ? fclose(f) : 0) == 0 && ok ? 0 : -1;
}

/* One PSB segment running the loop three times, the call and both returns. */
static void encode_run(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_simple(e, ppt_psbend);
	pte_mode64(e);
	pte_ip(e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	pte_tnt(e, "TTN");
	pte_ip(e, ppt_tip, pt_ipc_sext_48, 0x1010 - 0x10 + 0xe);	/* ret -> 0x100e */
	pte_ip(e, ppt_tip_pgd, pt_ipc_suppressed, 0);
}

static const char expect_blocks[] =
	"ENABLE 0x1000 0\n"
	"BLOCK 0x1000-0x1007 3\n"
	"BRANCH 0x1007->0x1005 cond T\n"
	"BLOCK 0x1005-0x1007 2\n"
	"BRANCH 0x1007->0x1005 cond T\n"
	"BLOCK 0x1005-0x1007 2\n"
	"BRANCH 0x1007->0x1009 cond N\n"
	"BLOCK 0x1009-0x1009 1\n"
	"CALL 0x1009->0x1010\n"
	"BLOCK 0x1010-0x1010 1\n"
	"RETURN 0x1010->0x100e\n"
	"BLOCK 0x100e-0x100e 1\n"
	"DISABLE 0 0\n";

static void test_blocks_exact(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 256);
	encode_run(&e);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, &st), 0);
	assert_string_equal(r.text, expect_blocks);
	assert_int_equal(st.insns, 10);
	assert_int_equal(st.blocks, 6);
	assert_int_equal(st.gaps, 0);
	dpt_image_free(img);
	pte_free(&e);
}

/* A PSB+ can fall anywhere, here between the dec and the jnz of the second iteration:
 * its status updates restate the state, so the block is not split (the same blocks as
 * without it), or the tallies would split every execution of the block. */
static void test_psb_inside_a_block(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;

	pte_init(&e, 256);
	pte_simple(&e, ppt_psb);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	pte_tnt(&e, "T");
	pte_simple(&e, ppt_psb);
	pte_mode64(&e);
	pte_ip(&e, ppt_fup, pt_ipc_sext_48, 0x1007);
	pte_simple(&e, ppt_psbend);
	pte_tnt(&e, "TN");
	pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
	pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, NULL), 0);
	assert_string_equal(r.text, expect_blocks);
	dpt_image_free(img);
	pte_free(&e);
}

static void test_insns_exact(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 256);
	encode_run(&e);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	opt.mode = DPT_INSNS;
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, &st), 0);
	assert_string_equal(r.text,
		"ENABLE 0x1000 0\n"
		"BLOCK 0x1000-0x1000 1\n"
		"BLOCK 0x1005-0x1005 1\n"
		"BLOCK 0x1007-0x1007 1\n"
		"BRANCH 0x1007->0x1005 cond T\n"
		"BLOCK 0x1005-0x1005 1\n"
		"BLOCK 0x1007-0x1007 1\n"
		"BRANCH 0x1007->0x1005 cond T\n"
		"BLOCK 0x1005-0x1005 1\n"
		"BLOCK 0x1007-0x1007 1\n"
		"BRANCH 0x1007->0x1009 cond N\n"
		"BLOCK 0x1009-0x1009 1\n"
		"CALL 0x1009->0x1010\n"
		"BLOCK 0x1010-0x1010 1\n"
		"RETURN 0x1010->0x100e\n"
		"BLOCK 0x100e-0x100e 1\n"
		"DISABLE 0 0\n");	/* the TIP.PGD without an IP at the ret, as blocks have it */
	assert_int_equal(st.insns, 10);
	dpt_image_free(img);
	pte_free(&e);
}

/* The first segment branches into unmapped memory: a gap from the error to the
 * second PSB, whose segment decodes completely. */
static void test_gap_and_resync(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 512);
	pte_simple(&e, ppt_psb);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, 0x5000);	/* nothing mapped there */
	pte_tnt(&e, "TTTT");
	size_t second = pte_len(&e);
	encode_run(&e);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, &st), 0);
	char expect[2048];
	/* libipt reports the error at the packet after TIP.PGE it had read ahead to */
	uint64_t err_off = st.first_error_offset;
	assert_true(err_off > 16 && err_off < second);
	snprintf(expect, sizeof(expect),
		 "ENABLE 0x5000 0\n"
		 "GAP @%lu lost %lu (%s)\n%s",
		 (unsigned long)err_off, (unsigned long)(second - err_off),
		 pt_errstr(pte_nomap), expect_blocks);
	assert_string_equal(r.text, expect);
	assert_int_equal(st.gaps, 1);
	assert_int_equal(st.lost_bytes, second - err_off);
	assert_int_equal(st.insns, 10);
	dpt_image_free(img);
	pte_free(&e);
}

/* Garbage before the first PSB is reported as lost, not silently skipped. */
static void test_leading_garbage(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 256);
	pte_tnt(&e, "TT");
	pte_tnt(&e, "TN");
	size_t lead = pte_len(&e);
	encode_run(&e);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, &st), 0);
	char expect[2048];
	snprintf(expect, sizeof(expect), "GAP @0 lost %zu (no PSB at the start of the trace)\n%s",
		 lead, expect_blocks);
	assert_string_equal(r.text, expect);
	dpt_image_free(img);
	pte_free(&e);
}

/* Every single-byte corruption and every truncation of a two-segment trace decodes
 * without crashing, and the intact second segment is never lost when the damage is
 * confined to the first one. */
static void test_corruption_never_crashes(void **state)
{
	(void)state;
	struct pte e;
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 512);
	encode_run(&e);
	size_t second = pte_len(&e);
	encode_run(&e);
	size_t len = pte_len(&e);
	(void)second;
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	uint8_t *copy = malloc(len);
	int with_gap = 0;
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit++) {
			struct rec r = { .len = 0 };
			struct xev_sink sink = { rec_fn, &r, NULL };
			memcpy(copy, e.buf, len);
			copy[i] ^= (uint8_t)(1u << bit);
			assert_int_equal(dpt_decode(copy, len, img, &opt, &sink, &st), 0);
			/* a flipped bit may also make a different valid trace whose wrong
			 * state only fails later: only the accounting is exact here */
			int ngap = 0;
			for (const char *p = r.text; (p = strstr(p, "GAP ")); p++)
				ngap++;
			assert_int_equal(ngap, st.gaps);
			assert_true(st.lost_bytes <= len);
			with_gap += st.gaps > 0;
		}
	}
	for (size_t cut = 0; cut < len; cut++) {
		struct rec r = { .len = 0 };
		struct xev_sink sink = { rec_fn, &r, NULL };
		assert_int_equal(dpt_decode(e.buf, cut, img, &opt, &sink, &st), 0);
		if (cut >= second + 16)
			assert_true(st.insns >= 10);
	}
	assert_true(with_gap > (int)len);	/* most flips are detected */
	free(copy);
	dpt_image_free(img);
	pte_free(&e);
}

static void test_strict_stops(void **state)
{
	(void)state;
	struct pte e;
	struct rec r = { .len = 0 };
	struct xev_sink sink = { rec_fn, &r, NULL };
	struct dpt_options opt;
	struct dpt_stats st;

	pte_init(&e, 512);
	pte_simple(&e, ppt_psb);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, 0x5000);
	pte_tnt(&e, "TT");
	encode_run(&e);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	opt.strict = 1;
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, &st), DPT_EDECODE);
	assert_int_equal(st.first_error, -pte_nomap);
	assert_int_equal(st.insns, 0);
	assert_int_equal(st.gaps, 1);
	dpt_image_free(img);
	pte_free(&e);
}

static uint64_t times[64];
static int ntimes;

static int times_fn(void *ctx, const struct xev *ev)
{
	(void)ctx;
	if (ev->kind == XEV_BLOCK && ntimes < 64)
		times[ntimes++] = ev->time;
	return 0;
}

static int nstop;

static int stop_fn(void *ctx, const struct xev *ev)
{
	(void)ctx;
	return ev->kind == XEV_BLOCK && ++nstop == 2 ? 42 : 0;
}

static void test_tsc_to_perf_time(void **state)
{
	(void)state;
	struct pte e;
	struct dpt_options opt;
	struct xev_sink sink = { times_fn, NULL, NULL };
	ntimes = 0;
	pte_init(&e, 256);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 1000000);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	pte_tnt(&e, "TTN");
	pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
	pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	opt.have_time_conv = 1;
	opt.time_shift = 10;
	opt.time_mult = 512;	/* ns = tsc / 2 */
	opt.time_zero = 7;
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, NULL), 0);
	assert_int_equal(ntimes, 6);
	assert_int_equal(times[0], 500007);
	assert_int_equal(times[5], 500007);
	dpt_image_free(img);
	pte_free(&e);
}

/* dpt_run pauses before the first event later than its limit and goes on from there:
 * three runs of the code at TSC 100, 200 and 300, decoded in steps, give the one-shot
 * decode's events, each step ending where the next timestamp starts.  (Each run ends
 * with a TIP.PGD carrying the ret's target: after a suppressed-IP TIP.PGD at a ret,
 * libipt's instruction decoder reports "trace stream does not match query" on the
 * packets that follow, which the block decoder takes.) */
static void test_run_pauses_at_the_limit(void **state)
{
	(void)state;
	struct pte e;
	pte_init(&e, 512);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 100);
	pte_simple(&e, ppt_psbend);
	for (uint64_t t = 100; t <= 300; t += 100) {
		if (t > 100)
			pte_tsc(&e, t);
		pte_mode64(&e);
		pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
		pte_tnt(&e, "TTN");
		pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
		pte_ip(&e, ppt_tip_pgd, pt_ipc_sext_48, 0x2000);	/* the ret leaves the traced range */
	}
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	for (int mode = DPT_BLOCKS; mode <= DPT_INSNS; mode++) {
		struct dpt_options opt;
		dpt_options_init(&opt);
		opt.mode = (enum dpt_mode)mode;
		static struct rec whole, steps;
		memset(&whole, 0, sizeof(whole));
		memset(&steps, 0, sizeof(steps));
		struct xev_sink ws = { .fn = rec_fn, .ctx = &whole }, ss = { .fn = rec_fn, .ctx = &steps };
		assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &ws, NULL), 0);
		int per_run = whole.n / 3;
		assert_int_equal(whole.n, 3 * per_run);

		struct dpt_dec *d;
		assert_int_equal(dpt_open(&d, e.buf, pte_len(&e), img, &opt), 0);
		assert_int_equal(dpt_time(d), 0);
		static const uint64_t limit[] = { 0, 99, 100, 250, 299 };
		static const uint64_t paused_at[] = { 100, 100, 200, 300, 300 };
		static const int events[] = { 0, 0, 1, 2, 2 };	/* runs emitted */
		for (size_t i = 0; i < 5; i++) {
			assert_int_equal(dpt_run(d, &ss, limit[i]), 0);
			assert_int_equal(dpt_time(d), paused_at[i]);
			assert_int_equal(steps.n, events[i] * per_run);
		}
		assert_int_equal(dpt_run(d, &ss, UINT64_MAX), 0);
		assert_int_equal(dpt_time(d), UINT64_MAX);
		assert_string_equal(steps.text, whole.text);
		assert_int_equal(dpt_dec_stats(d)->insns, 30);
		/* over: nothing more */
		assert_int_equal(dpt_run(d, &ss, UINT64_MAX), 0);
		assert_int_equal(steps.n, 3 * per_run);
		dpt_close(d);
	}
	dpt_image_free(img);
	pte_free(&e);
}

/* A pause between a conditional branch and its target: the block decoder writes the
 * branch's event ahead into its array of events, and the delivery at the pause must
 * keep it for the resume.  The interrupt (FUP at the target, time 200) comes before
 * the target's block, so the branch is still waiting when dpt_run stops at limit 150. */
static void test_pause_with_branch_pending(void **state)
{
	(void)state;
	struct pte e;
	pte_init(&e, 256);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 100);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	pte_tnt(&e, "T");
	pte_tsc(&e, 200);
	pte_ip(&e, ppt_fup, pt_ipc_sext_48, 0x1005);
	pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
	pte_ip(&e, ppt_tip_pgd, pt_ipc_sext_48, 0x2000);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	struct dpt_options opt;
	dpt_options_init(&opt);
	static struct rec whole, steps;
	memset(&whole, 0, sizeof(whole));
	memset(&steps, 0, sizeof(steps));
	struct xev_sink ws = { rec_fn, &whole, NULL }, ss = { rec_fn, &steps, NULL };
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &ws, NULL), 0);
	assert_string_equal(whole.text, "ENABLE 0x1000 0\n"
					"BLOCK 0x1000-0x1007 3\n"
					"BRANCH 0x1007->0x1005 cond T\n"
					"INTERRUPT 0x1005->0x100e\n"
					"BLOCK 0x100e-0x100e 1\n"
					"RETURN 0x100e->0x2000\n"
					"DISABLE 0 0x2000\n");
	struct dpt_dec *d;
	assert_int_equal(dpt_open(&d, e.buf, pte_len(&e), img, &opt), 0);
	assert_int_equal(dpt_run(d, &ss, 150), 0);
	assert_int_equal(dpt_time(d), 200);
	assert_string_equal(steps.text, "ENABLE 0x1000 0\nBLOCK 0x1000-0x1007 3\n");
	assert_int_equal(dpt_run(d, &ss, UINT64_MAX), 0);
	assert_string_equal(steps.text, whole.text);
	dpt_close(d);
	dpt_image_free(img);
	pte_free(&e);
}

static uint64_t cyc_of[16], cyc_ip[16];
static uint32_t cyc_flags[16];
static int ncyc;

static int cyc_fn(void *ctx, const struct xev *ev)
{
	(void)ctx;
	if (ev->kind == XEV_BLOCK && ncyc < 16) {
		cyc_ip[ncyc] = ev->ip;
		cyc_flags[ncyc] = ev->flags;
		cyc_of[ncyc++] = ev->cycles;
	}
	return 0;
}

static void pte_cyc(struct pte *e, uint64_t v)
{
	struct pt_packet p = { .type = ppt_cyc };
	p.payload.cyc.value = v;
	pte_pkt(e, &p);
}

/* CYC before each TNT/TIP: one block per CYC is exact; a CYC covering several blocks
 * is split by instruction count and marked approximate. */
static void test_cyc_cycles(void **state)
{
	(void)state;
	struct pte e;
	struct dpt_options opt;
	struct xev_sink sink = { cyc_fn, NULL, NULL };
	struct pt_packet cbr = { .type = ppt_cbr };

	pte_init(&e, 256);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 1000);
	cbr.payload.cbr.ratio = 10;
	pte_pkt(&e, &cbr);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	pte_cyc(&e, 7);
	pte_tnt(&e, "T");
	pte_cyc(&e, 5);
	pte_tnt(&e, "T");
	pte_cyc(&e, 11);
	pte_tnt(&e, "TN");
	pte_cyc(&e, 3);
	pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
	pte_cyc(&e, 2);
	pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	opt.nom_freq = 10;	/* = CBR: one TSC tick per cycle */
	ncyc = 0;
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, NULL), 0);
	/* the loop runs 4 times here (T, T, T, N) */
	static const uint64_t ips[] = { 0x1000, 0x1005, 0x1005, 0x1005, 0x1009, 0x1010, 0x100e };
	static const uint64_t cyc[] = { 7, 5, 11, 2, 1, 0, 2 };
	static const int approx[] = { 0, 0, 0, 1, 1, 1, 0 };
	assert_int_equal(ncyc, 7);
	for (int i = 0; i < 7; i++) {
		assert_int_equal(cyc_ip[i], ips[i]);
		assert_int_equal(cyc_of[i], cyc[i]);
		assert_int_equal(!!(cyc_flags[i] & XEV_F_CYC_APPROX), approx[i]);
	}
	/* without the nominal ratio there are no cycles */
	opt.nom_freq = 0;
	ncyc = 0;
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, NULL), 0);
	assert_int_equal(ncyc, 7);
	assert_true(cyc_of[0] == XEV_CYCLES_UNKNOWN);
	dpt_image_free(img);
	pte_free(&e);
}

/* A sink taking arrays (xev_sink.batch) sees the same stream as one taking events one
 * by one: the loop run 601 times gives 1207 blocks and transfers, which arrive in a
 * few arrays, in order, each before the DISABLE that follows them. */
struct batches {
	struct rec r;
	int calls, in_arrays;
};

static int batch_fn(void *ctx, const struct xev *evs, size_t n)
{
	struct batches *b = ctx;
	b->calls++;
	b->in_arrays += (int)n;
	for (size_t i = 0; i < n; i++) {
		assert_in_range(evs[i].kind, XEV_BLOCK, XEV_RETURN);
		rec_fn(&b->r, &evs[i]);
	}
	return 0;
}

static int one_fn(void *ctx, const struct xev *ev)
{
	return rec_fn(&((struct batches *)ctx)->r, ev);
}

static void test_batch_sink(void **state)
{
	(void)state;
	struct pte e;
	struct dpt_options opt;
	pte_init(&e, 4096);
	pte_simple(&e, ppt_psb);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, BASE);
	for (int i = 0; i < 100; i++)
		pte_tnt(&e, "TTTTTT");
	pte_tnt(&e, "N");
	pte_ip(&e, ppt_tip, pt_ipc_sext_48, 0x100e);
	pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	assert_false(e.failed);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);

	static struct batches one, arrays;
	struct xev_sink s1 = { one_fn, &one, NULL }, s2 = { one_fn, &arrays, batch_fn };
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &s1, NULL), 0);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &s2, NULL), 0);
	/* 1 + 600 + 3 blocks, 601 conditional branches, the call and the return */
	assert_int_equal(one.r.n, 1 + 604 + 603 + 1);
	assert_int_equal(arrays.r.n, one.r.n);
	assert_int_equal(arrays.in_arrays, 604 + 603);
	assert_in_range(arrays.calls, 2, 20);
	assert_int_equal(arrays.r.len, one.r.len);
	assert_memory_equal(arrays.r.text, one.r.text, one.r.len);
	assert_int_equal(strncmp(one.r.text, "ENABLE 0x1000 0\nBLOCK 0x1000-0x1007 3\n", 38), 0);
	assert_non_null(strstr(one.r.text, "BLOCK 0x1005-0x1007 2\nBRANCH 0x1007->0x1009 cond N\n"
				     "BLOCK 0x1009-0x1009 1\nCALL 0x1009->0x1010\n"
				     "BLOCK 0x1010-0x1010 1\nRETURN 0x1010->0x100e\n"
				     "BLOCK 0x100e-0x100e 1\nDISABLE 0 0\n"));
	dpt_image_free(img);
	pte_free(&e);
}

static void test_sink_stops_decode(void **state)
{
	(void)state;
	struct pte e;
	struct dpt_options opt;
	struct xev_sink sink = { stop_fn, NULL, NULL };
	nstop = 0;
	pte_init(&e, 256);
	encode_run(&e);
	struct dpt_image *img = make_image();
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &sink, NULL), 42);
	assert_int_equal(nstop, 2);
	dpt_image_free(img);
	pte_free(&e);
}

static void test_parse_cpu(void **state)
{
	(void)state;
	struct pt_cpu cpu;
	assert_int_equal(dpt_parse_cpu("6/158/10", &cpu), 0);
	assert_int_equal(cpu.family, 6);
	assert_int_equal(cpu.model, 158);
	assert_int_equal(cpu.stepping, 10);
	assert_int_equal(dpt_parse_cpu("6/0x3d", &cpu), 0);
	assert_int_equal(cpu.model, 0x3d);
	assert_int_equal(dpt_parse_cpu("6", &cpu), -EINVAL);
	assert_int_equal(dpt_parse_cpu("6/x", &cpu), -EINVAL);
	assert_int_equal(dpt_parse_cpu("6/1/2/3", &cpu), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_exact),
		cmocka_unit_test(test_psb_inside_a_block),
		cmocka_unit_test(test_insns_exact),
		cmocka_unit_test(test_gap_and_resync),
		cmocka_unit_test(test_leading_garbage),
		cmocka_unit_test(test_corruption_never_crashes),
		cmocka_unit_test(test_strict_stops),
		cmocka_unit_test(test_tsc_to_perf_time),
		cmocka_unit_test(test_run_pauses_at_the_limit),
		cmocka_unit_test(test_pause_with_branch_pending),
		cmocka_unit_test(test_sink_stops_decode),
		cmocka_unit_test(test_batch_sink),
		cmocka_unit_test(test_cyc_cycles),
		cmocka_unit_test(test_parse_cpu),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
