/* The snapshot trigger is a real uprobe, and uprobes work without a PMU: probe a function
 * of this test binary in this process and count its calls. */
#include "xp_test.h"

#include <errno.h>
#include <poll.h>
#include <unistd.h>

#include "record/col_trigger.h"

__attribute__((noinline, used)) int xp_trigger_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

static void test_uprobe_hits(void **state)
{
	struct col_trigger t;
	char err[512];
	struct pollfd p;
	int rc;

	(void)state;
	if (geteuid() != 0)
		skip();
	rc = col_trigger_open(&t, NULL, "xp_trigger_target", "/proc/self/exe", 0, err, sizeof(err));
	if (rc)
		fail_msg("%s", err);
	assert_int_equal(col_trigger_hits(&t), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(xp_trigger_target(i), i + 1);
	p.fd = t.fd;
	p.events = POLLIN;
	assert_int_equal(poll(&p, 1, 1000), 1);
	assert_int_equal(col_trigger_hits(&t), 3);
	assert_int_equal(col_trigger_hits(&t), 0);
	xp_trigger_target(9);
	assert_int_equal(col_trigger_hits(&t), 1);
	col_trigger_close(&t);
}

static void test_errors(void **state)
{
	struct col_trigger t;
	char err[512];

	(void)state;
	assert_int_equal(col_trigger_open(&t, NULL, "no_such_function_xyz", "/proc/self/exe", 0,
					  err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "no function 'no_such_function_xyz' in "));
	assert_int_equal(col_trigger_open(&t, NULL, "main@/no/such", NULL, 0, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "/no/such: No such file or directory");
	assert_int_equal(col_trigger_open(&t, NULL, "@/bin/true", NULL, 0, err, sizeof(err)), -EINVAL);
	assert_int_equal(col_trigger_open(&t, XP_FIXTURE("sysfs/amd-zen") "/nonexistent",
					  "xp_trigger_target", "/proc/self/exe", 0, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "no uprobe PMU in sysfs (kernel without CONFIG_UPROBE_EVENTS)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uprobe_hits),
		cmocka_unit_test(test_errors),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
