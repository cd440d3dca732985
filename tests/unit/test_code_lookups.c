/* File look-ups do not grow with the trace: a perf.data whose mapped file exists but is
 * not ELF (its header damaged, as a raw image or a replaced file are) is decoded from
 * the file's bytes, and the answer "not ELF, read it raw" is found once per file, not
 * once per instruction (it once cost an access() per instruction: 300,017 for 300,000).
 * access(), stat() and open() are counted by definitions of this binary, which the
 * library's calls bind to. */
#include "xp_test.h"

#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pt_gen.h"

static unsigned long lookups;

int access(const char *path, int mode)
{
	lookups++;
	return faccessat(AT_FDCWD, path, mode, 0);
}

int stat(const char *restrict path, struct stat *restrict st)
{
	lookups++;
	return fstatat(AT_FDCWD, path, st, 0);
}

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t mode = 0;

	lookups++;
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return openat(AT_FDCWD, path, flags, mode);
}

#define N_SMALL 1000
#define N_LARGE 20000

static char spin[1024], small[1024], large[1024];

static void copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	char buf[65536];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		assert_int_equal(fwrite(buf, 1, n, out), n);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static int setup(void **state)
{
	char prog[600];

	if (xp_test_tmp_setup(state) || xp_test_path(spin, sizeof(spin), "spin") ||
	    xp_test_path(small, sizeof(small), "small") || xp_test_path(large, sizeof(large), "large") ||
	    mkdir(small, 0755) || mkdir(large, 0755))
		return -1;
	snprintf(prog, sizeof(prog), "%s/build/progs/ptspin", XP_SRCDIR);
	copy_file(prog, spin);
	if (!ptgen_write(spin, N_SMALL, small) || !ptgen_write(spin, N_LARGE, large))
		return -1;
	/* the mapped file stays, its bytes too, but it is no longer ELF */
	int fd = openat(AT_FDCWD, spin, O_WRONLY);
	if (fd < 0 || pwrite(fd, "\0\0\0\0", 4, 0) != 4)
		return -1;
	close(fd);
	return 0;
}

static unsigned long count_lines(const char *s)
{
	unsigned long n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* Decodes DIR's --insn (one address a line); the look-ups it made. */
static unsigned long insn_lookups(const char *dir, unsigned long want_insns)
{
	char data[1100];
	const char *out;

	snprintf(data, sizeof(data), "%s/perf.data", dir);
	lookups = 0;
	assert_int_equal(xp_test_engine(&out, data, "insn", "fields", "ip", "jobs", "1", NULL), 0);
	unsigned long n = lookups;
	/* every instruction decoded from the raw file's bytes (6N + 2, pt_gen.h) */
	assert_int_equal(count_lines(out), want_insns);
	return n;
}

static void test_non_elf_lookups_bounded(void **state)
{
	(void)state;
	unsigned long a = insn_lookups(small, 6 * N_SMALL + 2);
	unsigned long b = insn_lookups(large, 6 * N_LARGE + 2);
	/* the same files are looked at whatever the trace's length */
	assert_int_equal(a, b);
	assert_true(a < 100);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_non_elf_lookups_bounded),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
