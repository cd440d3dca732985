/* Merged event/sample call trees (issue 12's worked example) through the engine, on a
 * perf.data written as `xptrace record --probe C,A,B -g` writes one: entry and exit
 * probe hits of C, A and B, and one cpu-clock sample with its callchain in the middle
 * of every time unit (1 unit = 1000 ns) in build/progs/merged, whose functions give
 * the names.  X is not probed: its unit is seen by a sample only.
 *
 * The example, one unit per step: C runs 3 units, calls A; A runs 3, calls B; B runs
 * 2, calls B; the inner B runs 1; back in A, A calls B again, which runs 1; back in C,
 * C calls B; B runs 2, calls A; A runs 3, calls B; this B runs 2 and calls A; that A
 * runs 1; back in the first A (under B) it calls X, which runs 1.
 *
 * Every expected figure below is hand-computed from that sequence (in units of 1000
 * ns); samples count one per unit. */
#include "xp_test.h"

#include "pt_gen.h"

#define PID 5150
#define UNIT 1000
#define T0 1000000
#define ID_CLOCK 100

static char data[1024], thr[1024], bad[1024];

/* the functions of build/progs/merged where the file maps it */
static uint64_t fC, fA, fB, fX, fmain;

enum { EV_CLOCK, EV_C, EV_C_RET, EV_A, EV_A_RET, EV_B, EV_B_RET, NEV };
static const char *const ev_names[NEV] = {
	"cpu-clock", "probe_xptrace:C", "probe_xptrace:C__return", "probe_xptrace:A",
	"probe_xptrace:A__return", "probe_xptrace:B", "probe_xptrace:B__return",
};

struct gen {
	struct pd_writer *w;
	uint64_t t;		/* now, ns */
	uint64_t stack[16];	/* functions active, innermost last */
	unsigned depth;
	uint32_t tid;
};

static void record(struct gen *g, unsigned ev, uint64_t ip, const uint64_t *chain, unsigned nchain)
{
	uint64_t buf[64];
	unsigned n = 1;

	buf[n++] = ID_CLOCK + ev;				/* IDENTIFIER */
	buf[n++] = ip;						/* IP */
	buf[n++] = (uint64_t)g->tid << 32 | PID;		/* TID */
	buf[n++] = g->t;					/* TIME */
	buf[n++] = 0;						/* CPU */
	buf[n++] = ev == EV_CLOCK ? UNIT : 1;			/* PERIOD */
	if (ev == EV_CLOCK) {					/* CALLCHAIN */
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

/* `units` units spent in `fn` (the innermost function, probed or not): one sample
 * in the middle of each, its callchain the active functions and main. */
static void run(struct gen *g, uint64_t fn, unsigned units)
{
	for (unsigned u = 0; u < units; u++) {
		uint64_t chain[20];
		unsigned n = 0;
		chain[n++] = fn + 0x10;
		for (unsigned i = g->depth; i-- > 0;)
			if (g->stack[i] != fn || i != g->depth - 1)
				chain[n++] = g->stack[i] + 0x20;	/* return addresses */
		if (fn != fmain)
			chain[n++] = fmain + 0x20;
		g->t += UNIT / 2;
		record(g, EV_CLOCK, chain[0], chain, n);
		g->t += UNIT / 2;
	}
}

static void enter(struct gen *g, unsigned ev, uint64_t fn)
{
	record(g, ev, fn, NULL, 0);
	g->stack[g->depth++] = fn;
}

static void leave(struct gen *g, unsigned ev)
{
	uint64_t caller = g->depth > 1 ? g->stack[g->depth - 2] : fmain;
	g->depth--;
	record(g, ev, caller + 0x20, NULL, 0);	/* a return probe hits at the return address */
}

/* X is not probed: it only shows in samples. */
static void unprobed(struct gen *g, uint64_t fn, unsigned units)
{
	g->stack[g->depth++] = fn;
	run(g, fn, units);
	g->depth--;
}

static void example(struct gen *g)
{
	enter(g, EV_C, fC);
	run(g, fC, 3);
	enter(g, EV_A, fA);
	run(g, fA, 3);
	enter(g, EV_B, fB);
	run(g, fB, 2);
	enter(g, EV_B, fB);
	run(g, fB, 1);
	leave(g, EV_B_RET);
	leave(g, EV_B_RET);
	enter(g, EV_B, fB);
	run(g, fB, 1);
	leave(g, EV_B_RET);
	leave(g, EV_A_RET);
	enter(g, EV_B, fB);
	run(g, fB, 2);
	enter(g, EV_A, fA);
	run(g, fA, 3);
	enter(g, EV_B, fB);
	run(g, fB, 2);
	enter(g, EV_A, fA);
	run(g, fA, 1);
	leave(g, EV_A_RET);
	leave(g, EV_B_RET);
	unprobed(g, fX, 1);
	leave(g, EV_A_RET);
	leave(g, EV_B_RET);
	leave(g, EV_C_RET);
}

static struct pd_writer *open_file(const char *path)
{
	struct pd_writer *w;
	char prog[1024];

	snprintf(prog, sizeof(prog), "%s/build/progs/merged", XP_SRCDIR);
	int fd = open(prog, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(elf);
	fC = PTGEN_BASE + ptgen_sym(elf, "C");
	fA = PTGEN_BASE + ptgen_sym(elf, "A");
	fB = PTGEN_BASE + ptgen_sym(elf, "B");
	fX = PTGEN_BASE + ptgen_sym(elf, "X");
	fmain = PTGEN_BASE + ptgen_sym(elf, "main");
	elf_end(elf);
	close(fd);
	assert_true(fC > PTGEN_BASE && fA > PTGEN_BASE && fB > PTGEN_BASE && fX > PTGEN_BASE);

	assert_int_equal(pd_writer_create(&w, path), 0);
	for (unsigned e = 0; e < NEV; e++) {
		struct perf_event_attr attr;
		memset(&attr, 0, sizeof(attr));
		attr.type = e == EV_CLOCK ? PERF_TYPE_SOFTWARE : 8;	/* the uprobe PMU's */
		attr.config = e == EV_CLOCK ? PERF_COUNT_SW_CPU_CLOCK : (e == EV_C_RET || e == EV_A_RET ||
									e == EV_B_RET);
		attr.size = PD_ATTR_SIZE;
		attr.sample_period = e == EV_CLOCK ? UNIT : 1;
		attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
				   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | (e == EV_CLOCK ? PERF_SAMPLE_CALLCHAIN : 0);
		attr.sample_id_all = 1;
		if (e == EV_CLOCK)
			attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
		int idx = pd_writer_add_attr(w, &attr, ev_names[e]);
		assert_int_equal(idx, (int)e);
		assert_int_equal(pd_writer_add_id(w, idx, ID_CLOCK + e, -1, PID), 0);
	}
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
				       PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |
				       PERF_SAMPLE_CALLCHAIN, PID, 0, ID_CLOCK, 0 }, "merged", 10, 20,
				       PTGEN_BASE, 0x10000, prog), 0);
	return w;
}

