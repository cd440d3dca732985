/* sysfs PMU discovery against the fixture trees and hand-computed bit layouts. */
#include "xp_test.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probe/pmu.h"

#define SKL XP_FIXTURE("sysfs/intel-skylake")
#define ZEN XP_FIXTURE("sysfs/amd-zen")
#define VM XP_FIXTURE("sysfs/vm-nopmu")

static void test_parse_single_bit(void **state)
{
	struct pmu_field f;

	(void)state;
	assert_int_equal(pmu_field_parse("pt", "config:0\n", &f), 0);
	assert_string_equal(f.name, "pt");
	assert_int_equal(f.word, PMU_CONFIG);
	assert_int_equal(f.mask, 0x1);
	assert_int_equal(f.width, 1);
	assert_int_equal(pmu_field_parse("notnt", "config:55", &f), 0);
	assert_true(f.mask == 1ULL << 55);
}

static void test_parse_ranges(void **state)
{
	struct pmu_field f;

	(void)state;
	assert_int_equal(pmu_field_parse("mtc_period", "config:14-17", &f), 0);
	assert_int_equal(f.mask, 0x3c000);
	assert_int_equal(f.width, 4);
	assert_int_equal(pmu_field_parse("x", "config1:0-3,8-11", &f), 0);
	assert_int_equal(f.word, PMU_CONFIG1);
	assert_int_equal(f.mask, 0xf0f);
	assert_int_equal(f.width, 8);
	assert_int_equal(pmu_field_parse("event", "config:0-7,32-35", &f), 0);
	assert_true(f.mask == 0xf000000ffULL);
	assert_int_equal(f.width, 12);
	assert_int_equal(pmu_field_parse("all", "config2:0-63", &f), 0);
	assert_int_equal(f.word, PMU_CONFIG2);
	assert_true(f.mask == ~0ULL);
	assert_int_equal(f.width, 64);
	assert_int_equal(pmu_field_parse("c3", "config3:5,7", &f), 0);
	assert_int_equal(f.word, PMU_CONFIG3);
	assert_int_equal(f.mask, 0xa0);
}

static void test_parse_rejects(void **state)
{
	static const char *const bad[] = {
		"", "config", "config:", "config:64", "config:5-3", "conf:1", "config4:1",
		"config:1-2,2", "config:1,", "config:a", "config:0-64", "config:1-", "config:-1",
		"config:0 1", "config:99999999999999999999", ":3",
	};
	struct pmu_field f;

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (pmu_field_parse("f", bad[i], &f) != -EINVAL)
			fail_msg("accepted bad spec '%s'", bad[i]);
	}
}

static void test_format_roundtrip(void **state)
{
	static const char *const specs[] = {
		"config:0", "config:14-17", "config1:0-3,8-11", "config:0-7,32-35", "config2:0-63",
		"config3:63", "config:1,3,5",
	};
	struct pmu_field f;
	char buf[64];

	(void)state;
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		assert_int_equal(pmu_field_parse("f", specs[i], &f), 0);
		pmu_field_format(&f, buf, sizeof(buf));
		assert_string_equal(buf, specs[i]);
	}
	/* Listed out of order: canonical form is ascending. */
	assert_int_equal(pmu_field_parse("f", "config:32-35,0-7", &f), 0);
	pmu_field_format(&f, buf, sizeof(buf));
	assert_string_equal(buf, "config:0-7,32-35");
}

static void test_put_get_split_field(void **state)
{
	uint64_t w[PMU_NWORDS] = { 0x100, 0, 0, 0 };
	struct pmu_field f;

	(void)state;
	/* AMD event select 0x1c2: low byte 0xc2 in bits 0-7, high nibble 0x1 in bits 32-35. */
	assert_int_equal(pmu_field_parse("event", "config:0-7,32-35", &f), 0);
	assert_int_equal(pmu_field_put(&f, 0x1c2, w), 0);
	assert_true(w[PMU_CONFIG] == 0x1000001c2ULL);	/* bit 8 (umask) kept */
	assert_true(pmu_field_get(&f, w) == 0x1c2);
	assert_int_equal(pmu_field_put(&f, 0x1000, w), -ERANGE);
	assert_true(w[PMU_CONFIG] == 0x1000001c2ULL);	/* unchanged on error */
	/* Putting 0 clears only the field's bits. */
	assert_int_equal(pmu_field_put(&f, 0, w), 0);
	assert_true(w[PMU_CONFIG] == 0x100);
	assert_int_equal(pmu_field_parse("all", "config2:0-63", &f), 0);
	assert_int_equal(pmu_field_put(&f, ~0ULL, w), 0);
	assert_true(w[PMU_CONFIG2] == ~0ULL);
	assert_true(w[PMU_CONFIG] == 0x100);
}

