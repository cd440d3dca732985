/* Writers: text alignment and tree indentation, JSON escaping and keys, CSV quoting,
 * folded stacks and a callgrind file for a hand-made tree. */
#include "xp_test.h"

#include "output/out.h"

static char *capture(void (*fn)(FILE *), size_t *n)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, n);
	fn(f);
	fclose(f);
	return buf;
}

static const struct out_col cols[] = {
	{ "Calls", OUT_INT, 5, false }, { "Cum%", OUT_PCT, 7, false }, { "Name", OUT_STR, 0, true },
};

static void rows(FILE *f, enum out_format fmt)
{
	struct out_table t;
	const char *path[] = { "main", "a \"quoted\", name" };
	struct out_val v1[] = { { .u = 12 }, { .d = 50.0 }, { .s = "main" } };
	struct out_val v2[] = { { .u = 3 }, { .null = true }, { .s = "a \"quoted\", name" } };

	out_table_begin(&t, f, fmt, cols, 3);
	out_row(&t, v1, 1, path, 1);
	out_row(&t, v2, 2, path, 2);
}

static void text(FILE *f) { rows(f, OUT_TEXT); }
static void jsonl(FILE *f) { rows(f, OUT_JSONL); }
static void csv(FILE *f) { rows(f, OUT_CSV); }

static void test_tables(void **state)
{
	(void)state;
	size_t n;
	char *s;

	s = capture(text, &n);
	assert_string_equal(s,
		"Calls     Cum%  Name\n"
		"   12   50.00%  main\n"
		"    3        -    a \"quoted\", name\n");
	free(s);
	s = capture(jsonl, &n);
	assert_string_equal(s,
		"{\"calls\":12,\"cum%\":50.0000,\"name\":\"main\",\"path\":[\"main\"]}\n"
		"{\"calls\":3,\"cum%\":null,\"name\":\"a \\\"quoted\\\", name\",\"path\":[\"main\",\"a \\\"quoted\\\", name\"]}\n");
	free(s);
	s = capture(csv, &n);
	assert_string_equal(s,
		"calls,cum%,name\n"
		"12,50.0000,main\n"
		"3,,\"a \"\"quoted\"\", name\"\n");
	free(s);
}

static const char *const names[] = { "?", "main", "f;g", "leaf" };
static const char *name(void *ctx, uint32_t fn) { (void)ctx; return names[fn]; }
static const char *module(void *ctx, uint32_t fn) { (void)ctx; (void)fn; return "prog"; }
static bool srcline(void *ctx, uint32_t fn, const char **file, int *line)
{
	(void)ctx;
	*file = "/src/p.c";
	*line = (int)fn * 10;
	return true;
}

static struct ct_tree *tree(void)
{
	struct ct_tree *t = ct_new(1);
	uint32_t s1[] = { 1, 2, 3 }, s2[] = { 1, 3 }, s3[] = { 1 };
	uint64_t w = 1;

	for (int i = 0; i < 3; i++)
		ct_add_stack(t, s1, 3, &w, 0);
	ct_add_stack(t, s2, 2, &w, 0);
	ct_add_stack(t, s3, 1, &w, 0);
	ct_finish(t);
	return t;
}

static void folded(FILE *f)
{
	struct ct_tree *t = tree();
	struct out_names n = { .name = name, .module = module, .srcline = srcline };
	out_folded(f, t, 0, &n, NULL);
	ct_free(t);
}

/* --per-thread: each stack under its thread, "comm-pid/tid" (its ';' made ':' too) */
static void folded_prefixed(FILE *f)
{
	struct ct_tree *t = tree();
	struct out_names n = { .name = name, .module = module, .srcline = srcline };
	out_folded(f, t, 0, &n, "a;b-7/8");
	ct_free(t);
}

static void folded_comm(FILE *f)
{
	struct ct_tree *t = tree();
	struct out_names n = { .name = name, .module = module, .srcline = srcline };
	out_folded(f, t, 0, &n, "prog;x");
	ct_free(t);
}

/* ns times in 1/1024 us steps: 1500 ns is 1.5 us exactly, 1 ns rounds to 1/1024 us;
 * a span's end is the same step as the next span's start */