/* Two threads at once: thread PID runs A (probed) for 2 units of its own, then 2 in X
 * (sampled); thread PID+1 runs B (probed) the same way, at the same times, its
 * records interleaved with the first thread's. */
static void threads(struct gen *g1, struct gen *g2)
{
	enter(g1, EV_A, fA);
	enter(g2, EV_B, fB);
	for (int u = 0; u < 4; u++) {
		/* the same unit in both threads: samples at the same times */
		g2->t = g1->t;
		if (u < 2) {
			run(g1, fA, 1);
			run(g2, fB, 1);
		} else {
			unprobed(g1, fX, 1);
			unprobed(g2, fX, 1);
		}
	}
	leave(g1, EV_A_RET);
	leave(g2, EV_B_RET);
}

/* Mismatched input: an exit of B without its entry (probes armed mid-call), then C
 * entered and A entered, A's exit lost, C's exit: C's exit leaves A too. */
static void mismatched(struct gen *g)
{
	record(g, EV_B_RET, fmain + 0x20, NULL, 0);
	run(g, fmain, 1);
	enter(g, EV_C, fC);
	run(g, fC, 1);
	enter(g, EV_A, fA);
	run(g, fA, 2);
	g->depth--;		/* A's exit lost */
	leave(g, EV_C_RET);
}

static int setup(void **state)
{
	if (xp_test_tmp_setup(state) || xp_test_path(data, sizeof(data), "perf.data") ||
	    xp_test_path(thr, sizeof(thr), "threads.data") || xp_test_path(bad, sizeof(bad), "bad.data"))
		return -1;
	struct gen g = { .t = T0, .tid = PID };
	g.w = open_file(data);
	example(&g);
	if (pd_writer_close(g.w))
		return -1;
	struct gen g1 = { .t = T0, .tid = PID }, g2 = { .t = T0, .tid = PID + 1 };
	g1.w = g2.w = open_file(thr);
	threads(&g1, &g2);
	if (pd_writer_close(g1.w))
		return -1;
	g = (struct gen){ .t = T0, .tid = PID };
	g.w = open_file(bad);
	mismatched(&g);
	return pd_writer_close(g.w) == 0 ? 0 : -1;
}