static void test_read_intel_pt(void **state)
{
	static const char *const names[] = {
		"branch", "cyc", "cyc_thresh", "event", "fup_on_ptw", "mtc", "mtc_period",
		"noretcomp", "notnt", "psb_period", "pt", "ptw", "pwr_evt", "tsc",
	};
	struct pmu p;
	uint64_t v;
	char buf[64];

	(void)state;
	assert_int_equal(pmu_read(SKL, "intel_pt", &p), 0);
	assert_string_equal(p.name, "intel_pt");
	assert_int_equal(p.type, 8);
	assert_int_equal(p.nr_addr_filters, 2);
	assert_int_equal(p.nbad_formats, 0);
	assert_int_equal(p.nfields, 14);
	for (size_t i = 0; i < p.nfields; i++)
		assert_string_equal(p.fields[i].name, names[i]);
	assert_int_equal(pmu_field_find(&p, "cyc")->mask, 0x2);
	assert_int_equal(pmu_field_find(&p, "psb_period")->mask, 0x0f000000);
	assert_int_equal(pmu_field_find(&p, "cyc_thresh")->mask, 0x00780000);
	assert_null(pmu_field_find(&p, "nope"));
	pmu_field_format(pmu_field_find(&p, "mtc_period"), buf, sizeof(buf));
	assert_string_equal(buf, "config:14-17");

	assert_int_equal(p.ncaps, 18);
	assert_string_equal(p.caps[0].name, "cr3_filtering");
	assert_string_equal(pmu_cap_str(&p, "mtc_periods"), "249");
	/* intel_pt caps are printed with %x. */
	assert_int_equal(pmu_cap_u64(&p, "mtc_periods", &v), 0);
	assert_int_equal(v, 0x249);
	assert_int_equal(pmu_cap_u64(&p, "cycle_thresholds", &v), 0);
	assert_int_equal(v, 0x3fff);
	assert_int_equal(pmu_cap_u64(&p, "psb_periods", &v), 0);
	assert_int_equal(v, 0x3f);
	assert_int_equal(pmu_cap_u64(&p, "num_address_ranges", &v), 0);
	assert_int_equal(v, 2);
	assert_int_equal(pmu_cap_u64(&p, "psb_cyc", &v), 0);
	assert_int_equal(v, 1);
	assert_int_equal(pmu_cap_u64(&p, "ptwrite", &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(pmu_cap_u64(&p, "no_such_cap", &v), -ENOENT);
	pmu_free(&p);
	assert_null(p.name);
}

static void test_set_attr(void **state)
{
	struct perf_event_attr attr;
	struct pmu pt, cpu;

	(void)state;
	assert_int_equal(pmu_read(SKL, "intel_pt", &pt), 0);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(pmu_set(&pt, "cyc", 1, &attr), 0);
	assert_int_equal(pmu_set(&pt, "psb_period", 3, &attr), 0);
	assert_int_equal(pmu_set(&pt, "mtc_period", 3, &attr), 0);
	assert_int_equal(pmu_set(&pt, "tsc", 1, &attr), 0);
	/* bit 1 | 3<<24 | 3<<14 | bit 10 */
	assert_true(attr.config == 0x300c402ULL);
	assert_int_equal(pmu_set(&pt, "cyc_thresh", 16, &attr), -ERANGE);
	assert_int_equal(pmu_set(&pt, "cyc_thresh", 15, &attr), 0);
	assert_true(attr.config == 0x378c402ULL);
	assert_int_equal(pmu_set(&pt, "nope", 1, &attr), -ENOENT);
	assert_true(attr.config1 == 0 && attr.config2 == 0);
	pmu_free(&pt);

	assert_int_equal(pmu_read(SKL, "cpu", &cpu), 0);
	assert_int_equal(cpu.type, 4);
	assert_int_equal(cpu.nfields, 12);
	memset(&attr, 0, sizeof(attr));
	assert_int_equal(pmu_set(&cpu, "ldlat", 3, &attr), 0);
	assert_int_equal(pmu_set(&cpu, "event", 0xcd, &attr), 0);
	assert_int_equal(pmu_set(&cpu, "umask", 0x1, &attr), 0);
	assert_true(attr.config == 0x1cd && attr.config1 == 3);
	pmu_free(&cpu);
}

static void test_cpu_caps_decimal(void **state)
{
	struct pmu cpu;
	uint64_t v;

	(void)state;
	assert_int_equal(pmu_read(SKL, "cpu", &cpu), 0);
	assert_int_equal(pmu_cap_u64(&cpu, "branches", &v), 0);
	assert_int_equal(v, 32);	/* "%d": LBR depth 32, not 0x32 */
	assert_int_equal(pmu_cap_u64(&cpu, "max_precise", &v), 0);
	assert_int_equal(v, 3);
	assert_string_equal(pmu_cap_str(&cpu, "pmu_name"), "skylake");
	assert_int_equal(pmu_cap_u64(&cpu, "pmu_name", &v), -EINVAL);
	assert_int_equal(cpu.nr_addr_filters, -1);
	pmu_free(&cpu);
	assert_int_equal(pmu_cap_base("intel_pt"), 16);
	assert_int_equal(pmu_cap_base("cpu"), 10);
}

static void test_list_vm(void **state)
{
	static const char *const names[] = { "breakpoint", "msr", "software", "tracepoint", "uprobe" };
	static const int types[] = { 5, 9, 1, 2, 8 };
	struct pmu_list l;
	const struct pmu *up;

	(void)state;
	assert_int_equal(pmu_list_read(VM, &l), 0);
	assert_int_equal(l.n, 5);
	for (size_t i = 0; i < l.n; i++) {
		assert_string_equal(l.pmus[i].name, names[i]);
		assert_int_equal(l.pmus[i].type, types[i]);
	}
	assert_null(pmu_list_find(&l, "cpu"));
	up = pmu_list_find(&l, "uprobe");
	assert_non_null(up);
	assert_int_equal(pmu_field_find(up, "ref_ctr_offset")->mask, 0xffffffff00000000ULL);
	pmu_list_free(&l);
}

static void test_list_zen(void **state)
{
	struct pmu_list l;
	struct pmu p;
	const struct pmu *cpu;
	uint64_t v;

	(void)state;
	assert_int_equal(pmu_list_read(ZEN, &l), 0);
	assert_int_equal(l.n, 12);
	assert_null(pmu_list_find(&l, "intel_pt"));
	assert_non_null(pmu_list_find(&l, "ibs_op"));
	cpu = pmu_list_find(&l, "cpu");
	assert_non_null(cpu);
	assert_int_equal(pmu_cap_u64(cpu, "branches", &v), -ENOENT);
	assert_int_equal(pmu_field_find(cpu, "event")->mask, 0xf000000ffULL);
	pmu_list_free(&l);
	assert_int_equal(pmu_read(ZEN, "intel_pt", &p), -ENOENT);
	assert_int_equal(pmu_read(ZEN, "../amd-zen", &p), -EINVAL);
}

static void test_missing_root(void **state)
{
	struct pmu_list l;

	(void)state;
	assert_int_equal(pmu_list_read(XP_FIXTURE("sysfs/does-not-exist"), &l), -ENOENT);
	assert_int_equal(l.n, 0);
}

static void test_attr_read(void **state)
{
	char buf[16], tiny[3];

	(void)state;
	assert_int_equal(pmu_attr_read(SKL, "intel_pt", "max_nonturbo_ratio", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "40");
	assert_int_equal(pmu_attr_read(SKL, "intel_pt", "tsc_art_ratio", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "2:334");
	assert_int_equal(pmu_attr_read(SKL, "intel_pt", "tsc_art_ratio", tiny, sizeof(tiny)),
			 -ENAMETOOLONG);
	assert_int_equal(pmu_attr_read(VM, "msr", "max_nonturbo_ratio", buf, sizeof(buf)), -ENOENT);
}

static void test_path(void **state)
{
	char buf[32];

	(void)state;
	assert_int_equal(pmu_path(NULL, "sys/x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/x");
	assert_int_equal(pmu_path("/", "/sys/x", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/sys/x");
	assert_int_equal(pmu_path("fix/", "sys", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fix/sys");
	assert_int_equal(pmu_path("fix", "sys", buf, sizeof(buf)), 0);
	assert_string_equal(buf, "fix/sys");
	assert_int_equal(pmu_path("/a/very/long/root/directory", "sys/bus", buf, sizeof(buf)),
			 -ENAMETOOLONG);
}

static void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Malformed and oversized files are skipped and counted, never trusted. */
static void test_corrupt_tree(void **state)
{
	char root[1024], dir[1200], cmd[2600];
	char big[5000];
	struct pmu p;
	uint64_t v;

	(void)state;
	assert_int_equal(xp_test_path(root, sizeof(root), "pmu"), 0);
	snprintf(dir, sizeof(dir), "%s/sys/bus/event_source/devices/odd", root);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/format' '%s/caps'", dir, dir);
	assert_int_equal(system(cmd), 0);
	put_file(dir, "type", "not-a-number\n");
	put_file(dir, "format/good", "config:0-3\n");
	put_file(dir, "format/bad", "config:70\n");
	memset(big, '1', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	put_file(dir, "format/huge", big);
	put_file(dir, "caps/hexed", "0x10\n");
	put_file(dir, "caps/neg", "-1\n");
	assert_int_equal(pmu_read(root, "odd", &p), 0);
	assert_int_equal(p.type, -1);
	assert_int_equal(p.nfields, 1);
	assert_int_equal(p.nbad_formats, 2);
	assert_int_equal(pmu_cap_u64(&p, "hexed", &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(pmu_cap_u64(&p, "neg", &v), -EINVAL);
	pmu_free(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_single_bit),
		cmocka_unit_test(test_parse_ranges),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_format_roundtrip),
		cmocka_unit_test(test_put_get_split_field),
		cmocka_unit_test(test_read_intel_pt),
		cmocka_unit_test(test_set_attr),
		cmocka_unit_test(test_cpu_caps_decimal),
		cmocka_unit_test(test_list_vm),
		cmocka_unit_test(test_list_zen),
		cmocka_unit_test(test_missing_root),
		cmocka_unit_test(test_attr_read),
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_corrupt_tree),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
