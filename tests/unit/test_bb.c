/* Block tallies and stream filters on hand-made event streams. */
#include "xp_test.h"

#include "views/bb_views.h"

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

static const char *fake_sym_fn(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start,
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
	struct bb_env env = { .symbol = fake_sym_fn };
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
	assert_int_equal(bb_parse_time_range("100-200", 0, 0, &a, &b), 0);
	assert_int_equal(a, 100);
	assert_int_equal(b, 200);
	assert_int_equal(bb_parse_time_range("1.5-", 0, 0, &a, &b), 0);
	assert_int_equal(a, 1500000000ULL);
	assert_int_equal(b, UINT64_MAX);
	assert_int_equal(bb_parse_time_range("-12.000000001", 0, 0, &a, &b), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 12000000001ULL);
	assert_int_equal(bb_parse_time_range("-", 0, 0, &a, &b), -EINVAL);
	assert_int_equal(bb_parse_time_range("200-100", 0, 0, &a, &b), -EINVAL);
	assert_int_equal(bb_parse_time_range("abc", 0, 0, &a, &b), -EINVAL);
	assert_int_equal(bb_parse_time_range("1.0000000001-", 0, 0, &a, &b), -EINVAL);
	/* relative and percentages need the span: without, -ENODATA */
	assert_int_equal(bb_parse_time_range("+1-", 0, 0, &a, &b), -ENODATA);
	assert_int_equal(bb_parse_time_range("10%", 0, 0, &a, &b), -ENODATA);
	/* perf's slices (time-utils.c): 1000..2000 ns; 10% of 1000 = 100 ns, a slice that
	 * does not end the span ends 1 ns early */
	assert_int_equal(bb_parse_time_range("10%", 1000, 2000, &a, &b), 0);
	assert_int_equal(a, 1000);
	assert_int_equal(b, 1099);
	assert_int_equal(bb_parse_time_range("10%/2", 1000, 2000, &a, &b), 0);
	assert_int_equal(a, 1100);
	assert_int_equal(b, 1199);
	assert_int_equal(bb_parse_time_range("50%-100%", 1000, 2000, &a, &b), 0);
	assert_int_equal(a, 1500);
	assert_int_equal(b, 2000);
	assert_int_equal(bb_parse_time_range("10%/11", 1000, 2000, &a, &b), -EINVAL);
	assert_int_equal(bb_parse_time_range("30%-20%", 1000, 2000, &a, &b), -EINVAL);
	/* +S: seconds after the first sample */
	assert_int_equal(bb_parse_time_range("+1.5-+2", 5000000000ULL, 9000000000ULL, &a, &b), 0);
	assert_int_equal(a, 6500000000ULL);
	assert_int_equal(b, 7000000000ULL);
	assert_int_equal(bb_parse_time_range("-+0.000000001", 5, 9, &a, &b), 0);
	assert_int_equal(a, 0);
	assert_int_equal(b, 6);
}

/* bb_tally_batch over arrays of any size counts exactly what bb_tally_event counts one
 * event at a time: hand-computed totals, and block by block the same fields.  The
 * stream has 2000 distinct blocks (the table grows in the middle of arrays), a
 * block at ip 0 (an empty slot's key), cycles, a gap and taken/not-taken branches. */
