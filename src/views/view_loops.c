/* --loops: the natural loops of the executed code with exact trip counts
 * (analysis/lp.h), per function, nested; the trace is decoded twice (dec_view.rewind). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/view.h"
#include "views/view_collect.h"
#include "analysis/lp.h"
#include "analysis/lpe.h"
#include "arch/x86_64/x86_dis.h"
#include "session/sb_code.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

struct vloops {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	struct sb_code *mem;
	struct x86_dis dis;
	struct lp *lp;
	struct lpe *est;	/* sampled branch stacks: the estimate, lp unused */
};

static uint64_t env_fn(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start)
{
	struct vloops *v = ctx;
	uint32_t id = dec_fn_of(v->c, pid, ip, time);
	const struct sym_fn *f = sym_fn(v->c->sym, id);
	const struct sb_map *m = sb_find_map(v->c->sb, pid, ip, time);
	uint64_t vaddr;
	if (!f || !f->resolved)
		return 0;
	/* the function's address in this process: two processes may load it apart */
	*start = m && sym_map_vaddr(v->c->sym, m, ip, &vaddr) && vaddr >= f->start ? ip - (vaddr - f->start) : 0;
	return (uint64_t)id + 1;
}

static uint64_t env_ninsns(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto)
{
	struct vloops *v = ctx;
	uint64_t n = 0;
	while (from < upto) {
		uint8_t buf[X86_MAX_INSN];
		size_t k = sb_code_read(v->mem, pid, time, from, buf, sizeof(buf));
		unsigned size = k ? x86_dis_len(&v->dis, buf, k, from) : 0;
		if (!size)
			break;
		from += size;
		n++;
	}
	return n;
}

static bool env_srcline(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **file, int *line)
{
	struct vloops *v = ctx;
	const struct sb_map *m = sb_find_map(v->c->sb, pid, ip, time);
	return m && sym_srcline(v->c->sym, m, ip, file, line);
}

/* The innermost function inlined at ip, 0: none. */
static uint32_t inlined_fn(struct vloops *v, int32_t pid, uint64_t time, uint64_t ip)
{
	uint32_t fns[16];
	const struct sb_map *m = sb_find_map(v->c->sb, pid, ip, time);
	return sym_inline(v->c->sym, m, ip, fns, 16) ? fns[0] : 0;
}

static int env_min_line(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto, uint64_t header)
{
	struct vloops *v = ctx;
	const char *file;
	int min = 0, line;
	if (!env_srcline(v, pid, time, header, &file, &line))
		return 0;
	uint32_t inl = inlined_fn(v, pid, time, header);
	while (from < upto) {
		uint8_t buf[X86_MAX_INSN];
		const char *f;
		size_t k = sb_code_read(v->mem, pid, time, from, buf, sizeof(buf));
		unsigned size = k ? x86_dis_len(&v->dis, buf, k, from) : 0;
		if (!size)
			break;
		if (env_srcline(v, pid, time, from, &f, &line) && line > 0 && (!min || line < min) && !strcmp(f, file) &&
		    inlined_fn(v, pid, time, from) == inl)
			min = line;
		from += size;
	}
	return min;
}

static int open_loops(struct view_ctx *vc, void **state)
{
	struct dec_ctx *c = vc->c;
	if (view_need_branches(vc) < 0)
		return -EINVAL;
	struct vloops *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->c = c;
	v->o = vc->o;
	v->out = vc->out;
	v->mem = sb_code_new(c->sb, c->sym, c->jit);
	struct lp_env env = { env_fn, env_ninsns, env_srcline, env_min_line, v };
	if (c->sampled)
		v->est = lpe_new(&env);
	else
		v->lp = lp_new(&env);
	if (!v->mem || !(v->lp || v->est) || x86_dis_init(&v->dis) < 0) {
		sb_code_free(v->mem);
		lp_free(v->lp);
		lpe_free(v->est);
		free(v);
		return -ENOMEM;
	}
	/* exact: blocks, calls and returns; branches say nothing a block does not.
	 * Estimated: the windows' ranges, taken branches and samples. */
	vc->wants = c->sampled ? 1u << XEV_BLOCK | 1u << XEV_BRANCH | 1u << XEV_SAMPLE
			       : DEC_WANT_ALL & ~(1u << XEV_BRANCH | 1u << XEV_SAMPLE);
	*state = v;
	return 0;
}

