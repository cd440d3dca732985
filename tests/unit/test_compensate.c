/* Probe-overhead compensation and probe windows (issue 13, decode side) through the
 * engine, on perf.data files as `xptrace record --probe A,B,P -g` writes them: entry
 * and exit hits of A, B and P, cpu-clock samples with callchains, and the probes
 * feature (perfdata/pd_probes.h) with the calibrated cost of a probed call: CALLER ns
 * in the caller's time (half before the entry hit, half after the exit hit) and
 * CALLEE ns inside the callee's window (half after the entry, half before the exit).
 * The functions are those of build/progs/compensate.
 *
 * The example: main runs 1 ms, calls A; A runs 1 ms of its own, calls B, which runs
 * 8 ms of its own in 2000 steps of 4 us, each followed by a call of P (empty: 0 ns of
 * its own); A runs 1 more ms, returns; main runs 1 ms.  Unprobed: A Base 2 ms, Cum
 * 10 ms; B Base = Cum = 8 ms; P 0; main (outside every probe) 2 ms; total 12 ms.
 *
 * The trace holds the probe costs on top of that, by hand (ns):
 *   P     2000 windows of CALLEE 7000                    Base = Cum = 14 000 000
 *   B     8 000 000 + 2000 P calls * CALLER 3000 + its own CALLEE 7000
 *                                                        Base 14 007 000, Cum 28 007 000
 *   A     2 000 000 + B's CALLER 3000 + its own CALLEE 7000
 *                                                        Base  2 010 000, Cum 30 017 000
 *   root  2 000 000 + A's CALLER 3000                    Base  2 003 000 (all to +main)
 *   total 32 020 000; the cost of 2002 probed calls, 2002 * 10 000 = 20 020 000, is what
 *   compensation takes back.
 * P's probe is disarmed at 31 009 000, after its 2000th call (its hit limit): its window
 * is 1 000 000 .. 31 009 000 of the trace's 1 000 000 .. 33 020 000. */
#include "xp_test.h"

#include "pt_gen.h"

#define PID 6160
#define T0 1000000
#define ID0 300
#define CALLER 3000
#define CALLEE 7000

static char full[1024], half[1024], far[1024], nocal[1024], plain[1024], late[1024];
static uint64_t fA, fB, fP, fmain;

enum { EV_CLOCK, EV_A, EV_A_RET, EV_B, EV_B_RET, EV_P, EV_P_RET, NEV };
static const char *const ev_names[NEV] = {
	"cpu-clock", "probe_xptrace:A", "probe_xptrace:A__return", "probe_xptrace:B",
	"probe_xptrace:B__return", "probe_xptrace:P", "probe_xptrace:P__return",
};

static const char feat_full[] = "xptrace-probes 1\n"
				"calibration 3000 7000 1000\n"
				"probe probe_xptrace:A 999000 0 1 listed\n"
				"probe probe_xptrace:B 999000 0 1 listed\n"
				"probe probe_xptrace:P 999000 31009000 2000 listed, limit 2000 hits\n";
/* calibrated at half the trace's cost (a quieter moment): P, 2000 calls, shows 7000 a
 * call and the costs follow it */
static const char feat_half[] = "xptrace-probes 1\n"
				"calibration 1500 3500 1000\n"
				"probe probe_xptrace:A 999000 0 1 listed\n"
				"probe probe_xptrace:B 999000 0 1 listed\n"
				"probe probe_xptrace:P 999000 31009000 2000 listed, limit 2000 hits\n";
/* calibrated far below P's 7000 (more than 4 x): P's window is taken as its own work */
static const char feat_far[] = "xptrace-probes 1\n"
			       "calibration 300 1000 1000\n"
			       "probe probe_xptrace:A 999000 0 1 listed\n"
			       "probe probe_xptrace:B 999000 0 1 listed\n"
			       "probe probe_xptrace:P 999000 31009000 2000 listed, limit 2000 hits\n";
/* --adaptive's walk reached main after the target had ended: armed past the trace */
static const char feat_late[] = "xptrace-probes 1\n"
				"calibration 3000 7000 1000\n"
				"probe probe_xptrace:A 999000 0 1 listed\n"
				"probe probe_xptrace:B 999000 0 1 listed\n"
				"probe probe_xptrace:P 999000 31009000 2000 listed, limit 2000 hits\n"
				"probe probe_xptrace:main 40000000 0 0 caller of A\n";