static void chrome(FILE *f)
{
	struct out_chrome w;
	out_chrome_begin(&w, f, false, "perf clock (CLOCK_MONOTONIC)");
	out_chrome_process(&w, 7, "prog \"7\"");
	out_chrome_complete(&w, 7, 8, "main", "prog", 1500, 1, false, false);
	out_chrome_complete(&w, 7, 8, "f", NULL, 1501, 999, true, false);
	out_chrome_instant(&w, 7, 8, "leaf", "main;leaf", 2000000);
	out_chrome_end(&w);
}

static void chrome_insns(FILE *f)
{
	struct out_chrome w;
	out_chrome_begin(&w, f, true, "instructions (1 us = 1 instruction: the trace has no timestamps)");
	out_chrome_complete(&w, 1, 1, "main", "prog", 12, 30, false, true);
	out_chrome_end(&w);
}

static void callgrind(FILE *f)
{
	struct ct_tree *t = tree();
	struct out_names n = { .name = name, .module = module, .srcline = srcline };
	const char *ev[] = { "samples" };
	out_callgrind(f, t, ev, "prog", NULL, &n);
	ct_free(t);
}

static void test_trees(void **state)
{
	(void)state;
	size_t n;
	char *s = capture(folded, &n);

	/* ';' inside a name would split the frame: it becomes ':' */
	assert_string_equal(s, "main 1\nmain;f:g;leaf 3\nmain;leaf 1\n");
	free(s);
	s = capture(folded_prefixed, &n);
	assert_string_equal(s, "a:b-7/8;main 1\na:b-7/8;main;f:g;leaf 3\na:b-7/8;main;leaf 1\n");
	free(s);
	s = capture(folded_comm, &n);
	assert_string_equal(s, "prog:x;main 1\nprog:x;main;f:g;leaf 3\nprog:x;main;leaf 1\n");
	free(s);
	s = capture(chrome, &n);
	assert_string_equal(s,
		"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"perf clock (CLOCK_MONOTONIC)\"},\"traceEvents\":[\n"
		"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":7,\"tid\":7,\"args\":{\"name\":\"prog \\\"7\\\"\"}},\n"
		"{\"name\":\"main\",\"cat\":\"prog\",\"ph\":\"X\",\"ts\":1.5,\"dur\":0.0009765625,\"pid\":7,\"tid\":8},\n"
		"{\"name\":\"f\",\"cat\":\"sampled\",\"ph\":\"X\",\"ts\":1.5009765625,\"dur\":0.9990234375,\"pid\":7,\"tid\":8},\n"
		"{\"name\":\"leaf\",\"cat\":\"sample\",\"ph\":\"i\",\"s\":\"t\",\"ts\":2000,\"pid\":7,\"tid\":8,"
		"\"args\":{\"stack\":\"main;leaf\"}}\n]}\n");
	free(s);
	s = capture(chrome_insns, &n);
	assert_string_equal(s,
		"{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"instructions (1 us = 1 instruction: the trace "
		"has no timestamps)\"},\"traceEvents\":[\n"
		"{\"name\":\"main\",\"cat\":\"prog\",\"ph\":\"X\",\"ts\":12,\"dur\":30,\"pid\":1,\"tid\":1,"
		"\"args\":{\"inlined\":true}}\n]}\n");
	free(s);
	s = capture(callgrind, &n);
	assert_string_equal(s,
		"# callgrind format\nversion: 1\ncreator: xptrace\ncmd: prog\npositions: line\n"
		"events: samples\nsummary: 5\n\n"
		"ob=prog\nfl=/src/p.c\nfn=main\n10 1\n"
		"cob=prog\ncfi=/src/p.c\ncfn=f;g\ncalls=3 20\n10 3\n"
		"cob=prog\ncfi=/src/p.c\ncfn=leaf\ncalls=1 30\n10 1\n\n"
		"ob=prog\nfl=/src/p.c\nfn=f;g\n20 0\n"
		"cob=prog\ncfi=/src/p.c\ncfn=leaf\ncalls=3 30\n20 3\n\n"
		"ob=prog\nfl=/src/p.c\nfn=leaf\n30 4\n\n");
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tables),
		cmocka_unit_test(test_trees),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
