/* `xptrace decode --pt` end to end: PT made by libipt's encoder for hand-assembled code
 * (a loop whose body runs exactly 1000 times, a call and two returns), decoded by the
 * decode engine in this process (xp_test_engine). */
#include "xp_test.h"

#include <sys/stat.h>
#include <unistd.h>

#include "pt_enc.h"

#define BASE 0x401000

static char codef[1024], ptf[1024], badf[1024], timedf[1024], mtcf[1024], rawarg[1100];

static void write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(p, 1, n, f), n);
	fclose(f);
}

static size_t encode_loop(struct pte *e)
{
	return pte_loop_trace(e, BASE, 0, 0, 0);
}

static int setup(void **state)
{
	struct pte e;
	if (xp_test_tmp_setup(state) || xp_test_path(codef, sizeof(codef), "code.bin") ||
	    xp_test_path(ptf, sizeof(ptf), "loop.pt") || xp_test_path(badf, sizeof(badf), "bad.pt") ||
	    xp_test_path(timedf, sizeof(timedf), "timed.pt") || xp_test_path(mtcf, sizeof(mtcf), "mtc.pt"))
		return -1;
	snprintf(rawarg, sizeof(rawarg), "%s:%#x", codef, BASE);
	write_file(codef, pte_loop_code, sizeof(pte_loop_code));
	/* 2.4 M TSC ticks from the enable to the disable: 1 ms at 2.4 GHz */
	pte_init(&e, 4096);
	write_file(timedf, e.buf, pte_loop_trace(&e, BASE, 1000, 1000 + 2400000, 0));
	pte_free(&e);
	pte_init(&e, 4096);
	write_file(mtcf, e.buf, pte_loop_trace(&e, BASE, 1000, 0, 50));
	pte_free(&e);
	pte_init(&e, 4096);
	size_t first = encode_loop(&e);
	write_file(ptf, e.buf, first);
	/* two copies, the first one with an unknown opcode (02 05) at its first TNT packet
	 * (offset 27, after PSB, PSBEND, MODE and TIP.PGE): a gap, then a clean segment */
	encode_loop(&e);
	e.buf[27] = 0x02;
	e.buf[28] = 0x05;
	write_file(badf, e.buf, pte_len(&e));
	pte_free(&e);
	return 0;
}

/* `xptrace decode --pt PT --raw code.bin:BASE --VIEW OPTIONS...` (xp_test_engine). */
#define RAW(out, pt, view, ...) xp_test_engine(out, NULL, view, "pt", pt, "raw", rawarg, __VA_ARGS__)

static void test_blocks_loop_exact(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, ptf, "blocks", "format", "jsonl", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out,
		"{\"start\":\"0x401005\",\"end\":\"0x401007\",\"sym\":null,\"count\":1000,\"insns\":2,"
		"\"cycles\":null,\"ipc\":null,\"taken\":999,\"not_taken\":1,\"mainline\":\"taken\"}\n"
		"{\"start\":\"0x401000\",\"end\":\"0x401000\",\"sym\":null,\"count\":1,\"insns\":1,"
		"\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		"{\"start\":\"0x401009\",\"end\":\"0x401009\",\"sym\":null,\"count\":1,\"insns\":1,"
		"\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		"{\"start\":\"0x40100e\",\"end\":\"0x40100e\",\"sym\":null,\"count\":1,\"insns\":1,"
		"\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		"{\"start\":\"0x401010\",\"end\":\"0x401010\",\"sym\":null,\"count\":1,\"insns\":1,"
		"\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n");
}

static void test_blocks_text(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, ptf, "blocks", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# 5 blocks, 2004 instructions, 0 gaps; sorted by count\n"));
	/* the loop body is a basic block of its own: libipt's first block (from the
	 * enable) is split where the loop starts */
	assert_non_null(strstr(out, "0x401005           0x401007           [unknown]                                  1000      2            -      -       999*          1\n"));
	assert_non_null(strstr(out, "0x401000           0x401000           [unknown]                                     1      1            -      -          -          -\n"));
}

static void test_insn_stream(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, ptf, "insn", "format", "jsonl", NULL);
	assert_int_equal(rc, 0);
	/* enabled marker, 2004 instructions, disabled marker */
	int lines = 0, loop_dec = 0;
	for (const char *p = out; (p = strchr(p, '\n')); p++)
		lines++;
	for (const char *p = out; (p = strstr(p, "\"ip\":\"0x401005\"")); p++)
		loop_dec++;
	assert_int_equal(lines, 1 + 2004 + 1);
	assert_int_equal(loop_dec, 1000);
	const char *head = "{\"event\":\"enabled\",\"addr\":\"0x401000\"}\n"
		"{\"ip\":\"0x401000\",\"sym\":null,\"bytes\":\"b9 e8 03 00 00\",\"insn\":\"movl $0x3e8, %ecx\"}\n"
		"{\"ip\":\"0x401005\",\"sym\":null,\"bytes\":\"ff c9\",\"insn\":\"decl %ecx\"}\n"
		"{\"ip\":\"0x401007\",\"sym\":null,\"bytes\":\"75 fc\",\"insn\":\"jne 0x401005\"}\n";
	assert_memory_equal(out, head, strlen(head));
	const char *tail = "{\"ip\":\"0x401007\",\"sym\":null,\"bytes\":\"75 fc\",\"insn\":\"jne 0x401005\"}\n"
		"{\"ip\":\"0x401009\",\"sym\":null,\"bytes\":\"e8 02 00 00 00\",\"insn\":\"callq 0x401010\"}\n"
		"{\"ip\":\"0x401010\",\"sym\":null,\"bytes\":\"c3\",\"insn\":\"retq\"}\n"
		"{\"ip\":\"0x40100e\",\"sym\":null,\"bytes\":\"c3\",\"insn\":\"retq\"}\n"
		"{\"event\":\"disabled\",\"addr\":\"0x0\"}\n";
	assert_true(strlen(out) > strlen(tail));
	assert_string_equal(out + strlen(out) - strlen(tail), tail);
	/* intel syntax */
	rc = RAW(&out, ptf, "insn", "syntax", "intel", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "- -1           401000  [unknown]                        b9 e8 03 00 00                 mov ecx, 0x3e8\n"));
}

