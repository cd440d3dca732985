/* xptrace decode: the command line of the decode engine (engine/engine.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "cli/xp_cli.h"
#include "util/xp_err.h"
#include "util/xp_status.h"

static const char usage_head[] =
	"usage: xptrace decode [-i TRACE] [VIEW] [OPTIONS]\n"
	"\n"
	"Decodes a trace offline into reports.  TRACE is a directory written by\n"
	"`xptrace record` (default: xptrace.data) or any perf.data file (perf's own too).\n"
	"\n"
	"views:\n";

static const char usage_common[] =
	"\n"
	"options:\n"
	"  -i, --input TRACE      trace directory or perf.data file (default xptrace.data)\n"
	"  --format FMT           text (default), jsonl, csv, folded, callgrind,\n"
	"                         chrome (--calls), pprof, svg (--calltree)\n"
	"  -o, --output FILE      write the report to FILE instead of stdout\n"
	"  -j, --jobs N           decode on up to N worker threads besides the one building\n"
	"                         the report (default: the online cores; 1: one thread);\n"
	"                         the report is the same whatever N (PT: pieces between\n"
	"                         PSBs, joined in order; samples: the file read and\n"
	"                         ordered on one thread, decoded on another)\n"
	"  -v, --verbose          say on stderr how many threads the decode ran on\n"
	"  --tid TID              only this thread\n"
	"  --comm NAME            only threads with this name\n"
	"  --time A-B             only events with A <= time <= B (ns, or s.ns as perf\n"
	"                         script prints them; A- and -B are open ranges;\n"
	"                         +S: S seconds after the first sample; perf's 10%,\n"
	"                         10%/2, 10%-20% of the samples' span;\n"
	"                         --calls on its instruction clock: instructions)\n"
	"                         (a filter that matches nothing exits 1; a view refuses\n"
	"                         an option it cannot honour with a usage error)\n"
	"  --metric M             what to sort and percent by: samples or an event name;\n"
	"                         PT: insns, cycles (with CYC), time (with TSC; step\n"
	"                         mode: the traced run's), those the trace has data for\n"
	"                         (default, every view: the first event's period, as\n"
	"                         perf report); off-cpu: ns waited off the CPU (record\n"
	"                         --off-cpu)\n"
	"                         times print in a unit named in the header, jsonl and\n"
	"                         csv keep integer ns (base_ns)\n"
	"  --percent-limit P      hide rows under P percent (of Cum in trees, Base in lists;\n"
	"                         default 0, trees of over 200 nodes 0.5, said in the header)\n"
	"  --per-thread           one call tree per thread instead of one merged tree\n"
	"                         (folded: each stack starts with comm-pid/tid, as\n"
	"                         stackcollapse-perf.pl --tid)\n"
	"  --per-process          --functions: one row per process and function, with\n"
	"                         Pid and Comm columns\n";

static char usage_buf[8192];

/* The one-letter forms of long options: -i, -o and -j of the engine's, and perf
 * script's -F of the --fields of --insn. */
static const struct { char c; const char *name; } shorts[] = {
	{ 'i', "input" }, { 'o', "output" }, { 'j', "jobs" }, { 'F', "fields" }, { 'v', "verbose" },
};
#define NSHORTS (sizeof(shorts) / sizeof(shorts[0]))

static char short_of(const char *name)
{
	for (size_t i = 0; i < NSHORTS; i++)
		if (strcmp(shorts[i].name, name) == 0)
			return shorts[i].c;
	return 0;
}

/* The usage text is built from the tables, once, before main. */
__attribute__((constructor)) static void usage_text(void)
{
	const struct dec_decoder *const *decoders;
	const struct dec_view *const *views;
	size_t ndec = eng_decoders(&decoders), nviews = eng_views(&views), n = 0;

#define ADD(...) n += (size_t)snprintf(usage_buf + n, n < sizeof(usage_buf) ? sizeof(usage_buf) - n : 0, __VA_ARGS__)
	ADD("%s", usage_head);
	for (size_t i = 0; i < nviews; i++) {
		char opt[64];
		snprintf(opt, sizeof(opt), "--%s%s%s", views[i]->name, views[i]->arg ? " " : "",
			 views[i]->arg ? views[i]->arg : "");
		ADD("  %-22s %s\n", opt, views[i]->help);
	}
	ADD("%s", usage_common);
	for (size_t i = 0; i < ndec + nviews; i++) {
		const struct dec_option *o = i < ndec ? decoders[i]->options : views[i - ndec]->options;
		for (; o && o->name; o++) {
			char opt[64], sh[8] = "", c = short_of(o->name);
			if (eng_find_option(o->name) != o)
				continue;	/* an option two decoders take, told once */
			if (c)
				snprintf(sh, sizeof(sh), "-%c, ", c);
			snprintf(opt, sizeof(opt), "%s--%s%s%s", sh, o->name, o->arg ? " " : "", o->arg ? o->arg : "");
			ADD("  %-22s %s\n", opt, o->help);
		}
	}
	ADD("\nExamples:\n"
	    "  xptrace decode                          hot functions of ./xptrace.data\n"
	    "  xptrace decode -i perf.data --calltree  call tree (Lvl RL Calls Base Cum Name)\n"
	    "  xptrace decode --per-process            hot functions of each process\n"
	    "  xptrace decode --calltree --format folded | flamegraph.pl > fg.svg\n"
	    "  xptrace decode --calltree --format callgrind -o callgrind.out\n");
#undef ADD
}

