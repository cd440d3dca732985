/* Live probes: ask this kernel what actually opens, instead of guessing from CPUID. */
#include "probe/probe.h"
#include "util/xp_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <perfmon/pfmlib.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

static void check_init(struct probe_check *c, const char *note)
{
	c->status = PROBE_NOT_RUN;
	c->err = 0;
	snprintf(c->note, sizeof(c->note), "%s", note ? note : "");
}

void probe_facts_init(struct probe_facts *f, const char *note)
{
	memset(f, 0, sizeof(*f));
	f->paranoid = f->mlock_kb = f->yama_scope = f->euid = PROBE_UNKNOWN;
	f->cap_perfmon = f->cap_sys_admin = f->cap_sys_ptrace = PROBE_UNKNOWN;
	check_init(&f->hw_cycles, note);
	check_init(&f->hw_instructions, note);
	check_init(&f->lbr, note);
	check_init(&f->cpu_clock, note);
	check_init(&f->pt, note);
	check_init(&f->ptrace, note);
	check_init(&f->pfm, note);
	check_init(&f->uprobe, note);
}

static void set_result(struct probe_check *c, int err)
{
	c->status = err ? PROBE_FAIL : PROBE_OK;
	c->err = err;
	c->note[0] = 0;
}

static int read_proc_int(const char *path)
{
	FILE *fp = fopen(path, "re");
	int v;

	if (!fp)
		return PROBE_UNKNOWN;
	if (fscanf(fp, "%d", &v) != 1)
		v = PROBE_UNKNOWN;
	fclose(fp);
	return v;
}

/* Opens `attr` on this thread, any CPU; returns 0 or the errno. */
static int try_open(struct perf_event_attr *attr)
{
	long fd;

	attr->size = sizeof(*attr);
	attr->disabled = 1;
	attr->exclude_kernel = 1;
	attr->exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, attr, 0, -1, -1, 0);
	if (fd < 0)
		return errno;
	close((int)fd);
	return 0;
}

static int probe_counter(unsigned long long config)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.config = config;
	return try_open(&a);
}

static int probe_lbr(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_CPU_CYCLES;
	a.sample_period = 100003;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_BRANCH_STACK;
	a.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_USER;
	return try_open(&a);
}

static int probe_cpu_clock(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.sample_period = 1000000;	/* 1 ms */
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	return try_open(&a);
}

static int probe_pt(int type)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = (unsigned)type;
	return try_open(&a);
}

/* A traced child stops, single-steps once and is killed: what step mode relies on. */
static int probe_ptrace(void)
{
	int fds[2], status, err = 0;
	pid_t pid;
	ssize_t n;

	if (pipe2(fds, O_CLOEXEC) != 0)
		return errno;
	pid = fork();
	if (pid < 0) {
		err = errno;
		close(fds[0]);
		close(fds[1]);
		return err;
	}
	if (pid == 0) {
		close(fds[0]);
		if (ptrace(PTRACE_TRACEME, 0, NULL, NULL) != 0) {
			err = errno;
			if (write(fds[1], &err, sizeof(err)) < 0)
				_exit(2);
			_exit(1);
		}
		raise(SIGSTOP);
		_exit(0);
	}
	close(fds[1]);
	if (waitpid(pid, &status, 0) != pid) {
		err = errno;
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		close(fds[0]);
		return err;
	}
	if (!WIFSTOPPED(status)) {
		n = read(fds[0], &err, sizeof(err));
		close(fds[0]);
		return n == (ssize_t)sizeof(err) && err ? err : ECHILD;
	}
	close(fds[0]);
	if (ptrace(PTRACE_SINGLESTEP, pid, NULL, NULL) != 0)
		err = errno;
	else if (waitpid(pid, &status, 0) != pid)
		err = errno;
	else if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP)
		err = ENOTSUP;	/* single-stepping did not trap */
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return err;
}

