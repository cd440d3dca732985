/* --mode step's --filter: the SPEC syntax (col_step_filter_parse), what a refused item
 * says and that it keeps nothing (the ASan build checks for leaks). */
#include "xp_test.h"

#include <errno.h>

#include "record/step/col_step_filter.h"

static void test_parse(void **state)
{
	struct step_filter *f;
	char why[256];
	int n;

	(void)state;
	assert_int_equal(col_step_filter_parse("main,leaf@libx.so,0x1139-0x1146@ptspin", &f, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_string_equal(f[0].sym, "main");
	assert_null(f[0].module);
	assert_string_equal(f[1].sym, "leaf");
	assert_string_equal(f[1].module, "libx.so");
	assert_null(f[2].sym);
	assert_string_equal(f[2].module, "ptspin");
	assert_int_equal(f[2].start, 0x1139);
	assert_int_equal(f[2].end, 0x1146);
	col_step_filter_free(f, n);
}

/* nm/objdump's addresses (hex without 0x) and perf's Intel PT filter syntax, which
 * were refused or, with spaces around '@', named a module no mapping matched. */
static void test_parse_foreign(void **state)
{
	struct step_filter *f;
	char why[256];
	int n;

	(void)state;
	assert_int_equal(col_step_filter_parse("1255-126a@prog, filter fib @ ./prog,filter 0x10/0x20 @ /lib/x.so",
					       &f, &n, why, sizeof(why)), 0);
	assert_int_equal(n, 3);
	assert_null(f[0].sym);
	assert_string_equal(f[0].module, "prog");
	assert_int_equal(f[0].start, 0x1255);
	assert_int_equal(f[0].end, 0x126a);
	assert_string_equal(f[1].sym, "fib");
	assert_string_equal(f[1].module, "./prog");
	assert_null(f[2].sym);
	assert_string_equal(f[2].module, "/lib/x.so");
	assert_int_equal(f[2].start, 0x10);
	assert_int_equal(f[2].end, 0x30);
	col_step_filter_free(f, n);
}

/* Found by fuzz_rec_parse: the module of a refused item leaked. */
static void test_refused(void **state)
{
	static const struct {
		const char *spec, *why;
	} bad[] = {
		{ "main,0x1129-1x1140@ptspin", "'0x1129-1x1140' is no START-END address range (hex, as nm and objdump print them)" },
		{ "0x20-0x10@m", "'0x20-0x10' is no START-END address range (hex, as nm and objdump print them)" },
		{ "stop main @ ./prog", "'stop main @ ./prog': step mode traces ranges ('filter'); perf's stop filters of Intel PT it has not" },
		{ "@m", "empty filter" },
		{ "0x10-0x20", "range 0x10-0x20: say in which module (START-END@MODULE)" },
		{ "f@", "'f@': module name missing" },
		{ ",", "empty filter" },
		/* found by fuzz_rec_parse: strtoull took the sign, the end was 2^64 - 0x1af */
		{ "0x1139--0x1af@ptspin", "'0x1139--0x1af' is no START-END address range (hex, as nm and objdump print them)" },
		{ "0x1139-+0x1146@ptspin", "'0x1139-+0x1146' is no START-END address range (hex, as nm and objdump print them)" },
	};
	struct step_filter *f;
	char why[256];
	int n;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(col_step_filter_parse(bad[i].spec, &f, &n, why, sizeof(why)), -EINVAL);
		assert_string_equal(why, bad[i].why);
	}
}

/* A range resolves in the mapping of ptspin's text (file offset 0x1000, 0x17d bytes of
 * code at 0x1000 in the file: readelf -l) to the addresses it covers there; one ending
 * past that segment is refused (found by fuzz_rec_parse: its end wrapped around). */
static void test_resolve(void **state)
{
	static const char prog[] = XP_SRCDIR "/traces/pt-spin/ptspin";
	struct step_filter *f;
	uint64_t r[4][2];
	char why[256] = "";
	int n, nr = 0;

	(void)state;
	assert_int_equal(col_step_filter_parse("0x1139-0x1146@ptspin,0x1100-0x117d@ptspin", &f, &n, why,
					       sizeof(why)), 0);
	assert_int_equal(col_step_filter_resolve(f, n, 0x555555555000ull, 0x555555556000ull, 0x1000, prog,
						 1, r, 4, &nr, why, sizeof(why)), 2);
	assert_int_equal(nr, 2);
	assert_true(r[0][0] == 0x555555555139ull && r[0][1] == 0x555555555146ull);
	assert_true(r[1][0] == 0x555555555100ull && r[1][1] == 0x55555555517dull);
	col_step_filter_free(f, n);

	nr = 0;
	assert_int_equal(col_step_filter_parse("0x1139-0xffffffffffffffff@ptspin", &f, &n, why, sizeof(why)), 0);
	assert_int_equal(col_step_filter_resolve(f, n, 0x555555555000ull, 0x555555556000ull, 0x1000, prog,
						 1, r, 4, &nr, why, sizeof(why)), -ERANGE);
	assert_int_equal(nr, 0);
	assert_string_equal(why, "0x1139-0xffffffffffffffff ends past the loaded segment of " XP_SRCDIR
			    "/traces/pt-spin/ptspin (0x1000-0x117d)");
	col_step_filter_free(f, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_parse_foreign),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_resolve),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