static void test_calltree(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", NULL), 0);
	/* the table in ns; X, seen by one sample under C·B·A, takes its share of
	 * that A's exact 4 units: 1 of its 4 samples */
	assert_string_equal(out, "# merged tree: time, total 19.000 us\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees\n"
				 "Lvl   RL      Calls      Base(us)       Cum(us)  Module                Name\n"
				 "  1    1          1         3.000        19.000  merged                C\n"
				 "  2    1          1         2.000         9.000  merged                  B\n"
				 "  3    1          1         3.000         7.000  merged                    A\n"
				 "  4    2          1         2.000         3.000  merged                      B\n"
				 "  5    2          1         1.000         1.000  merged                        A\n"
				 "  4    1          -         1.000         1.000  merged                      +X\n"
				 "  2    1          1         3.000         7.000  merged                  A\n"
				 "  3    1          2         3.000         4.000  merged                    B\n"
				 "  4    2          1         1.000         1.000  merged                      B\n");
}

static void test_calltree_jsonl(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"lvl\":1,\"rl\":1,\"calls\":1,\"base_ns\":3000,\"cum_ns\":19000,\"module\":\"merged\",\"name\":\"C\","
				    "\"sampled\":false,\"path\":[\"C\"]}\n"));
	assert_non_null(strstr(out, "{\"lvl\":4,\"rl\":1,\"calls\":null,\"base_ns\":1000,\"cum_ns\":1000,\"module\":\"merged\",\"name\":\"X\","
				    "\"sampled\":true,\"path\":[\"C\",\"B\",\"A\",\"X\"]}\n"));
}

/* --metric samples: the raw counts, one per unit */
static void test_calltree_samples(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "metric", "samples", NULL), 0);
	assert_string_equal(out, "# merged tree: samples, total 19\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self samples; Cum: with callees\n"
				 "Lvl   RL      Calls          Base           Cum  Module                Name\n"
				 "  1    1          1             3            19  merged                C\n"
				 "  2    1          1             2             9  merged                  B\n"
				 "  3    1          1             3             7  merged                    A\n"
				 "  4    2          1             2             3  merged                      B\n"
				 "  5    2          1             1             1  merged                        A\n"
				 "  4    1          -             1             1  merged                      +X\n"
				 "  2    1          1             3             7  merged                  A\n"
				 "  3    1          2             3             4  merged                    B\n"
				 "  4    2          1             1             1  merged                      B\n");
}

/* Calls of every activation (recursive ones too), Cum counts recursion once:
 * A's CumRec 7 + 7 + 1 (the A under C·B·A·B is inside C·B·A), Cum 7 + 7. */
static void test_routines(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "routines", NULL), 0);
	assert_string_equal(out, "# routines: time, total 19.000 us\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees, recursion once; CumRec: every activation summed\n"
				 "    Calls      Base(us)       Cum(us)    CumRec(us)  Name\n"
				 "        1         3.000        19.000        19.000  C\n"
				 "        3         7.000        14.000        15.000  A\n"
				 "        5         8.000        13.000        17.000  B\n"
				 "        -         1.000         1.000         1.000  +X\n");
	assert_int_equal(xp_test_engine(&out, data, "routines", "format", "jsonl", NULL), 0);
	assert_string_equal(out, "{\"calls\":1,\"base_ns\":3000,\"cum_ns\":19000,\"cumrec_ns\":19000,\"name\":\"C\",\"sampled\":false}\n"
				 "{\"calls\":3,\"base_ns\":7000,\"cum_ns\":14000,\"cumrec_ns\":15000,\"name\":\"A\",\"sampled\":false}\n"
				 "{\"calls\":5,\"base_ns\":8000,\"cum_ns\":13000,\"cumrec_ns\":17000,\"name\":\"B\",\"sampled\":false}\n"
				 "{\"calls\":null,\"base_ns\":1000,\"cum_ns\":1000,\"cumrec_ns\":1000,\"name\":\"X\",\"sampled\":true}\n");
	/* Cum means what it means in --functions: A's and B's 14 and 13 us there too */
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	assert_non_null(strstr(out, ",7000,14000,"));
	assert_non_null(strstr(out, ",8000,13000,"));
}

