/* `xptrace info`: what this machine can record, and why not where it cannot. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "probe/pmu.h"
#include "probe/probe.h"
#include "record/dbt/dbt.h"
#include "record/rec_probe_tfs.h"
#include "record/step/col_step.h"
#include "cli/xp_cli.h"
#include "util/xp_err.h"

/* How record --probe places its uprobes here (rec_probe.c, use_tracefs). */
enum { PLACE_NOT_PROBED, PLACE_NONE, PLACE_PER_TASK, PLACE_CPU_WIDE };

struct placement {
	int how;
	char tracefs[PATH_MAX];	/* PLACE_PER_TASK: the directory of uprobe_events */
	char why[PATH_MAX + 128];	/* otherwise: why */
};

struct info {
	const char *root;	/* --sysfs-root as given, "/" by default */
	int root_given;
	int live_sysfs;		/* root resolves to "/": the sysfs is this machine's */
	char label[PATH_MAX];	/* <root>/sys/bus/event_source/devices */
	struct pmu_list pmus;
	struct probe_facts facts;
	struct probe_conclusion c;
	struct placement place;
};

/* Only of this machine: a sysfs tree or a probe file of another says nothing of its
 * tracefs. */
static void find_placement(const struct info *in, const char *probe_file, struct placement *pl)
{
	memset(pl, 0, sizeof(*pl));
	if (probe_file) {
		pl->how = PLACE_NOT_PROBED;
		snprintf(pl->why, sizeof(pl->why), "probe results from %s", probe_file);
	} else if (!in->live_sysfs) {
		pl->how = PLACE_NOT_PROBED;
		snprintf(pl->why, sizeof(pl->why), "the sysfs tree is not this machine's");
	} else if (!pmu_list_find(&in->pmus, "uprobe")) {
		pl->how = PLACE_NONE;
		snprintf(pl->why, sizeof(pl->why), "no uprobe PMU: record --probe and --adaptive "
			 "need a kernel with CONFIG_UPROBE_EVENTS");
	} else if (rec_tfs_root(pl->tracefs, sizeof(pl->tracefs), pl->why, sizeof(pl->why)) == 0) {
		pl->how = PLACE_PER_TASK;
	} else {
		pl->how = PLACE_CPU_WIDE;
		pl->tracefs[0] = 0;
	}
}

static void print_placement(const struct placement *pl)
{
	printf("%-21s", "uprobe placement");
	if (pl->how == PLACE_PER_TASK)
		printf("per task: defined in tracefs, %s/uprobe_events, opened on the target's "
		       "threads and inherited (-a: cpu-wide)\n", pl->tracefs);
	else if (pl->how == PLACE_CPU_WIDE)
		printf("cpu-wide uprobe-PMU events: %s; every process mapping a probed file traps "
		       "while they are armed\n", pl->why);
	else if (pl->how == PLACE_NONE)
		printf("none (%s)\n", pl->why);
	else
		printf("not probed (%s)\n", pl->why);
}

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

