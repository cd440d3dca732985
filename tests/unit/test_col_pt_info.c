/* AUXTRACE_INFO words of a hardware recording, from the Skylake fixture and a simulated
 * mmap page: expected values written from the fixture files and perf's intel-pt.c layout
 * (masks of tsc/noretcomp/mtc/cyc, mtc_period's mask, tsc_art_ratio "2:334" = d:n). */
#include "xp_test.h"

#include <errno.h>

#include "record/col_pt_info.h"
#include "perfdata/pd_format.h"
#include "record/hw/x86_pt_attr.h"

static void test_words(void **state)
{
	struct pmu pt;
	struct x86_pt_cfg c;
	struct perf_event_attr a;
	struct perf_event_mmap_page pg;
	struct col_pt_layout l = { .per_cpu = 1, .filter = "filter 0x10/0x20@/bin/true" };
	uint64_t w[32];
	char err[256];

	(void)state;
	memset(&pg, 0, sizeof(pg));
	pg.lock = 4;
	pg.time_shift = 10;
	pg.time_mult = 123456;
	pg.time_zero = (uint64_t)-5000;
	pg.cap_user_time_zero = 1;
	assert_int_equal(x86_pt_probe(XP_FIXTURE("sysfs/intel-skylake"), &pt, err, sizeof(err)), 0);
	x86_pt_cfg_init(&c);
	assert_int_equal(x86_pt_attr(&pt, &c, &a, err, sizeof(err)), 0);
	assert_int_equal(col_pt_info_words(XP_FIXTURE("sysfs/intel-skylake"), &pt, &a, &pg, &l, w, 32),
			 17 + 4);
	const uint64_t want[17] = { 8, 10, 123456, (uint64_t)-5000, 1, 0x400, 0x800, 2, 0, 1,
				    0x200, 0x3c000, 334, 2, 0x2, 40, 26 };
	for (int i = 0; i < 17; i++)
		if (w[i] != want[i])
			fail_msg("word %d: 0x%llx, want 0x%llx", i, (unsigned long long)w[i],
				 (unsigned long long)want[i]);
	assert_string_equal((const char *)&w[PD_PT_INFO_WORDS], "filter 0x10/0x20@/bin/true");
	assert_int_equal(((const char *)&w[PD_PT_INFO_WORDS])[27], 0);

	/* Snapshot, per-thread, no TSC conversion offered, no filter. */
	pg.cap_user_time_zero = 0;
	l = (struct col_pt_layout){ .snapshot = 1 };
	assert_int_equal(col_pt_info_words(XP_FIXTURE("sysfs/intel-skylake"), &pt, &a, &pg, &l, w, 32), 17);
	assert_int_equal(w[PD_PT_TIME_MULT], 0);
	assert_int_equal(w[PD_PT_CAP_USER_TIME_ZERO], 0);
	assert_int_equal(w[PD_PT_SNAPSHOT_MODE], 1);
	assert_int_equal(w[PD_PT_PER_CPU_MMAPS], 0);
	assert_int_equal(w[PD_PT_HAVE_SCHED_SWITCH], 0);
	/* -a: CPU-wide switch records. */
	l = (struct col_pt_layout){ .per_cpu = 1, .cpu_wide = 1 };
	assert_int_equal(col_pt_info_words(XP_FIXTURE("sysfs/intel-skylake"), &pt, &a, &pg, &l, w, 32), 17);
	assert_int_equal(w[PD_PT_HAVE_SCHED_SWITCH], 3);
	assert_int_equal(col_pt_info_words(XP_FIXTURE("sysfs/intel-skylake"), &pt, &a, &pg, &l, w, 16),
			 -ENOSPC);
	pmu_free(&pt);
}

static void test_time_conv_busy_page(void **state)
{
	struct perf_event_mmap_page pg;
	uint64_t s, m, z;
	int cap;

	(void)state;
	memset(&pg, 0, sizeof(pg));
	pg.lock = 3;	/* the kernel is updating it, forever */
	pg.cap_user_time_zero = 1;
	assert_int_equal(col_pt_time_conv(&pg, &s, &m, &z, &cap), -EAGAIN);
	pg.lock = 2;
	pg.time_mult = 7;
	assert_int_equal(col_pt_time_conv(&pg, &s, &m, &z, &cap), 0);
	assert_int_equal(m, 7);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_words),
		cmocka_unit_test(test_time_conv_busy_page),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
