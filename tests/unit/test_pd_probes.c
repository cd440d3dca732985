/* The probes feature (src/perfdata/pd_probes.h): its text, parsed back, and carried
 * by a perf.data through the writer and the reader. */
#include "xp_test.h"

#include "perfdata/pd_probes.h"
#include "perfdata/pd_read.h"
#include "perfdata/pd_write.h"

static const char text[] = "xptrace-probes 1\n"
			   "calibration 4100 9800 2000\n"
			   "probe probe_xptrace:hot 1000 0 7000 hot 123 samples\n"
			   "probe probe_xptrace:mid 2000 3500 1000 caller of hot\n";

static void test_format(void **state)
{
	struct pd_probes ps = { 0 };
	(void)state;
	ps.calibrated = true;
	ps.caller_ns = 4100;
	ps.callee_ns = 9800;
	ps.runs = 2000;
	assert_int_equal(pd_probes_add(&ps, "probe_xptrace:hot", 1000, 0, 7000, "hot 123 samples"), 0);
	assert_int_equal(pd_probes_add(&ps, "probe_xptrace:mid", 2000, 3500, 1000, "caller\nof hot"), 0);
	char *s = pd_probes_format(&ps);
	/* a newline in a reason would start a line of its own */
	assert_string_equal(s, text);
	free(s);
	pd_probes_free(&ps);
}

static void test_parse(void **state)
{
	struct pd_probes ps = { 0 };
	(void)state;
	assert_int_equal(pd_probes_parse(text, &ps), 0);
	assert_true(ps.calibrated);
	assert_int_equal(ps.caller_ns, 4100);
	assert_int_equal(ps.callee_ns, 9800);
	assert_int_equal(ps.runs, 2000);
	assert_int_equal(ps.n, 2);
	const struct pd_probe *p = pd_probes_find(&ps, "probe_xptrace:mid");
	assert_non_null(p);
	assert_int_equal(p->armed, 2000);
	assert_int_equal(p->disarmed, 3500);
	assert_int_equal(p->hits, 1000);
	assert_string_equal(p->reason, "caller of hot");
	assert_string_equal(pd_probes_find(&ps, "probe_xptrace:hot")->reason, "hot 123 samples");
	assert_null(pd_probes_find(&ps, "probe_xptrace:cold"));
	pd_probes_free(&ps);
	/* not this format, or a line it does not know */
	assert_int_equal(pd_probes_parse("xptrace-probes 2\n", &ps), -EINVAL);
	assert_int_equal(pd_probes_parse("", &ps), -EINVAL);
	assert_int_equal(pd_probes_parse("xptrace-probes 1\nprobe x 1 2\n", &ps), -EINVAL);
	assert_int_equal(pd_probes_parse("xptrace-probes 1\ncalibration 1 2 3 4\n", &ps), -EINVAL);
	pd_probes_free(&ps);
	assert_int_equal(pd_probes_parse("xptrace-probes 1\n", &ps), 0);
	assert_false(ps.calibrated);
	assert_int_equal(ps.n, 0);
}

/* A probe re-armed by the budget has a line per window, in order: all kept, the first
 * found by name (decode maps the probe's attrs to it and reads the rest after it). */
static void test_windows(void **state)
{
	struct pd_probes ps = { 0 };
	(void)state;
	assert_int_equal(pd_probes_parse("xptrace-probes 1\n"
					 "probe probe_xptrace:hot 1000 1500 40 hot 9 samples\n"
					 "probe probe_xptrace:hot 3000 3200 25 hot 9 samples\n"
					 "probe probe_xptrace:mid 2000 0 7 caller of hot\n"
					 "probe probe_xptrace:hot 7000 0 11 hot 9 samples\n", &ps), 0);
	assert_int_equal(ps.n, 4);
	assert_ptr_equal(pd_probes_find(&ps, "probe_xptrace:hot"), &ps.p[0]);
	assert_int_equal(ps.p[1].armed, 3000);
	assert_int_equal(ps.p[1].disarmed, 3200);
	assert_int_equal(ps.p[1].hits, 25);
	assert_int_equal(ps.p[3].armed, 7000);
	assert_int_equal(ps.p[3].disarmed, 0);
	char *s = pd_probes_format(&ps);
	assert_non_null(strstr(s, "probe probe_xptrace:hot 3000 3200 25 hot 9 samples\n"));
	free(s);
	pd_probes_free(&ps);
}

/* Through a perf.data: the feature comes back as written. */
static void test_file(void **state)
{
	char path[1024];
	struct pd_writer *w;
	struct pd_file *f;
	(void)state;
	assert_int_equal(xp_test_path(path, sizeof(path), "probes.data"), 0);
	assert_int_equal(pd_writer_create(&w, path), 0);
	struct perf_event_attr attr = { .type = PERF_TYPE_SOFTWARE, .config = PERF_COUNT_SW_CPU_CLOCK,
					.size = PD_ATTR_SIZE, .sample_period = 1000,
					.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME };
	assert_int_equal(pd_writer_add_attr(w, &attr, "cpu-clock"), 0);
	uint64_t rec[4] = { 0, 0x1000, (uint64_t)7 << 32 | 7, 5000 };	/* a sample: ip, tid, time */
	struct perf_event_header *h = (void *)rec;
	h->type = PERF_RECORD_SAMPLE;
	h->misc = PERF_RECORD_MISC_USER;
	h->size = sizeof(rec);
	assert_int_equal(pd_writer_record(w, h), 0);
	assert_int_equal(pd_writer_feat_string(w, PD_FEAT_XPTRACE_PROBES, text), 0);
	assert_int_equal(pd_writer_close(w), 0);
	assert_int_equal(pd_open(path, &f), 0);
	assert_true(pd_has_feature(f, PD_FEAT_XPTRACE_PROBES));
	assert_string_equal(pd_feature_str(f, PD_FEAT_XPTRACE_PROBES), text);
	pd_close(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_format),
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_file),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
