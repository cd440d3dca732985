/* `xptrace info`: what this machine can record, and why not where it cannot. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe/pmu.h"
#include "probe/probe.h"
#include "record/step/col_step.h"
#include "cli/xp_cli.h"
#include "util/xp_err.h"

struct info {
	const char *root;	/* --sysfs-root as given, "/" by default */
	int root_given;
	int live_sysfs;		/* root resolves to "/": the sysfs is this machine's */
	char label[PATH_MAX];	/* <root>/sys/bus/event_source/devices */
	struct pmu_list pmus;
	struct probe_facts facts;
	struct probe_conclusion c;
};

static const char *paranoid_meaning(int p)
{
	if (p == PROBE_UNKNOWN)
		return "unknown";
	if (p <= -1)
		return "no restrictions";
	if (p == 0)
		return "unprivileged users may profile CPU-wide and the kernel";
	if (p == 1)
		return "unprivileged users may profile their own processes, kernel included";
	if (p == 2)
		return "unprivileged users may profile their own processes in user space";
	return "unprivileged users may not use perf_event_open on kernels with Debian's patch "
	       "(upstream treats 3 like 2)";
}

/* Level 3 means different things on different kernels: say what opening cpu-clock as
 * this user showed, rather than what the level may mean. */
static void print_paranoid(const struct probe_facts *f)
{
	int p = f->paranoid, priv = f->euid == 0 || f->cap_perfmon == 1 || f->cap_sys_admin == 1;
	const struct probe_check *cc = &f->cpu_clock;

	printf("%-21s%d: %s", "perf_event_paranoid", p, paranoid_meaning(p));
	if (p >= 3 && priv)
		printf("; it does not limit this user (%s)",
		       f->euid == 0 ? "root" : f->cap_perfmon == 1 ? "CAP_PERFMON" : "CAP_SYS_ADMIN");
	else if (p >= 3 && cc->status == PROBE_OK)
		printf("; tried: cpu-clock sampling opened as euid %d, so this kernel treats it like 2",
		       f->euid);
	else if (p >= 3 && cc->status == PROBE_FAIL && (cc->err == EACCES || cc->err == EPERM))
		printf("; tried: cpu-clock sampling was refused (%s) for euid %d",
		       cc->err == EACCES ? "EACCES" : "EPERM", f->euid);
	printf("\n");
}

