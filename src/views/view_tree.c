/* The --calltree and --functions views: both build call trees (one per thread) from
 * the event stream — sampled stacks and exact calls/returns alike — and report either
 * the tree (Lvl RL Calls Base Cum Name) or per-function totals (per process with
 * --per-process).  Costs in ns: tree_build.h, tb_units. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_build.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

struct vt {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	bool functions;
	unsigned metric;
	struct tb b;
	/* output state */
	struct out_table tab;
	const char **path;
	uint32_t cappath;
	char *mark;		/* "+name" of a sampled node */
	size_t capmark;
	uint64_t total;
	bool per_thread;
	uint8_t sort[5];	/* --functions --sort: enum fkey, nsort of them */
	unsigned nsort;
	bool tid_col;		/* per-thread rows in jsonl/csv carry "tid" */
	int32_t cur_tid;
	char prefix[96];	/* folded --per-thread: "comm-pid/tid" before each stack */
	struct tb_units u;
	double limit;		/* the percent limit in force */
	struct out_col tcols[12];
	uint64_t *err;		/* per node of the tree written: its error bound (comp_bounds) */
	uint32_t nerr, nflagged;
};

static int open_common(struct view_ctx *vc, void **state, bool functions)
{
	struct dec_ctx *c = vc->c;
	struct vt *v = calloc(1, sizeof(*v));

	if (!v)
		return xp_err("decode", NULL, "out of memory");
	v->c = c;
	v->o = vc->o;
	v->out = vc->out;
	v->functions = functions;
	v->per_thread = v->o->per_thread && !functions;
	v->tid_col = v->per_thread && (v->o->format == OUT_JSONL || v->o->format == OUT_CSV);
	/* every view of a trace weighs by the same default, the decoder's (the first
	 * event's period, as perf report's Overhead; instructions of exact traces) */
	v->metric = c->metric;
	if (tb_init(&v->b, vc) < 0) {
		free(v);
		return -EOPNOTSUPP;
	}
	if (v->o->format == OUT_CALLGRIND && !(v->b.lines = tl_new(c))) {
		tb_free(&v->b);
		free(v);
		return xp_err("decode", NULL, "out of memory");
	}
	*state = v;
	return 0;
}

/* --sort KEYS of --functions: the order of the rows, key by key (the first decides,
 * the next breaks ties); counts and costs largest first, names alphabetically. */
enum fkey { FK_BASE, FK_CUM, FK_COUNT, FK_NAME, FK_MODULE };
static const char *const fkey_names[] = { "base", "cum", "count", "name", "module" };

static int parse_sort(const char *s, uint8_t *keys, unsigned *n)
{
	*n = 0;
	while (*s) {
		size_t l = strcspn(s, ",");
		unsigned k;
		for (k = 0; k < sizeof(fkey_names) / sizeof(fkey_names[0]); k++)
			if (strlen(fkey_names[k]) == l && strncmp(s, fkey_names[k], l) == 0)
				break;
		/* the first column's own names */
		if (k == 5 && ((l == 7 && strncmp(s, "samples", 7) == 0) || (l == 5 && strncmp(s, "calls", 5) == 0)))
			k = FK_COUNT;
		if (k == 5 || *n == 5)
			return -EINVAL;
		keys[(*n)++] = (uint8_t)k;
		s += l + (s[l] == ',');
	}
	return *n ? 0 : -EINVAL;
}

static int open_calltree(struct view_ctx *vc, void **state) { return open_common(vc, state, false); }
static int open_functions(struct view_ctx *vc, void **state)
{
	const char *sort = dec_opt(vc->c, "sort");
	uint8_t keys[5];
	unsigned n;

	if (sort && parse_sort(sort, keys, &n) < 0)
		return xp_usage_error("decode", "--sort %s: expected keys among base, cum, samples (calls), "
				      "name, module, comma separated", sort), -EOPNOTSUPP;
	int r = open_common(vc, state, true);
	if (r == 0 && sort) {
		struct vt *v = *state;
		memcpy(v->sort, keys, n);
		v->nsort = n;
	}
	return r;
}