/* Prints sysfs text for a terminal: control bytes and invalid UTF-8 become '?'. */
static int put_clean(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	int cols = 0;

	while (*s) {
		size_t n = 1, bad = 0;

		if (*s >= 0x80 && (n = out_utf8_len(s, &bad)))
			fwrite(s, 1, n, stdout);
		else
			putchar(bad || *s < 0x20 || *s == 0x7f ? '?' : *s);
		s += n ? n : bad;
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
	print_placement(&in->place);
	if (f->yama_scope == -1)
		printf("%-21snot enabled\n", "Yama LSM");
	else if (f->yama_scope == PROBE_UNKNOWN)
		printf("%-21sunknown\n", "Yama ptrace_scope");
	else
		printf("%-21s%d\n", "Yama ptrace_scope", f->yama_scope);
	printf("%-21s%s\n", "step mode cost", STEP_COST_TEXT);
	{
		char dbt[PATH_MAX + 128];
		int ok = dbt_status(dbt, sizeof(dbt));

		printf("%-21s%s%s\n", "dbt engine", dbt, ok ? ": --mode dbt runs the command "
		       "translated, the program sees valgrind's CPUID (each trace records which); "
		       "--mode auto never picks it" : "");
	}
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

/* --- JSON (through the one JSON writer, output/out_json.c) --- */

static void jint(struct out_buf *b, int v)
{
	if (v == PROBE_UNKNOWN)
		out_buf_printf(b, "null");
	else
		out_buf_printf(b, "%d", v);
}

static void jbool(struct out_buf *b, int v)
{
	out_buf_printf(b, "%s", v == PROBE_UNKNOWN ? "null" : v ? "true" : "false");
}

static void jcheck(struct out_buf *b, const char *key, const struct probe_check *c, int last)
{
	static const char *const st[] = { "not_run", "ok", "failed" };
	const char *n = probe_errno_name(c->err);

	out_buf_printf(b, "    ");
	out_json_str(b, key);
	out_buf_printf(b, ": {\"status\": \"%s\"", st[c->status]);
	if (c->status == PROBE_FAIL) {
		out_buf_printf(b, ", \"errno\": %d, \"errno_name\": ", c->err);
		if (n)
			out_json_str(b, n);
		else
			out_buf_printf(b, "null");
		out_buf_printf(b, ", \"error\": ");
		out_json_str(b, strerror(c->err));
	}
	if (c->status == PROBE_NOT_RUN) {
		out_buf_printf(b, ", \"note\": ");
		out_json_str(b, c->note);
	}
	out_buf_printf(b, "}%s\n", last ? "" : ",");
}

static void print_json(struct out_buf *b, const struct info *in)
{
	const struct probe_facts *f = &in->facts;
	const struct probe_pt *pt = &in->c.pt;
	char spec[128];

	out_buf_printf(b, "{\n  \"version\": ");
	out_json_str(b, XP_VERSION);
	out_buf_printf(b, ",\n  \"sources\": {\"sysfs_root\": ");
	out_json_str(b, in->root);
	out_buf_printf(b, ", \"sysfs_is_this_machine\": %s, \"probes\": ", in->live_sysfs ? "true" : "false");
	out_json_str(b, f->source);
	out_buf_printf(b, "},\n  \"kernel\": ");
	if (f->kernel[0])
		out_json_str(b, f->kernel);
	else
		out_buf_printf(b, "null");
	out_buf_printf(b, ",\n  \"machine\": ");
	if (f->machine[0])
		out_json_str(b, f->machine);
	else
		out_buf_printf(b, "null");
	out_buf_printf(b, ",\n  \"perf_event_paranoid\": ");
	jint(b, f->paranoid);
	out_buf_printf(b, ",\n  \"root\": ");
	jbool(b, f->euid == PROBE_UNKNOWN ? PROBE_UNKNOWN : f->euid == 0);
	out_buf_printf(b, ",\n  \"euid\": ");
	jint(b, f->euid);
	out_buf_printf(b, ",\n  \"capabilities\": {\"perfmon\": ");
	jbool(b, f->cap_perfmon);
	out_buf_printf(b, ", \"sys_admin\": ");
	jbool(b, f->cap_sys_admin);
	out_buf_printf(b, ", \"sys_ptrace\": ");
	jbool(b, f->cap_sys_ptrace);
	out_buf_printf(b, "},\n  \"perf_event_mlock_kb\": ");
	jint(b, f->mlock_kb);
	out_buf_printf(b, ",\n  \"yama\": {\"enabled\": ");
	jbool(b, f->yama_scope == PROBE_UNKNOWN ? PROBE_UNKNOWN : f->yama_scope != -1);
	out_buf_printf(b, ", \"ptrace_scope\": ");
	jint(b, f->yama_scope == -1 ? PROBE_UNKNOWN : f->yama_scope);
	out_buf_printf(b, "}");
	out_buf_printf(b, ",\n  \"pmus\": [");
	for (size_t i = 0; i < in->pmus.n; i++) {
		const struct pmu *p = &in->pmus.pmus[i];

		out_buf_printf(b, "%s\n    {\"name\": ", i ? "," : "");
		out_json_str(b, p->name);
		out_buf_printf(b, ", \"type\": ");
		jint(b, p->type < 0 ? PROBE_UNKNOWN : p->type);
		if (p->nr_addr_filters >= 0)
			out_buf_printf(b, ", \"nr_addr_filters\": %d", p->nr_addr_filters);
		out_buf_printf(b, ", \"description\": ");
		if (pmu_description(p->name))
			out_json_str(b, pmu_description(p->name));
		else
			out_buf_printf(b, "null");
		out_buf_printf(b, ", \"format\": {");
		for (size_t j = 0; j < p->nfields; j++) {
			pmu_field_format(&p->fields[j], spec, sizeof(spec));
			out_buf_printf(b, "%s", j ? ", " : "");
			out_json_str(b, p->fields[j].name);
			out_buf_printf(b, ": ");
			out_json_str(b, spec);
		}
		out_buf_printf(b, "}, \"caps\": {");
		for (size_t j = 0; j < p->ncaps; j++) {
			out_buf_printf(b, "%s", j ? ", " : "");
			out_json_str(b, p->caps[j].name);
			out_buf_printf(b, ": ");
			out_json_str(b, p->caps[j].value);
		}
		out_buf_printf(b, "}}");
	}
	out_buf_printf(b, "\n  ],\n  \"libpfm_pmus\": [");
	{
		char copy[sizeof(f->pfm_pmus)], *save = NULL, *tok;
		int first = 1;

		snprintf(copy, sizeof(copy), "%s", f->pfm_pmus);
		for (tok = strtok_r(copy, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			out_buf_printf(b, "%s", first ? "" : ", ");
			out_json_str(b, tok);
			first = 0;
		}
	}
	out_buf_printf(b, "],\n  \"probes\": {\n");
	jcheck(b, "pfm_initialize", &f->pfm, 0);
	jcheck(b, "hw_cycles", &f->hw_cycles, 0);
	jcheck(b, "hw_instructions", &f->hw_instructions, 0);
	jcheck(b, "lbr", &f->lbr, 0);
	jcheck(b, "cpu_clock", &f->cpu_clock, 0);
	jcheck(b, "intel_pt", &f->pt, 0);
	jcheck(b, "ptrace", &f->ptrace, 0);
	jcheck(b, "uprobe", &f->uprobe, 1);
	out_buf_printf(b, "  },\n  \"uprobe_placement\": {\"placement\": ");
	{
		static const char *const how[] = { NULL, "none", "per_task", "cpu_wide" };
		const struct placement *pl = &in->place;

		if (how[pl->how])
			out_json_str(b, how[pl->how]);
		else
			out_buf_printf(b, "null");
		out_buf_printf(b, ", \"tracefs\": ");
		if (pl->how == PLACE_PER_TASK)
			out_json_str(b, pl->tracefs);
		else
			out_buf_printf(b, "null");
		out_buf_printf(b, ", \"reason\": ");
		if (pl->how != PLACE_PER_TASK)
			out_json_str(b, pl->why);
		else
			out_buf_printf(b, "null");
		out_buf_printf(b, "}");
	}
	out_buf_printf(b, ",\n  \"intel_pt\": ");
	if (!pt->present) {
		out_buf_printf(b, "null");
	} else {
		out_buf_printf(b, "{\"type\": ");
		jint(b, pt->type < 0 ? PROBE_UNKNOWN : pt->type);
		out_buf_printf(b, ", \"cycle_accurate\": ");
		jbool(b, pt->cyc < 0 ? PROBE_UNKNOWN : pt->cyc);
		out_buf_printf(b, ", \"address_filters\": ");
		jint(b, pt->addr_filters < 0 ? PROBE_UNKNOWN : pt->addr_filters);
		out_buf_printf(b, ", \"mtc\": ");
		jbool(b, pt->mtc < 0 ? PROBE_UNKNOWN : pt->mtc);
		out_buf_printf(b, ", \"ptwrite\": ");
		jbool(b, pt->ptwrite < 0 ? PROBE_UNKNOWN : pt->ptwrite);
		out_buf_printf(b, ", \"power_event_trace\": ");
		jbool(b, pt->power_event_trace < 0 ? PROBE_UNKNOWN : pt->power_event_trace);
		out_buf_printf(b, ", \"cr3_filtering\": ");
		jbool(b, pt->cr3_filtering < 0 ? PROBE_UNKNOWN : pt->cr3_filtering);
		out_buf_printf(b, "}");
	}
	out_buf_printf(b, ",\n  \"lbr_depth\": ");
	jint(b, in->c.lbr_depth < 0 ? PROBE_UNKNOWN : in->c.lbr_depth);
	out_buf_printf(b, ",\n  \"step_cost\": {\"cycle_timing\": false, \"attach\": false}");
	{
		char dbt[PATH_MAX + 128];
		int ok = dbt_status(dbt, sizeof(dbt));

		out_buf_printf(b, ",\n  \"dbt_engine\": {\"available\": %s, \"detail\": ",
			       ok ? "true" : "false");
		out_json_str(b, dbt);
		out_buf_printf(b, ", \"auto\": false}");
	}
	out_buf_printf(b, ",\n  \"modes\": [\n");
	for (int i = 0; i < PROBE_NMODES; i++) {
		const struct probe_mode *m = &in->c.mode[i];

		out_buf_printf(b, "    {\"name\": ");
		out_json_str(b, m->name);
		out_buf_printf(b, ", \"available\": %s", m->available ? "true" : "false");
		if (m->available) {
			out_buf_printf(b, ", \"verified\": %s, \"detail\": ", m->verified ? "true" : "false");
			out_json_str(b, m->detail);
		} else {
			out_buf_printf(b, ", \"reason\": ");
			out_json_str(b, m->reason);
			out_buf_printf(b, ", \"instead\": ");
			if (m->instead)
				out_json_str(b, m->instead);
			else
				out_buf_printf(b, "null");
		}
		out_buf_printf(b, "}%s\n", i + 1 < PROBE_NMODES ? "," : "");
	}
	out_buf_printf(b, "  ],\n  \"best_mode\": ");
	if (in->c.best)
		out_json_str(b, in->c.best);
	else
		out_buf_printf(b, "null");
	out_buf_printf(b, "\n}\n");
}

/* The object on one line (--format jsonl): every line break print_json writes is
 * between values (strings escape theirs), so it goes with the indentation after it. */
static void one_line(struct out_buf *b)
{
	size_t k = 0;

	for (size_t i = 0; i < b->len; i++) {
		if (b->p[i] == '\n')
			while (i + 1 < b->len && b->p[i + 1] == ' ')
				i++;
		else
			b->p[k++] = b->p[i];
	}
	b->len = k;
	out_buf_put(b, "\n", 1);
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
	int json = 0, ret, line;	/* 1: --json (indented), 2: --format jsonl */
	struct info in;

	memset(&in, 0, sizeof(in));
	in.root = "/";
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (opt_value(argc, argv, &i, "--format", &val)) {
			enum out_format f;
			if (!val || out_format_parse(val, &f) < 0 || !((1u << f) & xp_cmd_info.formats))
				return xp_usage_error("info", "--format %s: expected text or jsonl", val ? val : "");
			json = f == OUT_JSONL ? 2 : 0;
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
	find_placement(&in, probe_file, &in.place);
	if (json) {
		struct out_buf b;
		out_buf_init(&b, NULL, 0);
		print_json(&b, &in);
		if (json == 2)
			one_line(&b);
		if (out_buf_write(&b, stdout) < 0)
			xp_warn("info: out of memory writing the JSON");
		out_buf_free(&b);
	} else
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
	.formats = OUT_TEXT_JSONL,
	.usage =
		"usage: xptrace info [--format text|jsonl] [--json] [--sysfs-root DIR] [--probe-file FILE]\n"
		"\n"
		"What this machine can record, and why not where it cannot: kernel version,\n"
		"perf_event_paranoid, root/CAP_PERFMON, perf_event_mlock_kb, the PMUs under\n"
		"/sys/bus/event_source/devices (type, format bit fields, caps), libpfm4's PMUs,\n"
		"whether hardware cycles/instructions counters, LBR branch-stack sampling,\n"
		"cpu-clock sampling, an Intel PT event, ptrace and uprobes actually work, how\n"
		"record --probe would place its uprobes (per task through tracefs, and where; or\n"
		"cpu-wide, and why), and then each recording mode (pt, lbr, sample, step):\n"
		"available, or the exact reason not and which mode to use instead.\n"
		"\n"
		"options:\n"
		"  --format jsonl      machine-readable output: one JSON object on one line\n"
		"  --json              the same object, indented\n"
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