static void test_corrupt_strict_and_resync(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, badf, "blocks", "format", "jsonl", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "decode error at offset"));
	assert_non_null(strstr(xp_test_msgs(), "--resync-on-error"));

	rc = RAW(&out, badf, "blocks", "format", "jsonl", "resync-on-error", "", NULL);
	assert_int_equal(rc, 0);
	/* from the bad opcode at 27 to the second PSB at 235 */
	assert_non_null(strstr(xp_test_msgs(), "1 gaps, 208 trace bytes skipped"));
	/* the second, intact segment is counted exactly */
	assert_non_null(strstr(out, "{\"start\":\"0x401005\",\"end\":\"0x401007\",\"sym\":null,\"count\":1000,"));
	rc = RAW(&out, badf, "insn", "resync-on-error", "", NULL);
	assert_int_equal(rc, 0);
	assert_memory_equal(out, "--- - -1 gap: unknown opcode (offset 27, 208 bytes lost)\n--- - -1 enabled at 0x401000\n",
			    strlen("--- - -1 gap: unknown opcode (offset 27, 208 bytes lost)\n--- - -1 enabled at 0x401000\n"));
}

static void test_callgrind(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, ptf, "blocks", "format", "callgrind", NULL);
	assert_int_equal(rc, 0);
	/* functions come from the trace: the entry and the call target, named as the
	 * call tree names them (their offsets in the image), in their object */
	const char *body = "positions: instr line\nevents: Ir\n\nob=(1) code.bin\nfl=(1) ???\n"
		"fn=(1) 0x0000000000000000\n0x401000 0 1\n0x401005 0 1000\n0x401007 0 1000\n0x401009 0 1\n"
		"0x40100e 0 1\ncob=(1)\ncfi=(1)\ncfn=(4) 0x0000000000000010\ncalls=1 0x401010 0\n0x401009 0 1\n\n"
		"ob=(1)\nfl=(1)\nfn=(4)\n0x401010 0 1\n\ntotals: 2004\n";
	assert_non_null(strstr(out, body));
	char cgf[1100];
	assert_int_equal(xp_test_path(cgf, sizeof(cgf), "cg.out"), 0);
	write_file(cgf, out, strlen(out));
	/* callgrind_annotate reads it: exclusive and inclusive totals per function */
	char cmd[1200], line[512];
	snprintf(cmd, sizeof(cmd), "callgrind_annotate --inclusive=yes '%s'", cgf);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int seen = 0;
	while (fgets(line, sizeof(line), p)) {
		seen += strstr(line, "2,004 (100.0%)  ???:0x0000000000000000 [code.bin]") != NULL;
		seen += strstr(line, "1 ( 0.05%)  ???:0x0000000000000010 [code.bin]") != NULL;
	}
	assert_int_equal(pclose(p), 0);
	assert_int_equal(seen, 2);
}

/* No symbols: calls make the frames (named by their target's offset in the image,
 * as perf names unresolved addresses), the loop stays in its caller's frame. */
static void test_calltree_unsymbolized(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, ptf, "calltree", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "# call tree: insns, total 2004\n"
		"# Calls: exact calls; Base: self insns; Cum: with callees\n"
		"Lvl   RL      Calls          Base           Cum  Module                Name\n"
		"  1    1          0          2003          2004  code.bin              0x0000000000000000\n"
		"  2    1          1             1             1  code.bin                0x0000000000000010\n");
}

