/* The faults feature (src/perfdata/pd_faults.h): its text, and what the parser refuses. */
#include "xp_test.h"

#include "perfdata/pd_faults.h"

static const char text[] = "xptrace-faults 1\n"
			   "fault 101 100 5000 55555555517d 11 1 0\n"
			   "kill 102 100 6000 7ffff7e3deec 6 -6 0\n";

static void test_format(void **state)
{
	const struct pd_fault f[2] = {
		{ .tid = 101, .pid = 100, .time = 5000, .ip = 0x55555555517d, .signo = 11, .code = 1,
		  .fault = 1 },
		{ .tid = 102, .pid = 100, .time = 6000, .ip = 0x7ffff7e3deec, .signo = 6, .code = -6 },
	};
	char *s = pd_faults_format(f, 2);
	(void)state;
	assert_string_equal(s, text);
	free(s);
}

static void test_parse(void **state)
{
	struct pd_fault *f;
	size_t n;
	(void)state;
	assert_int_equal(pd_faults_parse(text, &f, &n), 0);
	assert_int_equal(n, 2);
	assert_int_equal(f[0].fault, 1);
	assert_int_equal(f[0].tid, 101);
	assert_true(f[0].ip == 0x55555555517dull);
	assert_int_equal(f[1].fault, 0);
	assert_int_equal(f[1].code, -6);
	assert_int_equal(f[1].signo, 6);
	free(f);
	assert_int_equal(pd_faults_parse("xptrace-faults 1\n", &f, &n), 0);
	assert_int_equal(n, 0);
	free(f);
	/* damaged: each refused whole, nothing returned */
	static const char *const bad[] = {
		"", "xptrace-faults 2\n", "fault 1 1 1 1 11 1 0\n",
		"xptrace-faults 1\nfault 1 1 1 1 11 1\n",	/* a field short */
		"xptrace-faults 1\nfault 1 1 1 1 11 1 0 junk\n",
		"xptrace-faults 1\ncrash 1 1 1 1 11 1 0\n",
		"xptrace-faults 1\nfault 1 1 1 1 0 1 0\n",	/* no signal 0 */
		"xptrace-faults 1\nfault 1 1 1 1 65 1 0\n",
		"xptrace-faults 1\nfault 1 1 1 zz 11 1 0\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		f = (void *)1;
		assert_int_equal(pd_faults_parse(bad[i], &f, &n), -EINVAL);
		assert_null(f);
	}
}

static void test_names(void **state)
{
	char b[16];
	(void)state;
	assert_string_equal(pd_signal_name(11, b, sizeof(b)), "SIGSEGV");
	assert_string_equal(pd_signal_name(6, b, sizeof(b)), "SIGABRT");
	assert_string_equal(pd_signal_name(8, b, sizeof(b)), "SIGFPE");
	assert_string_equal(pd_signal_name(40, b, sizeof(b)), "SIG40");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_names),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