static int oom(void) { return xp_err("decode", "decode a smaller trace or time range", "out of memory"); }

static int on_event(void *state, const struct xev *ev)
{
	struct vt *v = state;
	return tb_event(&v->b, ev);
}

/* ---- calltree output ---- */

/* per-thread trees in jsonl/csv start with the thread's id; merged trees end with
 * whether the node is sampled (text marks it with a `+` before the name) and, in
 * jsonl, the window of a probe that counted the node's calls in part of the trace only
 * (text marks those Calls with `~`) */
static const struct out_col tree_cols[] = {
	{ "Tid", OUT_INT, 7, false },
	{ "Lvl", OUT_INT, 3, false }, { "RL", OUT_INT, 3, false }, { "Calls", OUT_INT, 9, false },
	{ "Base", OUT_INT, 12, false }, { "Cum", OUT_INT, 12, false }, { "Module", OUT_STR, 20, false },
	{ "Name", OUT_STR, 0, true },
	{ "Sampled", OUT_BOOL, 0, 0 }, { "Window_ns", OUT_SPAN, 0, 0 }, { "Error_ns", OUT_INT, 0, 0 },
	{ "Inlined", OUT_BOOL, 0, 0 },
};

/* Trees of more nodes than this are cut at TREE_LIMIT % in text unless --percent-limit
 * says otherwise: a 10 ms step trace's tree is ~700 lines, most of them the dynamic
 * loader's start-up below 0.1 % each. */
#define TREE_BIG 200
#define TREE_LIMIT 0.5

/* A tree of sampled stacks only: its nodes count samples, not calls. */
static bool sample_tree(const struct dec_ctx *c)
{
	return c->sampled && !c->merged;
}

/* jsonl rows of traces with probes carry window_ns */
static bool window_col(const struct vt *v)
{
	return v->c->merged && v->c->probes && v->o->format == OUT_JSONL;
}

/* The columns after Name (tree_cols): jsonl has all four (a row omits the keys it
 * lacks), csv a merged tree's Sampled flag, text none (it marks nodes in place: `+`
 * before a sampled name, `~` before partial Calls and uncertain Cum). */
static unsigned tree_trailing_cols(const struct vt *v)
{
	if (v->o->format == OUT_JSONL)
		return 4;
	return v->c->merged && v->o->format != OUT_TEXT;
}

/* Times compensated for the probes' cost (the tree's metric is the time) */
static bool compensated(const struct vt *v)
{
	return v->b.compensate && (int)v->metric == v->b.time_m;
}

/* What compensation leaves uncertain in an event node's Cum: each of its calls cost
 * its hits about one probed call (in itself and in its caller), and the target's hits
 * cost 0.8-3 x a calibration taken in another process, which the trace's own shortest
 * probed leaf corrects only on average: so up to calls x that cost.  Marked (~ before
 * Cum in text; error_ns in jsonl) when over 10 % of the Cum: a function that takes
 * under 10 x a probed call's cost, whose time is mostly the probes'.  Per node of the
 * tree being written, into v->err. */
static int comp_bounds(struct vt *v, const struct ct_tree *t)
{
	uint32_t n = ct_nnodes(t);

	free(v->err);
	v->err = calloc(n ? n : 1, sizeof(*v->err));
	v->nerr = v->err ? n : 0;
	if (!v->err)
		return -ENOMEM;
	v->nflagged = 0;
	for (uint32_t k = 1; k < n; k++) {
		const struct ct_node *nd = ct_node(t, k);
		if (nd->sampled)
			continue;
		v->err[k] = nd->calls * (v->b.callee_ns + v->b.caller_ns);
		v->nflagged += v->err[k] > ct_cum(t, k, v->metric) / 10;
	}
	return 0;
}

