/* Time from MTC packets: between two TSC packets the decode time advances at every MTC
 * (libipt's tick events), as perf's timestamps do.  Hand-computed: MTCFreq 0 and a
 * TSC:crystal ratio of 2 (CPUID 0x15 ebx/eax) make each MTC that advances the crystal
 * clock by 50 advance the TSC by 100. */
#include "xp_test.h"

#include "decoders/pt/dpt.h"
#include "pt_enc.h"

#define BASE 0x401000
#define TSC0 1000

struct times {
	int loop;		/* loop-body executions seen */
	int bad;		/* events whose time is not the expected one */
	uint64_t call_time, return_time, disable_time, first_bad;
};

static int check(void *ctx, const struct xev *ev)
{
	struct times *t = ctx;
	if (ev->kind == XEV_BLOCK && ev->end == BASE + 7) {
		/* iteration i's jnz is bit i % 40 of TNT packet i / 40; the MTC after packet
		 * k shows from iteration 40k + 1 on: iteration 40k started before the packet
		 * that resolves it was reached (the MTC may have come during its dec) */
		int i = t->loop;
		uint64_t want = TSC0 + 100 * (uint64_t)(i ? (i - 1) / 40 : 0);
		if (ev->time != want && !t->bad++)
			t->first_bad = (uint64_t)t->loop << 32 | ev->time;
		t->loop++;
	} else if (ev->kind == XEV_CALL) {
		t->call_time = ev->time;
	} else if (ev->kind == XEV_RETURN && !t->return_time) {
		t->return_time = ev->time;
	} else if (ev->kind == XEV_DISABLE) {
		t->disable_time = ev->time;
	}
	return 0;
}

static void run(enum dpt_mode mode, uint32_t eax, uint32_t ebx, struct times *t)
{
	struct pte e;
	pte_init(&e, 4096);
	/* an MTC 50 crystal clocks on after each TNT packet of 40 iterations */
	size_t len = pte_loop_trace(&e, BASE, TSC0, 0, 50);
	struct dpt_image *img = dpt_image_new("mtc");
	assert_non_null(img);
	assert_int_equal(dpt_image_add_mem(img, pte_loop_code, sizeof(pte_loop_code), BASE), 0);
	struct dpt_options o;
	dpt_options_init(&o);
	o.mode = mode;
	o.mtc_freq = 0;
	o.cpuid_0x15_eax = eax;
	o.cpuid_0x15_ebx = ebx;
	struct xev_sink sink = { .fn = check, .ctx = t };
	memset(t, 0, sizeof(*t));
	assert_int_equal(dpt_decode(e.buf, len, img, &o, &sink, NULL), 0);
	dpt_image_free(img);
	pte_free(&e);
}

static void test_mtc_blocks(void **state)
{
	(void)state;
	struct times t;
	run(DPT_BLOCKS, 1, 2, &t);
	assert_int_equal(t.loop, 1000);
	assert_int_equal(t.first_bad, 0);
	assert_int_equal(t.bad, 0);
	/* the direct call after the loop needs no packet: still before the 25th MTC;
	 * the return's TIP comes after it: 1000 + 25 * 100 */
	assert_int_equal(t.call_time, TSC0 + 2400);
	assert_int_equal(t.return_time, TSC0 + 2500);
	assert_int_equal(t.disable_time, TSC0 + 2500);
}

static void test_mtc_insns(void **state)
{
	(void)state;
	struct times t;
	run(DPT_INSNS, 1, 2, &t);
	assert_int_equal(t.loop, 1000);
	assert_int_equal(t.first_bad, 0);
	assert_int_equal(t.bad, 0);
	assert_int_equal(t.call_time, TSC0 + 2400);
	assert_int_equal(t.return_time, TSC0 + 2500);
}

/* Without the crystal ratio MTC means nothing: blocks keep the TSC packet's time. */
static void test_mtc_without_ratio(void **state)
{
	(void)state;
	struct times t;
	run(DPT_BLOCKS, 0, 0, &t);
	assert_int_equal(t.loop, 1000);
	assert_int_equal(t.bad, 1000 - 41);	/* all but the first 41 iterations */
	assert_int_equal(t.call_time, TSC0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mtc_blocks),
		cmocka_unit_test(test_mtc_insns),
		cmocka_unit_test(test_mtc_without_ratio),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
