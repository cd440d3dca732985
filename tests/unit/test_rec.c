/* Record helpers that do not need a kernel: CPU lists, the mode table. */
#include "xp_test.h"

#include <errno.h>

#include "record/rec.h"
#include "record/rec_events.h"

static void test_cpu_list(void **state)
{
	int *c = NULL;

	(void)state;
	assert_int_equal(rec_parse_cpu_list("0-1\n", &c), 2);
	assert_int_equal(c[0], 0);
	assert_int_equal(c[1], 1);
	free(c);
	assert_int_equal(rec_parse_cpu_list("0,2-4,7", &c), 5);
	assert_int_equal(c[0], 0);
	assert_int_equal(c[1], 2);
	assert_int_equal(c[3], 4);
	assert_int_equal(c[4], 7);
	free(c);
	assert_int_equal(rec_parse_cpu_list("3", &c), 1);
	assert_int_equal(c[0], 3);
	free(c);
	assert_int_equal(rec_parse_cpu_list("", &c), -EINVAL);
	assert_int_equal(rec_parse_cpu_list("4-2", &c), -EINVAL);
	assert_int_equal(rec_parse_cpu_list("1-x", &c), -EINVAL);
	assert_int_equal(rec_parse_cpu_list("-1", &c), -EINVAL);
}

static void test_mode_table(void **state)
{
	int n = 0, has_sample = 0;

	(void)state;
	for (int i = 0; rec_modes[i]; i++, n++) {
		assert_non_null(rec_modes[i]->name);
		assert_non_null(rec_modes[i]->summary);
		assert_non_null(rec_modes[i]->run);
		assert_ptr_equal(rec_mode_find(rec_modes[i]->name), rec_modes[i]);
		/* "auto" is the resolver, never a mode */
		assert_string_not_equal(rec_modes[i]->name, "auto");
		if (strcmp(rec_modes[i]->name, "sample") == 0) {
			has_sample = 1;
			/* the fallback of auto: usable everywhere */
			assert_null(rec_modes[i]->probe);
		}
	}
	assert_true(n >= 1);
	assert_true(has_sample);
	assert_null(rec_mode_find("nope"));
}

/* -e's syntax: every name between commas non-empty (",cycles" was taken as "cycles");
 * perf's generic names and nothing else encoded without libpfm4. */
static void test_events(void **state)
{
	static const char *const bad[] = { "", ",", "cycles,", ",cycles", "cycles,,instructions" };
	struct perf_event_attr a;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (rec_events_syntax_ok(bad[i]))
			fail_msg("accepted: \"%s\"", bad[i]);
	assert_true(rec_events_syntax_ok("cycles"));
	assert_true(rec_events_syntax_ok("inst_retired.any:u,cpu-clock"));
	assert_int_equal(rec_event_generic("cycles", &a), 0);
	assert_int_equal(a.type, PERF_TYPE_HARDWARE);
	assert_int_equal(a.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(rec_event_generic("task-clock", &a), 0);
	assert_int_equal(a.type, PERF_TYPE_SOFTWARE);
	assert_int_equal(a.config, PERF_COUNT_SW_TASK_CLOCK);
	assert_int_equal(rec_event_generic("cycles:u", &a), 0);
	assert_int_equal(a.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(rec_event_mods("cycles:u"), REC_EV_U);
	assert_int_equal(rec_event_mods("cpu-clock:ku"), REC_EV_U | REC_EV_K);
	assert_int_equal(rec_event_mods("cpu-clock:pp"), 0);
	assert_int_equal(rec_event_generic("cycles:x", &a), -ENOENT);
	assert_int_equal(rec_event_mods("inst_retired.any:c=1"), 0);
	assert_int_equal(rec_event_generic("Cycles", &a), -ENOENT);
	assert_int_equal(rec_event_generic("", &a), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_list),
		cmocka_unit_test(test_mode_table),
		cmocka_unit_test(test_events),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