/* Arcflow: A is called from C once (its Base 3, Cum 7 there) and from B twice (C·B·A
 * and C·B·A·B·A: Base 3 + 1, CumRec 7 + 1, Cum 7: the second B -> A is inside the
 * first, recursion counted once); it calls B three times (C·A·B twice, Base 3, Cum 4;
 * C·B·A·B once, Base 2, Cum 3) and X, seen by samples only.  A's own Cum 7 + 7 and
 * B's 9 + 4 are --routines' (outermost activations), CumRec 15 and 17 every one. */
static void test_arcs(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "arcs", NULL), 0);
	assert_string_equal(out, "# arcs: time, total 19.000 us\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees, recursion once; CumRec: every activation summed\n"
				 "    Calls      Base(us)       Cum(us)    CumRec(us)  Name\n"
				 "        1         3.000        19.000        19.000  C\n"
				 "        1         2.000         9.000         9.000    B\n"
				 "        1         3.000         7.000         7.000    A\n"
				 "\n"
				 "        2         4.000         7.000         8.000    B\n"
				 "        1         3.000         7.000         7.000    C\n"
				 "        3         7.000        14.000        15.000  A\n"
				 "        3         5.000         7.000         7.000    B\n"
				 "        -         1.000         1.000         1.000    +X\n"
				 "\n"
				 "        1         2.000         9.000         9.000    C\n"
				 "        3         5.000         7.000         7.000    A\n"
				 "        1         1.000         1.000         1.000    B\n"
				 "        5         8.000        13.000        17.000  B\n"
				 "        2         4.000         7.000         8.000    A\n"
				 "        1         1.000         1.000         1.000    B\n"
				 "\n"
				 "        -         1.000         1.000         1.000    +A\n"
				 "        -         1.000         1.000         1.000  +X\n");
	assert_int_equal(xp_test_engine(&out, data, "arcs", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"routine\":\"A\",\"role\":\"caller\",\"calls\":2,\"base_ns\":4000,\"cum_ns\":7000,"
				    "\"cumrec_ns\":8000,\"name\":\"B\",\"sampled\":false}\n"
				    "{\"routine\":\"A\",\"role\":\"caller\",\"calls\":1,\"base_ns\":3000,\"cum_ns\":7000,"
				    "\"cumrec_ns\":7000,\"name\":\"C\",\"sampled\":false}\n"
				    "{\"routine\":\"A\",\"role\":\"self\",\"calls\":3,\"base_ns\":7000,\"cum_ns\":14000,"
				    "\"cumrec_ns\":15000,\"name\":\"A\",\"sampled\":false}\n"
				    "{\"routine\":\"A\",\"role\":\"callee\",\"calls\":3,\"base_ns\":5000,\"cum_ns\":7000,"
				    "\"cumrec_ns\":7000,\"name\":\"B\",\"sampled\":false}\n"
				    "{\"routine\":\"A\",\"role\":\"callee\",\"calls\":null,\"base_ns\":1000,\"cum_ns\":1000,"
				    "\"cumrec_ns\":1000,\"name\":\"X\",\"sampled\":true}\n"));
}

/* Each sample goes under the event node of its own thread at its time: X under A
 * (thread PID) and under B (thread PID+1), 2 units each; A's and B's exact 4 units are
 * split 2:2 by their samples. */
static void test_threads(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, thr, "calltree", "per-thread", "", NULL), 0);
	assert_string_equal(out, "# thread 5150 (merged) pid 5150\n"
				 "Lvl   RL      Calls      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          1          2000          4000  merged                A\n"
				 "  2    1          -          2000          2000  merged                  +X\n"
				 "\n"
				 "# thread 5151 (:5151) pid 5150\n"
				 "Lvl   RL      Calls      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          1          2000          4000  merged                B\n"
				 "  2    1          -          2000          2000  merged                  +X\n");
}

/* The exit without entry and the lost exit are repaired and counted; main's unit
 * before C is a sample outside every event node: under the root, sampled. */
static void test_mismatched(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, bad, "calltree", NULL), 0);
	assert_string_equal(out, "# merged tree: time, total 4000 ns\n"
				 "# Calls: exact calls (- where samples alone saw the function); Base: self time; Cum: with callees\n"
				 "# 2 unmatched entry/exit events repaired (returns without their entry, activations left open)\n"
				 "Lvl   RL      Calls      Base(ns)       Cum(ns)  Module                Name\n"
				 "  1    1          1          1000          3000  merged                C\n"
				 "  2    1          1          2000          2000  merged                  A\n"
				 "  1    1          -          1000          1000  merged                +main\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_calltree),
		cmocka_unit_test(test_calltree_jsonl),
		cmocka_unit_test(test_calltree_samples),
		cmocka_unit_test(test_routines),
		cmocka_unit_test(test_arcs),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_mismatched),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
