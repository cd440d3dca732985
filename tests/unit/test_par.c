/* Parallel decode (decode -j): a PT trace cut into pieces between PSBs decodes, on
 * worker threads, to the reports one thread gives, byte for byte, in every view and
 * format; the pieces really are decoded apart (each stops where the next starts).
 * The traces: tests/unit/pt_gen.h's ptspin trace (PSB+ every 4 KiB) raw and in a
 * per-thread perf.data, cut every 8 KiB, and traces/step-basic (the step tracer's PT
 * with timestamps, one queue), cut every 4 KiB. */
#include "xp_test.h"

#include <fcntl.h>
#include <sys/mman.h>

#include "decoders/pt/dpt.h"
#include "pt_gen_test.h"

#define N 20000
#define PIECE "8192"

static struct ptgen_test pg;

static int setup(void **state)
{
	return ptgen_test_setup(state, &pg, N);
}

/* The report of `view` (NAME or NAME=ARG) in `format` on `jobs` threads, of the raw
 * trace (input NULL) or a perf.data. */
static char *report(const char *input, const char *view, const char *format, unsigned jobs, const char *extra)
{
	const char *out;
	char j[16];
	int rc;
	snprintf(j, sizeof(j), "%u", jobs);
	if (input)
		rc = xp_test_engine(&out, input, view, "format", format, "jobs", j, NULL);
	else if (extra)
		rc = xp_test_engine(&out, NULL, view, "pt", pg.trace, "elf", pg.elfarg, "format", format, extra, "", "jobs",
				    j, NULL);
	else
		rc = xp_test_engine(&out, NULL, view, "pt", pg.trace, "elf", pg.elfarg, "format", format, "jobs", j, NULL);
	assert_int_equal(rc, 0);
	char *copy = strdup(out);
	assert_non_null(copy);
	return copy;
}

/* annotate: NAME=ARG of --annotate, a function of the trace */
static void reports_equal(const char *input, const char *piece, const char *annotate)
{
	static const struct { const char *view, *format, *extra; } cases[] = {
		{ "blocks", "text", NULL }, { "blocks", "jsonl", NULL }, { "blocks", "callgrind", NULL },
		{ "functions", "text", NULL }, { "functions", "jsonl", NULL }, { "calltree", "text", NULL },
		{ "calltree", "callgrind", NULL }, { "insn", "text", NULL }, { "insn", "jsonl", NULL },
		{ "insn", "jsonl", "insn-decoder" }, { "annotate", "text", NULL }, { "calls", "jsonl", NULL },
		{ "ranges", "text", NULL }, { "routines", "text", NULL },
	};
	setenv("XPTRACE_PIECE_SIZE", piece, 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if (input && cases[i].extra)
			continue;	/* a raw input's option */
		const char *view = strcmp(cases[i].view, "annotate") ? cases[i].view : annotate;
		char *one = report(input, view, cases[i].format, 1, cases[i].extra);
		assert_true(strlen(one) > 100);
		for (unsigned j = 2; j <= 4; j += 2) {
			char *par = report(input, view, cases[i].format, j, cases[i].extra);
			if (strcmp(one, par) != 0)
				fail_msg("%s --%s --format %s%s: -j%u differs from -j1", input ? input : "raw",
					 cases[i].view, cases[i].format, cases[i].extra ? " --insn-decoder" : "", j);
			free(par);
		}
		free(one);
	}
	unsetenv("XPTRACE_PIECE_SIZE");
}

static void test_raw_reports_equal(void **state)
{
	(void)state;
	reports_equal(NULL, "8192", "annotate=spin");
}

static void test_perf_data_reports_equal(void **state)
{
	(void)state;
	reports_equal(pg.perfdata, "8192", "annotate=spin");
}

static void test_step_trace_reports_equal(void **state)
{
	(void)state;
	reports_equal(XP_SRCDIR "/traces/step-basic", "4096", "annotate=main");
}

static int count_event(void *ctx, const struct xev *ev)
{
	(void)ctx;
	(void)ev;
	return 0;
}

/* Each piece, decoded on its own from its PSB, stops at the PSB the next one starts
 * at: the join takes every piece (none decoded again by the one before it). */
static void test_pieces_stop_where_next_starts(void **state)
{
	(void)state;
	int fd = open(pg.trace, O_RDONLY);
	assert_true(fd >= 0);
	off_t len = lseek(fd, 0, SEEK_END);
	const uint8_t *buf = mmap(NULL, (size_t)len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	assert_true(buf != MAP_FAILED);
	struct dpt_image *img = dpt_image_new("test");
	assert_int_equal(dpt_image_add_elf(img, pg.spin, 1, PTGEN_BASE, NULL, NULL), 0);
	struct dpt_split s;
	assert_int_equal(dpt_split(buf, (size_t)len, 8192, true, &s), 0);
	assert_true(s.npieces >= 8);
	uint64_t insns = 0;
	for (size_t i = 0; i < s.npieces; i++) {
		struct dpt_options o;
		struct dpt_stats st;
		dpt_options_init(&o);
		uint64_t off = dpt_split_piece(&s, i, &o);
		struct xev_sink sink = { count_event, NULL, NULL };
		assert_int_equal(dpt_decode(buf + off, (size_t)len - off, img, &o, &sink, &st), 0);
		assert_int_equal(dpt_split_next(&s, i, &st), i + 1);
		insns += st.insns;
	}
	assert_int_equal(insns, 6 * N + 2);
	dpt_split_free(&s);
	dpt_image_free(img);
	munmap((void *)buf, (size_t)len);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_reports_equal),
		cmocka_unit_test(test_perf_data_reports_equal),
		cmocka_unit_test(test_step_trace_reports_equal),
		cmocka_unit_test(test_pieces_stop_where_next_starts),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
