/* xptrace diff: per-function (per-line, per-block) totals of two traces side by side
 * (A, B, delta, delta %), matched by demangled name (file:line, function and lines): what a compiler change did, instruction by instruction on
 * exact traces, with the sampling error on sampled ones. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "views/view_collect.h"
#include "cli/xp_cli.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

static const char usage[] =
	"usage: xptrace diff [--functions|--lines|--blocks|--loops] [--inline] [OPTIONS] A B\n"
	"\n"
	"Compares two traces of the same program (built two ways, or two runs): each\n"
	"function's Base (self cost) in A and in B, functions matched by demangled name\n"
	"(or source lines by file:line, or blocks by function and line range), sorted by\n"
	"the size of the change.  A and B are trace directories or perf.data files.\n"
	"On exact traces (step, PT) with --metric insns the counts have no noise; on sampled\n"
	"traces the shares of the total are compared, with their sampling error (95 %):\n"
	"a change within it has Noise true.\n"
	"\n"
	"options:\n"
	"  --functions            per function, its Base (the default)\n"
	"  --lines                per source line (file:line; code without debug info:\n"
	"                         'FUNCTION (no line)'): instructions or samples\n"
	"  --blocks               per basic block, named 'FUNCTION FILE:FIRST-LAST' by the\n"
	"                         lines it spans (exact traces): its instructions; without\n"
	"                         lines 'FUNCTION+0xOFFSET' (from the symbol's ELF address)\n"
	"  --loops                per loop (exact traces), named 'FUNCTION FILE:LINE' by its\n"
	"                         first line (' depth N' when nested): its iterations\n"
	"                         (header executions) and entries; a vectorized loop's\n"
	"                         iterations drop by its width\n"
	"  --inline               (functions) code the compiler inlined counts as the\n"
	"                         function it came from (exact traces; decode --inline),\n"
	"                         matched with that function's calls in the other trace\n"
	"  --metric M             what to compare: insns, cycles, time (exact traces),\n"
	"                         samples or an event name (sampled); default: the traces'\n"
	"                         default metric, which must be the same in both\n"
	"  --threshold P          hide changes smaller than P percent of A's total\n"
	"                         (sampled: P percentage points of share)\n"
	"  --tid TID, --comm NAME only this thread / threads of this name, in both traces\n"
	"  --format FMT           text (default), jsonl, csv\n"
	"  -o, --output FILE      write the report to FILE instead of stdout\n"
	"\n"
	"Columns (exact): A, B, Delta (B - A), Delta% (of A; '-' for a function new in B),\n"
	"Calls_A, Calls_B (functions; --loops: Entries_A, Entries_B), Status (new, gone),\n"
	"Name.  Times (--metric time) in text in the unit the header names (A(ms)), in\n"
	"jsonl and csv in integer ns (a_ns; a_traced_ns: a step trace's, of the traced\n"
	"run, not native).\n"
	"Columns (sampled): A%, B% (shares of each trace's total), Delta (points), Error\n"
	"(points, 95 %), Noise, Status, Name.\n"
	"\n"
	"Examples:\n"
	"  xptrace record --mode step -o O0.data -- ./prog-O0\n"
	"  xptrace record --mode step -o O2.data -- ./prog-O2\n"
	"  xptrace diff O0.data O2.data --metric insns\n";

struct opts {
	const struct dec_view *level;	/* vcl_functions, vcl_lines, vcl_blocks */
	const char *in[2];
	const char *metric, *comm, *output;
	int32_t tid;
	bool inl;	/* --inline: inlined code as functions of its own */
	double threshold;
	enum out_format format;
};

/* One function of the comparison: both sides summed over symbols of the same name. */
struct drow {
	const char *name;
	uint64_t v[2], s[2], calls[2];
	bool in[2];
	double delta;		/* what rows sort by: B - A (exact), points (sampled) */
};