/* What the uprobe check probes: it must stay a real call. */
__attribute__((noinline, used)) int probe_uprobe_target(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

/* File offset of code at `addr` in this program (/proc/self/maps: the executable
 * mapping that holds it). */
static int own_offset(uintptr_t addr, uint64_t *off)
{
	struct xp_maps it;
	struct xp_maps_line m;
	int err = -xp_maps_open(&it, 0);

	if (err)
		return err;
	err = ENOENT;
	while (err == ENOENT && xp_maps_next(&it, &m))
		if (m.perms[2] == 'x' && addr >= m.start && addr < m.end) {
			*off = addr - m.start + m.pgoff;
			err = 0;
		}
	xp_maps_close(&it);
	return err;
}

/* An entry and a return uprobe (the PMU's `retprobe` format field) on a function of
 * this program, each counting: both must count the one call. */
static int probe_uprobe(const struct pmu *up)
{
	static const char self[] = "/proc/self/exe";
	uint64_t off = 0, n[2] = { 0, 0 };
	int fd[2] = { -1, -1 }, err;

	err = own_offset((uintptr_t)probe_uprobe_target, &off);
	for (int k = 0; k < 2 && !err; k++) {
		struct perf_event_attr a;

		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = (unsigned)up->type;
		a.config1 = (uint64_t)(uintptr_t)self;
		a.config2 = off;
		if (k && pmu_set(up, "retprobe", 1, &a) < 0)
			err = ENOENT;
		else if ((fd[k] = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0)) < 0)
			err = errno;
	}
	if (!err)
		probe_uprobe_target(1);
	for (int k = 0; k < 2; k++) {
		if (fd[k] < 0)
			continue;
		if (!err && (read(fd[k], &n[k], sizeof(n[k])) != sizeof(n[k]) || n[k] != 1))
			err = EIO;	/* opened, but the probe did not fire */
		close(fd[k]);
	}
	return err;
}

static void probe_caps(struct probe_facts *f)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	memset(data, 0, sizeof(data));
	if (syscall(SYS_capget, &hdr, data) != 0)
		return;
#define HAS_CAP(c) ((data[(c) / 32].effective >> ((c) % 32)) & 1)
	f->cap_perfmon = HAS_CAP(CAP_PERFMON);
	f->cap_sys_admin = HAS_CAP(CAP_SYS_ADMIN);
	f->cap_sys_ptrace = HAS_CAP(CAP_SYS_PTRACE);
#undef HAS_CAP
}

static void probe_pfm(struct probe_facts *f)
{
	size_t len = 0;
	pfm_pmu_t p;
	int ret = pfm_initialize();

	if (ret != PFM_SUCCESS) {
		set_result(&f->pfm, ret == PFM_ERR_NOTSUPP ? EOPNOTSUPP : EIO);
		return;
	}
	set_result(&f->pfm, 0);
	pfm_for_all_pmus(p) {
		pfm_pmu_info_t info;
		int n;

		memset(&info, 0, sizeof(info));
		info.size = sizeof(info);
		if (pfm_get_pmu_info(p, &info) != PFM_SUCCESS || !info.is_present || !info.name)
			continue;
		n = snprintf(f->pfm_pmus + len, sizeof(f->pfm_pmus) - len, "%s%s", len ? " " : "",
			     info.name);
		if (n < 0 || (size_t)n >= sizeof(f->pfm_pmus) - len)
			break;
		len += (size_t)n;
	}
	pfm_terminate();
}

void probe_live(struct probe_facts *f, int hw, int pt_type, const struct pmu *uprobe)
{
	struct utsname u;

	probe_facts_init(f, "");
	snprintf(f->source, sizeof(f->source), "this machine");
	if (uname(&u) == 0) {
		snprintf(f->kernel, sizeof(f->kernel), "%s", u.release);
		snprintf(f->machine, sizeof(f->machine), "%s", u.machine);
	}
	f->paranoid = read_proc_int("/proc/sys/kernel/perf_event_paranoid");
	f->mlock_kb = read_proc_int("/proc/sys/kernel/perf_event_mlock_kb");
	f->yama_scope = access("/proc/sys/kernel/yama", F_OK) == 0
		? read_proc_int("/proc/sys/kernel/yama/ptrace_scope") : -1;
	f->euid = (int)geteuid();
	probe_caps(f);
	probe_pfm(f);
	set_result(&f->cpu_clock, probe_cpu_clock());
	set_result(&f->ptrace, probe_ptrace());
	if (uprobe && uprobe->type >= 0)
		set_result(&f->uprobe, probe_uprobe(uprobe));
	else
		check_init(&f->uprobe, hw ? "no uprobe PMU" : "the sysfs tree is not this machine's");
	if (hw) {
		set_result(&f->hw_cycles, probe_counter(PERF_COUNT_HW_CPU_CYCLES));
		set_result(&f->hw_instructions, probe_counter(PERF_COUNT_HW_INSTRUCTIONS));
		set_result(&f->lbr, probe_lbr());
	} else {
		static const char why[] = "the sysfs tree is not this machine's";

		check_init(&f->hw_cycles, why);
		check_init(&f->hw_instructions, why);
		check_init(&f->lbr, why);
	}
	if (hw && pt_type >= 0)
		set_result(&f->pt, probe_pt(pt_type));
	else
		check_init(&f->pt, hw ? "no intel_pt PMU"
				      : "the sysfs tree is not this machine's");
}
