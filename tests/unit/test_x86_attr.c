/* Intel PT and LBR attrs against the sysfs fixture trees.  Expected config words are
 * written from the fixtures' format files by hand (intel_pt on Skylake: pt=config:0,
 * cyc=1, mtc=9, tsc=10, noretcomp=11, branch=13, mtc_period=14-17, cyc_thresh=19-22,
 * psb_period=24-27), and perf's own default for this CPU, 0x300e601, must come out. */
#include "xp_test.h"

#include <errno.h>
#include <inttypes.h>
#include <time.h>
#include <unistd.h>

#include "record/hw/x86_lbr_attr.h"
#include "record/hw/x86_pt_attr.h"

#define SKL XP_FIXTURE("sysfs/intel-skylake")
#define ZEN XP_FIXTURE("sysfs/amd-zen")
#define VM XP_FIXTURE("sysfs/vm-nopmu")

static char err[512];

static void pt_attr_with(const char *opts, int user, int kernel, struct perf_event_attr *a, int want)
{
	struct pmu pt;
	struct x86_pt_cfg c;

	assert_int_equal(x86_pt_probe(SKL, &pt, err, sizeof(err)), 0);
	x86_pt_cfg_init(&c);
	c.user = user;
	c.kernel = kernel;
	err[0] = 0;
	if (opts)
		assert_int_equal(x86_pt_opts_parse(opts, &c, err, sizeof(err)), 0);
	assert_int_equal(x86_pt_attr(&pt, &c, a, err, sizeof(err)), want);
	pmu_free(&pt);
}

static void test_pt_default(void **state)
{
	struct perf_event_attr a;

	(void)state;
	pt_attr_with(NULL, 0, 0, &a, 0);
	assert_int_equal(a.type, 8);
	assert_int_equal(a.config, 0x300e601);
	assert_int_equal(a.config, 1 | 1 << 13 | 1 << 10 | 1 << 9 | 3 << 14 | 3 << 24);
	assert_int_equal(a.config1, 0);
	assert_int_equal(a.exclude_kernel, 1);
	assert_int_equal(a.exclude_user, 0);
	assert_int_equal(a.exclude_hv, 1);
	assert_int_equal(a.sample_period, 1);
	assert_int_equal(a.sample_type, PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_ADDR | PERF_SAMPLE_IDENTIFIER);
	assert_int_equal(a.disabled, 1);
	assert_int_equal(a.mmap2, 1);
	assert_int_equal(a.context_switch, 1);
	assert_int_equal(a.aux_watermark, 0);
	assert_int_equal(a.size, sizeof(a));
	/* -k alone: kernel only; -u -k: both. */
	pt_attr_with(NULL, 0, 1, &a, 0);
	assert_int_equal(a.exclude_kernel, 0);
	assert_int_equal(a.exclude_user, 1);
	pt_attr_with(NULL, 1, 1, &a, 0);
	assert_int_equal(a.exclude_kernel, 0);
	assert_int_equal(a.exclude_user, 0);
}

static void test_pt_options(void **state)
{
	struct perf_event_attr a;

	(void)state;
	pt_attr_with("cyc,cyc_thresh=2,noretcomp,psb_period=5,mtc_period=6", 0, 0, &a, 0);
	assert_int_equal(a.config, 1 | 1 << 1 | 1 << 9 | 1 << 10 | 1 << 11 | 1 << 13 | 6 << 14 |
			 2 << 19 | 5 << 24);
	/* Turning defaults off: no tsc, no mtc (so no mtc_period), branch off keeps pt. */
	pt_attr_with("tsc=0,mtc=0,branch=0", 0, 0, &a, 0);
	assert_int_equal(a.config, 1 | 3 << 24);
	pt_attr_with("branch", 0, 0, &a, 0);
	assert_int_equal(a.config, 0x300e601);
}

static void expect_opts_error(const char *opts, const char *msg)
{
	struct perf_event_attr a;
	struct pmu pt;
	struct x86_pt_cfg c;
	int rc;

	assert_int_equal(x86_pt_probe(SKL, &pt, err, sizeof(err)), 0);
	x86_pt_cfg_init(&c);
	rc = x86_pt_opts_parse(opts, &c, err, sizeof(err));
	if (rc == 0)
		rc = x86_pt_attr(&pt, &c, &a, err, sizeof(err));
	pmu_free(&pt);
	assert_int_equal(rc, -EINVAL);
	assert_string_equal(err, msg);
}