/* the same probes, armed to the end, no calibration */
static const char feat_nocal[] = "xptrace-probes 1\n"
				 "probe probe_xptrace:A 999000 0 1 listed\n"
				 "probe probe_xptrace:B 999000 0 1 listed\n"
				 "probe probe_xptrace:P 999000 0 2000 listed\n";

struct gen {
	struct pd_writer *w;
	uint64_t t;
	uint64_t stack[8];	/* probed functions active, innermost last */
	unsigned depth;
};

static void record(struct gen *g, unsigned ev, uint64_t ip, const uint64_t *chain, unsigned nchain)
{
	uint64_t buf[32];
	unsigned n = 1;

	buf[n++] = ID0 + ev;				/* IDENTIFIER */
	buf[n++] = ip;					/* IP */
	buf[n++] = (uint64_t)PID << 32 | PID;		/* TID */
	buf[n++] = g->t;				/* TIME */
	buf[n++] = 0;					/* CPU */
	buf[n++] = ev == EV_CLOCK ? 250000 : 1;		/* PERIOD */
	if (ev == EV_CLOCK) {				/* CALLCHAIN */
		buf[n++] = nchain + 1;
		buf[n++] = PERF_CONTEXT_USER;
		for (unsigned i = 0; i < nchain; i++)
			buf[n++] = chain[i];
	}
	struct perf_event_header *h = (void *)buf;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = (uint16_t)(n * 8);
	assert_int_equal(pd_writer_record(g->w, h), 0);
}

/* A sample now in the innermost active function (main when none). */
static void sample(struct gen *g)
{
	uint64_t chain[10];
	unsigned n = 0;

	chain[n++] = (g->depth ? g->stack[g->depth - 1] : fmain) + 0x10;
	for (unsigned i = g->depth; i-- > 1;)
		chain[n++] = g->stack[i - 1] + 0x20;
	if (g->depth)
		chain[n++] = fmain + 0x20;
	record(g, EV_CLOCK, chain[0], chain, n);
}

/* `ns` of the innermost function's own time, a sample in the middle */
static void run(struct gen *g, uint64_t ns)
{
	g->t += ns / 2;
	sample(g);
	g->t += ns - ns / 2;
}

static void enter(struct gen *g, unsigned ev, uint64_t fn)
{
	g->t += CALLER / 2;
	record(g, ev, fn, NULL, 0);
	g->t += CALLEE / 2;
	g->stack[g->depth++] = fn;
}

static void leave(struct gen *g, unsigned ev)
{
	uint64_t caller = g->depth > 1 ? g->stack[g->depth - 2] : fmain;
	g->t += CALLEE / 2;
	record(g, ev, caller + 0x20, NULL, 0);	/* a return probe hits at the return address */
	g->t += CALLER / 2;
	g->depth--;
}

static void example(struct gen *g)
{
	sample(g);			/* main at T0 */
	g->t += 1000000;
	enter(g, EV_A, fA);
	run(g, 1000000);
	enter(g, EV_B, fB);
	for (int i = 0; i < 2000; i++) {
		g->t += 4000;
		enter(g, EV_P, fP);
		leave(g, EV_P_RET);
	}
	leave(g, EV_B_RET);
	run(g, 1000000);
	leave(g, EV_A_RET);
	g->t += 1000000;
	sample(g);			/* main at the end */
}

