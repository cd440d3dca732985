/* perf as the oracle: the same PT (tests/unit/pt_gen.h, for build/progs/ptspin) as a
 * raw stream for `xptrace decode --pt` and inside a perf.data for `perf script`.
 * The instruction streams must be identical; block counts are checked against the
 * program's known behaviour; corrupted copies decode with gaps and no crash (decoded in
 * this process through the engine: the ASan build checks the decoder). */
#include "xp_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include "pt_gen_test.h"

#define N 1000

static struct ptgen_test pg;

static int setup(void **state)
{
	return ptgen_test_setup(state, &pg, N);
}

static char *capture(const char *cmd, int *rc)
{
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t cap = 1 << 16, len = 0, got;
	char *out = malloc(cap);
	while ((got = fread(out + len, 1, cap - 1 - len, p)) > 0) {
		len += got;
		if (cap - 1 - len < 4096)
			out = realloc(out, cap *= 2);
	}
	out[len] = '\0';
	int st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return out;
}

/* The addresses of an --insn jsonl stream, one a line in hex without 0x (as
 * `perf script -F ip` prints them). */
static char *ips_of(const char *jsonl)
{
	size_t n = 0;
	char *ips = malloc(strlen(jsonl) + 1);
	assert_non_null(ips);
	for (const char *l = jsonl; *l;) {
		const char *e = strchr(l, '\n'), *ip = strstr(l, "\"ip\":\"0x");
		if (!e)
			e = l + strlen(l);
		if (ip && ip < e) {
			ip += strlen("\"ip\":\"0x");
			size_t k = strspn(ip, "0123456789abcdef");
			memcpy(ips + n, ip, k);
			n += k;
			ips[n++] = '\n';
		}
		l = *e ? e + 1 : e;
	}
	ips[n] = 0;
	return ips;
}

static void test_insn_stream_equals_perf_script(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' --itrace=i0ns -F ip 2>/dev/null | awk '{print $1}'",
		 pg.perfdata);
	char *perf = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	const char *out;
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", pg.trace, "elf", pg.elfarg, "format", "jsonl", NULL), 0);
	char *ours = ips_of(out);
	size_t lines = 0;
	for (const char *p = perf; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 6 * N + 2);
	assert_string_equal(ours, perf);
	free(ours);
	/* libipt's instruction decoder agrees with the block path */
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", pg.trace, "elf", pg.elfarg, "insn-decoder", "",
					"format", "jsonl", NULL), 0);
	ours = ips_of(out);
	assert_string_equal(ours, perf);
	free(perf);
	free(ours);
}

static void test_blocks_exact(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", pg.trace, "elf", pg.elfarg, "format", "jsonl", NULL), 0);
	/* the loop head (the call), leaf and the loop tail run N times, the jnz is taken
	 * N-1 times; spin's first instruction and its ret once */
	assert_non_null(strstr(out, "\"count\":1000,\"insns\":3,\"cycles\":null,\"ipc\":null,\"taken\":null"));
	assert_non_null(strstr(out, "\"count\":1000,\"insns\":2,\"cycles\":null,\"ipc\":null,\"taken\":999,"
				    "\"not_taken\":1,\"mainline\":\"taken\"}"));
	assert_non_null(strstr(out, "\"count\":1000,\"insns\":1,"));
	size_t rows = 0;
	for (const char *p = out; (p = strchr(p, '\n')); p++)
		rows++;
	assert_int_equal(rows, 5);	/* + spin's entry block and its ret */
}

/* The same trace inside perf.data: the decode command's PT decoder. */
static void test_perf_data_views(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "perf script -i '%s' --itrace=i0ns -F ip 2>/dev/null | awk '{print $1}'",
		 pg.perfdata);
	char *perf = capture(cmd, &rc);
	const char *out;
	assert_int_equal(xp_test_engine(&out, pg.perfdata, "insn", "format", "jsonl", NULL), 0);
	char *ours = ips_of(out);
	assert_string_equal(ours, perf);
	free(perf);
	free(ours);
	assert_int_equal(xp_test_engine(&out, pg.perfdata, "calltree", NULL), 0);
	assert_string_equal(out, "# call tree: insns, total 6002\n"
			    "# Calls: exact calls; Base: self insns; Cum: with callees\n"
			    "Lvl   RL      Calls          Base           Cum  Module                Name\n"
			    "  1    1          1          3002          6002  ptspin                spin\n"
			    "  2    1       1000          3000          3000  ptspin                  leaf\n");
	assert_int_equal(xp_test_engine(&out, pg.perfdata, "blocks", "sym", "spin", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"sym\":\"spin+0x7\",\"count\":1000,\"insns\":2,\"cycles\":null,"
				    "\"ipc\":null,\"taken\":999,\"not_taken\":1,"));
	assert_null(strstr(out, "leaf"));
}

/* Raw mode with --elf: the ELF's symbols name everything, the call tree is exact. */
static void test_raw_elf_symbols(void **state)
{
	(void)state;
	const char *out;
	assert_int_equal(xp_test_engine(&out, NULL, "calltree", "pt", pg.trace, "elf", pg.elfarg, NULL), 0);
	assert_string_equal(out, "# call tree: insns, total 6002\n"
			    "# Calls: exact calls; Base: self insns; Cum: with callees\n"
			    "Lvl   RL      Calls          Base           Cum  Module                Name\n"
			    "  1    1          1          3002          6002  ptspin                spin\n"
			    "  2    1       1000          3000          3000  ptspin                  leaf\n");
	assert_int_equal(xp_test_engine(&out, NULL, "annotate=leaf", "pt", pg.trace, "elf", pg.elfarg, "format", "jsonl",
					NULL), 0);
	assert_non_null(strstr(out, "\"offset\":0,\"count\":1000,\"cycles\":null,\"insn\":\"addq %rdi, %rax\""));
}

/* Flipped bytes all over a valid trace: the decode goes on (gaps), never crashes. */
static void test_corrupted_trace(void **state)
{
	(void)state;
	char bad[1100];
	const char *out;
	assert_int_equal(xp_test_path(bad, sizeof(bad), "bad.pt"), 0);
	FILE *f = fopen(pg.trace, "rb");
	assert_non_null(f);
	uint8_t *buf = malloc(1 << 20);
	size_t len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	srand(7);
	for (int round = 0; round < 4; round++) {
		for (int k = 0; k < 8; k++)
			buf[(size_t)rand() % len] ^= (uint8_t)(1 + rand() % 255);
		f = fopen(bad, "wb");
		fwrite(buf, 1, len - (size_t)round * 7, f);	/* truncated too */
		fclose(f);
		assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", bad, "elf", pg.elfarg, "resync-on-error", "",
						NULL), 0);
		assert_non_null(strstr(xp_test_msgs(), "gaps,"));
		assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", bad, "elf", pg.elfarg, "resync-on-error", "",
						NULL), 0);
	}
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_insn_stream_equals_perf_script),
		cmocka_unit_test(test_blocks_exact),
		cmocka_unit_test(test_perf_data_views),
		cmocka_unit_test(test_raw_elf_symbols),
		cmocka_unit_test(test_corrupted_trace),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
