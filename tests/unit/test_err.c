#include "xp_test.h"

#include "util/xp_err.h"

static char last[2048];

static void capture(const char *line, void *ctx)
{
	(void)ctx;
	snprintf(last, sizeof(last), "%s", line);
}

static void test_err_with_hint(void **state)
{
	(void)state;
	xp_err_set_sink(capture, NULL);
	assert_int_equal(xp_err("open trace.data", "run xptrace record first", "%s", "No such file"), -EIO);
	assert_string_equal(last, "xptrace: open trace.data: No such file (run xptrace record first)");
}

static void test_err_without_hint(void **state)
{
	(void)state;
	xp_err_set_sink(capture, NULL);
	xp_err("parse", NULL, "bad size %d", 7);
	assert_string_equal(last, "xptrace: parse: bad size 7");
}

static void test_err_code(void **state)
{
	(void)state;
	xp_err_set_sink(capture, NULL);
	assert_int_equal(xp_err_code(-ENOMEM, "load", NULL, "out of memory"), -ENOMEM);
	assert_string_equal(last, "xptrace: load: out of memory");
	assert_int_equal(xp_err_code(0, "load", "a hint", "no code"), -EIO);
	assert_string_equal(last, "xptrace: load: no code (a hint)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_err_with_hint),
		cmocka_unit_test(test_err_without_hint),
		cmocka_unit_test(test_err_code),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