static int parse_args(int argc, char **argv, struct opts *o)
{
	int nin = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
		bool takes = !strcmp(a, "--metric") || !strcmp(a, "--threshold") || !strcmp(a, "--tid") ||
			!strcmp(a, "--comm") || !strcmp(a, "--format") || !strcmp(a, "-o") ||
			!strcmp(a, "--output");

		if (takes && !val)
			return xp_usage_error("diff", "option '%s' needs an argument", a);
		if (!strcmp(a, "--functions") || !strcmp(a, "--lines") || !strcmp(a, "--blocks") ||
		    !strcmp(a, "--loops")) {
			const struct dec_view *l = a[2] == 'f' ? &vcl_functions : !strcmp(a, "--lines") ? &vcl_lines :
						   a[2] == 'b' ? &vcl_blocks : &vcl_loops;
			if (o->level && o->level != l)
				return xp_usage_error("diff", "give one of --functions, --lines, --blocks, --loops");
			o->level = l;
			continue;
		} else if (!strcmp(a, "--inline")) {
			if (o->level && o->level != &vcl_functions)
				return xp_usage_error("diff", "--inline compares functions: give it without --%s",
						      o->level->name);
			o->inl = true;
			continue;
		} else if (!strcmp(a, "--metric")) {
			o->metric = val;
		} else if (!strcmp(a, "--threshold")) {
			char *end;
			o->threshold = strtod(val, &end);
			if (*end || end == val || !(o->threshold >= 0))
				return xp_usage_error("diff", "--threshold %s: expected a percentage >= 0", val);
		} else if (!strcmp(a, "--tid")) {
			char *end;
			long t = strtol(val, &end, 10);
			if (*end || end == val || t < 0 || t > INT32_MAX)
				return xp_usage_error("diff", "--tid %s: expected a thread id", val);
			o->tid = (int32_t)t;
		} else if (!strcmp(a, "--comm")) {
			o->comm = val;
		} else if (!strcmp(a, "--format")) {
			if (out_format_parse(val, &o->format) < 0 ||
			    !((1u << o->format) & xp_cmd_diff.formats))
				return xp_usage_error("diff", "--format %s: expected text, jsonl or csv", val);
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
			o->output = val;
		} else if (a[0] == '-' && a[1]) {
			return xp_usage_error("diff", "unknown option '%s'", a);
		} else {
			if (nin == 2)
				return xp_usage_error("diff", "unexpected argument '%s' (give two traces)", a);
			o->in[nin++] = a;
			continue;
		}
		if (takes)
			i++;
	}
	if (nin != 2)
		return xp_usage_error("diff", "give two traces, A and B");
	if (!o->level)
		o->level = &vcl_functions;
	return 0;
}

static int collect(const struct opts *o, int side, struct vcl_table *t)
{
	struct eng_opts eo = ENG_OPTS_INIT;

	eo.dec.input = o->in[side];
	eo.dec.metric = o->metric;
	eo.dec.tid = o->tid;
	eo.dec.comm = o->comm;
	eo.view.impl = o->level;
	eo.view.impl_arg = t;
	/* function rows are whole functions unless --inline */
	if (o->level == &vcl_functions)
		eo.dec.extra[eo.dec.nextra++] = (typeof(eo.dec.extra[0])){ o->inl ? "inline" : "no-inline", "" };
	int rc = eng_decode(&eo);
	/* a function inlined in one build and called in the other is one row: what
	 * inlining it changed */
	for (uint32_t i = 0; rc == 0 && i < t->n; i++) {
		size_t n = strlen(t->rows[i].name), k = sizeof(" [inline]") - 1;
		if (n > k && !strcmp(t->rows[i].name + n - k, " [inline]"))
			t->rows[i].name[n - k] = 0;
	}
	return rc;
}

static int cmp_name(const void *a, const void *b)
{
	const struct vcl_row *x = a, *y = b;
	return strcmp(x->name, y->name);
}

static double share(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0;
}

/* Half the 95 % interval of the difference of two shares (percentage points), each
 * share p of n samples binomial: 1.96 sqrt(pA(1-pA)/nA + pB(1-pB)/nB). */
