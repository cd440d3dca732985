/* What `info` concludes: fixture sysfs trees + injected probe results -> modes.
 * This machine's real probes are never used here (tests/integration/info.sh does that). */
#include "xp_test.h"

#include <errno.h>
#include <unistd.h>

#include "probe/probe.h"

#define SKL XP_FIXTURE("sysfs/intel-skylake")
#define ZEN XP_FIXTURE("sysfs/amd-zen")
#define VM XP_FIXTURE("sysfs/vm-nopmu")
#define NOTHERE "the sysfs tree is not this machine's"

static struct pmu_list pmus;
static struct probe_facts f;
static struct probe_conclusion c;

static void ok(struct probe_check *ch)
{
	ch->status = PROBE_OK;
	ch->err = 0;
}

static void fails(struct probe_check *ch, int err)
{
	ch->status = PROBE_FAIL;
	ch->err = err;
}

/* Root on an x86-64 box without Yama; software probes pass, hardware ones not run. */
static void base_facts(void)
{
	probe_facts_init(&f, NOTHERE);
	strcpy(f.kernel, "6.1.0-18-amd64");
	strcpy(f.machine, "x86_64");
	f.paranoid = 2;
	f.mlock_kb = 516;
	f.yama_scope = -1;
	f.euid = 0;
	f.cap_perfmon = f.cap_sys_admin = f.cap_sys_ptrace = 1;
	ok(&f.cpu_clock);
	ok(&f.ptrace);
}

static void unprivileged(int paranoid, int yama)
{
	f.euid = 1000;
	f.cap_perfmon = f.cap_sys_admin = f.cap_sys_ptrace = 0;
	f.paranoid = paranoid;
	f.yama_scope = yama;
}

static void load(const char *root)
{
	pmu_list_free(&pmus);
	assert_int_equal(pmu_list_read(root, &pmus), 0);
}

static int teardown(void **state)
{
	(void)state;
	pmu_list_free(&pmus);
	return 0;
}

#define M(id) (&c.mode[PROBE_MODE_##id])

static void assert_unavailable(const struct probe_mode *m, const char *reason, const char *instead)
{
	assert_false(m->available);
	assert_string_equal(m->reason, reason);
	if (instead)
		assert_string_equal(m->instead, instead);
	else
		assert_null(m->instead);
}

static void assert_available(const struct probe_mode *m, const char *detail, int verified)
{
	if (!m->available)
		fail_msg("%s unavailable: %s", m->name, m->reason);
	assert_string_equal(m->detail, detail);
	assert_int_equal(m->verified, verified);
	assert_null(m->instead);
}

/* This VM as its live probes see it: no hardware events at all. */
static void test_vm_live(void **state)
{
	(void)state;
	load(VM);
	base_facts();
	fails(&f.hw_cycles, ENOENT);
	fails(&f.hw_instructions, ENOENT);
	fails(&f.lbr, ENOENT);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(PT), "no intel_pt PMU in FIX: the CPU has no Intel PT, or a hypervisor "
				  "hides it", "sample");
	assert_unavailable(M(LBR), "branch-stack sampling does not open (ENOENT): no hardware PMU, "
				   "no cpu PMU in FIX", "sample");
	assert_available(M(SAMPLE), "cpu-clock sampling only: hardware counters do not open (ENOENT)", 1);
	assert_available(M(STEP), "ptrace branch tracer of a command it starts or a running process (-p)", 1);
	assert_string_equal(c.best, "sample");
	assert_string_equal(c.core_pmu, "");
	assert_int_equal(c.pt.present, 0);
	assert_int_equal(c.lbr_depth, -1);
}