/* Raw TSC: --metric tsc charges ticks; --tsc-hz converts them to ns. */
static void test_time_metrics(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, timedf, "calltree", "metric", "tsc", "format", "jsonl", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "{\"lvl\":1,\"rl\":1,\"calls\":0,\"base\":2400000,\"cum\":2400000,"));
	rc = RAW(&out, timedf, "calltree", "metric", "time", "tsc-hz", "2.4e9", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "# call tree: time, total 1000.000 us\n"
				     "# Calls: exact calls; Base: self time; Cum: with callees\n"));
	/* the instruction stream's times: TSC 1000 at 2.4 GHz is 416 ns (truncated) */
	rc = RAW(&out, timedf, "insn", "format", "jsonl", "tsc-hz", "2400000000", NULL);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "{\"time\":416,\"ip\":\"0x401000\","));
	assert_non_null(strstr(out, "{\"time\":1000416,\"event\":\"disabled\""));
	rc = RAW(&out, timedf, "calltree", "metric", "time", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "raw PT has TSC ticks, not ns (give --tsc-hz HZ"));
	rc = RAW(&out, timedf, "calltree", "tsc-hz", "3e5", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "--tsc-hz 3e5: expected a frequency in Hz"));
	/* without timestamps there is nothing to charge */
	rc = RAW(&out, ptf, "calltree", "metric", "tsc", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "the trace has no timestamps"));
}

/* MTC needs the TSC:crystal ratio (ptxed's --cpuid-0x15.eax/ebx): 25 MTCs 50 crystal
 * clocks apart at 2:1 make 2500 ticks; the callee runs from the last loop packet's
 * MTC to the return's, 100 ticks. */
static void test_mtc_options(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = RAW(&out, mtcf, "calltree", "metric", "tsc", "cpuid-0x15.eax", "1", "cpuid-0x15.ebx", "2", NULL);
	assert_int_equal(rc, 0);
	assert_string_equal(out, "# call tree: tsc, total 2500\n"
		"# Calls: exact calls; Base: self tsc; Cum: with callees\n"
		"Lvl   RL      Calls          Base           Cum  Module                Name\n"
		"  1    1          0          2400          2500  code.bin              0x0000000000000000\n"
		"  2    1          1           100           100  code.bin                0x0000000000000010\n");
	rc = RAW(&out, mtcf, "calltree", "cpuid-0x15.eax", "x", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "--cpuid-0x15.eax x: expected a 32-bit number"));
}

static void test_usage_errors(void **state)
{
	(void)state;
	const char *out;
	int rc;
	rc = xp_test_engine(&out, NULL, "blocks", "pt", ptf, NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "--raw FILE:BASE or --elf FILE"));
	rc = xp_test_engine(&out, NULL, "blocks", "pt", ptf, "raw", codef, NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "missing :BASE"));
	rc = RAW(&out, ptf, "blocks", "cpu", "6", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "expected FAMILY/MODEL"));
	char nope[1100];
	assert_int_equal(xp_test_path(nope, sizeof(nope), "nope"), 0);
	rc = RAW(&out, nope, "blocks", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	assert_non_null(strstr(xp_test_msgs(), "No such file"));
	rc = RAW(&out, ptf, "insn", "format", "callgrind", NULL);
	assert_int_equal(xp_test_exit_code(rc), 2);
	/* the default view of raw PT is every trace's: the hot functions (--insn for the
	 * instruction stream, as ptxed's) */
	rc = RAW(&out, ptf, NULL, "format", "jsonl", NULL);
	assert_int_equal(rc, 0);
	const char *with_view = strdup(out);
	assert_int_equal(RAW(&out, ptf, "functions", "format", "jsonl", NULL), 0);
	assert_string_equal(with_view, out);
	assert_non_null(strstr(out, "\"calls\":"));
	free((void *)with_view);
}

/* An empty raw PT file is said to be empty (was "decode failed: Invalid argument",
 * and a null-pointer arithmetic report under clang's UBSan). */
static void test_empty_file(void **state)
{
	(void)state;
	char empty[1100], want[1300];
	assert_int_equal(xp_test_path(empty, sizeof(empty), "empty.pt"), 0);
	write_file(empty, "", 0);
	const char *out;
	int rc = RAW(&out, empty, "insn", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	snprintf(want, sizeof(want), "xptrace: %s: the file is empty (give a file holding Intel PT packets)\n", empty);
	assert_string_equal(xp_test_msgs(), want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_blocks_loop_exact),
		cmocka_unit_test(test_blocks_text),
		cmocka_unit_test(test_insn_stream),
		cmocka_unit_test(test_corrupt_strict_and_resync),
		cmocka_unit_test(test_callgrind),
		cmocka_unit_test(test_calltree_unsymbolized),
		cmocka_unit_test(test_time_metrics),
		cmocka_unit_test(test_mtc_options),
		cmocka_unit_test(test_usage_errors),
		cmocka_unit_test(test_empty_file),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
