/* The pure decision: sysfs PMU facts + probe facts -> recording modes.  No I/O here. */
#include "probe/probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const char *const mode_names[PROBE_NMODES] = { "pt", "lbr", "sample", "step" };

static void fmt(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void fmt(char *buf, size_t size, const char *f, ...)
{
	va_list ap;

	va_start(ap, f);
	vsnprintf(buf, size, f, ap);
	va_end(ap);
}

static void append(char *buf, size_t size, const char *f, ...) __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t size, const char *f, ...)
{
	size_t n = strlen(buf);
	va_list ap;

	if (n + 1 >= size)
		return;
	va_start(ap, f);
	vsnprintf(buf + n, size - n, f, ap);
	va_end(ap);
}

static const char *err_name(int err, char *buf, size_t size)
{
	const char *n = probe_errno_name(err);

	if (n)
		return n;
	fmt(buf, size, "errno %d", err);
	return buf;
}

static int is_privileged(const struct probe_facts *f)
{
	return f->euid == 0 || f->cap_perfmon == 1 || f->cap_sys_admin == 1;
}

/* Why perf_event_open on our own user-space threads is refused, or "" when it is not:
 * paranoid <= 2 allows it to everyone; 3 only to privileged users on kernels with the
 * Debian/Ubuntu/Android patch (upstream treats 3 like 2, so a cpu-clock event that opened
 * settles it). */
static void perf_denied(const struct probe_facts *f, char *buf, size_t size)
{
	int refused = f->cpu_clock.status == PROBE_FAIL &&
		      (f->cpu_clock.err == EACCES || f->cpu_clock.err == EPERM);

	buf[0] = 0;
	if (is_privileged(f) || f->paranoid == PROBE_UNKNOWN || f->paranoid < 3)
		return;
	if (f->cpu_clock.status == PROBE_OK || (f->cpu_clock.status == PROBE_FAIL && !refused))
		return;
	fmt(buf, size,
	    "perf_event_paranoid is %d and this user is neither root nor has CAP_PERFMON "
	    "(sysctl kernel.perf_event_paranoid=2 allows it)", f->paranoid);
}

/* "what does not open (ENAME): why" for a failed perf_event_open. */
static void open_failed(char *buf, size_t size, const char *what, int err, const char *why_enoent,
			const char *why_eopnotsupp)
{
	char tmp[32];
	const char *why;

	switch (err) {
	case ENOENT:
		why = why_enoent;
		break;
	case EOPNOTSUPP:
		why = why_eopnotsupp;
		break;
	case EACCES:
	case EPERM:
		why = "permission denied by perf_event_paranoid or missing capabilities";
		break;
	case ENODEV:
		why = "the PMU device does not exist";
		break;
	case EBUSY:
		why = "the PMU is busy (used by another tracer or the hypervisor)";
		break;
	case EINVAL:
		why = "the kernel rejects the event attributes";
		break;
	default:
		why = strerror(err);
		break;
	}
	fmt(buf, size, "%s does not open (%s): %s", what, err_name(err, tmp, sizeof(tmp)), why);
}

static const struct pmu *core_pmu(const struct pmu_list *pmus)
{
	/* Hybrid Intel parts name the big-core PMU cpu_core (and the small one cpu_atom). */
	const struct pmu *p = pmu_list_find(pmus, "cpu");

	return p ? p : pmu_list_find(pmus, "cpu_core");
}

/* A PMU capability as the value probe.h's fields hold: CAP_UNKNOWN (-1, a value,
 * not an error code) when it cannot be read. */
enum { CAP_UNKNOWN = -1 };

static int cap_int(const struct pmu *p, const char *name)
{
	uint64_t v;

	if (!p || pmu_cap_u64(p, name, &v) != 0 || v > 0x7fffffff)
		return CAP_UNKNOWN;
	return (int)v;
}

static void unverified(struct probe_mode *m, const struct probe_check *c)
{
	m->verified = c->status == PROBE_OK;
	if (c->status == PROBE_NOT_RUN)
		append(m->detail, sizeof(m->detail), " [not verified: %s]",
		       c->note[0] ? c->note : "not probed");
}