static int on_event(void *state, const struct xev *ev)
{
	struct vloops *v = state;
	return v->est ? lpe_event(v->est, ev) : lp_event(v->lp, ev);
}

static int on_rewind(void *state)
{
	struct vloops *v = state;
	if (v->est)
		return 0;	/* one pass */
	int r = lp_find(v->lp);
	return r < 0 ? r : 1;
}

/* "1:3 2-3:10 8-15:1": entries per log2 bucket of trips */
static void hist_str(const struct lp_loop *l, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (unsigned b = 0; b < LP_HIST && k < n; b++) {
		if (!l->hist[b])
			continue;
		uint64_t lo = 1ull << b, hi = b < 63 ? (lo << 1) - 1 : UINT64_MAX;
		if (lo == hi)
			k += (size_t)snprintf(buf + k, n - k, "%s%" PRIu64 ":%" PRIu64, k ? " " : "", lo, l->hist[b]);
		else
			k += (size_t)snprintf(buf + k, n - k, "%s%" PRIu64 "-%" PRIu64 ":%" PRIu64, k ? " " : "", lo, hi,
					      l->hist[b]);
	}
}

/* text: the loop (function file:line, indented by depth) before the histogram, as
 * wide as the widest */
static const struct out_col text_cols[] = {
	{ "Header", OUT_HEX, 14, OUT_LEFT }, { "Entries", OUT_INT, 7, 0 }, { "Iterations", OUT_INT, 10, 0 },
	{ "Min", OUT_INT, 5, 0 }, { "Median", OUT_STR, 6, OUT_RIGHT }, { "Max", OUT_INT, 5, 0 },
	{ "Insns/iter", OUT_FLOAT, 10, 0 }, { "Cycles/iter", OUT_FLOAT, 11, 0 }, { "Share%", OUT_PCT, 7, 0 },
	{ "Loop", OUT_STR, 0, 0 }, { "Trips(log2 buckets:entries)", OUT_STR, 0, 0 },
};
#define TEXT_CYC 7	/* Cycles/iter: only when the trace has cycle counts */
static const struct out_col json_cols[] = {
	{ "function", OUT_STR, 0, 0 }, { "inlined_from", OUT_STR, 0, 0 }, { "file", OUT_STR, 0, 0 },
	{ "line", OUT_INT, 0, 0 },
	{ "first_line", OUT_INT, 0, 0 }, { "header", OUT_HEX, 0, 0 }, { "depth", OUT_INT, 0, 0 }, { "parent", OUT_HEX, 0, 0 },
	{ "entries", OUT_INT, 0, 0 }, { "iterations", OUT_INT, 0, 0 }, { "trips_min", OUT_INT, 0, 0 },
	{ "trips_median", OUT_INT, 0, 0 }, { "trips_median_approx", OUT_BOOL, 0, 0 },
	{ "trips_max", OUT_INT, 0, 0 }, { "trips_hist", OUT_STR, 0, 0 }, { "insns", OUT_INT, 0, 0 },
	{ "insns_per_iter", OUT_FLOAT, 0, OUT_DEC(3) }, { "cycles", OUT_INT, 0, 0 },
	{ "cycles_per_iter", OUT_FLOAT, 0, OUT_DEC(3) }, { "share", OUT_PCT, 0, 0 },
	{ "exact", OUT_BOOL, 0, 0 },
};
#define NCOLS(c) (sizeof(c) / sizeof((c)[0]))

static const char *fn_name(struct vloops *v, const struct lp_loop *l)
{
	const struct sym_fn *f = sym_fn(v->c->sym, (uint32_t)(l->fn - 1));
	return f && f->name ? f->name : "[unknown]";
}

/* The function a loop's code came from: the innermost one inlined at its header
 * ("NAME [inline]"), else its function; NULL for the function when none was inlined. */
static const char *inlined_at(struct vloops *v, const struct lp_loop *l)
{
	uint32_t fn = inlined_fn(v, l->pid, l->time, l->header);
	return fn ? sym_fn(v->c->sym, fn)->name : NULL;
}

/* "  function file:line" (text: indented by depth, the file by its last component;
 * bare: the name diff matches, an inlined function's without its mark) */