static void test_tally_batch_equals_events(void **state)
{
	(void)state;
	enum { N = 2000, NEV = 3 * N + 4 };
	static struct xev ev[NEV];
	size_t n = 0;
	ev[n++] = blk(0, 0, 1, XEV_CYCLES_UNKNOWN);
	for (uint64_t i = 0; i < N; i++) {
		uint64_t a = 0x400000 + 16 * i;
		ev[n++] = blk(a, a + 8, 4, i % 3 ? XEV_CYCLES_UNKNOWN : 10);
		ev[n++] = br(a + 8, i % 2 ? a : a + 10, (int)(i % 2));
		ev[n++] = blk(0x10, 0x18, 2, XEV_CYCLES_UNKNOWN);	/* every block is followed by this one */
		if (i == N / 2)
			ev[n++] = (struct xev){ .kind = XEV_GAP, .lost = 1 };
	}
	ev[n++] = blk(0, 0, 1, XEV_CYCLES_UNKNOWN);
	assert_int_equal(n, NEV - 1);

	struct bb_tally *one = bb_tally_new();
	for (size_t i = 0; i < n; i++)
		assert_int_equal(bb_tally_event(one, &ev[i]), 0);
	static const size_t chunk[] = { 1, 7, 256, NEV };
	for (size_t c = 0; c < sizeof(chunk) / sizeof(chunk[0]); c++) {
		struct bb_tally *t = bb_tally_new();
		for (size_t i = 0; i < n; i += chunk[c])
			assert_int_equal(bb_tally_batch(t, &ev[i], n - i < chunk[c] ? n - i : chunk[c]), 0);
		assert_int_equal(bb_tally_nblocks(t), N + 2);
		assert_int_equal(bb_tally_insns(t), 2 + 4 * N + 2 * N);
		assert_int_equal(bb_tally_gaps(t), 1);
		assert_true(bb_tally_has_cycles(t));
		size_t na, nb;
		struct bb_block **a = bb_tally_sorted(one, &na), **b = bb_tally_sorted(t, &nb);
		assert_int_equal(na, nb);
		for (size_t k = 0; k < na; k++) {
			assert_int_equal(a[k]->start, b[k]->start);
			assert_int_equal(a[k]->end, b[k]->end);
			assert_int_equal(a[k]->count, b[k]->count);
			assert_int_equal(a[k]->insns, b[k]->insns);
			assert_int_equal(a[k]->cycles, b[k]->cycles);
			assert_int_equal(a[k]->cyc_execs, b[k]->cyc_execs);
			assert_int_equal(a[k]->taken, b[k]->taken);
			assert_int_equal(a[k]->not_taken, b[k]->not_taken);
			assert_int_equal(a[k]->target, b[k]->target);
			assert_int_equal(a[k]->fall, b[k]->fall);
			assert_int_equal(a[k]->cond, b[k]->cond);
		}
		/* by hand: the block at 0 twice, 0x10 once per loop, odd blocks taken once */
		int seen = 0;
		for (size_t k = 0; k < nb; k++) {
			if (b[k]->start == 0x10 && ++seen)
				assert_int_equal(b[k]->count, N);
			if (b[k]->start == 0 && ++seen)
				assert_int_equal(b[k]->count, 2);
			if (b[k]->start == 0x400000 + 16 * 3) {
				assert_int_equal(b[k]->taken, 1);
				assert_int_equal(b[k]->not_taken, 0);
				assert_int_equal(b[k]->target, 0x400000 + 16 * 3);
			}
			if (b[k]->start == 0x400000 + 16 * 6) {
				assert_int_equal(b[k]->cycles, 10);
				assert_int_equal(b[k]->not_taken, 1);
				assert_int_equal(b[k]->fall, 0x400000 + 16 * 6 + 10);
			}
		}
		assert_int_equal(seen, 2);
		bb_tally_free(t);
	}
	bb_tally_free(one);
}

/* --insn -F: a list is exactly those fields, +/- change the default, mistakes fail */
static void test_fields_parse(void **state)
{
	(void)state;
	unsigned f = 0;
	assert_int_equal(bb_fields_parse("ip", BB_FIELDS_DEFAULT, &f), 0);
	assert_int_equal(f, BB_FIELD(IP));
	assert_int_equal(bb_fields_parse("disasm,tid,ip", BB_FIELDS_DEFAULT, &f), 0);
	assert_int_equal(f, BB_FIELD(TID) | BB_FIELD(IP) | BB_FIELD(DISASM));
	assert_int_equal(bb_fields_parse("-time,+dso,-cpu", BB_FIELDS_DEFAULT, &f), 0);
	assert_int_equal(f, (BB_FIELDS_DEFAULT | BB_FIELD(DSO)) & ~(BB_FIELD(TIME) | BB_FIELD(CPU)));
	assert_int_equal(bb_fields_parse("+comm", BB_FIELD(IP), &f), 0);
	assert_int_equal(f, BB_FIELD(IP) | BB_FIELD(COMM));
	assert_int_equal(bb_fields_parse("ip,bogus", BB_FIELDS_DEFAULT, &f), -EINVAL);
	assert_int_equal(bb_fields_parse("ip,+sym", BB_FIELDS_DEFAULT, &f), -EINVAL);
	assert_int_equal(bb_fields_parse("ip,symoff", BB_FIELDS_DEFAULT, &f), -EINVAL);
	assert_int_equal(bb_fields_parse("-sym", BB_FIELDS_DEFAULT, &f), -EINVAL);	/* symoff stays */
	assert_int_equal(bb_fields_parse("", BB_FIELDS_DEFAULT, &f), -EINVAL);
	assert_int_equal(bb_fields_parse("ip,,sym", BB_FIELDS_DEFAULT, &f), -EINVAL);
	assert_int_equal(bb_fields_parse("-ip", BB_FIELD(IP), &f), -EINVAL);	/* nothing left */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tally_counts_and_branches),
		cmocka_unit_test(test_tally_grows_and_sorts_by_cycles),
		cmocka_unit_test(test_tally_batch_equals_events),
		cmocka_unit_test(test_filter),
		cmocka_unit_test(test_time_range),
		cmocka_unit_test(test_fields_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
