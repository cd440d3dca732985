/* The samples decoder (decoders/samples/dec_samples.c) through the engine: perf.data files
 * of cpu-clock samples with frame-pointer callchains in build/progs/ptspin
 * (tests/unit/smp_gen.h).  Function lists weigh by the sample periods (perf report's
 * default), call trees count samples unless --metric asks for the period; the stacks
 * are the callchains as recorded, PERF_CONTEXT markers dropped; --tid selects a
 * thread. */
#include "xp_test.h"

#include "smp_gen.h"

static char data[1024];
static struct smpg_syms S;

static int setup(void **state)
{
	(void)state;
	return smpg_setup(data, sizeof(data), &S);
}

/* main -> spin -> leaf: 3 samples in leaf (periods 100, 200, 300), 2 in spin (1000
 * each), 1 in main (50), all of thread SMPG_PID; then 4 of thread 77 in leaf. */
static void write_chains(void)
{
	uint64_t st;
	struct pd_writer *w = smpg_open(data, &S, PERF_SAMPLE_CALLCHAIN, &st);
	uint64_t in_main = S.main + 0x1c;	/* the return address of main's call of spin */
	uint64_t leaf_chain[] = { S.leaf + 3, S.after_call, in_main };
	uint64_t spin_chain[] = { S.after_call + 3, in_main };
	uint64_t main_chain[] = { S.main + 4 };
	for (int i = 1; i <= 3; i++)
		smpg_sample(w, st, SMPG_PID, 100 + (uint64_t)i, S.leaf + 3, 100 * (uint64_t)i, leaf_chain, 3, NULL, 0);
	for (int i = 0; i < 2; i++)
		smpg_sample(w, st, SMPG_PID, 200 + (uint64_t)i, S.after_call + 3, 1000, spin_chain, 2, NULL, 0);
	smpg_sample(w, st, SMPG_PID, 300, S.main + 4, 50, main_chain, 1, NULL, 0);
	for (int i = 0; i < 4; i++)
		smpg_sample(w, st, 77, 400 + (uint64_t)i, S.leaf + 3, 5, leaf_chain, 3, NULL, 0);
	assert_int_equal(pd_writer_close(w), 0);
}

static void test_functions_by_period(void **state)
{
	(void)state;
	const char *out;
	write_chains();
	/* total 600 + 2000 + 50 + 20 = 2670; leaf 620 (23.2210%), spin 2000 (74.9064%),
	 * main 50 (1.8727%); cum: main all, spin 2620 (98.1273%) */
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	assert_string_equal(out, "samples,base_ns,cum_ns,base%,cum%,module,name\n"
		"2,2000,2620,74.9064,98.1273,ptspin,spin\n"
		"7,620,620,23.2210,23.2210,ptspin,leaf\n"
		"1,50,2670,1.8727,100.0000,ptspin,main\n");
	/* the default view of samples is --functions, the default format text */
	assert_int_equal(xp_test_engine(&out, data, NULL, NULL), 0);
	assert_non_null(strstr(out, "spin\n"));
	assert_non_null(strstr(out, "74.91%"));
}

static void test_calltree_folded_and_metrics(void **state)
{
	(void)state;
	const char *out;
	write_chains();
	/* by default weighed as --functions weighs (the event's period), on request by
	 * samples */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", "metric", "samples", NULL), 0);
	assert_string_equal(out, "main 1\nmain;spin 2\nmain;spin;leaf 7\n");
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", NULL), 0);
	assert_string_equal(out, "main 50\nmain;spin 2000\nmain;spin;leaf 620\n");
	/* one thread */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", "tid", "77",
					"metric", "samples", NULL), 0);
	assert_string_equal(out, "main;spin;leaf 4\n");
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", "tid", "77",
					"metric", "cpu-clock", NULL), 0);
	assert_string_equal(out, "main;spin;leaf 20\n");
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", "tid", "4242",
					"metric", "samples", NULL), 0);
	/* sorted by samples; the event's period (self) in a column of its own */
	assert_string_equal(out, "samples,base,cum,base%,cum%,cpu-clock,module,name\n"
				 "3,3,3,50.0000,50.0000,600,ptspin,leaf\n"
				 "2,2,5,33.3333,83.3333,2000,ptspin,spin\n"
				 "1,1,6,16.6667,100.0000,50,ptspin,main\n");
	/* a metric the trace has not: a usage error (exit 2), the ones it has named */
	int rc = xp_test_engine(&out, data, "functions", "metric", "cycles", NULL);
	assert_int_equal(xp_test_exit_code(rc), 2);
	assert_non_null(strstr(xp_test_msgs(), "no metric 'cycles' in this trace (have: samples, cpu-clock)"));
}

/* Without callchains the stack is the sampled ip alone. */
static void test_flat_samples(void **state)
{
	(void)state;
	const char *out;
	uint64_t st;
	struct pd_writer *w = smpg_open(data, &S, 0, &st);
	smpg_sample(w, st, SMPG_PID, 100, S.leaf, 10, NULL, 0, NULL, 0);
	smpg_sample(w, st, SMPG_PID, 101, S.spin_loop, 30, NULL, 0, NULL, 0);
	smpg_sample(w, st, SMPG_PID, 102, S.leaf + 7, 10, NULL, 0, NULL, 0);
	assert_int_equal(pd_writer_close(w), 0);
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", "metric", "samples", NULL), 0);
	assert_string_equal(out, "leaf 2\nspin 1\n");
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", NULL), 0);
	assert_string_equal(out, "spin 30\nleaf 20\n");
}

/* A trace without samples decodes to an empty report and says why. */
static void test_no_samples(void **state)
{
	(void)state;
	const char *out;
	uint64_t st;
	assert_int_equal(pd_writer_close(smpg_open(data, &S, 0, &st)), 0);
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	char want[1200];
	snprintf(want, sizeof(want), "samples,base_ns,cum_ns,base%%,cum%%,module,name\n"
		 "xptrace: %s: no samples in this trace\n", data);
	assert_string_equal(out, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_functions_by_period),
		cmocka_unit_test(test_calltree_folded_and_metrics),
		cmocka_unit_test(test_flat_samples),
		cmocka_unit_test(test_no_samples),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
