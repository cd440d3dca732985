/* The branch-stack decoder (decoders/lbr/dec_lbr.c) through the engine: cpu-clock
 * samples with PERF_SAMPLE_BRANCH_STACK in build/progs/ptspin (tests/unit/smp_gen.h).
 * The ranges between consecutive entries are walked in ptspin's bytes; expected
 * counts follow from `objdump -d ptspin`:
 *   spin_loop:       call leaf              (1 instruction)
 *   leaf:            add; xor; ret          (3)
 *   spin_after_call: dec %rdi; jne spin_loop (2) */
#include "xp_test.h"

#include "smp_gen.h"

static char data[1024];
static struct smpg_syms S;

static int setup(void **state)
{
	(void)state;
	return smpg_setup(data, sizeof(data), &S);
}

/* One loop iteration as the LBR holds it, the latest entry first: the jne taken back
 * to spin_loop, leaf's ret, the call of leaf, the previous jne. */
static void iteration(struct perf_branch_entry *br)
{
	br[0] = (struct perf_branch_entry){ .from = S.after_call + 3, .to = S.spin_loop };
	br[1] = (struct perf_branch_entry){ .from = S.leaf + 7, .to = S.after_call };
	br[2] = (struct perf_branch_entry){ .from = S.spin_loop, .to = S.leaf };
	br[3] = (struct perf_branch_entry){ .from = S.after_call + 3, .to = S.spin_loop };
}

/* `n` samples of one iteration each */
static void write_lbr(int n)
{
	uint64_t st;
	struct perf_branch_entry br[4];
	struct pd_writer *w = smpg_open(data, &S, PERF_SAMPLE_BRANCH_STACK, &st);
	iteration(br);
	for (int i = 0; i < n; i++)
		smpg_sample(w, st, SMPG_PID, 100 + (uint64_t)i, S.spin_loop, 1000, NULL, 0, br, 4);
	assert_int_equal(pd_writer_close(w), 0);
}

static void test_ranges(void **state)
{
	(void)state;
	const char *out;
	char want[2048];
	write_lbr(3);
	/* three ranges per sample between the four entries, three samples: equal counts,
	 * by address */
	assert_int_equal(xp_test_engine(&out, data, "ranges", "format", "csv", NULL), 0);
	snprintf(want, sizeof(want), "count,count%%,insns,cycles,start,end,module,function\n"
		 "3,33.3333,1,,0x%llx,0x%llx,ptspin,spin\n"
		 "3,33.3333,2,,0x%llx,0x%llx,ptspin,spin\n"
		 "3,33.3333,3,,0x%llx,0x%llx,ptspin,leaf\n",
		 (unsigned long long)S.spin_loop, (unsigned long long)S.spin_loop,
		 (unsigned long long)S.after_call, (unsigned long long)S.after_call + 3,
		 (unsigned long long)S.leaf, (unsigned long long)S.leaf + 7);
	assert_string_equal(out, want);
	/* the samples themselves: 3 at spin_loop, period 1000 each */
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	assert_string_equal(out, "samples,base_ns,cum_ns,base%,cum%,module,name\n"
		"3,3000,3000,100.0000,100.0000,ptspin,spin\n");
}

/* The last iteration: jne not taken, spin's ret back to main.  The range from leaf's
 * return to spin's ret holds the not-taken jne: dec, jne, ret (3 instructions). */
static void test_not_taken_branch(void **state)
{
	(void)state;
	const char *out;
	uint64_t st;
	struct perf_branch_entry br[4];
	iteration(br);
	br[0] = (struct perf_branch_entry){ .from = S.after_call + 5, .to = S.main + 0x21 };	/* spin's ret */
	struct pd_writer *w = smpg_open(data, &S, PERF_SAMPLE_BRANCH_STACK, &st);
	smpg_sample(w, st, SMPG_PID, 100, S.main + 0x21, 1000, NULL, 0, br, 4);
	assert_int_equal(pd_writer_close(w), 0);
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	/* spin_loop = spin+0x2, spin_after_call = spin+0x7 (ptspin at 0x555555554000) */
	assert_int_equal(S.spin_loop - S.spin, 2);
	assert_int_equal(S.after_call - S.spin, 7);
	char want[2048];
	unsigned long long l = S.spin_loop, a = S.after_call, f = S.leaf;
	snprintf(want, sizeof(want),
		 "{\"start\":\"0x%llx\",\"end\":\"0x%llx\",\"sym\":\"spin+0x2\",\"count\":1,\"insns\":1,"
		 "\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		 "{\"start\":\"0x%llx\",\"end\":\"0x%llx\",\"sym\":\"spin+0x7\",\"count\":1,\"insns\":3,"
		 "\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		 "{\"start\":\"0x%llx\",\"end\":\"0x%llx\",\"sym\":\"leaf+0x0\",\"count\":1,\"insns\":3,"
		 "\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n",
		 l, l, a, a + 5, f, f + 7);
	assert_string_equal(out, want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges),
		cmocka_unit_test(test_not_taken_branch),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
