/* Loops estimated from branch stacks (analysis/lpe.h) on hand-made windows of
 * one-byte instructions, against hand-computed estimates: a window's oldest branch
 * ends none of its ranges and is not counted; back edges scale by the period over the
 * window's instructions; jumps back into another function, not-taken branches and
 * forward jumps are no back edges; loops nest by span. */
#include "xp_test.h"

#include "analysis/lpe.h"
#include "lp_stubs.h"

static struct lpe *a;

static void blk(uint64_t ip, uint64_t end)
{
	struct xev ev = { .kind = XEV_BLOCK, .flags = XEV_F_SAMPLED, .ip = ip, .end = end, .insns = end - ip + 1,
			  .cycles = XEV_CYCLES_UNKNOWN, .pid = 1, .tid = 1 };
	assert_int_equal(lpe_event(a, &ev), 0);
}

static void br(uint64_t from, uint64_t to, bool taken)
{
	struct xev ev = { .kind = XEV_BRANCH, .flags = XEV_F_SAMPLED | (taken ? XEV_F_TAKEN : 0), .ip = from,
			  .addr = to, .pid = 1, .tid = 1 };
	assert_int_equal(lpe_event(a, &ev), 0);
}

static void sample(uint64_t period)
{
	struct xev ev = { .kind = XEV_SAMPLE, .flags = XEV_F_SAMPLED, .weight = period, .pid = 1, .tid = 1 };
	assert_int_equal(lpe_event(a, &ev), 0);
}

static void test_windows(void **state)
{
	(void)state;
	struct lp_env env = { fn_of, ninsns, no_line, min_line, NULL };
	const struct lpe_loop *l;
	char buf[256];
	size_t k = 0;
	a = lpe_new(&env);
	assert_non_null(a);
	/* 20 instructions in the ranges, a sample every 40: each back edge counts 2 */
	br(0x1023, 0x1020, true);	/* the oldest: no range before it */
	blk(0x1020, 0x1023);
	br(0x1023, 0x1020, true);
	blk(0x1020, 0x1023);
	br(0x1023, 0x1020, true);
	blk(0x1020, 0x1025);
	br(0x1024, 0x1000, false);	/* not taken */
	br(0x1025, 0x1010, true);	/* the outer loop's back edge */
	blk(0x1010, 0x1015);
	br(0x1015, 0x1020, true);	/* forward */
	br(0x2005, 0x1005, true);	/* back, but into another function */
	sample(40);
	/* 8 instructions, every 8: one inner back edge counts 1 */
	br(0x1023, 0x1020, true);
	blk(0x1020, 0x1023);
	br(0x1023, 0x1020, true);
	blk(0x1020, 0x1023);
	sample(8);
	int n = lpe_loops(a, &l);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%#llx %u %llu %llu %llu\n",
				      (unsigned long long)l[i].l.header, l[i].l.depth,
				      (unsigned long long)l[i].l.iterations, (unsigned long long)l[i].seen,
				      (unsigned long long)l[i].windows);
	/* header depth iterations seen windows */
	assert_string_equal(buf, "0x1010 1 2 1 1\n"
				 "0x1020 2 5 3 2\n");
	lpe_free(a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_windows),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