/* What well-known PMUs are, for readers who do not know every sysfs name. */
static const char *pmu_description(const char *name)
{
	static const struct {
		const char *name, *what;
	} known[] = {
		{ "cpu", "core PMU: hardware counters, LBR" },
		{ "cpu_core", "hybrid big-core PMU: hardware counters, LBR" },
		{ "cpu_atom", "hybrid small-core PMU: hardware counters, LBR" },
		{ "intel_pt", "Intel Processor Trace" },
		{ "software", "software events: cpu-clock, task-clock, ..." },
		{ "tracepoint", "kernel tracepoints" },
		{ "breakpoint", "hardware breakpoints and watchpoints" },
		{ "uprobe", "user-space probes" },
		{ "kprobe", "kernel probes" },
		{ "msr", "free-running MSR counters: tsc, aperf, mperf, ..." },
		{ "ibs_op", "AMD IBS op sampling, not used by xptrace" },
		{ "ibs_fetch", "AMD IBS fetch sampling, not used by xptrace" },
		{ "cs_etm", "Arm CoreSight ETM tracing, not used by xptrace" },
		{ "arm_spe", "Arm Statistical Profiling Extension, not used by xptrace" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(known[i].name, name) == 0)
			return known[i].what;
	return NULL;
}

static const char *yes_no(int v)
{
	return v == PROBE_UNKNOWN ? "unknown" : v ? "yes" : "no";
}

static void print_check(const char *label, const struct probe_check *c)
{
	const char *n;

	printf("%-21s", label);
	switch (c->status) {
	case PROBE_OK:
		printf("yes\n");
		break;
	case PROBE_FAIL:
		n = probe_errno_name(c->err);
		if (n)
			printf("no (%s: %s)\n", n, strerror(c->err));
		else
			printf("no (errno %d: %s)\n", c->err, strerror(c->err));
		break;
	case PROBE_NOT_RUN:
		printf("not probed (%s)\n", c->note[0] ? c->note : "unknown");
		break;
	}
}

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is not one. */
static int utf8_len(const unsigned char *s)
{
	int n, cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/* Prints sysfs text for a terminal: control bytes and invalid UTF-8 become '?'. */
static int put_clean(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	int cols = 0;

	while (*s) {
		int n = utf8_len(s);

		if (n > 1) {
			fwrite(s, 1, (size_t)n, stdout);
			s += n;
		} else {
			putchar(n == 0 || *s < 0x20 || *s == 0x7f ? '?' : *s);
			s++;
		}
		cols++;
	}
	return cols;
}

/* Prints "key=value" items after `head`, wrapping lines at ~100 columns. */
static void print_items(const char *head, const struct pmu *p, int caps)
{
	size_t n = caps ? p->ncaps : p->nfields, col;
	char spec[128];

	if (!n)
		return;
	col = (size_t)printf("      %s", head);
	for (size_t i = 0; i < n; i++) {
		const char *k = caps ? p->caps[i].name : p->fields[i].name;
		const char *v = spec;

		if (caps)
			v = p->caps[i].value;
		else
			pmu_field_format(&p->fields[i], spec, sizeof(spec));
		if (col + strlen(k) + strlen(v) + 2 > 100) {
			printf("\n%*s", (int)(6 + strlen(head)), "");
			col = 6 + strlen(head);
		}
		col += (size_t)printf(" %s=", k);
		col += (size_t)put_clean(v);
	}
	printf("\n");
}

static void print_text(const struct info *in)
{
	const struct probe_facts *f = &in->facts;

	printf("sources: PMUs from %s%s; probes from %s\n", in->label,
	       in->live_sysfs ? " (this machine)" : " (not this machine)", f->source);
	if (!in->live_sysfs && strcmp(f->source, "this machine") == 0)
		printf("         (hardware open probes skipped: they would describe this machine, "
		       "not the sysfs tree)\n");
	printf("\n");
	printf("%-21s%s%s%s%s\n", "kernel", f->kernel[0] ? f->kernel : "unknown",
	       f->machine[0] ? " (" : "", f->machine, f->machine[0] ? ")" : "");
	if (f->paranoid == PROBE_UNKNOWN)
		printf("%-21sunknown\n", "perf_event_paranoid");
	else
		print_paranoid(f);
	if (f->euid == PROBE_UNKNOWN)
		printf("%-21sunknown", "privileges");
	else
		printf("%-21s%s (euid %d)", "privileges", f->euid == 0 ? "root" : "not root", f->euid);
	printf("; CAP_PERFMON %s, CAP_SYS_ADMIN %s, CAP_SYS_PTRACE %s\n", yes_no(f->cap_perfmon),
	       yes_no(f->cap_sys_admin), yes_no(f->cap_sys_ptrace));
	if (f->mlock_kb == PROBE_UNKNOWN)
		printf("%-21sunknown\n", "perf_event_mlock_kb");
	else
		printf("%-21s%d\n", "perf_event_mlock_kb", f->mlock_kb);
	printf("%-21s", "PMUs");
	for (size_t i = 0; i < in->pmus.n; i++)
		printf("%s%s", i ? " " : "", in->pmus.pmus[i].name);
	printf("%s\n", in->pmus.n ? "" : "none");
	for (size_t i = 0; i < in->pmus.n; i++) {
		const struct pmu *p = &in->pmus.pmus[i];

		printf("  %-19s", p->name);
		if (p->type >= 0)
			printf("type %d", p->type);
		else
			printf("type unreadable");
		if (p->nr_addr_filters >= 0)
			printf(", nr_addr_filters %d", p->nr_addr_filters);
		if (p->nbad_formats)
			printf(", %zu unparsable format files skipped", p->nbad_formats);
		if (pmu_description(p->name))
			printf(" - %s", pmu_description(p->name));
		printf("\n");
		print_items("format:", p, 0);
		print_items("caps:", p, 1);
	}
	if (f->pfm.status == PROBE_OK)
		printf("%-21s%s\n", "libpfm4 PMUs", f->pfm_pmus[0] ? f->pfm_pmus : "none");
	else if (f->pfm_pmus[0])
		printf("%-21s%s\n", "libpfm4 PMUs", f->pfm_pmus);
	else
		print_check("libpfm4", &f->pfm);
	print_check("cycles counter", &f->hw_cycles);
	print_check("instructions counter", &f->hw_instructions);
	print_check("LBR branch stack", &f->lbr);
	print_check("cpu-clock sampling", &f->cpu_clock);
	print_check("Intel PT event", &f->pt);
	print_check("ptrace", &f->ptrace);
	print_check("uprobes", &f->uprobe);
	if (f->yama_scope == -1)
		printf("%-21snot enabled\n", "Yama LSM");
	else if (f->yama_scope == PROBE_UNKNOWN)
		printf("%-21sunknown\n", "Yama ptrace_scope");
	else
		printf("%-21s%d\n", "Yama ptrace_scope", f->yama_scope);
	printf("%-21s%s\n", "step mode cost", STEP_COST_TEXT);
	printf("\nrecording modes:\n");
	for (int i = 0; i < PROBE_NMODES; i++) {
		const struct probe_mode *m = &in->c.mode[i];

		if (m->available)
			printf("  %-7s available: %s\n", m->name, m->detail);
		else if (m->instead)
			printf("  %-7s unavailable: %s (use %s instead)\n", m->name, m->reason,
			       m->instead);
		else
			printf("  %-7s unavailable: %s (no other mode is available)\n", m->name,
			       m->reason);
	}
	printf("best mode: %s\n", in->c.best ? in->c.best : "none");
}

/* --- JSON --- */

/* A JSON string; sysfs text is not trusted to be UTF-8 (bad bytes become U+FFFD). */
static void jstr(const char *str)
{
	const unsigned char *s = (const unsigned char *)(str ? str : "");

	putchar('"');
	while (*s) {
		int n = utf8_len(s);

		if (n == 0) {
			printf("\\ufffd");
			s++;
		} else if (n > 1) {
			fwrite(s, 1, (size_t)n, stdout);
			s += n;
		} else {
			if (*s == '"' || *s == '\\')
				printf("\\%c", *s);
			else if (*s == '\n')
				printf("\\n");
			else if (*s == '\t')
				printf("\\t");
			else if (*s < 0x20 || *s == 0x7f)
				printf("\\u%04x", *s);
			else
				putchar(*s);
			s++;
		}
	}
	putchar('"');
}

static void jint(int v)
{
	if (v == PROBE_UNKNOWN)
		printf("null");
	else
		printf("%d", v);
}

static void jbool(int v)
{
	printf(v == PROBE_UNKNOWN ? "null" : v ? "true" : "false");
}

static void jcheck(const char *key, const struct probe_check *c, int last)
{
	static const char *const st[] = { "not_run", "ok", "failed" };
	const char *n = probe_errno_name(c->err);

	printf("    ");
	jstr(key);
	printf(": {\"status\": \"%s\"", st[c->status]);
	if (c->status == PROBE_FAIL) {
		printf(", \"errno\": %d, \"errno_name\": ", c->err);
		if (n)
			jstr(n);
		else
			printf("null");
		printf(", \"error\": ");
		jstr(strerror(c->err));
	}
	if (c->status == PROBE_NOT_RUN) {
		printf(", \"note\": ");
		jstr(c->note);
	}
	printf("}%s\n", last ? "" : ",");
}

static void print_json(const struct info *in)
{
	const struct probe_facts *f = &in->facts;
	const struct probe_pt *pt = &in->c.pt;
	char spec[128];

	printf("{\n  \"version\": ");
	jstr(XP_VERSION);
	printf(",\n  \"sources\": {\"sysfs_root\": ");
	jstr(in->root);
	printf(", \"sysfs_is_this_machine\": %s, \"probes\": ", in->live_sysfs ? "true" : "false");
	jstr(f->source);
	printf("},\n  \"kernel\": ");
	if (f->kernel[0])
		jstr(f->kernel);
	else
		printf("null");
	printf(",\n  \"machine\": ");
	if (f->machine[0])
		jstr(f->machine);
	else
		printf("null");
	printf(",\n  \"perf_event_paranoid\": ");
	jint(f->paranoid);
	printf(",\n  \"root\": ");
	jbool(f->euid == PROBE_UNKNOWN ? PROBE_UNKNOWN : f->euid == 0);
	printf(",\n  \"euid\": ");
	jint(f->euid);
	printf(",\n  \"capabilities\": {\"perfmon\": ");
	jbool(f->cap_perfmon);
	printf(", \"sys_admin\": ");
	jbool(f->cap_sys_admin);
	printf(", \"sys_ptrace\": ");
	jbool(f->cap_sys_ptrace);
	printf("},\n  \"perf_event_mlock_kb\": ");
	jint(f->mlock_kb);
	printf(",\n  \"yama\": {\"enabled\": ");
	jbool(f->yama_scope == PROBE_UNKNOWN ? PROBE_UNKNOWN : f->yama_scope != -1);
	printf(", \"ptrace_scope\": ");
	jint(f->yama_scope == -1 ? PROBE_UNKNOWN : f->yama_scope);
	printf("}");
	printf(",\n  \"pmus\": [");
	for (size_t i = 0; i < in->pmus.n; i++) {
		const struct pmu *p = &in->pmus.pmus[i];

		printf("%s\n    {\"name\": ", i ? "," : "");
		jstr(p->name);
		printf(", \"type\": ");
		jint(p->type < 0 ? PROBE_UNKNOWN : p->type);
		if (p->nr_addr_filters >= 0)
			printf(", \"nr_addr_filters\": %d", p->nr_addr_filters);
		printf(", \"description\": ");
		if (pmu_description(p->name))
			jstr(pmu_description(p->name));
		else
			printf("null");
		printf(", \"format\": {");
		for (size_t j = 0; j < p->nfields; j++) {
			pmu_field_format(&p->fields[j], spec, sizeof(spec));
			printf("%s", j ? ", " : "");
			jstr(p->fields[j].name);
			printf(": ");
			jstr(spec);
		}
		printf("}, \"caps\": {");
		for (size_t j = 0; j < p->ncaps; j++) {
			printf("%s", j ? ", " : "");
			jstr(p->caps[j].name);
			printf(": ");
			jstr(p->caps[j].value);
		}
		printf("}}");
	}
	printf("\n  ],\n  \"libpfm_pmus\": [");
	{
		char copy[sizeof(f->pfm_pmus)], *save = NULL, *tok;
		int first = 1;

		snprintf(copy, sizeof(copy), "%s", f->pfm_pmus);
		for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			printf("%s", first ? "" : ", ");
			jstr(tok);
			first = 0;
		}
	}
	printf("],\n  \"probes\": {\n");
	jcheck("pfm_initialize", &f->pfm, 0);
	jcheck("hw_cycles", &f->hw_cycles, 0);
	jcheck("hw_instructions", &f->hw_instructions, 0);
	jcheck("lbr", &f->lbr, 0);
	jcheck("cpu_clock", &f->cpu_clock, 0);
	jcheck("intel_pt", &f->pt, 0);
	jcheck("ptrace", &f->ptrace, 0);
	jcheck("uprobe", &f->uprobe, 1);
	printf("  },\n  \"intel_pt\": ");
	if (!pt->present) {
		printf("null");
	} else {
		printf("{\"type\": ");
		jint(pt->type < 0 ? PROBE_UNKNOWN : pt->type);
		printf(", \"cycle_accurate\": ");
		jbool(pt->cyc < 0 ? PROBE_UNKNOWN : pt->cyc);
		printf(", \"address_filters\": ");
		jint(pt->addr_filters < 0 ? PROBE_UNKNOWN : pt->addr_filters);
		printf(", \"mtc\": ");
		jbool(pt->mtc < 0 ? PROBE_UNKNOWN : pt->mtc);
		printf(", \"ptwrite\": ");
		jbool(pt->ptwrite < 0 ? PROBE_UNKNOWN : pt->ptwrite);
		printf(", \"power_event_trace\": ");
		jbool(pt->power_event_trace < 0 ? PROBE_UNKNOWN : pt->power_event_trace);
		printf(", \"cr3_filtering\": ");
		jbool(pt->cr3_filtering < 0 ? PROBE_UNKNOWN : pt->cr3_filtering);
		printf("}");
	}
	printf(",\n  \"lbr_depth\": ");
	jint(in->c.lbr_depth < 0 ? PROBE_UNKNOWN : in->c.lbr_depth);
	printf(",\n  \"step_cost\": {\"cycle_timing\": false, \"attach\": false}");
	printf(",\n  \"modes\": [\n");
	for (int i = 0; i < PROBE_NMODES; i++) {
		const struct probe_mode *m = &in->c.mode[i];

		printf("    {\"name\": ");
		jstr(m->name);
		printf(", \"available\": %s", m->available ? "true" : "false");
		if (m->available) {
			printf(", \"verified\": %s, \"detail\": ", m->verified ? "true" : "false");
			jstr(m->detail);
		} else {
			printf(", \"reason\": ");
			jstr(m->reason);
			printf(", \"instead\": ");
			if (m->instead)
				jstr(m->instead);
			else
				printf("null");
		}
		printf("}%s\n", i + 1 < PROBE_NMODES ? "," : "");
	}
	printf("  ],\n  \"best_mode\": ");
	if (in->c.best)
		jstr(in->c.best);
	else
		printf("null");
	printf("\n}\n");
}

/* Matches "--name VALUE" and "--name=VALUE"; advances *i past a separate value. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **val)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n) != 0)
		return 0;
	if (argv[*i][n] == '=') {
		*val = argv[*i] + n + 1;
		return 1;
	}
	if (argv[*i][n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		*val = NULL;
		return 1;
	}
	*val = argv[++*i];
	return 1;
}

static int run(int argc, char **argv)
{
	const char *probe_file = NULL, *val;
	int json = 0, ret, line;
	struct info in;

	memset(&in, 0, sizeof(in));
	in.root = "/";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (opt_value(argc, argv, &i, "--sysfs-root", &val)) {
			if (!val || !*val)
				return xp_usage_error("info", "--sysfs-root needs a directory");
			in.root = val;
			in.root_given = 1;
		} else if (opt_value(argc, argv, &i, "--probe-file", &val)) {
			if (!val || !*val)
				return xp_usage_error("info", "--probe-file needs a file");
			probe_file = val;
		} else if (argv[i][0] == '-') {
			return xp_usage_error("info", "unknown option '%s'", argv[i]);
		} else {
			return xp_usage_error("info", "unexpected argument '%s'", argv[i]);
		}
	}
	if (pmu_path(in.root, PMU_DEVICES_DIR, in.label, sizeof(in.label)) != 0)
		return xp_usage_error("info", "--sysfs-root path is too long");
	in.live_sysfs = probe_sysfs_is_live(in.root);
	if (probe_file) {
		ret = pmu_list_read(in.root, &in.pmus);
	} else {
		ret = probe_machine(in.root, &in.pmus, &in.facts, &in.c, 1);
	}
	if (ret) {
		if (in.root_given) {
			xp_err("info", "check --sysfs-root", "cannot read PMUs in %s: %s", in.label,
			       strerror(-ret));
			return XP_EXIT_RUNTIME;
		}
		xp_warn("info: cannot read PMUs in %s: %s (is sysfs mounted?)", in.label,
			strerror(-ret));
	}
	if (probe_file) {
		ret = probe_file_read(probe_file, &in.facts, &line);
		if (ret) {
			if (line)
				xp_err("info", "see docs/info.md for the format",
				       "bad probe file %s line %d", probe_file, line);
			else
				xp_err("info", "check --probe-file", "cannot read probe file %s: %s",
				       probe_file, strerror(-ret));
			pmu_list_free(&in.pmus);
			return XP_EXIT_RUNTIME;
		}
		probe_conclude(&in.pmus, in.label, &in.facts, &in.c);
	}
	if (json)
		print_json(&in);
	else
		print_text(&in);
	fflush(stdout);
	pmu_list_free(&in.pmus);
	if (!in.c.best) {
		xp_err("info", "see the reasons above", "no recording mode is available");
		return XP_EXIT_RUNTIME;
	}
	return XP_EXIT_OK;
}

const struct xp_cmd xp_cmd_info = {
	.name = "info",
	.summary = "what this machine can record, and why not where it cannot",
	.usage =
		"usage: xptrace info [--json] [--sysfs-root DIR] [--probe-file FILE]\n"
		"\n"
		"What this machine can record, and why not where it cannot: kernel version,\n"
		"perf_event_paranoid, root/CAP_PERFMON, perf_event_mlock_kb, the PMUs under\n"
		"/sys/bus/event_source/devices (type, format bit fields, caps), libpfm4's PMUs,\n"
		"whether hardware cycles/instructions counters, LBR branch-stack sampling,\n"
		"cpu-clock sampling, an Intel PT event and ptrace actually work, and then each\n"
		"recording mode (pt, lbr, sample, step): available, or the exact reason not and\n"
		"which mode to use instead.\n"
		"\n"
		"options:\n"
		"  --json              machine-readable output (one JSON object)\n"
		"  --sysfs-root DIR    read PMUs from DIR/sys/bus/event_source/devices instead of\n"
		"                      /sys (e.g. tests/fixtures/sysfs/intel-skylake); hardware\n"
		"                      open probes are then skipped, since they would describe\n"
		"                      this machine and not DIR\n"
		"  --probe-file FILE   take probe results from FILE (key=value lines) instead of\n"
		"                      probing this machine; for tests and bug reports, format in\n"
		"                      docs/info.md\n"
		"  -h, --help          this text\n"
		"\n"
		"exit status: 0 when at least one mode is available, 1 when none is (or on\n"
		"errors), 2 on usage errors.\n",
	.run = run,
};