static void write_file(const char *path, const char *feature)
{
	struct pd_writer *w;
	char prog[1024];

	snprintf(prog, sizeof(prog), "%s/build/progs/compensate", XP_SRCDIR);
	int fd = open(prog, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	fA = PTGEN_BASE + ptgen_sym(elf, "A");
	fB = PTGEN_BASE + ptgen_sym(elf, "B");
	fP = PTGEN_BASE + ptgen_sym(elf, "P");
	fmain = PTGEN_BASE + ptgen_sym(elf, "main");
	elf_end(elf);
	close(fd);
	assert_true(fA > PTGEN_BASE && fB > PTGEN_BASE && fP > PTGEN_BASE && fmain > PTGEN_BASE);

	assert_int_equal(pd_writer_create(&w, path), 0);
	for (unsigned e = 0; e < NEV; e++) {
		struct perf_event_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.type = e == EV_CLOCK ? PERF_TYPE_SOFTWARE : 8;	/* the uprobe PMU's */
		attr.config = e == EV_CLOCK ? PERF_COUNT_SW_CPU_CLOCK : (e == EV_A_RET || e == EV_B_RET ||
									e == EV_P_RET);
		attr.size = PD_ATTR_SIZE;
		attr.sample_period = e == EV_CLOCK ? 250000 : 1;
		attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | (e == EV_CLOCK ? PERF_SAMPLE_CALLCHAIN : 0);
		attr.sample_id_all = 1;
		if (e == EV_CLOCK)
			attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
		int idx = pd_writer_add_attr(w, &attr, ev_names[e]);
		assert_int_equal(idx, (int)e);
		assert_int_equal(pd_writer_add_id(w, idx, ID0 + e, -1, PID), 0);
	}
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
				       PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
				       PERF_SAMPLE_CALLCHAIN, PID, 0, ID0, 0 }, "compensate", 10, 20,
				       PTGEN_BASE, 0x10000, prog), 0);
	struct gen g = { .w = w, .t = T0 };
	example(&g);
	assert_int_equal(g.t, 33020000);
	if (feature)
		assert_int_equal(pd_writer_feat_string(w, PD_FEAT_XPTRACE_PROBES, feature), 0);
	assert_int_equal(pd_writer_close(w), 0);
}

static int setup(void **state)
{
	if (xp_test_tmp_setup(state) || xp_test_path(full, sizeof(full), "full.data") ||
	    xp_test_path(half, sizeof(half), "half.data") || xp_test_path(far, sizeof(far), "far.data") ||
	    xp_test_path(nocal, sizeof(nocal), "nocal.data") || xp_test_path(plain, sizeof(plain), "plain.data") ||
	    xp_test_path(late, sizeof(late), "late.data"))
		return -1;
	write_file(full, feat_full);
	write_file(half, feat_half);
	write_file(far, feat_far);
	write_file(nocal, feat_nocal);
	write_file(plain, NULL);
	write_file(late, feat_late);
	return 0;
}

#define HEAD_WINDOW "# P: exact from 0.001000000 to 0.031009000 s (of 0.001000000..0.033020000), " \
	"its Calls marked ~\n"
/* P: 2000 calls x (3000 + 7000) ns against a Cum of 0 (A and B: one call each, 10 us
 * of 10 and 8 ms) */
#define HEAD_BOUND                                                                           \
	"# ~ before a Cum: the function takes under 10 x what a probed call costs, so its "  \
	"compensated time is uncertain by up to its calls x that cost, over 10 % of it "     \
	"(jsonl: error_ns)\n"

/* The tree's lines every expected output shares: the column legend, the rows as the
 * unprobed run has them (compensated), and as the probed run took them (raw: P's Calls
 * marked ~ where its window is not the whole trace). */
#define HEAD_CALLS "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees\n"
#define TREE_COLS "Lvl   RL      Calls      Base(ms)       Cum(ms)  Module                Name\n"
#define ROWS_COMPENSATED TREE_COLS \
	"  1    1          1         2.000        10.000  compensate            A\n" \
	"  2    1          1         8.000         8.000  compensate              B\n" \
	"  3    1      ~2000         0.000        ~0.000  compensate                P\n" \
	"  1    1          -         2.000         2.000  compensate            +main\n"
#define ROWS_RAW(p_calls) TREE_COLS \
	"  1    1          1         2.010        30.017  compensate            A\n" \
	"  2    1          1        14.007        28.007  compensate              B\n" \
	"  3    1      " p_calls "        14.000        14.000  compensate                P\n" \
	"  1    1          -         2.003         2.003  compensate            +main\n"