/* The Skylake tree with what a real Skylake's probes report. */
static void test_skylake_live(void **state)
{
	(void)state;
	load(SKL);
	base_facts();
	ok(&f.hw_cycles);
	ok(&f.hw_instructions);
	ok(&f.lbr);
	ok(&f.pt);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_available(M(PT), "cycle-accurate mode: yes, address filters: 2, MTC: yes, PTWRITE: no, "
				"power events: no", 1);
	assert_int_equal(c.pt.present, 1);
	assert_int_equal(c.pt.type, 8);
	assert_int_equal(c.pt.cyc, 1);
	assert_int_equal(c.pt.addr_filters, 2);
	assert_int_equal(c.pt.mtc, 1);
	assert_int_equal(c.pt.ptwrite, 0);
	assert_int_equal(c.pt.cr3_filtering, 1);
	assert_available(M(LBR), "branch stacks of 32 entries (cpu caps/branches)", 1);
	assert_available(M(SAMPLE), "cycles or cpu-clock sampling (hardware counters open)", 1);
	assert_string_equal(c.best, "pt");
	assert_string_equal(c.core_pmu, "cpu");
	assert_int_equal(c.lbr_depth, 32);
}

/* `info --sysfs-root skylake` on this VM: hardware probes not run, sysfs decides. */
static void test_skylake_fixture_only(void **state)
{
	(void)state;
	load(SKL);
	base_facts();
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_available(M(PT), "cycle-accurate mode: yes, address filters: 2, MTC: yes, PTWRITE: no, "
				"power events: no [not verified: " NOTHERE "]", 0);
	assert_available(M(LBR), "branch stacks of 32 entries (cpu caps/branches) [not verified: "
				 NOTHERE "]", 0);
	assert_available(M(SAMPLE), "cycles or cpu-clock sampling (cpu PMU in sysfs; counters not "
				    "probed)", 1);
	assert_string_equal(c.best, "pt");
}

/* record opened the real events of the modes info could not verify and the kernel
 * refused: probe_refute turns each refusal into info's reason, and moves best/instead. */
static void test_refuted_by_record(void **state)
{
	char label[600];

	(void)state;
	load(SKL);
	base_facts();
	probe_conclude(&pmus, "FIX", &f, &c);
	probe_refute(SKL, &pmus, &f, PROBE_MODE_PT, EINVAL, &c);
	probe_sysfs_label(SKL, label, sizeof(label));
	assert_string_equal(label, SKL "/sys/bus/event_source/devices");
	assert_unavailable(M(PT), "an intel_pt event does not open (EINVAL): the kernel rejects the "
				  "event attributes", "lbr");
	assert_string_equal(c.best, "lbr");
	probe_refute(SKL, &pmus, &f, PROBE_MODE_LBR, ENOENT, &c);
	assert_unavailable(M(PT), "an intel_pt event does not open (EINVAL): the kernel rejects the "
				  "event attributes", "sample");
	assert_unavailable(M(LBR), "branch-stack sampling does not open (ENOENT): the kernel has no "
				   "hardware cycles event", "sample");
	assert_string_equal(c.best, "sample");
	assert_int_equal(f.pt.status, PROBE_FAIL);
	assert_int_equal(f.lbr.err, ENOENT);
}

static void test_skylake_paranoid3_user(void **state)
{
	static const char denied[] = "perf_event_paranoid is 3 and this user is neither root nor "
				     "has CAP_PERFMON (sysctl kernel.perf_event_paranoid=2 allows it)";

	(void)state;
	load(SKL);
	base_facts();
	unprivileged(3, 1);
	fails(&f.cpu_clock, EACCES);	/* a Debian kernel refuses */
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_false(c.perf_allowed);
	assert_unavailable(M(PT), denied, "step");
	assert_unavailable(M(LBR), denied, "step");
	assert_unavailable(M(SAMPLE), denied, "step");
	assert_available(M(STEP), "ptrace branch tracer of a command it starts or a running process (-p)", 1);
	assert_string_equal(c.best, "step");
	/* The PT features are still described from sysfs. */
	assert_int_equal(c.pt.addr_filters, 2);

	/* Not probed: paranoid 3 alone decides. */
	f.cpu_clock.status = PROBE_NOT_RUN;
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(SAMPLE), denied, "step");
	/* An upstream kernel treats 3 like 2: the cpu-clock event opened, so perf is allowed. */
	ok(&f.cpu_clock);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_true(c.perf_allowed);
	assert_true(M(PT)->available && M(SAMPLE)->available);
	fails(&f.cpu_clock, EACCES);

	/* CAP_PERFMON alone lifts the paranoid restriction. */
	f.cap_perfmon = 1;
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_true(c.perf_allowed);
	assert_true(M(PT)->available);
	/* And paranoid 2 allows user-space profiling of one's own processes. */
	unprivileged(2, 0);
	ok(&f.cpu_clock);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_true(M(PT)->available && M(LBR)->available && M(SAMPLE)->available);
}