static int loop_name(struct vloops *v, const struct lp_loop *l, char *buf, size_t n, bool text)
{
	int ind = text ? 2 * (int)(l->depth - 1) : 0;
	const char *inl = inlined_at(v, l), *fn = inl ? inl : fn_name(v, l);
	int len = inl && !text ? (int)(strlen(inl) - strlen(" [inline]")) : (int)strlen(fn);
	if (l->file) {
		const char *slash = strrchr(l->file, '/');
		return snprintf(buf, n, "%*s%.*s %s:%d", ind, "", len, fn, slash ? slash + 1 : l->file, l->first_line);
	}
	return snprintf(buf, n, "%*s%.*s+0x%" PRIx64, ind, "", len, fn, l->header - l->fn_start);
}

/* Widens the loop column to the longest name of the loops shown (at most 80): the n
 * loops are `stride` bytes apart, exact ones and the estimates' alike. */
static void fit_loop_col(struct vloops *v, const struct lp_loop *first, size_t stride, int n, struct out_col *col)
{
	const char *sym = dec_opt(v->c, "sym");
	char where[1024];

	for (int i = 0; i < n; i++) {
		const struct lp_loop *l = (const void *)((const char *)first + (size_t)i * stride);
		int w = loop_name(v, l, where, sizeof(where), true);
		if ((!sym || !strcmp(fn_name(v, l), sym)) && w > col->width)
			col->width = w < 80 ? w : 80;
	}
}

static int write_loops(struct vloops *v)
{
	const struct lp_loop *l;
	int n = lp_loops(v->lp, &l);
	const char *sym = dec_opt(v->c, "sym");
	bool text = v->o->format == OUT_TEXT;
	struct out_table tab;
	char hist[512], where[1024], med[32];

	if (n < 0)
		return n;
	bool cyc = lp_has_cycles(v->lp);
	struct out_col cols[NCOLS(text_cols)];	/* the table keeps pointing to them */
	unsigned ncols = NCOLS(text_cols), loop_col = cyc ? TEXT_CYC + 2 : TEXT_CYC + 1;
	if (text) {
		memcpy(cols, text_cols, sizeof(cols));
		if (!cyc) {
			memmove(&cols[TEXT_CYC], &cols[TEXT_CYC + 1], (ncols - TEXT_CYC - 1) * sizeof(cols[0]));
			ncols--;
		}
		fit_loop_col(v, l, sizeof(*l), n, &cols[loop_col]);
		fprintf(v->out, "# loops: natural loops of the executed code, exact (every iteration traced); "
			"trips per entry: min, median, max; instructions: the function's own, inner loops included\n");
		out_table_begin(&tab, v->out, OUT_TEXT, cols, ncols);
	} else {
		out_table_begin(&tab, v->out, v->o->format, json_cols, NCOLS(json_cols));
	}
	for (int i = 0; i < n; i++) {
		const char *fname = fn_name(v, &l[i]);
		if (sym && strcmp(fname, sym))
			continue;
		bool src = l[i].file != NULL;
		double per = l[i].iterations ? (double)l[i].insns / (double)l[i].iterations : 0;
		double cper = l[i].iterations ? (double)l[i].cycles / (double)l[i].iterations : 0;
		double share = l[i].fn_insns ? 100.0 * (double)l[i].insns / (double)l[i].fn_insns : 0;
		struct out_val vals[NCOLS(json_cols)];
		unsigned k = 0;
		hist_str(&l[i], hist, sizeof(hist));
		if (text) {
			loop_name(v, &l[i], where, sizeof(where), true);
			snprintf(med, sizeof(med), "%s%" PRIu64, l[i].median_approx ? "~" : "", l[i].trips_median);
			vals[k++] = (struct out_val){ .u = l[i].header };
			vals[k++] = (struct out_val){ .u = l[i].entries };
			vals[k++] = (struct out_val){ .u = l[i].iterations };
			vals[k++] = (struct out_val){ .u = l[i].trips_min };
			vals[k++] = (struct out_val){ .s = med };
			vals[k++] = (struct out_val){ .u = l[i].trips_max };
			vals[k++] = (struct out_val){ .d = per };
			if (cyc)
				vals[k++] = (struct out_val){ .d = cper };
			vals[k++] = (struct out_val){ .d = share };
			vals[k++] = (struct out_val){ .s = where };
			vals[k++] = (struct out_val){ .s = hist };
		} else {
			const char *inl = inlined_at(v, &l[i]);
			int len = inl ? (int)(strlen(inl) - strlen(" [inline]")) : 0;
			snprintf(where, sizeof(where), "%.*s", len, inl ? inl : "");
			vals[k++] = (struct out_val){ .s = fname };
			vals[k++] = (struct out_val){ .s = where, .null = !inl };
			vals[k++] = (struct out_val){ .s = l[i].file, .null = !src };
			vals[k++] = (struct out_val){ .u = (uint64_t)l[i].line, .null = !src };
			vals[k++] = (struct out_val){ .u = (uint64_t)l[i].first_line, .null = !src };
			vals[k++] = (struct out_val){ .u = l[i].header };
			vals[k++] = (struct out_val){ .u = l[i].depth };
			/* the enclosing loop by its header: an index would change with --sym */
			vals[k++] = l[i].parent == UINT32_MAX ? (struct out_val){ .null = true }
							    : (struct out_val){ .u = l[l[i].parent].header };
			vals[k++] = (struct out_val){ .u = l[i].entries };
			vals[k++] = (struct out_val){ .u = l[i].iterations };
			vals[k++] = (struct out_val){ .u = l[i].trips_min };
			vals[k++] = (struct out_val){ .u = l[i].trips_median };
			vals[k++] = (struct out_val){ .b = l[i].median_approx };
			vals[k++] = (struct out_val){ .u = l[i].trips_max };
			vals[k++] = (struct out_val){ .s = hist };
			vals[k++] = (struct out_val){ .u = l[i].insns };
			vals[k++] = (struct out_val){ .d = per };
			vals[k++] = (struct out_val){ .u = l[i].cycles, .null = !cyc };
			vals[k++] = (struct out_val){ .d = cper, .null = !cyc };
			vals[k++] = (struct out_val){ .d = share };
			vals[k++] = (struct out_val){ .b = true };
		}
		out_row(&tab, vals, 0, NULL, 0);
	}
	return 0;
}