static void test_pt_option_errors(void **state)
{
	(void)state;
	expect_opts_error("cyc,cyc_thresh=20",
			  "cyc_thresh=20: this CPU accepts 0-13 (caps/cycle_thresholds = 3fff)");
	expect_opts_error("mtc_period=2",
			  "mtc_period=2: this CPU accepts 0,3,6,9 (caps/mtc_periods = 249)");
	expect_opts_error("psb_period=6", "psb_period=6: this CPU accepts 0-5 (caps/psb_periods = 3f)");
	expect_opts_error("cyc_thresh=1", "cyc_thresh=1 needs cyc");
	expect_opts_error("mtc=0,mtc_period=3", "mtc_period=3 needs mtc");
	expect_opts_error("cycles", "unknown option 'cycles' (known: cyc, cyc_thresh=N, mtc, "
			  "mtc_period=N, tsc, noretcomp, psb_period=N, branch)");
	expect_opts_error("psb_period", "'psb_period' needs a value: psb_period=N");
	expect_opts_error("tsc=2", "'tsc=2': expected 0 or 1");
	expect_opts_error("mtc_period=x", "'mtc_period=x': expected a small number");
}

static void test_pt_missing(void **state)
{
	struct pmu pt;

	(void)state;
	assert_int_equal(x86_pt_probe(ZEN, &pt, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "no intel_pt PMU in sysfs: this CPU or hypervisor does not "
			    "expose Intel PT");
	assert_int_equal(x86_pt_probe(VM, &pt, err, sizeof(err)), -ENOENT);
	assert_int_equal(x86_pt_probe("/nonexistent-root", &pt, err, sizeof(err)), -ENOENT);
}

__attribute__((noinline, used)) int xp_filter_target(int x)
{
	return x * 3 + 1;
}

/* Where the kernel maps xp_filter_target: its file offset from /proc/self/maps. */
static uint64_t kernel_file_offset(void *fn)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	uint64_t want = (uint64_t)(uintptr_t)fn, off = UINT64_MAX;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		uint64_t lo, hi, pgoff;

		if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %*s %" SCNx64, &lo, &hi, &pgoff) == 3 &&
		    want >= lo && want < hi) {
			off = want - lo + pgoff;
			break;
		}
	}
	fclose(f);
	return off;
}

static void test_pt_filters(void **state)
{
	struct pmu pt;
	struct x86_pt_cfg c;
	struct perf_event_attr a;
	char self[4096], want[4200];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = 0;
	assert_int_equal(xp_filter_target(2), 7);
	assert_int_equal(x86_pt_probe(SKL, &pt, err, sizeof(err)), 0);
	x86_pt_cfg_init(&c);
	assert_int_equal(x86_pt_filter_parse(&pt, "filter xp_filter_target @ /proc/self/exe", &c,
					     err, sizeof(err)), 0);
	snprintf(want, sizeof(want), "filter 0x%" PRIx64 "/0x", kernel_file_offset((void *)xp_filter_target));
	assert_memory_equal(c.filter, want, strlen(want));
	assert_non_null(strstr(c.filter, self));
	assert_int_equal(c.nfilters, 1);
	/* Address ranges go through unchanged; two filters are all Skylake has. */
	assert_int_equal(x86_pt_filter_parse(&pt, " stop 0x1000/0x200@/proc/self/exe", &c,
					     err, sizeof(err)), 0);
	snprintf(want, sizeof(want), ",stop 0x1000/0x200@%s", self);
	assert_non_null(strstr(c.filter, want));
	assert_int_equal(x86_pt_attr(&pt, &c, &a, err, sizeof(err)), 0);
	assert_int_equal(x86_pt_filter_parse(&pt, "filter 0x0/0x10@/proc/self/exe", &c, err,
					     sizeof(err)), -EINVAL);
	assert_string_equal(err, "3 address filters, this CPU has 2 (caps/num_address_ranges)");

	x86_pt_cfg_init(&c);
	assert_int_equal(x86_pt_filter_parse(&pt, "filter no_such_fn @ /proc/self/exe", &c, err,
					     sizeof(err)), -EINVAL);
	snprintf(want, sizeof(want), "no function 'no_such_fn' in %s", self);
	assert_string_equal(err, want);
	assert_int_equal(x86_pt_filter_parse(&pt, "start main @ /proc/self/exe", &c, err,
					     sizeof(err)), -EINVAL);
	assert_string_equal(err, "Intel PT has no 'start' filters (use 'filter' or 'stop')");
	assert_int_equal(x86_pt_filter_parse(&pt, "filter 0x1000@/proc/self/exe", &c, err,
					     sizeof(err)), -EINVAL);
	assert_string_equal(err, "'0x1000@/proc/self/exe': an address range needs /SIZE");
	assert_int_equal(x86_pt_filter_parse(&pt, "filter main", &c, err, sizeof(err)), -EINVAL);
	assert_int_equal(x86_pt_filter_parse(&pt, "filter main @ /no/such/file", &c, err,
					     sizeof(err)), -EINVAL);
	assert_string_equal(err, "/no/such/file: No such file or directory");
	assert_int_equal(c.nfilters, 0);
	pmu_free(&pt);
}