static void test_skylake_pt_busy(void **state)
{
	(void)state;
	load(SKL);
	base_facts();
	ok(&f.hw_cycles);
	ok(&f.lbr);
	fails(&f.pt, EBUSY);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(PT), "an intel_pt event does not open (EBUSY): the PMU is busy (used by "
				  "another tracer or the hypervisor)", "lbr");
	assert_string_equal(c.best, "lbr");
}

static void test_zen_live(void **state)
{
	(void)state;
	load(ZEN);
	base_facts();
	ok(&f.hw_cycles);
	ok(&f.hw_instructions);
	fails(&f.lbr, EOPNOTSUPP);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(PT), "no intel_pt PMU in FIX: the CPU has no Intel PT, or a hypervisor "
				  "hides it", "sample");
	assert_unavailable(M(LBR), "branch-stack sampling does not open (EOPNOTSUPP): the CPU PMU has "
				   "no branch stack (LBR)", "sample");
	assert_available(M(SAMPLE), "cycles or cpu-clock sampling (hardware counters open)", 1);
	assert_string_equal(c.best, "sample");
}

static void test_zen_fixture_only(void **state)
{
	(void)state;
	load(ZEN);
	base_facts();
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(LBR), "the cpu PMU has no branch stack: caps/branches is missing in FIX",
			   "sample");
	assert_available(M(SAMPLE), "cycles or cpu-clock sampling (cpu PMU in sysfs; counters not "
				    "probed)", 1);
}

static void test_vm_fixture_only(void **state)
{
	(void)state;
	load(VM);
	base_facts();
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(LBR), "no hardware PMU, no cpu PMU in FIX", "sample");
	assert_available(M(SAMPLE), "cpu-clock sampling only: no hardware PMU in FIX", 1);
}

static void test_nothing_available(void **state)
{
	(void)state;
	load(VM);
	base_facts();
	unprivileged(3, 3);
	fails(&f.cpu_clock, EACCES);
	fails(&f.ptrace, EPERM);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(STEP), "Yama ptrace_scope is 3: ptrace is disabled until reboot", NULL);
	assert_unavailable(M(SAMPLE), "perf_event_paranoid is 3 and this user is neither root nor has "
				      "CAP_PERFMON (sysctl kernel.perf_event_paranoid=2 allows it)", NULL);
	assert_null(c.best);
}

static void test_step_reasons(void **state)
{
	(void)state;
	load(VM);
	base_facts();
	strcpy(f.machine, "aarch64");
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(STEP), "step mode decodes x86-64 branches and this machine is aarch64",
			   "sample");

	base_facts();
	unprivileged(2, 2);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(STEP), "Yama ptrace_scope is 2: only processes with CAP_SYS_PTRACE may "
				    "trace", "sample");
	f.cap_sys_ptrace = 1;
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_available(M(STEP), "ptrace branch tracer of a command it starts or a running process (-p)", 1);

	base_facts();
	fails(&f.ptrace, EPERM);
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_unavailable(M(STEP), "a traced child does not stop and single-step (EPERM): Operation "
				    "not permitted", "sample");

	base_facts();
	f.ptrace.status = PROBE_NOT_RUN;
	probe_conclude(&pmus, "FIX", &f, &c);
	assert_available(M(STEP), "ptrace branch tracer of a command it starts or a running process (-p) [not verified: " NOTHERE "]", 0);
}