/* Loops estimated from branch stacks: no entries or trips (windows do not see them) */
static const struct out_col est_text_cols[] = {
	{ "Header", OUT_HEX, 14, OUT_LEFT }, { "~Iterations", OUT_INT, 11, 0 }, { "Seen", OUT_INT, 8, 0 },
	{ "Windows", OUT_INT, 8, 0 }, { "Loop", OUT_STR, 0, 0 },
};
static const struct out_col est_json_cols[] = {
	{ "function", OUT_STR, 0, 0 }, { "inlined_from", OUT_STR, 0, 0 }, { "file", OUT_STR, 0, 0 },
	{ "line", OUT_INT, 0, 0 }, { "first_line", OUT_INT, 0, 0 }, { "header", OUT_HEX, 0, 0 },
	{ "depth", OUT_INT, 0, 0 }, { "parent", OUT_HEX, 0, 0 }, { "iterations", OUT_INT, 0, 0 }, { "seen", OUT_INT, 0, 0 },
	{ "windows", OUT_INT, 0, 0 }, { "estimated", OUT_BOOL, 0, 0 },
};

static int write_estimated(struct vloops *v)
{
	const struct lpe_loop *l;
	int n = lpe_loops(v->est, &l);
	const char *sym = dec_opt(v->c, "sym");
	bool text = v->o->format == OUT_TEXT;
	struct out_table tab;
	char where[1024];

	if (n < 0)
		return n;
	struct out_col cols[NCOLS(est_text_cols)];
	if (text) {
		memcpy(cols, est_text_cols, sizeof(cols));
		if (n)
			fit_loop_col(v, &l->l, sizeof(*l), n, &cols[4]);
		fprintf(v->out, "# loops: estimated from sampled branch stacks (back edges taken in each window, "
			"scaled by the sampling period / the window's instructions); entries and trips unknown\n");
		out_table_begin(&tab, v->out, OUT_TEXT, cols, NCOLS(cols));
	} else {
		out_table_begin(&tab, v->out, v->o->format, est_json_cols, NCOLS(est_json_cols));
	}
	for (int i = 0; i < n; i++) {
		const struct lp_loop *p = &l[i].l;
		const char *fname = fn_name(v, p);
		if (sym && strcmp(fname, sym))
			continue;
		struct out_val vals[NCOLS(est_json_cols)];
		unsigned k = 0;
		if (text) {
			loop_name(v, p, where, sizeof(where), true);
			vals[k++] = (struct out_val){ .u = p->header };
			vals[k++] = (struct out_val){ .u = p->iterations };
			vals[k++] = (struct out_val){ .u = l[i].seen };
			vals[k++] = (struct out_val){ .u = l[i].windows };
			vals[k++] = (struct out_val){ .s = where };
		} else {
			const char *inl = inlined_at(v, p);
			int len = inl ? (int)(strlen(inl) - strlen(" [inline]")) : 0;
			snprintf(where, sizeof(where), "%.*s", len, inl ? inl : "");
			vals[k++] = (struct out_val){ .s = fname };
			vals[k++] = (struct out_val){ .s = where, .null = !inl };
			vals[k++] = (struct out_val){ .s = p->file, .null = !p->file };
			vals[k++] = (struct out_val){ .u = (uint64_t)p->line, .null = !p->file };
			vals[k++] = (struct out_val){ .u = (uint64_t)p->first_line, .null = !p->file };
			vals[k++] = (struct out_val){ .u = p->header };
			vals[k++] = (struct out_val){ .u = p->depth };
			vals[k++] = p->parent == UINT32_MAX ? (struct out_val){ .null = true }
							    : (struct out_val){ .u = l[p->parent].l.header };
			vals[k++] = (struct out_val){ .u = p->iterations };
			vals[k++] = (struct out_val){ .u = l[i].seen };
			vals[k++] = (struct out_val){ .u = l[i].windows };
			vals[k++] = (struct out_val){ .b = true };
		}
		out_row(&tab, vals, 0, NULL, 0);
	}
	return 0;
}

