/* perf as the oracle: the same PT (tests/unit/pt_gen.h, for build/progs/ptspin) as a
 * raw stream for `xptrace decode --pt` and inside a perf.data for `perf script`.
 * The instruction streams must be identical; block counts are checked against the
 * program's known behaviour; corrupted copies decode with gaps and no crash (the ASan
 * build runs build-asan/xptrace). */
#include "xp_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include "pt_gen.h"

#define N 1000

static const char *xptrace;
static char dir[64], spin[512], elfarg[600];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/xptrace-ptoracle.XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(spin, sizeof(spin), "%s/build/progs/ptspin", XP_SRCDIR);
	snprintf(elfarg, sizeof(elfarg), "%s:%#llx", spin, PTGEN_BASE);
	xptrace = xp_test_xptrace();
	return ptgen_write(spin, N, dir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	return xp_test_rmtree(dir);
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

static void test_insn_stream_equals_perf_script(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "perf script -i %s/perf.data --itrace=i0ns -F ip 2>/dev/null | awk '{print $1}'",
		 dir);
	char *perf = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	snprintf(cmd, sizeof(cmd), "%s decode --pt %s/trace.pt --elf %s --insn --format jsonl | "
		 "sed -n 's/.*\"ip\":\"0x\\([0-9a-f]*\\)\".*/\\1/p'", xptrace, dir, elfarg);
	char *ours = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	size_t lines = 0;
	for (const char *p = perf; (p = strchr(p, '\n')); p++)
		lines++;
	assert_int_equal(lines, 6 * N + 2);
	assert_string_equal(ours, perf);
	free(ours);
	/* libipt's instruction decoder agrees with the block path */
	snprintf(cmd, sizeof(cmd), "%s decode --pt %s/trace.pt --elf %s --insn --insn-decoder --format jsonl | "
		 "sed -n 's/.*\"ip\":\"0x\\([0-9a-f]*\\)\".*/\\1/p'", xptrace, dir, elfarg);
	ours = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(ours, perf);
	free(perf);
	free(ours);
}

static void test_blocks_exact(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "%s decode --pt %s/trace.pt --elf %s --blocks --format jsonl", xptrace, dir,
		 elfarg);
	char *out = capture(cmd, &rc);
	assert_int_equal(rc, 0);
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
	free(out);
}

/* The same trace inside perf.data: the decode command's PT decoder. */
static void test_perf_data_views(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "perf script -i %s/perf.data --itrace=i0ns -F ip 2>/dev/null | awk '{print $1}'",
		 dir);
	char *perf = capture(cmd, &rc);
	snprintf(cmd, sizeof(cmd), "%s decode -i %s/perf.data --insn --format jsonl | "
		 "sed -n 's/.*\"ip\":\"0x\\([0-9a-f]*\\)\".*/\\1/p'", xptrace, dir);
	char *ours = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(ours, perf);
	free(perf);
	free(ours);
	snprintf(cmd, sizeof(cmd), "%s decode -i %s/perf.data --calltree 2>&1", xptrace, dir);
	char *tree = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(tree, "# call tree: insns, total 6002\n"
			    "Lvl   RL      Calls          Base           Cum  Name\n"
			    "  1    1          0          3002          6002  spin\n"
			    "  2    1       1000          3000          3000    leaf\n");
	free(tree);
	snprintf(cmd, sizeof(cmd), "%s decode -i %s/perf.data --blocks --sym spin --format jsonl", xptrace, dir);
	char *blocks = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(blocks, "\"sym\":\"spin+0x7\",\"count\":1000,\"insns\":2,\"cycles\":null,"
				       "\"ipc\":null,\"taken\":999,\"not_taken\":1,"));
	assert_null(strstr(blocks, "leaf"));
	free(blocks);
}

/* Raw mode with --elf: the ELF's symbols name everything, the call tree is exact. */
static void test_raw_elf_symbols(void **state)
{
	(void)state;
	char cmd[2048];
	int rc;
	snprintf(cmd, sizeof(cmd), "%s decode --pt %s/trace.pt --elf %s --calltree", xptrace, dir, elfarg);
	char *tree = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(tree, "# call tree: insns, total 6002\n"
			    "Lvl   RL      Calls          Base           Cum  Name\n"
			    "  1    1          0          3002          6002  spin\n"
			    "  2    1       1000          3000          3000    leaf\n");
	free(tree);
	snprintf(cmd, sizeof(cmd), "%s decode --pt %s/trace.pt --elf %s --annotate leaf --format jsonl", xptrace,
		 dir, elfarg);
	char *ann = capture(cmd, &rc);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(ann, "\"offset\":0,\"count\":1000,\"cycles\":null,\"insn\":\"addq %rdi, %rax\""));
	free(ann);
}

/* Flipped bytes all over a valid trace: the decode goes on (gaps), never crashes. */
static void test_corrupted_trace(void **state)
{
	(void)state;
	char path[128], bad[128], cmd[2048];
	snprintf(path, sizeof(path), "%s/trace.pt", dir);
	snprintf(bad, sizeof(bad), "%s/bad.pt", dir);
	FILE *f = fopen(path, "rb");
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
		int rc;
		snprintf(cmd, sizeof(cmd), "%s decode --pt %s --elf %s --blocks --resync-on-error 2>&1 >/dev/null",
			 xptrace, bad, elfarg);
		char *err = capture(cmd, &rc);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(err, "gaps,"));
		free(err);
		snprintf(cmd, sizeof(cmd), "%s decode --pt %s --elf %s --insn --resync-on-error >/dev/null 2>&1",
			 xptrace, bad, elfarg);
		free(capture(cmd, &rc));
		assert_int_equal(rc, 0);
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
	return cmocka_run_group_tests(tests, setup, teardown);
}