static void conclude_pt(const struct pmu_list *pmus, const char *label, const struct probe_facts *f,
			const char *denied, struct probe_conclusion *out)
{
	struct probe_mode *m = &out->mode[PROBE_MODE_PT];
	const struct pmu *pt = pmu_list_find(pmus, "intel_pt");
	struct probe_pt *c = &out->pt;
	int ranges, ipf;

	memset(c, 0, sizeof(*c));
	c->type = -1;
	c->cyc = c->addr_filters = c->mtc = c->ptwrite = c->power_event_trace = c->cr3_filtering = -1;
	if (!pt) {
		fmt(m->reason, sizeof(m->reason),
		    "no intel_pt PMU in %s: the CPU has no Intel PT, or a hypervisor hides it", label);
		return;
	}
	c->present = 1;
	c->type = pt->type;
	c->cyc = cap_int(pt, "psb_cyc");
	c->mtc = cap_int(pt, "mtc");
	c->ptwrite = cap_int(pt, "ptwrite");
	c->power_event_trace = cap_int(pt, "power_event_trace");
	c->cr3_filtering = cap_int(pt, "cr3_filtering");
	ipf = cap_int(pt, "ip_filtering");
	ranges = cap_int(pt, "num_address_ranges");
	if (ipf == 0)
		c->addr_filters = 0;
	else if (ipf > 0 && ranges >= 0)
		c->addr_filters = ranges;
	else
		c->addr_filters = pt->nr_addr_filters;	/* older kernels: no caps, this file */
	if (pt->type < 0) {
		fmt(m->reason, sizeof(m->reason), "the intel_pt PMU in %s has no readable type", label);
		return;
	}
	if (*denied) {
		fmt(m->reason, sizeof(m->reason), "%s", denied);
		return;
	}
	if (f->pt.status == PROBE_FAIL) {
		open_failed(m->reason, sizeof(m->reason), "an intel_pt event", f->pt.err,
			    "the kernel does not know the intel_pt type",
			    "the intel_pt PMU refuses this configuration");
		return;
	}
	m->available = 1;
#define YN(v) ((v) < 0 ? "unknown" : (v) ? "yes" : "no")
	fmt(m->detail, sizeof(m->detail),
	    "cycle-accurate mode: %s, address filters: ", YN(c->cyc));
	if (c->addr_filters < 0)
		append(m->detail, sizeof(m->detail), "unknown");
	else
		append(m->detail, sizeof(m->detail), "%d", c->addr_filters);
	append(m->detail, sizeof(m->detail), ", MTC: %s, PTWRITE: %s, power events: %s",
	       YN(c->mtc), YN(c->ptwrite), YN(c->power_event_trace));
#undef YN
	unverified(m, &f->pt);
}

static void conclude_lbr(const struct pmu_list *pmus, const char *label, const struct probe_facts *f,
			 const char *denied, struct probe_conclusion *out)
{
	struct probe_mode *m = &out->mode[PROBE_MODE_LBR];
	const struct pmu *core = core_pmu(pmus);
	char nopmu[160];

	fmt(nopmu, sizeof(nopmu), "no hardware PMU, no cpu PMU in %s", label);
	out->lbr_depth = cap_int(core, "branches");
	if (*denied) {
		fmt(m->reason, sizeof(m->reason), "%s", denied);
		return;
	}
	if (f->lbr.status == PROBE_FAIL) {
		open_failed(m->reason, sizeof(m->reason), "branch-stack sampling", f->lbr.err,
			    core ? "the kernel has no hardware cycles event" : nopmu,
			    "the CPU PMU has no branch stack (LBR)");
		return;
	}
	if (f->lbr.status == PROBE_NOT_RUN) {
		if (!core) {
			fmt(m->reason, sizeof(m->reason), "%s", nopmu);
			return;
		}
		if (out->lbr_depth <= 0) {
			fmt(m->reason, sizeof(m->reason),
			    "the %s PMU has no branch stack: caps/branches is %s in %s", core->name,
			    out->lbr_depth == 0 ? "0" : "missing", label);
			return;
		}
	}
	m->available = 1;
	if (out->lbr_depth > 0)
		fmt(m->detail, sizeof(m->detail), "branch stacks of %d entries (%s caps/branches)",
		    out->lbr_depth, core->name);
	else
		fmt(m->detail, sizeof(m->detail), "branch stacks (depth not in sysfs)");
	unverified(m, &f->lbr);
}