static int parse_args(int argc, char **argv, struct eng_opts *eo)
{
	struct dec_opts *o = &eo->dec;
	struct view_opts *vo = &eo->view;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];

		if (a[0] != '-' || a[1] == 0)
			return xp_usage_error("decode", "unexpected argument '%s'", a);
		if (a[1] != '-') {
			/* -X VALUE or -XVALUE (-j4, -Fip,sym as perf script takes it) */
			size_t k = 0;
			while (k < NSHORTS && shorts[k].c != a[1])
				k++;
			if (k == NSHORTS)
				return xp_usage_error("decode", "unknown option '%s'", a);
			snprintf(name, sizeof(name), "%s", shorts[k].name);
			if (a[2])
				val = a + 2;
		} else {
			const char *eq = strchr(a + 2, '=');
			size_t l = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			if (l >= sizeof(name))
				return xp_usage_error("decode", "unknown option '%s'", a);
			memcpy(name, a + 2, l);
			name[l] = 0;
			if (eq)
				val = eq + 1;
		}
		const struct dec_view *v = eng_find_view(name);
		const struct dec_option *x = v ? NULL : eng_find_option(name);
		bool flag = !strcmp(name, "per-thread") || !strcmp(name, "per-process") || !strcmp(name, "verbose");
		bool takes = v ? v->arg != NULL : x ? x->arg != NULL : !flag;
		if (!v && !x && !flag && strcmp(name, "input") && strcmp(name, "output") &&
		    strcmp(name, "format") && strcmp(name, "tid") && strcmp(name, "comm") &&
		    strcmp(name, "time") && strcmp(name, "metric") && strcmp(name, "percent-limit") &&
		    strcmp(name, "jobs"))
			return xp_usage_error("decode", "unknown option '%s'", a);
		if (takes && !val) {
			if (i + 1 >= argc)
				return xp_usage_error("decode", "option '%s' needs an argument", a);
			val = argv[++i];
		} else if (!takes && val) {
			return xp_usage_error("decode", "option '--%s' takes no argument", name);
		}
		if (v) {
			if (vo->view && strcmp(vo->view, v->name))
				return xp_usage_error("decode", "give one view (--%s and --%s)", vo->view, v->name);
			vo->view = v->name;
			vo->view_arg = val;
		} else if (x) {
			if (o->nextra == DEC_MAX_EXTRA)
				return xp_usage_error("decode", "too many options");
			o->extra[o->nextra].name = x->name;
			o->extra[o->nextra++].value = val ? val : "";
		} else if (!strcmp(name, "input")) {
			o->input = val;
		} else if (!strcmp(name, "output")) {
			vo->output = val;
		} else if (!strcmp(name, "format")) {
			if (out_format_parse(val, &vo->format) < 0)
				return xp_usage_error("decode", "unknown format '%s' (text, jsonl, csv, folded, "
						      "callgrind, chrome, pprof, svg)", val);
		} else if (!strcmp(name, "tid")) {
			char *end;
			long t = strtol(val, &end, 10);
			if (*end || end == val || t < 0 || t > INT32_MAX)
				return xp_usage_error("decode", "bad thread id '%s'", val);
			o->tid = (int32_t)t;
		} else if (!strcmp(name, "jobs")) {
			char *end;
			long j = strtol(val, &end, 10);
			if (*end || end == val || j < 1 || j > 1024)
				return xp_usage_error("decode", "-j %s: expected a number of threads, 1 to 1024", val);
			eo->jobs = (unsigned)j;
		} else if (!strcmp(name, "comm")) {
			o->comm = val;
		} else if (!strcmp(name, "time")) {
			o->time = val;
		} else if (!strcmp(name, "metric")) {
			o->metric = val;
		} else if (!strcmp(name, "percent-limit")) {
			char *end;
			vo->percent_limit = strtod(val, &end);
			if (*end || end == val || vo->percent_limit < 0 || vo->percent_limit > 100)
				return xp_usage_error("decode", "bad percentage '%s'", val);
		} else if (!strcmp(name, "per-thread")) {
			vo->per_thread = true;
		} else if (!strcmp(name, "per-process")) {
			vo->per_process = true;
		} else if (!strcmp(name, "verbose")) {
			eo->verbose = true;
		}
	}
	return 0;
}

static int run(int argc, char **argv)
{
	struct eng_opts o = ENG_OPTS_INIT;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc;
	/* Progress of a decode that takes more than a second, on a terminal's stderr, when
	 * the report goes elsewhere (-o, a file): a report printed to the same terminal, or
	 * a pager reading it, would be overwritten by the status line. */
	struct stat st;
	xp_status_start(o.view.output || (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode)), 1000);
	rc = eng_decode(&o);
	xp_status_stop();
	return rc == 0 ? XP_EXIT_OK : rc == ENG_EREQUEST ? XP_EXIT_USAGE : XP_EXIT_RUNTIME;
}

const struct xp_cmd xp_cmd_decode = {
	.name = "decode",
	.summary = "decode a trace offline into reports",
	.usage = usage_buf,
	.run = run,
	.formats = (1u << OUT_NFORMATS) - 1,
};