/* Compensated: the unprobed figures exactly; P's calls counted in its window only. */
static void test_compensated(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, full, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 12.000 ms\n"
				 HEAD_CALLS
				 "# probe overhead compensated: 3000 ns per probed call in its caller, 7000 ns "
				 "in itself (calibrated over 1000 runs); 20020000 ns subtracted\n"
				 HEAD_WINDOW
				 HEAD_BOUND
				 ROWS_COMPENSATED);
}

/* The trace's own in-call cost, from P (a probed leaf called 2000 times: 7000 ns a
 * call), replaces a calibration made at half of it, the caller's share scaled alike:
 * the unprobed figures again. */
static void test_leaf_cost(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, half, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 12.000 ms\n"
				 HEAD_CALLS
				 "# probe overhead compensated: 3000 ns per probed call in its caller, 7000 ns "
				 "in itself (the trace's shortest probed leaf per call; calibrated 1500 + 3500 "
				 "over 1000 runs); 20020000 ns subtracted\n"
				 HEAD_WINDOW
				 HEAD_BOUND
				 ROWS_COMPENSATED);
	/* 7 x the calibrated 1000: the calibration stands */
	assert_int_equal(xp_test_engine(&out, far, "calltree", NULL), 0);
	assert_non_null(strstr(out, "# probe overhead compensated: 300 ns per probed call in its caller, "
				    "1000 ns in itself (calibrated over 1000 runs); "));
}

/* --no-compensate: the trace's own times, inflated by the hand-computed costs. */
static void test_raw(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, full, "calltree", "no-compensate", "", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 32.020 ms\n"
				 HEAD_CALLS
				 "# probe overhead not compensated (--no-compensate): a probed call costs 3000 ns "
				 "in its caller, 7000 ns in itself\n"
				 HEAD_WINDOW
				 ROWS_RAW("~2000"));
}

/* jsonl: rows keep their keys; window_ns only on the rows of P, the partial probe. */
static void test_jsonl(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, full, "calltree", "format", "jsonl", NULL), 0);
	assert_string_equal(out, "{\"lvl\":1,\"rl\":1,\"calls\":1,\"base_ns\":2000000,\"cum_ns\":10000000,\"module\":\"compensate\",\"name\":\"A\","
				 "\"sampled\":false,\"error_ns\":10000,\"path\":[\"A\"]}\n"
				 "{\"lvl\":2,\"rl\":1,\"calls\":1,\"base_ns\":8000000,\"cum_ns\":8000000,\"module\":\"compensate\",\"name\":\"B\","
				 "\"sampled\":false,\"error_ns\":10000,\"path\":[\"A\",\"B\"]}\n"
				 "{\"lvl\":3,\"rl\":1,\"calls\":2000,\"base_ns\":0,\"cum_ns\":0,\"module\":\"compensate\",\"name\":\"P\","
				 "\"sampled\":false,\"window_ns\":[1000000,31009000],\"error_ns\":20000000,"
				 "\"path\":[\"A\",\"B\",\"P\"]}\n"
				 "{\"lvl\":1,\"rl\":1,\"calls\":null,\"base_ns\":2000000,\"cum_ns\":2000000,\"module\":\"compensate\",\"name\":\"main\","
				 "\"sampled\":true,\"path\":[\"main\"]}\n");
}

/* The other tree reports: the same figures, P's Calls marked. */
static void test_folds(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, full, "routines", NULL), 0);
	assert_string_equal(out, "# routines: time, total 12.000 ms\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees, recursion once; CumRec: every activation summed\n"
				 "# probe overhead compensated: 3000 ns per probed call in its caller, 7000 ns "
				 "in itself (calibrated over 1000 runs); 20020000 ns subtracted\n"
				 HEAD_WINDOW
				 "    Calls      Base(ms)       Cum(ms)    CumRec(ms)  Name\n"
				 "        1         2.000        10.000        10.000  A\n"
				 "        1         8.000         8.000         8.000  B\n"
				 "        -         2.000         2.000         2.000  +main\n"
				 "    ~2000         0.000         0.000         0.000  P\n");
	assert_int_equal(xp_test_engine(&out, full, "functions", "format", "jsonl", "no-compensate", "", NULL), 0);
	/* raw, so that P has time to be listed; its cpu-clock column: no sample fell in it */
	assert_non_null(strstr(out, "{\"calls\":2000,\"base_ns\":14000000,\"cum_ns\":14000000,\"base%\":43.7227,"
				    "\"cum%\":43.7227,\"cpu-clock\":0,\"module\":\"compensate\",\"name\":\"P\","
				    "\"window_ns\":[1000000,31009000]}\n"));
	assert_non_null(strstr(out, "\"module\":\"compensate\",\"name\":\"A\"}\n"));
}