static int tree_row(void *arg, const struct ct_tree *t, uint32_t node)
{
	struct vt *v = arg;
	const struct ct_node *nd = ct_node(t, node);
	uint64_t cum = ct_cum(t, node, v->metric);

	if (v->limit > 0 && v->total && (double)cum * 100.0 / (double)v->total < v->limit)
		return CT_SKIP;
	/* time off the cpu has no samples, cycles...: no row in those metrics */
	if (!cum && v->b.off_cpu && nd->fn == v->b.off_fn)
		return CT_SKIP;
	if (XP_GROW(v->path, v->cappath, nd->lvl) < 0)
		return -ENOMEM;
	const char *name = tb_fn_name(v->c->sym, nd->fn), *shown = name;
	v->path[nd->lvl - 1] = name;
	if (nd->sampled && v->o->format == OUT_TEXT) {
		size_t l = strlen(name) + 2;
		if (XP_GROW(v->mark, v->capmark, l) < 0)
			return -ENOMEM;
		snprintf(v->mark, l, "+%s", name);
		shown = v->mark;
	}
	uint64_t from = 0, to = 0, err = node < v->nerr ? v->err[node] : 0;
	bool partial = !nd->sampled && tb_window(&v->b, nd->fn, &from, &to);
	const struct sym_fn *f = sym_fn(v->c->sym, nd->fn);
	bool inlined = f && f->inlined;
	struct out_val vals[12] = {
		{ .u = (uint64_t)v->cur_tid },
		{ .u = nd->lvl }, { .u = nd->rl }, { .u = nd->calls, .null = nd->sampled, .approx = partial },
		tb_cost(&v->u, ct_base(t, node, v->metric)), tb_cost(&v->u, cum),
		{ .s = tb_fn_module(v->c->sym, nd->fn) }, { .s = shown },
		/* jsonl: the keys a node has (--inline's are in jsonl only) */
		{ .b = nd->sampled, .omit = !v->c->merged },
		{ .span = { from, to }, .omit = !partial }, { .u = err, .omit = !err },
		{ .b = true, .omit = !inlined },
	};
	vals[5].approx = err && err > cum / 10;
	unsigned skip = v->tid_col ? 0 : 1;
	out_row(&v->tab, vals + skip, nd->lvl, v->path, nd->lvl);
	return 0;
}

