/* The loop analysis (analysis/lp.h) on hand-made streams of one-byte instructions,
 * against hand-computed loops: a loop with a body of two blocks, a loop whose body
 * calls its own function (each activation's entries apart), a cycle entered at two
 * places (no block dominates it: no natural loop), nested loops left by a return. */
#include "xp_test.h"

#include "analysis/lp.h"
#include "lp_stubs.h"

struct stream {
	struct xev ev[256];
	size_t n;
};

static void blk(struct stream *s, uint64_t ip, uint64_t end)
{
	s->ev[s->n++] = (struct xev){ .kind = XEV_BLOCK, .ip = ip, .end = end, .insns = end - ip + 1,
				      .cycles = XEV_CYCLES_UNKNOWN, .pid = 1, .tid = 1 };
}

static void call(struct stream *s, uint64_t at, uint64_t to)
{
	s->ev[s->n++] = (struct xev){ .kind = XEV_CALL, .ip = at, .addr = to, .pid = 1, .tid = 1 };
}

static void ret(struct stream *s, uint64_t at, uint64_t to)
{
	s->ev[s->n++] = (struct xev){ .kind = XEV_RETURN, .ip = at, .addr = to, .pid = 1, .tid = 1 };
}

/* Both passes; "header depth entries iterations min median max insns" per loop. */
static const char *loops(const struct stream *s, char *buf, size_t cap)
{
	struct lp_env env = { fn_of, ninsns, no_line, min_line, NULL };
	struct lp *a = lp_new(&env);
	const struct lp_loop *l;
	size_t k = 0;
	assert_non_null(a);
	for (size_t i = 0; i < s->n; i++)
		assert_int_equal(lp_event(a, &s->ev[i]), 0);
	assert_int_equal(lp_find(a), 0);
	for (size_t i = 0; i < s->n; i++)
		assert_int_equal(lp_event(a, &s->ev[i]), 0);
	int n = lp_loops(a, &l);
	buf[0] = 0;
	for (int i = 0; i < n; i++)
		k += (size_t)snprintf(buf + k, cap - k, "%#llx %u %llu %llu %llu %llu %llu %llu\n",
				      (unsigned long long)l[i].header, l[i].depth, (unsigned long long)l[i].entries,
				      (unsigned long long)l[i].iterations, (unsigned long long)l[i].trips_min,
				      (unsigned long long)l[i].trips_median, (unsigned long long)l[i].trips_max,
				      (unsigned long long)l[i].insns);
	lp_free(a);
	return buf;
}

/* A: 0x1000-0x1003 preheader; 0x1010-0x1013 header, falls to 0x1014-0x1017 (latch,
 * jumps back) or exits to 0x1020; called twice by B, 3 then 1 trips. */
static void test_two_block_body(void **state)
{
	(void)state;
	struct stream s = { .n = 0 };
	char buf[512];
	int trips[] = { 3, 1 };
	for (int e = 0; e < 2; e++) {
		blk(&s, 0x2000 + 4 * (uint64_t)e, 0x2003 + 4 * (uint64_t)e);
		call(&s, 0x2003 + 4 * (uint64_t)e, 0x1000);
		blk(&s, 0x1000, 0x1003);
		for (int t = 0; t < trips[e]; t++) {
			blk(&s, 0x1010, 0x1013);
			if (t + 1 < trips[e])
				blk(&s, 0x1014, 0x1017);
		}
		blk(&s, 0x1020, 0x1021);
		ret(&s, 0x1021, 0x2004 + 4 * (uint64_t)e);
	}
	blk(&s, 0x2008, 0x2009);
	/* body: 3 trips x 4 + 2 latches x 4, 1 trip x 4 = 24 instructions */
	assert_string_equal(loops(&s, buf, sizeof(buf)), "0x1010 1 2 4 1 1 3 24\n");
}

/* A's loop calls A from its body: the outer activation 2 trips, each call 3 trips.
 * Header 0x1010-0x1012 branches to the call (0x1013) or past it to the latch
 * 0x1018-0x101b; the call returns to 0x1014-0x1017. */
static void test_recursion(void **state)
{
	(void)state;
	struct stream s = { .n = 0 };
	char buf[512];
	blk(&s, 0x1000, 0x1003);
	for (int t = 0; t < 2; t++) {
		blk(&s, 0x1010, 0x1012);
		blk(&s, 0x1013, 0x1013);
		call(&s, 0x1013, 0x1000);
		blk(&s, 0x1000, 0x1003);
		for (int u = 0; u < 3; u++) {
			blk(&s, 0x1010, 0x1012);
			blk(&s, 0x1018, 0x101b);
		}
		blk(&s, 0x1020, 0x1021);
		ret(&s, 0x1021, 0x1014);
		blk(&s, 0x1014, 0x1017);
		blk(&s, 0x1018, 0x101b);
	}
	blk(&s, 0x1020, 0x1021);
	/* entries: 1 outer + 2 inner; trips 2, 3, 3: median 3; instructions: 2 outer
	 * trips of 3 + 1 + 4 + 4, 6 inner of 3 + 4 */
	assert_string_equal(loops(&s, buf, sizeof(buf)), "0x1010 1 3 8 2 3 3 66\n");
}

/* A cycle 0x1010 <-> 0x1020 entered at either block: neither dominates the other. */
static void test_irreducible(void **state)
{
	(void)state;
	struct stream s = { .n = 0 };
	char buf[512];
	blk(&s, 0x1000, 0x1001);
	blk(&s, 0x1010, 0x1011);
	blk(&s, 0x1020, 0x1021);
	blk(&s, 0x1010, 0x1011);
	blk(&s, 0x1030, 0x1031);
	ret(&s, 0x1031, 0x2010);
	blk(&s, 0x2010, 0x2011);
	call(&s, 0x2011, 0x1000);
	blk(&s, 0x1000, 0x1001);
	blk(&s, 0x1002, 0x1003);	/* the other way in */
	blk(&s, 0x1020, 0x1021);
	blk(&s, 0x1010, 0x1011);
	blk(&s, 0x1020, 0x1021);
	blk(&s, 0x1030, 0x1031);
	assert_string_equal(loops(&s, buf, sizeof(buf)), "");
}

/* An outer loop (header 0x1010) holding an inner one (0x1020), left by a return from
 * inside the inner one on the outer loop's second trip. */
static void test_nested_return(void **state)
{
	(void)state;
	struct stream s = { .n = 0 };
	char buf[512];
	blk(&s, 0x2000, 0x2001);
	call(&s, 0x2001, 0x1000);
	blk(&s, 0x1000, 0x1001);
	for (int t = 0; t < 2; t++) {
		blk(&s, 0x1010, 0x1011);
		for (int u = 0; u < 4; u++)
			blk(&s, 0x1020, 0x1023);
		if (t == 1) {
			blk(&s, 0x1030, 0x1031);	/* the early return */
			break;
		}
		blk(&s, 0x1024, 0x1025);	/* outer latch */
	}
	ret(&s, 0x1031, 0x2002);
	blk(&s, 0x2002, 0x2003);
	assert_string_equal(loops(&s, buf, sizeof(buf)),
			    "0x1010 1 1 2 2 2 2 38\n"
			    "0x1020 2 2 8 4 4 4 32\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_block_body),
		cmocka_unit_test(test_recursion),
		cmocka_unit_test(test_irreducible),
		cmocka_unit_test(test_nested_return),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