/* --probes: the feature as a report; window lengths within the trace's span. */
static void test_probes(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, full, "probes", NULL), 0);
	/* times in s as perf script prints them, the windows in ms; jsonl: integer ns */
	assert_string_equal(out, "# probes: 3, trace 0.001000000..0.033020000 s\n"
				 "# calibration: a probed call costs 3000 ns in its caller, 7000 ns in itself "
				 "(medians over 1000 runs)\n"
				 "Function           Hits        Armed(s)     Disarmed(s)    Window(ms)  Reason\n"
				 "A                     1     0.000999000               -        32.020  listed\n"
				 "B                     1     0.000999000               -        32.020  listed\n"
				 "P                  2000     0.000999000     0.031009000        30.009  listed, "
				 "limit 2000 hits\n");
	assert_int_equal(xp_test_engine(&out, full, "probes", "format", "jsonl", NULL), 0);
	assert_string_equal(out, "{\"calibration\":{\"caller_ns\":3000,\"callee_ns\":7000,\"runs\":1000}}\n"
				 "{\"function\":\"A\",\"hits\":1,\"armed_ns\":999000,\"disarmed_ns\":null,"
				 "\"window_len_ns\":32020000,\"reason\":\"listed\"}\n"
				 "{\"function\":\"B\",\"hits\":1,\"armed_ns\":999000,\"disarmed_ns\":null,"
				 "\"window_len_ns\":32020000,\"reason\":\"listed\"}\n"
				 "{\"function\":\"P\",\"hits\":2000,\"armed_ns\":999000,\"disarmed_ns\":31009000,"
				 "\"window_len_ns\":30009000,\"reason\":\"listed, limit 2000 hits\"}\n");
}

/* A probe armed after the trace's last event: said so, not a window past the end
 * (was "exact from 0.040000000 to 0.040000000 s (of 0.001000000..0.033020000)"). */
static void test_armed_late(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, late, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 12.000 ms\n"
				 HEAD_CALLS
				 "# probe overhead compensated: 3000 ns per probed call in its caller, 7000 ns "
				 "in itself (calibrated over 1000 runs); 20020000 ns subtracted\n"
				 HEAD_WINDOW
				 "# main: armed at 0.040000000 s, after the trace's last event (0.033020000): "
				 "no calls counted\n"
				 HEAD_BOUND
				 ROWS_COMPENSATED);
	assert_int_equal(xp_test_engine(&out, late, "probes", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"function\":\"main\",\"hits\":0,\"armed_ns\":40000000,\"disarmed_ns\":null,"
				    "\"window_len_ns\":0,\"reason\":\"caller of A\"}\n"));
}

/* No calibration: raw times, said so; every probe armed throughout: no window lines,
 * no marks. */
static void test_uncalibrated(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, nocal, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 32.020 ms\n"
				 HEAD_CALLS
				 "# probe overhead not compensated: the trace has no calibration\n"
				 ROWS_RAW(" 2000"));
	assert_int_equal(xp_test_engine(&out, nocal, "probes", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"calibration\":null}\n{\"function\":\"A\","));
}

/* Without the feature: the merged tree as before issue 13, and --probes fails clearly. */
static void test_no_feature(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, plain, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 32.020 ms\n"
				 HEAD_CALLS
				 ROWS_RAW(" 2000"));
	int rc = xp_test_engine(&out, plain, "probes", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(out, "no probes in this trace"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compensated),
		cmocka_unit_test(test_leaf_cost),
		cmocka_unit_test(test_raw),
		cmocka_unit_test(test_jsonl),
		cmocka_unit_test(test_folds),
		cmocka_unit_test(test_probes),
		cmocka_unit_test(test_armed_late),
		cmocka_unit_test(test_uncalibrated),
		cmocka_unit_test(test_no_feature),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