static void conclude_sample(const struct pmu_list *pmus, const char *label,
			    const struct probe_facts *f, const char *denied,
			    struct probe_conclusion *out)
{
	struct probe_mode *m = &out->mode[PROBE_MODE_SAMPLE];
	char tmp[32];

	if (*denied) {
		fmt(m->reason, sizeof(m->reason), "%s", denied);
		return;
	}
	if (f->cpu_clock.status == PROBE_FAIL) {
		open_failed(m->reason, sizeof(m->reason), "cpu-clock sampling", f->cpu_clock.err,
			    "the kernel has no cpu-clock event", "the kernel refuses sampling");
		return;
	}
	m->available = 1;
	switch (f->hw_cycles.status) {
	case PROBE_OK:
		fmt(m->detail, sizeof(m->detail), "cycles or cpu-clock sampling (hardware counters open)");
		break;
	case PROBE_FAIL:
		fmt(m->detail, sizeof(m->detail),
		    "cpu-clock sampling only: hardware counters do not open (%s)",
		    err_name(f->hw_cycles.err, tmp, sizeof(tmp)));
		break;
	case PROBE_NOT_RUN:
		if (core_pmu(pmus))
			fmt(m->detail, sizeof(m->detail),
			    "cycles or cpu-clock sampling (%s PMU in sysfs; counters not probed)",
			    core_pmu(pmus)->name);
		else
			fmt(m->detail, sizeof(m->detail),
			    "cpu-clock sampling only: no hardware PMU in %s", label);
		break;
	}
	unverified(m, &f->cpu_clock);
}

static void conclude_step(const struct probe_facts *f, struct probe_conclusion *out)
{
	struct probe_mode *m = &out->mode[PROBE_MODE_STEP];
	char tmp[32];

	if (f->machine[0] && strcmp(f->machine, "x86_64") != 0) {
		fmt(m->reason, sizeof(m->reason),
		    "step mode decodes x86-64 branches and this machine is %s", f->machine);
		return;
	}
	if (f->yama_scope == 3) {
		fmt(m->reason, sizeof(m->reason),
		    "Yama ptrace_scope is 3: ptrace is disabled until reboot");
		return;
	}
	if (f->yama_scope == 2 && f->cap_sys_ptrace != 1) {
		fmt(m->reason, sizeof(m->reason),
		    "Yama ptrace_scope is 2: only processes with CAP_SYS_PTRACE may trace");
		return;
	}
	if (f->ptrace.status == PROBE_FAIL) {
		fmt(m->reason, sizeof(m->reason),
		    "a traced child does not stop and single-step (%s): %s",
		    err_name(f->ptrace.err, tmp, sizeof(tmp)), strerror(f->ptrace.err));
		return;
	}
	m->available = 1;
	fmt(m->detail, sizeof(m->detail),
	    "ptrace branch tracer of a command it starts or a running process (-p)");
	unverified(m, &f->ptrace);
}

void probe_conclude(const struct pmu_list *pmus, const char *sysfs_label,
		    const struct probe_facts *f, struct probe_conclusion *out)
{
	char denied[256];

	memset(out, 0, sizeof(*out));
	for (int i = 0; i < PROBE_NMODES; i++)
		out->mode[i].name = mode_names[i];
	if (core_pmu(pmus))
		snprintf(out->core_pmu, sizeof(out->core_pmu), "%s", core_pmu(pmus)->name);
	perf_denied(f, denied, sizeof(denied));
	out->perf_allowed = denied[0] == 0;
	conclude_pt(pmus, sysfs_label, f, denied, out);
	conclude_lbr(pmus, sysfs_label, f, denied, out);
	conclude_sample(pmus, sysfs_label, f, denied, out);
	conclude_step(f, out);
	for (int i = 0; i < PROBE_NMODES && !out->best; i++)
		if (out->mode[i].available)
			out->best = out->mode[i].name;
	for (int i = 0; i < PROBE_NMODES; i++) {
		if (out->mode[i].available)
			continue;
		for (int j = 0; j < PROBE_NMODES && !out->mode[i].instead; j++)
			if (j != i && out->mode[j].available)
				out->mode[i].instead = out->mode[j].name;
	}
}
