/* The tree views (src/views/view_tree.c: --calltree, --functions) through the engine,
 * as text: exact rows of a call tree merged and per thread, --percent-limit, and the
 * function list.  The input: samples in build/progs/ptspin (tests/unit/smp_gen.h),
 * thread 1 with 4 samples in main -> spin -> leaf and 1 in main -> spin, thread 2 with
 * 2 in main -> spin; times 100-103, 200 (thread 1), 300-301 (thread 2). */
#include "xp_test.h"

#include "smp_gen.h"

static char data[1024];

static int setup(void **state)
{
	struct smpg_syms s;
	uint64_t st;
	(void)state;
	if (smpg_setup(data, sizeof(data), &s))
		return -1;
	struct pd_writer *w = smpg_open(data, &s, PERF_SAMPLE_CALLCHAIN, &st);
	uint64_t in_main = s.main + 0x21, to_leaf[] = { s.leaf, s.after_call, in_main };
	uint64_t in_spin[] = { s.spin, in_main };
	for (int i = 0; i < 4; i++)
		smpg_sample(w, st, 1, 100 + (uint64_t)i, s.leaf, 1000, to_leaf, 3, NULL, 0);
	smpg_sample(w, st, 1, 200, s.spin, 1000, in_spin, 2, NULL, 0);
	smpg_sample(w, st, 2, 300, s.spin, 1000, in_spin, 2, NULL, 0);
	smpg_sample(w, st, 2, 301, s.spin, 1000, in_spin, 2, NULL, 0);
	return pd_writer_close(w) == 0 ? 0 : -1;
}

static void test_calltree_text(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", NULL), 0);
	/* a sampled tree: Samples counts the samples through a node, Base and Cum weigh
	 * them by the event's period (1000 ns), as --functions does */
	assert_string_equal(out, "# sampled tree: cpu-clock, total 7000 ns\n"
				 "# Samples: samples of cpu-clock; Base: self cpu-clock; Cum: with callees\n"
				 "Lvl   RL    Samples      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          7             0          7000  ptspin                main\n"
				 "  2    1          7          3000          7000  ptspin                  spin\n"
				 "  3    1          4          4000          4000  ptspin                    leaf\n");
	/* leaf's Cum is 4 of 7 (57%): under the limit; spin's and main's 100% */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "percent-limit", "60", NULL), 0);
	assert_string_equal(out, "# sampled tree: cpu-clock, total 7000 ns\n"
				 "# Samples: samples of cpu-clock; Base: self cpu-clock; Cum: with callees\n"
				 "Lvl   RL    Samples      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          7             0          7000  ptspin                main\n"
				 "  2    1          7          3000          7000  ptspin                  spin\n");
}

static void test_calltree_per_thread(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "format", "csv", NULL), 0);
	assert_string_equal(out, "tid,lvl,rl,samples,base_ns,cum_ns,module,name\n"
				 "1,1,1,5,0,5000,ptspin,main\n"
				 "1,2,1,5,1000,5000,ptspin,spin\n"
				 "1,3,1,4,4000,4000,ptspin,leaf\n"
				 "2,1,1,2,0,2000,ptspin,main\n"
				 "2,2,1,2,2000,2000,ptspin,spin\n");
}

static void test_functions_text(void **state)
{
	(void)state;
	const char *out;
	/* by period (1000 a sample), the self time first */
	assert_int_equal(xp_test_engine(&out, data, "functions", NULL), 0);
	assert_string_equal(out, "# samples: cpu-clock, total 7000 ns\n"
		"# Samples: samples of cpu-clock; Base: self cpu-clock; Cum: with callees\n"
		"  Samples      Base(ns)       Cum(ns)    Base%     Cum%  Module                Name\n"
		"        4          4000          4000   57.14%   57.14%  ptspin                leaf\n"
		"        3          3000          7000   42.86%  100.00%  ptspin                spin\n"
		"        0             0          7000    0.00%  100.00%  ptspin                main\n");
}

/* --time and --tid filter every view; nothing matched is an error (exit 1, no empty
 * report); an option the view cannot honour a usage error (exit 2). */
static void test_filters(void **state)
{
	(void)state;
	const char *out;
	/* 100..200: thread 1's 5 samples, 1000 ns each */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "time", "100-200", NULL), 0);
	assert_string_equal(out, "# sampled tree: cpu-clock, total 5000 ns\n"
				 "# Samples: samples of cpu-clock; Base: self cpu-clock; Cum: with callees\n"
				 "Lvl   RL    Samples      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          5             0          5000  ptspin                main\n"
				 "  2    1          5          1000          5000  ptspin                  spin\n"
				 "  3    1          4          4000          4000  ptspin                    leaf\n");
	assert_int_equal(xp_test_engine(&out, data, "functions", "time", "150-", "format", "csv", NULL), 0);
	assert_string_equal(out, "samples,base_ns,cum_ns,base%,cum%,module,name\n"
				 "3,3000,3000,100.0000,100.0000,ptspin,spin\n"
				 "0,0,3000,0.0000,100.0000,ptspin,main\n");
	assert_int_equal(xp_test_engine(&out, data, "routines", "tid", "2", "format", "csv", NULL), 0);
	assert_string_equal(out, "samples,base_ns,cum_ns,cumrec_ns,name\n"
				 "2,2000,2000,2000,spin\n"
				 "2,0,2000,2000,main\n");
	int rc = xp_test_engine(&out, data, "functions", "tid", "9", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_string_equal(out, "xptrace: decode: nothing in the trace matched --tid 9 (see the threads with "
				 "--calltree --per-thread, the times with --insn)\n");
	rc = xp_test_engine(&out, data, "calltree", "time", "400-500", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	rc = xp_test_engine(&out, data, "calltree", "sym", "spin", NULL);
	assert_int_equal(xp_test_exit_code(rc), 2);
	assert_string_equal(out, "xptrace: decode: --sym does not apply to --calltree (it does to --calls, --insn, "
				 "--blocks, --annotate, --lines, --loops) (see 'xptrace help decode')\n");
	rc = xp_test_engine(&out, data, "functions", "time", "5-1", NULL);
	assert_int_equal(xp_test_exit_code(rc), 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calltree_text),
		cmocka_unit_test(test_calltree_per_thread),
		cmocka_unit_test(test_functions_text),
		cmocka_unit_test(test_filters),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