static void test_buffers(void **state)
{
	(void)state;
	/* Unprivileged, default 516 KiB per cpu, 2 cpus: 1 thread with 512 KiB data + 512 KiB
	 * AUX needs 1028 KiB of 1032. */
	assert_int_equal(x86_pt_check_buffers(512 << 10, 512 << 10, 1, 2, 516, 0, err, sizeof(err)), 0);
	assert_int_equal(x86_pt_check_buffers(512 << 10, 1 << 20, 1, 2, 516, 0, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "1 buffer(s) of 512 KiB data + 1024 KiB AUX need 1540 KiB locked, "
			    "over perf_event_mlock_kb (516 KiB x 2 cpus = 1032 KiB)");
	assert_int_equal(x86_pt_check_buffers(512 << 10, 1 << 20, 1, 2, 516, 1, err, sizeof(err)), 0);
	assert_int_equal(x86_pt_check_buffers(3 << 12, 1 << 20, 1, 2, 516, 1, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "data buffer 12 KiB: must be a power of two of at least 4 KiB");
	assert_int_equal(x86_pt_check_buffers(4096, 1024, 1, 2, 516, 1, err, sizeof(err)), -EINVAL);
}

static void test_lbr_intel(void **state)
{
	struct x86_lbr_info info;
	struct x86_lbr_cfg c = { 0 };
	struct perf_event_attr a;

	(void)state;
	assert_int_equal(x86_lbr_probe(SKL, &info, err, sizeof(err)), 0);
	assert_string_equal(info.pmu, "cpu");
	assert_int_equal(info.type, 4);
	assert_int_equal(info.depth, 32);
	assert_int_equal(info.intel, 1);
	assert_int_equal(info.call_stack, 1);
	assert_int_equal(x86_lbr_attr(&info, &c, &a, err, sizeof(err)), 0);
	assert_int_equal(a.type, PERF_TYPE_HARDWARE);
	assert_int_equal(a.config, PERF_COUNT_HW_CPU_CYCLES);
	assert_int_equal(a.branch_sample_type, PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER);
	assert_int_equal(a.branch_sample_type, 0x9);
	assert_true(a.sample_type & PERF_SAMPLE_BRANCH_STACK);
	assert_int_equal(a.freq, 1);
	assert_int_equal(a.sample_freq, 4000);
	assert_int_equal(a.exclude_kernel, 1);
	assert_int_equal(a.use_clockid, 1);	/* jitdumps' clock */
	assert_int_equal(a.clockid, CLOCK_MONOTONIC);
	c.hw_index = 1;
	c.kernel = 1;
	c.user = 1;
	c.period = 100003;
	assert_int_equal(x86_lbr_attr(&info, &c, &a, err, sizeof(err)), 0);
	assert_int_equal(a.branch_sample_type, 0x9 | PERF_SAMPLE_BRANCH_KERNEL | 0x20000);
	assert_int_equal(a.freq, 0);
	assert_int_equal(a.sample_period, 100003);
	/* -g lbr: perf's call-stack request. */
	memset(&c, 0, sizeof(c));
	c.call_stack = 1;
	c.hw_index = 1;
	assert_int_equal(x86_lbr_attr(&info, &c, &a, err, sizeof(err)), 0);
	assert_int_equal(a.branch_sample_type, 0x1 | 0x800 | 0x4000 | 0x8000 | 0x20000);
	assert_true(a.sample_type & PERF_SAMPLE_CALLCHAIN);
	c.kernel = 1;
	assert_int_equal(x86_lbr_attr(&info, &c, &a, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "-g lbr records user call stacks: drop -k or add -u");
}

static void test_lbr_missing(void **state)
{
	struct x86_lbr_info info;

	(void)state;
	assert_int_equal(x86_lbr_probe(ZEN, &info, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "the cpu PMU offers no branch stack (no caps/branches): this CPU "
			    "or hypervisor has no LBR/BRS");
	assert_int_equal(x86_lbr_probe(VM, &info, err, sizeof(err)), -ENOENT);
	assert_string_equal(err, "no cpu PMU in sysfs: this machine (or its hypervisor) exposes "
			    "no hardware counters, so no branch stacks");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pt_default),
		cmocka_unit_test(test_pt_options),
		cmocka_unit_test(test_pt_option_errors),
		cmocka_unit_test(test_pt_missing),
		cmocka_unit_test(test_pt_filters),
		cmocka_unit_test(test_buffers),
		cmocka_unit_test(test_lbr_intel),
		cmocka_unit_test(test_lbr_missing),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
