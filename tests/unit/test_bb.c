/* Block tallies and stream filters on hand-made event streams. */
#include "xp_test.h"

#include "bb.h"

static struct xev blk(uint64_t ip, uint64_t end, uint64_t insns, uint64_t cycles)
{
	struct xev e = { .kind = XEV_BLOCK, .ip = ip, .end = end, .insns = insns,
			 .cycles = cycles, .tid = 1, .pid = 1 };
	return e;
}

static struct xev br(uint64_t ip, uint64_t to, int taken)
{
	struct xev e = { .kind = XEV_BRANCH, .ip = ip, .addr = to,
			 .flags = XEV_F_COND | (taken ? XEV_F_TAKEN : 0u), .tid = 1, .pid = 1 };
	return e;
}

static void test_tally_counts_and_branches(void **state)
{
	(void)state;
	struct bb_tally *t = bb_tally_new();
	struct xev e;
	/* loop head once, body 5 times (4 taken + 1 not taken), exit block once */
	e = blk(0x10, 0x18, 3, XEV_CYCLES_UNKNOWN);
	bb_tally_event(t, &e);
	e = br(0x18, 0x14, 1);
	bb_tally_event(t, &e);
	for (int i = 0; i < 5; i++) {
		e = blk(0x14, 0x18, 2, XEV_CYCLES_UNKNOWN);
		bb_tally_event(t, &e);
		e = br(0x18, i < 4 ? 0x14 : 0x1a, i < 4);
		bb_tally_event(t, &e);
	}
	e = blk(0x1a, 0x1a, 1, XEV_CYCLES_UNKNOWN);
	bb_tally_event(t, &e);
	assert_int_equal(bb_tally_nblocks(t), 3);
	assert_int_equal(bb_tally_insns(t), 3 + 10 + 1);
	assert_false(bb_tally_has_cycles(t));
	size_t n;
	struct bb_block **v = bb_tally_sorted(t, &n);
	assert_int_equal(n, 3);
	assert_int_equal(v[0]->start, 0x14);
	assert_int_equal(v[0]->count, 5);
	assert_int_equal(v[0]->taken, 4);
	assert_int_equal(v[0]->not_taken, 1);
	assert_int_equal(v[0]->fall, 0x1a);
	assert_true(v[0]->cond);
	assert_int_equal(v[1]->start, 0x10);	/* ties by address */
	assert_int_equal(v[1]->taken, 1);
	assert_false(v[2]->cond);
	bb_tally_free(t);
}

static void test_tally_grows_and_sorts_by_cycles(void **state)
{
	(void)state;
	struct bb_tally *t = bb_tally_new();
	for (uint64_t i = 0; i < 5000; i++) {
		struct xev e = blk(0x1000 + 16 * i, 0x1000 + 16 * i + 8, 4, i == 77 ? 1000 : 1);
		if (i == 77)
			e.flags |= XEV_F_CYC_APPROX;
		bb_tally_event(t, &e);
		bb_tally_event(t, &e);
	}
	assert_int_equal(bb_tally_nblocks(t), 5000);
	assert_true(bb_tally_has_cycles(t));
	size_t n;
	struct bb_block **v = bb_tally_sorted(t, &n);
	assert_int_equal(n, 5000);
	assert_int_equal(v[0]->start, 0x1000 + 16 * 77);
	assert_int_equal(v[0]->cycles, 2000);
	assert_int_equal(v[0]->count, 2);
	assert_int_equal(v[0]->approx, 2);
	assert_int_equal(v[1]->cycles, 2);
	bb_tally_free(t);
}

static int nseen;
static int count_fn(void *ctx, const struct xev *ev)
{
	(void)ctx;
	(void)ev;
	nseen++;
	return 0;
}

static const char *sym_fn(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start,
			  uint64_t *size)
{
	(void)ctx;
	(void)pid;
	(void)time;
	*start = ip & ~0xffULL;
	*size = 0x100;
	return ip < 0x200 ? "low" : "high";
}

static void test_filter(void **state)
{
	(void)state;
	struct bb_env env = { .symbol = sym_fn };
	struct bb_filter f;
	bb_filter_init(&f, &env, (struct xev_sink){ count_fn, NULL, NULL });
	f.tid = 7;
	f.t0 = 100;
	f.t1 = 200;
	f.sym = "high";
	struct xev evs[] = {
		{ .kind = XEV_BLOCK, .tid = 7, .time = 150, .ip = 0x250 },	/* kept */
		{ .kind = XEV_BLOCK, .tid = 8, .time = 150, .ip = 0x250 },	/* tid */
		{ .kind = XEV_BLOCK, .tid = 7, .time = 250, .ip = 0x250 },	/* time */
		{ .kind = XEV_BLOCK, .tid = 7, .time = 0, .ip = 0x250 },	/* no time */
		{ .kind = XEV_BLOCK, .tid = 7, .time = 150, .ip = 0x150 },	/* sym */
		{ .kind = XEV_GAP, .tid = 7, .time = 150 },			/* kept */
	};
	nseen = 0;
	for (size_t i = 0; i < sizeof(evs) / sizeof(evs[0]); i++)
		bb_filter_event(&f, &evs[i]);
	assert_int_equal(nseen, 2);
}

static void test_time_range(void **state)
{
	(void)state;
	uint64_t a, b;
	assert_int_equal(bb_parse_time_range("100-200", &a, &b), 0);
	assert_int_equal(a, 100);
	assert_int_equal(b, 200);
	assert_int_equal(bb_parse_time_range("1.5-", &a, &b), 0);
	assert_int_equal(a, 1500000000ULL);
	assert_int_equal(b, UINT64_MAX);
	assert_int_equal(bb_parse_time_range("-12.000000001", &a, &b), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 12000000001ULL);
	assert_int_equal(bb_parse_time_range("-", &a, &b), -1);
	assert_int_equal(bb_parse_time_range("200-100", &a, &b), -1);
	assert_int_equal(bb_parse_time_range("abc", &a, &b), -1);
	assert_int_equal(bb_parse_time_range("1.0000000001-", &a, &b), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tally_counts_and_branches),
		cmocka_unit_test(test_tally_grows_and_sorts_by_cycles),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_time_range),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