static double share_error(const struct drow *r, const struct vcl_table *t)
{
	double var = 0;
	for (int k = 0; k < 2; k++) {
		double n = (double)t[k].total_samples;
		double p = share(r->v[k], t[k].total) / 100;
		if (n > 0)
			var += p * (1 - p) / n;
	}
	return 100 * 1.96 * sqrt(var);
}

static int cmp_delta(const void *a, const void *b)
{
	const struct drow *x = a, *y = b;
	double dx = fabs(x->delta), dy = fabs(y->delta);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Rows of both sides joined by name (the tables sorted by name). */
static int join(struct vcl_table *t, struct drow **out, uint32_t *nout)
{
	struct drow *rows = NULL;
	uint32_t n = 0, cap = 0, i[2] = { 0, 0 };

	for (int k = 0; k < 2; k++)
		if (t[k].n)	/* (an empty table has no array: qsort's is declared non-null) */
			qsort(t[k].rows, t[k].n, sizeof(*t[k].rows), cmp_name);
	while (i[0] < t[0].n || i[1] < t[1].n) {
		int c = i[0] == t[0].n ? 1 : i[1] == t[1].n ? -1 :
			strcmp(t[0].rows[i[0]].name, t[1].rows[i[1]].name);
		const char *name = c <= 0 ? t[0].rows[i[0]].name : t[1].rows[i[1]].name;
		if (XP_GROW(rows, cap, n + 1) < 0) {
			free(rows);
			return -ENOMEM;
		}
		struct drow *r = &rows[n++];
		*r = (struct drow){ .name = name };
		for (int k = 0; k < 2; k++)
			for (; i[k] < t[k].n && !strcmp(t[k].rows[i[k]].name, name); i[k]++) {
				const struct vcl_row *x = &t[k].rows[i[k]];
				r->in[k] = true;
				r->v[k] += x->value;
				r->s[k] += x->samples;
				r->calls[k] += x->calls;
			}
	}
	*out = rows;
	*nout = n;
	return 0;
}

/* Times in text: one unit for the report, from the larger total. */
static struct out_unit time_unit(const struct vcl_table *t)
{
	return out_time_unit(t[0].total > t[1].total ? t[0].total : t[1].total);
}

static void header(FILE *f, const struct opts *o, const struct vcl_table *t)
{
	int64_t d = (int64_t)(t[1].total - t[0].total);
	fprintf(f, "# diff %s: %s%s; ", o->level->name, t[0].metric, t[0].sampled ? " (sampled)" : "");
	if (t[0].ns && !t[0].sampled) {
		struct out_unit u = time_unit(t);
		int dec = u.ns > 1 ? 3 : 0;
		fprintf(f, "A %s total %.*f %s, B %s total %.*f %s, delta %+.*f %s", o->in[0], dec,
			(double)t[0].total / u.ns, u.name, o->in[1], dec, (double)t[1].total / u.ns, u.name,
			dec, (double)d / u.ns, u.name);
	} else {
		fprintf(f, "A %s total %" PRIu64 ", B %s total %" PRIu64 ", delta %+" PRId64, o->in[0],
			t[0].total, o->in[1], t[1].total, d);
	}
	if (t[0].total)
		fprintf(f, " (%+.2f%%)", 100.0 * (double)d / (double)t[0].total);
	fputc('\n', f);
	if (t[0].traced || t[1].traced)
		fprintf(f, "# time: of the traced runs (step mode stops the program at its branches), "
			"not native times; --metric insns counts exactly\n");
	if (t[0].sampled)
		fprintf(f, "# %" PRIu64 " and %" PRIu64 " samples; Noise: the change is within the "
			"sampling error (95 %%)\n", t[0].total_samples, t[1].total_samples);
}

static const char *status(const struct drow *r)
{
	return !r->in[0] ? "new" : !r->in[1] ? "gone" : "";
}

static void write_rows(FILE *f, const struct opts *o, const struct vcl_table *t, struct drow *rows,
		       uint32_t n)
{
	static const struct out_col exact_cols[] = {
		{ "A", OUT_INT, 12, 0 }, { "B", OUT_INT, 12, 0 }, { "Delta", OUT_SINT, 12, 0 },
		{ "Delta%", OUT_PCT, 9, 0 }, { "Calls_A", OUT_INT, 9, 0 }, { "Calls_B", OUT_INT, 9, 0 },
		{ "Status", OUT_STR, 6, 0 }, { "Name", OUT_STR, 0, 0 },
	};
	static const struct out_col exact_code_cols[] = {
		{ "A", OUT_INT, 12, 0 }, { "B", OUT_INT, 12, 0 }, { "Delta", OUT_SINT, 12, 0 },
		{ "Delta%", OUT_PCT, 9, 0 }, { "Status", OUT_STR, 6, 0 }, { "Name", OUT_STR, 0, 0 },
	};
	static const struct out_col loop_cols[] = {
		{ "A", OUT_INT, 12, 0 }, { "B", OUT_INT, 12, 0 }, { "Delta", OUT_SINT, 12, 0 },
		{ "Delta%", OUT_PCT, 9, 0 }, { "Entries_A", OUT_INT, 9, 0 }, { "Entries_B", OUT_INT, 9, 0 },
		{ "Status", OUT_STR, 6, 0 }, { "Name", OUT_STR, 0, 0 },
	};
	static const struct out_col sampled_cols[] = {
		{ "A%", OUT_PCT, 8, 0 }, { "B%", OUT_PCT, 8, 0 }, { "Delta", OUT_FLOAT, 8, 0 },
		{ "Error", OUT_FLOAT, 6, 0 }, { "Noise", OUT_BOOL, 5, 0 }, { "Status", OUT_STR, 6, 0 },
		{ "Name", OUT_STR, 0, 0 },
	};
	bool smp = t[0].sampled, loops = o->level == &vcl_loops, fn = o->level == &vcl_functions || loops;
	struct out_table tab;
	const struct out_col *cols = smp ? sampled_cols : loops ? loop_cols : fn ? exact_cols : exact_code_cols;
	unsigned ncols = smp ? sizeof(sampled_cols) / sizeof(*sampled_cols) :
		fn ? sizeof(exact_cols) / sizeof(*exact_cols) : sizeof(exact_code_cols) / sizeof(*exact_code_cols);
	/* times: text in the header's unit, jsonl and csv in integer ns named so */
	bool ns = t[0].ns && !smp, text = o->format == OUT_TEXT;
	struct out_unit u = time_unit(t);
	struct out_col tcols[8];
	char names[3][24];
	if (ns) {
		static const char *const base[3] = { "A", "B", "Delta" };
		memcpy(tcols, cols, ncols * sizeof(*cols));
		for (int k = 0; k < 3; k++) {
			if (text)
				snprintf(names[k], sizeof(names[k]), "%s(%s)", base[k], u.name);
			else
				snprintf(names[k], sizeof(names[k]), "%s_%sns", base[k],
					 t[0].traced || t[1].traced ? "traced_" : "");
			tcols[k].name = names[k];
			if (text)
				tcols[k].type = OUT_FLOAT, tcols[k].flags = OUT_DEC(u.ns > 1 ? 3 : 0);
		}
		cols = tcols;
	}

	if (o->format == OUT_TEXT)
		header(f, o, t);
	out_table_begin(&tab, f, o->format, cols, ncols);
	for (uint32_t i = 0; i < n; i++) {
		const struct drow *r = &rows[i];
		struct out_val v[8];
		if (smp) {
			double err = share_error(r, t);
			if (fabs(r->delta) < o->threshold)
				continue;
			v[0] = (struct out_val){ .d = share(r->v[0], t[0].total) };
			v[1] = (struct out_val){ .d = share(r->v[1], t[1].total) };
			v[2] = (struct out_val){ .d = r->delta };
			v[3] = (struct out_val){ .d = err };
			v[4] = (struct out_val){ .b = fabs(r->delta) <= err };
			v[5] = (struct out_val){ .s = status(r) };
			v[6] = (struct out_val){ .s = r->name };
		} else {
			if (fabs(r->delta) < o->threshold / 100 * (double)t[0].total)
				continue;
			if (ns && text) {
				v[0] = (struct out_val){ .d = (double)r->v[0] / u.ns };
				v[1] = (struct out_val){ .d = (double)r->v[1] / u.ns };
				v[2] = (struct out_val){ .d = r->delta / u.ns };
			} else {
				v[0] = (struct out_val){ .u = r->v[0] };
				v[1] = (struct out_val){ .u = r->v[1] };
				v[2] = (struct out_val){ .i = (int64_t)(r->v[1] - r->v[0]) };
			}
			v[3] = r->v[0] ? (struct out_val){ .d = 100.0 * r->delta / (double)r->v[0] } :
				(struct out_val){ .null = true };
			unsigned k = 4;
			if (fn) {
				v[k++] = (struct out_val){ .u = r->calls[0], .null = !r->in[0] };
				v[k++] = (struct out_val){ .u = r->calls[1], .null = !r->in[1] };
			}
			v[k++] = (struct out_val){ .s = status(r) };
			v[k] = (struct out_val){ .s = r->name };
		}
		out_row(&tab, v, 0, NULL, 0);
	}
}

static int run(int argc, char **argv)
{
	struct opts o = { .tid = -1, .format = OUT_TEXT };
	struct vcl_table t[2] = { { 0 }, { 0 } };
	struct drow *rows = NULL;
	uint32_t n = 0;
	FILE *f = stdout;
	int rc = parse_args(argc, argv, &o);

	if (rc)
		return rc;
	for (int k = 0; k < 2 && rc == 0; k++)
		rc = collect(&o, k, &t[k]);
	if (rc < 0) {
		rc = rc == ENG_EREQUEST ? XP_EXIT_USAGE : XP_EXIT_RUNTIME;
		goto out;
	}
	if (strcmp(t[0].metric, t[1].metric) || t[0].sampled != t[1].sampled) {
		rc = xp_usage_error("diff", "A counts %s%s, B counts %s%s: give --metric, or compare "
				    "traces of the same kind", t[0].metric, t[0].sampled ? " (sampled)" : "",
				    t[1].metric, t[1].sampled ? " (sampled)" : "");
		goto out;
	}
	if (join(t, &rows, &n) < 0) {
		xp_err("diff", NULL, "out of memory");
		rc = XP_EXIT_RUNTIME;
		goto out;
	}
	for (uint32_t i = 0; i < n; i++)
		rows[i].delta = t[0].sampled ?
			share(rows[i].v[1], t[1].total) - share(rows[i].v[0], t[0].total) :
			(double)rows[i].v[1] - (double)rows[i].v[0];
	if (n)
		qsort(rows, n, sizeof(*rows), cmp_delta);
	if (o.output && !(f = fopen(o.output, "w"))) {
		xp_err(o.output, NULL, "cannot write: %s", strerror(errno));
		rc = XP_EXIT_RUNTIME;
		goto out;
	}
	write_rows(f, &o, t, rows, n);
	if (fflush(f) || ferror(f)) {
		xp_err(o.output ? o.output : "stdout", NULL, "write failed: %s", strerror(errno));
		rc = XP_EXIT_RUNTIME;
	}
	if (f != stdout)
		fclose(f);
out:
	free(rows);
	vcl_table_free(&t[0]);
	vcl_table_free(&t[1]);
	return rc;
}

const struct xp_cmd xp_cmd_diff = {
	.name = "diff",
	.summary = "compare two traces function by function (what a compiler change did)",
	.usage = usage,
	.run = run,
	.formats = OUT_TABLES,
};