static int write_tree(struct vt *v, struct ct_tree *t, const char *title)
{
	struct dec_ctx *c = v->c;
	struct out_names names = { tb_fn_name, tb_fn_module, tb_fn_srcline, c->sym,
				   v->b.lines ? tl_lines : NULL, v->b.lines ? tl_site_line : NULL, v->b.lines };

	if (ct_finish(t) < 0 || (compensated(v) && comp_bounds(v, t) < 0))
		return oom();
	v->total = ct_total(t, v->metric);
	switch (v->o->format) {
	case OUT_FOLDED:
		return out_folded(v->out, t, v->metric, &names, title ? v->prefix : NULL);
	case OUT_PPROF: {
		struct out_metric m[DEC_MAX_METRICS];
		for (unsigned k = 0; k < c->nmetrics; k++)
			m[k] = tb_metric(c, k);
		int rc = out_pprof(v->out, t, m, c->nmetrics, v->metric,
				   v->b.last_time > v->b.first_time ? v->b.last_time - v->b.first_time : 0, &names, tb_fn_where);
		return rc == -ENOMEM ? oom() : rc;
	}
	case OUT_SVG: {
		char svg_title[160];
		snprintf(svg_title, sizeof(svg_title), "%s%s%s", c->merged ? "Merged tree" : c->sampled ?
			 "Sampled tree" : "Call tree", title ? ": " : "", title ? title : "");
		int rc = out_svg(v->out, t, v->metric, svg_title, c->metrics[v->metric].name,
				 c->metrics[v->metric].ns, sample_tree(c) ? "Samples" : "Calls", &names);
		return rc == -ENOMEM ? oom() : rc;
	}
	case OUT_CALLGRIND: {
		const char *ev[DEC_MAX_METRICS];
		char evbuf[DEC_MAX_METRICS][48];
		for (unsigned m = 0; m < c->nmetrics; m++) {
			/* callgrind event names: letters, digits, '_' */
			size_t k = 0;
			for (const char *p = c->metrics[m].name; *p && k + 1 < sizeof(evbuf[m]); p++)
				evbuf[m][k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
					(*p >= '0' && *p <= '9') ? *p : '_';
			evbuf[m][k] = 0;
			ev[m] = evbuf[m];
		}
		names.module = tb_fn_object;
		/* KCachegrind shows desc: lines; a tree of sampled stacks saw no call */
		return out_callgrind(v->out, t, ev, c->perf_data, sample_tree(c) ?
				     "Calls: calls= counts the samples through a call arc, not calls" : NULL, &names);
	}
	default:
		memcpy(v->tcols, tree_cols, sizeof(tree_cols));
		if (sample_tree(c))	/* a node's count is its samples: no call was seen */
			v->tcols[3].name = "Samples";
		tb_units_init(&v->u, c, v->metric, v->o->format, v->total);
		v->tcols[4] = tb_cost_col(&v->u, 0, "Base");
		v->tcols[5] = tb_cost_col(&v->u, 1, "Cum");
		/* large trees in text: their hot part, unless a limit was given */
		v->limit = v->o->percent_limit;
		if (v->limit < 0)
			v->limit = v->o->format == OUT_TEXT && ct_nnodes(t) > TREE_BIG ? TREE_LIMIT : 0;
		if (title && v->o->format == OUT_TEXT)
			fprintf(v->out, "%s# %s\n", v->tab.rows ? "\n" : "", title);
		if (v->o->format == OUT_TEXT && !title)
			tb_total_line(&v->u, v->out, c->merged ? "merged tree" : c->sampled ? "sampled tree" :
				      "call tree", c, v->metric, v->total, false);
		if (v->o->format == OUT_TEXT && v->o->percent_limit < 0 && v->limit > 0)
			fprintf(v->out, "# nodes under %g%% of the total hidden (the default for trees of over %d "
				"nodes; this one has %" PRIu32 "): --percent-limit 0 shows them\n", v->limit,
				TREE_BIG, ct_nnodes(t) - 1);
		if (v->o->format == OUT_TEXT && c->merged && v->b.repairs)
			fprintf(v->out, "# %" PRIu64 " unmatched entry/exit events repaired (returns without "
				"their entry, activations left open)\n", v->b.repairs);
		if (v->o->format == OUT_TEXT)
			tb_header(&v->b, v->out, v->metric);
		if (v->o->format == OUT_TEXT && compensated(v) && v->nflagged)
			fprintf(v->out, "# ~ before a Cum: the function takes under 10 x what a probed "
				"call costs, so its compensated time is uncertain by up to its calls x that "
				"cost, over 10 %% of it (jsonl: error_ns)\n");
		if (!v->tab.f || v->o->format == OUT_TEXT)
			out_table_begin(&v->tab, v->out, v->o->format, v->tcols + (v->tid_col ? 0 : 1),
					(v->tid_col ? 8 : 7) + tree_trailing_cols(v));
		return ct_walk(t, v->metric, tree_row, v) < 0 ? oom() : 0;
	}
}

/* ---- functions output ---- */

/* The trees of a function report: one of every thread, or one per process. */
struct fpart {
	struct ct_tree *t;
	int32_t pid;		/* --per-process */
	struct ct_fn_total *tot;
	uint32_t nfn;
};

struct frow {
	uint32_t fn;
	int32_t pid;
	const struct ct_fn_total *tot;
};

struct fsort {
	unsigned m;		/* the metric */
	int count;		/* the first column's metric (samples), -1: calls */
	const uint8_t *keys;
	unsigned nkeys;
	struct sym_ctx *sym;
};

static int cmp_key(const struct frow *x, const struct frow *y, const struct fsort *o, enum fkey k)
{
	uint64_t a, b;

	switch (k) {
	case FK_NAME:
		return strcmp(tb_fn_name(o->sym, x->fn), tb_fn_name(o->sym, y->fn));
	case FK_MODULE:
		return strcmp(tb_fn_module(o->sym, x->fn), tb_fn_module(o->sym, y->fn));
	case FK_COUNT:
		a = o->count >= 0 ? x->tot->base[o->count] : x->tot->calls;
		b = o->count >= 0 ? y->tot->base[o->count] : y->tot->calls;
		break;
	case FK_CUM:
		a = x->tot->cum[o->m];
		b = y->tot->cum[o->m];
		break;
	default:
		a = x->tot->base[o->m];
		b = y->tot->base[o->m];
		break;
	}
	return a == b ? 0 : a > b ? -1 : 1;
}

static int cmp_frow(const void *a, const void *b, void *arg)
{
	const struct frow *x = a, *y = b;
	const struct fsort *o = arg;
	unsigned m = o->m;

	for (unsigned i = 0; i < o->nkeys; i++) {
		int r = cmp_key(x, y, o, (enum fkey)o->keys[i]);
		if (r)
			return r;
	}
	if (x->tot->base[m] != y->tot->base[m])
		return x->tot->base[m] > y->tot->base[m] ? -1 : 1;
	if (x->tot->cum[m] != y->tot->cum[m])
		return x->tot->cum[m] > y->tot->cum[m] ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->fn < y->fn ? -1 : x->fn > y->fn;
}

/* Text --functions of a trace of several processes: their rows are merged by
 * function, so the header names the processes (by pid, each by its last name: what
 * it exec'd) and how to tell them apart. */
static int by_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

static int process_note(struct vt *v)
{
	const struct tb *b = &v->b;
	int32_t *pids = malloc((b->nth ? b->nth : 1) * sizeof(*pids));
	char names[160] = "";
	uint32_t n = 0;

	if (!pids)
		return -ENOMEM;
	for (uint32_t i = 0; i < b->nth; i++)
		pids[i] = b->th[i].pid;
	qsort(pids, b->nth, sizeof(*pids), by_pid);
	for (uint32_t i = 0; i < b->nth; i++) {
		if (i && pids[i] == pids[i - 1])
			continue;
		size_t len = strlen(names);
		if (n < 4)
			snprintf(names + len, sizeof(names) - len, "%s%s", n ? ", " : "",
				 sb_comm_at(v->c->sb, pids[i], UINT64_MAX));
		else if (n == 4)
			snprintf(names + len, sizeof(names) - len, ", ...");
		n++;
	}
	free(pids);
	if (n > 1)
		fprintf(v->out, "# %" PRIu32 " processes (%s), their functions merged: --per-process shows "
			"each one's\n", n, names);
	return 0;
}

static int write_functions(struct vt *v, struct fpart *parts, uint32_t np)
{
	struct dec_ctx *c = v->c;
	unsigned m = v->metric, smp = m, nev = 0;
	bool have_samples = false, per_process = v->o->per_process;
	bool srcline = dec_opt(c, "srcline") != NULL;
	int cyc = -1, ins = -1;
	struct out_col cols[13 + DEC_MAX_METRICS];
	unsigned nc = 0;
	char evcol[DEC_MAX_METRICS][56], src[4096];
	unsigned evm[DEC_MAX_METRICS];
	uint64_t tsum[DEC_MAX_METRICS] = { 0 }, nrows = 0;
	struct frow *rows = NULL;

	for (uint32_t p = 0; p < np; p++) {
		if (ct_finish(parts[p].t) < 0)
			return oom();
		parts[p].nfn = ct_max_fn(parts[p].t) + 1;
		parts[p].tot = calloc(parts[p].nfn, sizeof(*parts[p].tot));
		if (!parts[p].tot)
			return oom();
		ct_fn_totals(parts[p].t, parts[p].tot, parts[p].nfn);
		for (unsigned k = 0; k < c->nmetrics; k++)
			tsum[k] += ct_total(parts[p].t, k);
		nrows += parts[p].nfn;
	}
	rows = calloc(nrows ? nrows : 1, sizeof(*rows));
	if (!rows)
		return oom();
	for (unsigned k = 0; k < c->nmetrics; k++) {
		if (c->metrics[k].kind == DEC_M_SAMPLES) {
			smp = k;
			have_samples = true;
		}
		if (strncmp(c->metrics[k].name, "cycles", 6) == 0 || strncmp(c->metrics[k].name, "cpu-cycles", 10) == 0)
			cyc = (int)k;
		if (strncmp(c->metrics[k].name, "instructions", 12) == 0)
			ins = (int)k;
	}
	uint64_t total = tsum[m];
	/* exact traces have no samples: their first column is the exact call count */
	/* merged traces: exact calls of probed functions, none of sampled ones */
	if (c->merged)
		have_samples = false;
	cols[nc++] = (struct out_col){ have_samples ? "Samples" : "Calls", OUT_INT, 9, false };
	tb_units_init(&v->u, c, m, v->o->format, total);
	cols[nc++] = tb_cost_col(&v->u, 0, "Base");
	cols[nc++] = tb_cost_col(&v->u, 1, "Cum");
	cols[nc++] = (struct out_col){ "Base%", OUT_PCT, 7, false };
	cols[nc++] = (struct out_col){ "Cum%", OUT_PCT, 7, false };
	/* other events (group reads): their base value per function */
	for (unsigned k = 0; k < c->nmetrics; k++) {
		if (k == m || k == smp || c->metrics[k].kind != DEC_M_EVENT || !tsum[k])
			continue;
		snprintf(evcol[nev], sizeof(evcol[nev]), "%s", c->metrics[k].name);
		evm[nev] = k;
		cols[nc++] = (struct out_col){ evcol[nev], OUT_INT, 12, false };
		nev++;
	}
	bool ipc = cyc >= 0 && ins >= 0 && tsum[cyc] && tsum[ins];
	if (ipc)
		cols[nc++] = (struct out_col){ "IPC", OUT_FLOAT, 5, false };
	if (per_process) {
		cols[nc++] = (struct out_col){ "Pid", OUT_INT, 7, false };
		cols[nc++] = (struct out_col){ "Comm", OUT_STR, 15, false };
	}
	cols[nc++] = (struct out_col){ "Module", OUT_STR, 20, false };
	cols[nc++] = (struct out_col){ "Name", OUT_STR, 0, false };
	if (srcline)
		cols[nc++] = (struct out_col){ "Srcline", OUT_STR, 0, false };
	if (window_col(v))
		cols[nc++] = (struct out_col){ "Window_ns", OUT_SPAN, 0, false };
	bool inl_col = v->o->format == OUT_JSONL && dec_inline(c);
	if (inl_col)
		cols[nc++] = (struct out_col){ "Inlined", OUT_BOOL, 0, false };
	uint32_t nr = 0;
	for (uint32_t p = 0; p < np; p++)
		for (uint32_t f = 0; f < parts[p].nfn; f++) {
			const struct ct_fn_total *x = &parts[p].tot[f];
			/* exact calls count even where nothing of the callee completed (a
			 * crash at its first instruction, a callee outside --filter) */
			if (x->seen && (x->base[m] || x->cum[m] || (x->exact && x->calls)))
				rows[nr++] = (struct frow){ f, parts[p].pid, x };
		}
	struct fsort fs = { m, have_samples ? (int)smp : -1, v->sort, v->nsort, c->sym };
	qsort_r(rows, nr, sizeof(*rows), cmp_frow, &fs);
	if (v->o->format == OUT_TEXT) {
		tb_total_line(&v->u, v->out, c->sampled ? "samples" : "functions", c, m, total, false);
		if (!per_process && process_note(v) < 0) {
			free(rows);
			return oom();
		}
		tb_header(&v->b, v->out, m);
	}
	out_table_begin(&v->tab, v->out, v->o->format, cols, nc);
	for (uint32_t i = 0; i < nr; i++) {
		const struct ct_fn_total *x = rows[i].tot;
		double bp = total ? 100.0 * (double)x->base[m] / (double)total : 0;
		if (v->o->percent_limit > 0 && bp < v->o->percent_limit)
			continue;
		struct out_val vals[13 + DEC_MAX_METRICS];
		unsigned k = 0;
		uint64_t from = 0, to = 0;
		bool partial = x->exact && tb_window(&v->b, rows[i].fn, &from, &to);
		vals[k++] = (struct out_val){ .u = have_samples ? x->base[smp] : x->calls,
					      .null = c->merged && !x->exact, .approx = partial };
		vals[k++] = tb_cost(&v->u, x->base[m]);
		vals[k++] = tb_cost(&v->u, x->cum[m]);
		vals[k++] = (struct out_val){ .d = bp };
		vals[k++] = (struct out_val){ .d = total ? 100.0 * (double)x->cum[m] / (double)total : 0 };
		for (unsigned e = 0; e < nev; e++)
			vals[k++] = (struct out_val){ .u = x->base[evm[e]] };
		if (ipc) {
			uint64_t cy = x->base[cyc], in = x->base[ins];
			vals[k++] = cy ? (struct out_val){ .d = (double)in / (double)cy } : (struct out_val){ .null = true };
		}
		if (per_process) {
			vals[k++] = (struct out_val){ .u = (uint64_t)rows[i].pid };
			/* its last name: what it exec'd */
			vals[k++] = (struct out_val){ .s = sb_comm_at(c->sb, rows[i].pid, UINT64_MAX) };
		}
		vals[k++] = (struct out_val){ .s = tb_fn_module(c->sym, rows[i].fn) };
		vals[k++] = (struct out_val){ .s = tb_fn_name(c->sym, rows[i].fn) };
		if (srcline) {
			const char *file;
			int line;
			bool known = tb_fn_srcline(c->sym, rows[i].fn, &file, &line);
			if (known)
				snprintf(src, sizeof(src), "%s:%d", file, line);
			vals[k++] = (struct out_val){ .s = known ? src : NULL, .null = !known };
		}
		if (window_col(v))
			vals[k++] = (struct out_val){ .span = { from, to }, .omit = !partial };
		if (inl_col) {
			const struct sym_fn *f = sym_fn(c->sym, rows[i].fn);
			vals[k++] = (struct out_val){ .b = true, .omit = !f || !f->inlined };
		}
		out_row(&v->tab, vals, 0, NULL, 0);
	}
	free(rows);
	return 0;
}

static int cmp_pid(const void *a, const void *b)
{
	const struct tb_thread *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* --functions: one tree of every thread, or one per process. */
static int functions(struct vt *v)
{
	struct tb *b = &v->b;
	struct fpart *parts = calloc(b->nth ? b->nth : 1, sizeof(*parts));
	uint32_t np = 0;
	int rc = 0;

	if (!parts)
		return oom();
	if (v->o->per_process) {
		if (b->nth)	/* (no threads: no array, and qsort's is declared non-null) */
			qsort(b->th, b->nth, sizeof(*b->th), cmp_pid);
		for (uint32_t i = 0; i < b->nth && rc == 0; i++) {
			if (!np || parts[np - 1].pid != b->th[i].pid) {
				parts[np].pid = b->th[i].pid;
				if (!(parts[np++].t = ct_new(v->c->nmetrics)))
					rc = oom();
			}
			if (rc == 0 && ct_merge(parts[np - 1].t, b->th[i].t) < 0)
				rc = oom();
		}
	} else {
		parts[np].t = tb_merge_all(b);
		rc = parts[np++].t ? 0 : oom();
	}
	if (rc == 0)
		rc = write_functions(v, parts, np);
	for (uint32_t p = 0; p < np; p++) {
		ct_free(parts[p].t);
		free(parts[p].tot);
	}
	free(parts);
	return rc;
}

/* --comm-prefix: one tree per command name (its threads merged), each stack led by it. */
static int write_folded_comm(struct vt *v)
{
	struct tb *b = &v->b;
	struct out_names names = { .name = tb_fn_name, .module = tb_fn_module, .srcline = tb_fn_srcline,
				   .ctx = v->c->sym };
	bool *done = calloc(b->nth ? b->nth : 1, sizeof(*done));
	int rc = 0;

	if (!done)
		return oom();
	for (uint32_t i = 0; i < b->nth && rc == 0; i++) {
		if (done[i])
			continue;
		char comm[64];
		snprintf(comm, sizeof(comm), "%s", sb_comm_at(v->c->sb, b->th[i].tid, 0));
		struct ct_tree *t = ct_new(v->c->nmetrics);
		for (uint32_t j = i; j < b->nth && t; j++)
			if (!done[j] && strcmp(sb_comm_at(v->c->sb, b->th[j].tid, 0), comm) == 0) {
				done[j] = true;
				if (ct_merge(t, b->th[j].t) < 0) {
					ct_free(t);
					t = NULL;
				}
			}
		if (!t || ct_finish(t) < 0)
			rc = oom();
		else
			rc = out_folded(v->out, t, v->metric, &names, comm) < 0 ? oom() : 0;
		ct_free(t);
	}
	free(done);
	return rc;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct tb_thread *x = a, *y = b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static int on_close(void *state, int status)
{
	struct vt *v = state;
	struct dec_ctx *c = v->c;
	int rc = 0;

	if (status >= 0)
		rc = tb_check_timed(&v->b, "decode");
	if (status >= 0 && rc == 0)
		rc = tb_finish(&v->b);
	if (status >= 0 && rc == 0) {
		struct tb *b = &v->b;
		if (v->o->format == OUT_FOLDED && dec_opt(c, "comm-prefix")) {
			rc = write_folded_comm(v);
		} else if (v->per_thread) {
			if (b->nth)
				qsort(b->th, b->nth, sizeof(*b->th), cmp_tid);
			for (uint32_t i = 0; i < b->nth && rc == 0; i++) {
				char title[128];
				snprintf(title, sizeof(title), "thread %d (%s) pid %d", b->th[i].tid,
					 sb_comm_at(c->sb, b->th[i].tid, 0), b->th[i].pid);
				/* as stackcollapse-perf.pl --tid; the thread's last name */
				snprintf(v->prefix, sizeof(v->prefix), "%s-%d/%d",
					 sb_comm_at(c->sb, b->th[i].tid, UINT64_MAX), b->th[i].pid, b->th[i].tid);
				v->cur_tid = b->th[i].tid;
				rc = write_tree(v, b->th[i].t, title);
			}
		} else if (v->functions) {
			rc = functions(v);
		} else {
			struct ct_tree *all = tb_merge_all(b);
			rc = all ? write_tree(v, all, NULL) : oom();
			ct_free(all);
		}
	}
	tb_free(&v->b);
	free(v->path);
	free(v->mark);
	free(v->err);
	free(v);
	return rc;
}

static const char *const calltree_honours[] = { "tid", "comm", "time", "percent-limit", "per-thread", NULL };
static const char *const functions_honours[] = {
	"tid", "comm", "time", "percent-limit", "per-process", "srcline", "no-compensate", "inline", "no-inline", NULL
};

const struct dec_view view_calltree = {
	.name = "calltree",
	.help = "call-stack tree: Lvl RL Calls (Samples) Base Cum Module Name, depth first",
	.formats = OUT_TABLES | (1u << OUT_FOLDED) | (1u << OUT_CALLGRIND) | (1u << OUT_PPROF) |
		   (1u << OUT_SVG),
	.options = tb_options,
	.honours = calltree_honours,
	.open = open_calltree,
	.event = on_event,
	.close = on_close,
};

static const struct dec_option functions_options[] = {
	{ "sort", "KEYS", "--functions: order rows by KEYS, comma separated, among base (the "
	  "default), cum, samples (calls), name, module" },
	{ NULL, NULL, NULL },
};

const struct dec_view view_functions = {
	.name = "functions",
	.help = "per function: samples, base (self), cum (with callees), percentages",
	.formats = OUT_TABLES,
	.options = functions_options,
	.honours = functions_honours,
	.open = open_functions,
	.event = on_event,
	.close = on_close,
};