static void vloops_free(struct vloops *v)
{
	lp_free(v->lp);
	lpe_free(v->est);
	x86_dis_fini(&v->dis);
	sb_code_free(v->mem);
	free(v);
}

static int on_close(void *state, int status)
{
	struct vloops *v = state;
	int r = status >= 0 ? (v->est ? write_estimated(v) : write_loops(v)) : 0;
	if (r == -ENOMEM)
		xp_err("decode", "decode a smaller trace or time range", "out of memory");
	vloops_free(v);
	return status < 0 ? status : r;
}

/* xptrace diff --loops: a row per loop named "function file:first_line" (a loop
 * nested in another: " depth N" after it), its iterations and (as calls) entries;
 * loops of one name (a vectorized loop and its scalar remainder) add up. */
static int collect(struct vloops *v, struct vcl_table *t)
{
	const struct lp_loop *l;
	int n = v->est ? 0 : lp_loops(v->lp, &l);
	char name[1024];

	if (v->est)
		return xp_err_code(-EINVAL, "diff --loops", "record with --mode step or pt",
				   "trip counts need every iteration: this trace samples branches");
	if (n < 0)
		return n;
	snprintf(t->metric, sizeof(t->metric), "iterations");
	for (int i = 0; i < n; i++) {
		int k = loop_name(v, &l[i], name, sizeof(name), false);
		if (l[i].depth > 1 && k > 0 && (size_t)k < sizeof(name))
			snprintf(name + k, sizeof(name) - (size_t)k, " depth %u", l[i].depth);
		if (vcl_table_add(t, name, "", 0, l[i].iterations, 0, l[i].entries) < 0)
			return -ENOMEM;
		t->total += l[i].iterations;
	}
	return 0;
}

static int collect_close(void *state, int status)
{
	struct vloops *v = state;
	int r = status >= 0 ? collect(v, v->o->impl_arg) : 0;
	if (r == -ENOMEM)
		xp_err("diff", "compare smaller traces", "out of memory");
	vloops_free(v);
	return status < 0 ? status : r;
}

static const char *const collect_honours[] = { "tid", "comm", NULL };

const struct dec_view vcl_loops = {
	.name = "loops",
	.help = "per loop, collected for xptrace diff",
	.formats = OUT_TABLES,
	.honours = collect_honours,
	.open = open_loops,
	.event = on_event,
	.close = collect_close,
	.rewind = on_rewind,
};

static const char *const loops_honours[] = { "tid", "comm", "time", "sym", NULL };

const struct dec_view view_loops = {
	.name = "loops",
	.help = "natural loops of the executed code per function, nested: header line, entries, iterations, "
		"trips per entry (min, median, max, log2 histogram), instructions per iteration, share of the "
		"function (exact traces; decodes the trace twice); LBR traces: iterations estimated from the "
		"branch stacks (back edges per window scaled by period / the window's instructions)",
	.formats = OUT_TABLES,
	.honours = loops_honours,
	.open = open_loops,
	.event = on_event,
	.close = on_close,
	.rewind = on_rewind,
};