/* In-memory sysfs: an old kernel's intel_pt without caps, and a hybrid cpu_core. */
static void test_old_pt_and_hybrid(void **state)
{
	struct pmu p[2];
	struct pmu_cap branches = { (char *)"branches", (char *)"32" };
	struct pmu_list l = { p, 2 };

	(void)state;
	memset(p, 0, sizeof(p));
	p[0].name = (char *)"cpu_core";
	p[0].type = 4;
	p[0].nr_addr_filters = -1;
	p[0].caps = &branches;
	p[0].ncaps = 1;
	p[1].name = (char *)"intel_pt";
	p[1].type = 9;
	p[1].nr_addr_filters = 2;
	base_facts();
	probe_conclude(&l, "MEM", &f, &c);
	assert_available(M(PT), "cycle-accurate mode: unknown, address filters: 2, MTC: unknown, "
				"PTWRITE: unknown, power events: unknown [not verified: " NOTHERE "]", 0);
	assert_available(M(LBR), "branch stacks of 32 entries (cpu_core caps/branches) [not verified: "
				 NOTHERE "]", 0);
	assert_string_equal(c.core_pmu, "cpu_core");
}

static void write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");

	assert_non_null(fp);
	fputs(text, fp);
	fclose(fp);
}

static void test_probe_file(void **state)
{
	char path[1024];
	int fd, line;

	(void)state;
	assert_int_equal(xp_test_path(path, sizeof(path), "probe.XXXXXX"), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	write_file(path, "# a real Skylake laptop\n"
			 "kernel=6.1.0-18-amd64\nmachine = x86_64\nparanoid=2\nmlock_kb=516\n"
			 "yama_scope=1\neuid=1000\ncap_perfmon=0\ncap_sys_admin=0\ncap_sys_ptrace=0\n"
			 "hw_cycles=ok\nhw_instructions=ok\nlbr=ok\ncpu_clock=ok\npt=EBUSY\n"
			 "ptrace=ok\npfm=ok\npfm_pmus=skl perf perf_raw\n\n");
	assert_int_equal(probe_file_read(path, &f, &line), 0);
	assert_string_equal(f.kernel, "6.1.0-18-amd64");
	assert_string_equal(f.machine, "x86_64");
	assert_int_equal(f.paranoid, 2);
	assert_int_equal(f.yama_scope, 1);
	assert_int_equal(f.euid, 1000);
	assert_int_equal(f.cap_perfmon, 0);
	assert_int_equal(f.hw_cycles.status, PROBE_OK);
	assert_int_equal(f.pt.status, PROBE_FAIL);
	assert_int_equal(f.pt.err, EBUSY);
	assert_string_equal(f.pfm_pmus, "skl perf perf_raw");
	assert_string_equal(f.source + strlen("probe file "), path);

	/* Absent keys stay unknown / not run. */
	write_file(path, "yama_scope=none\nlbr=95\n");
	assert_int_equal(probe_file_read(path, &f, &line), 0);
	assert_int_equal(f.yama_scope, -1);
	assert_int_equal(f.lbr.status, PROBE_FAIL);
	assert_int_equal(f.lbr.err, EOPNOTSUPP);
	assert_int_equal(f.paranoid, PROBE_UNKNOWN);
	assert_int_equal(f.pt.status, PROBE_NOT_RUN);
	assert_string_equal(f.pt.note, "not in the probe file");

	write_file(path, "paranoid=2\nlbr=maybe\n");
	assert_int_equal(probe_file_read(path, &f, &line), -EINVAL);
	assert_int_equal(line, 2);
	write_file(path, "paranoid=7\n");
	assert_int_equal(probe_file_read(path, &f, &line), -EINVAL);
	assert_int_equal(line, 1);
	write_file(path, "\nno equals sign\n");
	assert_int_equal(probe_file_read(path, &f, &line), -EINVAL);
	assert_int_equal(line, 2);
	write_file(path, "colour=blue\n");
	assert_int_equal(probe_file_read(path, &f, &line), -EINVAL);
	unlink(path);
	assert_int_equal(probe_file_read(path, &f, &line), -ENOENT);
	assert_int_equal(line, 0);
}

/* The one-call form record uses: on a fixture root the hardware probes are skipped, so the
 * sysfs-only conclusions are exact whatever machine runs the test. */
static void test_probe_machine(void **state)
{
	struct probe_facts pf;

	(void)state;
	assert_int_equal(probe_machine(VM, NULL, &pf, &c, 1), 0);
	assert_unavailable(M(LBR), "no hardware PMU, no cpu PMU in " VM "/sys/bus/event_source/devices",
			   c.mode[PROBE_MODE_LBR].instead);
	assert_unavailable(M(PT), "no intel_pt PMU in " VM "/sys/bus/event_source/devices: the CPU has "
				  "no Intel PT, or a hypervisor hides it", c.mode[PROBE_MODE_PT].instead);
	assert_int_equal(pf.hw_cycles.status, PROBE_NOT_RUN);
	assert_string_equal(pf.hw_cycles.note, NOTHERE);
	assert_string_equal(pf.source, "this machine");
	assert_int_equal(probe_machine(SKL, &pmus, NULL, &c, 1), 0);
	assert_int_equal(pmus.n, 11);
	assert_string_equal(c.core_pmu, "cpu");
	assert_true(M(PT)->available);
	assert_false(M(PT)->verified);
	assert_int_equal(probe_machine(XP_FIXTURE("sysfs/none"), NULL, NULL, &c, 1), -ENOENT);
	assert_unavailable(M(PT), "no intel_pt PMU in " XP_FIXTURE("sysfs/none") "/sys/bus/event_source/"
				  "devices: the CPU has no Intel PT, or a hypervisor hides it",
			   c.mode[PROBE_MODE_PT].instead);
	assert_true(probe_sysfs_is_live(NULL));
	assert_true(probe_sysfs_is_live("/"));
	assert_true(probe_sysfs_is_live("/sys/.."));
	assert_false(probe_sysfs_is_live(SKL));
	/* record's form on this machine: no uprobe check (closing its events costs the
	 * kernel ~160 ms), whatever the machine has */
	probe_machine(NULL, NULL, &pf, &c, 0);
	assert_int_equal(pf.uprobe.status, PROBE_NOT_RUN);
	assert_string_equal(pf.uprobe.note, "not needed here");
}

static void test_errno_names(void **state)
{
	(void)state;
	assert_string_equal(probe_errno_name(ENOENT), "ENOENT");
	assert_string_equal(probe_errno_name(EOPNOTSUPP), "EOPNOTSUPP");
	assert_null(probe_errno_name(0));
	assert_int_equal(probe_errno_parse("EACCES"), EACCES);
	assert_int_equal(probe_errno_parse("ENOTSUP"), EOPNOTSUPP);
	assert_int_equal(probe_errno_parse("19"), ENODEV);
	assert_int_equal(probe_errno_parse("EWHAT"), -EINVAL);
	assert_int_equal(probe_errno_parse("0"), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_vm_live, teardown),
		cmocka_unit_test_teardown(test_skylake_live, teardown),
		cmocka_unit_test_teardown(test_skylake_fixture_only, teardown),
		cmocka_unit_test_teardown(test_refuted_by_record, teardown),
		cmocka_unit_test_teardown(test_skylake_paranoid3_user, teardown),
		cmocka_unit_test_teardown(test_skylake_pt_busy, teardown),
		cmocka_unit_test_teardown(test_zen_live, teardown),
		cmocka_unit_test_teardown(test_zen_fixture_only, teardown),
		cmocka_unit_test_teardown(test_vm_fixture_only, teardown),
		cmocka_unit_test_teardown(test_nothing_available, teardown),
		cmocka_unit_test_teardown(test_step_reasons, teardown),
		cmocka_unit_test(test_old_pt_and_hybrid),
		cmocka_unit_test(test_probe_file),
		cmocka_unit_test_teardown(test_probe_machine, teardown),
		cmocka_unit_test(test_errno_names),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
