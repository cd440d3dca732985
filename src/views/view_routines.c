/* --routines and --arcs: the call tree (tree_build.h) folded by routine.
 *
 * --routines: per routine, Calls over every node of it (recursive calls included),
 * Base summed over its nodes, Cum over its outermost activations only (RL 1: time
 * inside the routine counted once however deep it recurses, as --functions' Cum), and
 * CumRec, the Cum of every activation summed (recursion counted at every depth).
 * In a tree of sampled stacks only the first column counts samples: Samples.
 *
 * --arcs (arcflow): per routine a stanza: each caller with the calls through that
 * arc and the routine's Base and Cum when called from there; the routine's own line
 * (as --routines); each callee with its calls, Base and Cum under the
 * routine.  An arc's Cum counts its outermost activations only (a recursive arc such as
 * fib -> fib once, as --routines' Cum), CumRec every one.  An arc made by samples only
 * is marked `+` (its Calls are unknown). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_build.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct fold {
	uint32_t fn;		/* routine; arcs: the callee */
	uint32_t caller;	/* arcs: CT_FN_ROOT for the tree's top */
	uint64_t calls, base, cum, cum2;	/* cum2: outermost activations only */
	uint32_t open;		/* arcs: activations of this arc on the path being walked */
	bool exact;		/* an event node is in it: Calls known */
};

struct vr {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	bool arcs;
	unsigned metric;
	struct tb b;
	struct fold *r, *a;	/* routines, arcs */
	uint32_t nr, capr, na, capa;
	char *name;		/* "+name" of sampled rows in text */
	size_t capname;
	struct tb_units u;	/* of the costs */
};

static int oom(void) { return xp_err("decode", "decode a smaller trace or time range", "out of memory"); }

static int open_common(struct view_ctx *vc, void **state, bool arcs)
{
	struct vr *v = calloc(1, sizeof(*v));

	if (!v)
		return oom();
	v->c = vc->c;
	v->o = vc->o;
	v->out = vc->out;
	v->arcs = arcs;
	v->metric = vc->c->metric;
	if (tb_init(&v->b, vc) < 0) {
		free(v);
		return -EOPNOTSUPP;
	}
	*state = v;
	return 0;
}

static int open_routines(struct view_ctx *vc, void **state) { return open_common(vc, state, false); }
static int open_arcs(struct view_ctx *vc, void **state) { return open_common(vc, state, true); }

static int on_event(void *state, const struct xev *ev)
{
	struct vr *v = state;
	return tb_event(&v->b, ev);
}

/* The fold of key (caller, fn) in `map`, created empty. */
static struct fold *fold_of(struct xp_map *map, struct fold **arr, uint32_t *n, uint32_t *cap,
			    uint32_t caller, uint32_t fn)
{
	uint64_t key = (uint64_t)caller << 32 | fn, i;

	if (xp_map_get(map, key, &i))
		return &(*arr)[i];
	if (XP_GROW(*arr, *cap, *n + 1) < 0 || xp_map_put(map, key, *n) < 0)
		return NULL;
	(*arr)[*n] = (struct fold){ .fn = fn, .caller = caller };
	return &(*arr)[(*n)++];
}

/* `outer`: no activation of the same routine (routines) or arc (arcs) encloses the node,
 * so its Cum is not already counted in an enclosing one. */
static void add(struct fold *f, const struct ct_tree *t, uint32_t node, unsigned m, bool outer)
{
	const struct ct_node *nd = ct_node(t, node);

	if (!nd->sampled) {
		f->calls += nd->calls;
		f->exact = true;
	}
	f->base += ct_base(t, node, m);
	f->cum += ct_cum(t, node, m);
	if (outer)
		f->cum2 += ct_cum(t, node, m);
}

/* Pre-order walk of the live tree with leave markers, so that an arc knows whether
 * one of its activations encloses the node (a recursive arc counted once). */
static int fold_tree(struct vr *v, const struct ct_tree *t)
{
	struct xp_map rmap = { 0 }, amap = { 0 };
	uint32_t *stk = malloc(((size_t)ct_nnodes(t) * 2 + 1) * sizeof(*stk));
	size_t ns = 0;
	int rc = 0;

	if (!stk)
		return oom();
	stk[ns++] = CT_ROOT;
	while (ns && rc == 0) {
		uint32_t i = stk[--ns];
		if (i & 0x80000000u) {	/* leave: the index of the node's arc */
			v->a[i & 0x7fffffffu].open--;
			continue;
		}
		const struct ct_node *nd = ct_node(t, i);
		if (i != CT_ROOT) {
			struct fold *r = fold_of(&rmap, &v->r, &v->nr, &v->capr, 0, nd->fn);
			struct fold *a = fold_of(&amap, &v->a, &v->na, &v->capa, ct_node(t, nd->parent)->fn, nd->fn);
			if (!r || !a) {
				rc = oom();
				break;
			}
			add(r, t, i, v->metric, nd->rl == 1);
			add(a, t, i, v->metric, a->open == 0);
			a->open++;
			stk[ns++] = (uint32_t)(a - v->a) | 0x80000000u;
		}
		for (uint32_t c = nd->first_child; c != CT_NONE; c = ct_node(t, c)->next_sibling)
			stk[ns++] = c;
	}
	free(stk);
	xp_map_free(&rmap);
	xp_map_free(&amap);
	return rc;
}

/* Heaviest first: Cum (routines: cum2, outermost activations) or Cum (arcs: cum), then
 * Base, then the function key. */
static int cmp_fold(const void *x, const void *y)
{
	const struct fold *a = x, *b = y;

	if (a->cum2 != b->cum2)
		return a->cum2 > b->cum2 ? -1 : 1;
	if (a->cum != b->cum)
		return a->cum > b->cum ? -1 : 1;
	if (a->base != b->base)
		return a->base > b->base ? -1 : 1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	return a->caller < b->caller ? -1 : a->caller > b->caller;
}

/* The name shown: text marks sampled-only rows with '+'. */
static const char *shown(struct vr *v, uint32_t fn, bool sampled)
{
	const char *name = tb_fn_name(v->c->sym, fn);
	size_t l = strlen(name) + 2;

	if (!sampled || v->o->format != OUT_TEXT || XP_GROW(v->name, v->capname, l) < 0)
		return name;
	snprintf(v->name, l, "+%s", name);
	return v->name;
}

static void header(struct vr *v, const char *what, uint64_t total)
{
	const struct dec_ctx *c = v->c;

	if (v->o->format != OUT_TEXT)
		return;
	tb_total_line(&v->u, v->out, what, c, v->metric, total, true);
	if (c->merged && v->b.repairs)
		fprintf(v->out, "# %" PRIu64 " unmatched entry/exit events repaired (returns without "
			"their entry, activations left open)\n", v->b.repairs);
	tb_header(&v->b, v->out, v->metric);
}

/* The first column: calls, or in a tree of sampled stacks only, samples. */
static const char *count_col(const struct vr *v)
{
	return v->c->sampled && !v->c->merged ? "Samples" : "Calls";
}

/* jsonl rows of traces with probes carry window_ns: the window of a probe that counted
 * the calls in part of the trace only (text marks those Calls with `~`) */
static bool window_col(const struct vr *v)
{
	return v->c->merged && v->c->probes && v->o->format == OUT_JSONL;
}

static void write_routines(struct vr *v, uint64_t total)
{
	struct out_col cols[] = {
		{ count_col(v), OUT_INT, 9, 0 }, tb_cost_col(&v->u, 0, "Base"), tb_cost_col(&v->u, 1, "Cum"),
		tb_cost_col(&v->u, 2, "CumRec"), { "Name", OUT_STR, 0, 0 }, { "Sampled", OUT_BOOL, 0, 0 },
		{ "Window_ns", OUT_SPAN, 0, 0 },
	};
	struct out_table tab;

	header(v, "routines", total);
	out_table_begin(&tab, v->out, v->o->format, cols, 5 + (v->c->merged && v->o->format != OUT_TEXT) +
			window_col(v));
	for (uint32_t i = 0; i < v->nr; i++) {
		const struct fold *r = &v->r[i];
		uint64_t from = 0, to = 0;
		bool partial = r->exact && tb_window(&v->b, r->fn, &from, &to);
		struct out_val vals[7] = {
			{ .u = r->calls, .null = !r->exact, .approx = partial }, tb_cost(&v->u, r->base),
			tb_cost(&v->u, r->cum2), tb_cost(&v->u, r->cum), { .s = shown(v, r->fn, !r->exact) },
			{ .b = !r->exact },
			{ .span = { from, to }, .omit = !partial },
		};
		out_row(&tab, vals, 0, NULL, 0);
	}
}

static int cmp_arc(const void *x, const void *y)
{
	const struct fold *a = x, *b = y;

	if (a->cum2 != b->cum2)
		return a->cum2 > b->cum2 ? -1 : 1;
	if (a->cum != b->cum)
		return a->cum > b->cum ? -1 : 1;
	if (a->calls != b->calls)
		return a->calls > b->calls ? -1 : 1;
	if (a->caller != b->caller)
		return a->caller < b->caller ? -1 : 1;
	return a->fn < b->fn ? -1 : a->fn > b->fn;
}

static void arc_row(struct vr *v, struct out_table *tab, const char *routine, const char *role,
		    const struct fold *f, uint32_t fn, unsigned level)
{
	uint64_t from = 0, to = 0;
	bool partial = f->exact && tb_window(&v->b, f->fn, &from, &to);
	struct out_val vals[9] = {
		{ .s = routine }, { .s = role }, { .u = f->calls, .null = !f->exact, .approx = partial },
		tb_cost(&v->u, f->base), tb_cost(&v->u, f->cum2), tb_cost(&v->u, f->cum),
		{ .s = shown(v, fn, !f->exact) },
		{ .b = !f->exact },
		{ .span = { from, to }, .omit = !partial },
	};
	/* text shows the stanza by indentation: the routine's line stands out */
	out_row(tab, v->o->format == OUT_TEXT ? vals + 2 : vals, level, NULL, 0);
}

static int write_arcs(struct vr *v, uint64_t total)
{
	struct out_col cols[] = {
		{ "Routine", OUT_STR, 0, 0 }, { "Role", OUT_STR, 0, 0 },
		{ count_col(v), OUT_INT, 9, 0 }, tb_cost_col(&v->u, 0, "Base"), tb_cost_col(&v->u, 1, "Cum"),
		tb_cost_col(&v->u, 2, "CumRec"), { "Name", OUT_STR, 0, OUT_TREE }, { "Sampled", OUT_BOOL, 0, 0 },
		{ "Window_ns", OUT_SPAN, 0, 0 },
	};
	bool text = v->o->format == OUT_TEXT;
	struct out_table tab;

	if (v->na)	/* (none: no array, and qsort's is declared non-null) */
		qsort(v->a, v->na, sizeof(*v->a), cmp_arc);
	header(v, "arcs", total);
	if (text)
		out_table_begin(&tab, v->out, v->o->format, cols + 2, 5);
	else
		out_table_begin(&tab, v->out, v->o->format, cols, 8 + window_col(v));
	for (uint32_t i = 0; i < v->nr; i++) {
		const struct fold *r = &v->r[i];
		char *routine = strdup(tb_fn_name(v->c->sym, r->fn));
		if (!routine)
			return oom();
		if (text && i)
			fputs("\n", v->out);
		for (uint32_t k = 0; k < v->na; k++)
			if (v->a[k].fn == r->fn && v->a[k].caller != CT_FN_ROOT)
				arc_row(v, &tab, routine, "caller", &v->a[k], v->a[k].caller, 2);
		arc_row(v, &tab, routine, "self", r, r->fn, 1);
		for (uint32_t k = 0; k < v->na; k++)
			if (v->a[k].caller == r->fn)
				arc_row(v, &tab, routine, "callee", &v->a[k], v->a[k].fn, 2);
		free(routine);
	}
	return 0;
}

static int on_close(void *state, int status)
{
	struct vr *v = state;
	struct ct_tree *all = NULL;
	int rc = 0;

	if (status >= 0 && v->b.time_m >= 0 && (unsigned)v->b.time_m == v->metric)
		rc = tb_check_timed(&v->b, "decode");
	if (status >= 0 && rc == 0)
		rc = tb_finish(&v->b);
	if (status >= 0 && rc == 0) {
		all = tb_merge_all(&v->b);
		if (!all || ct_finish(all) < 0)
			rc = oom();
	}
	if (status >= 0 && rc == 0)
		rc = fold_tree(v, all);
	if (status >= 0 && rc == 0) {
		if (v->nr)
			qsort(v->r, v->nr, sizeof(*v->r), cmp_fold);
		tb_units_init(&v->u, v->c, v->metric, v->o->format, ct_total(all, v->metric));
		if (v->arcs)
			rc = write_arcs(v, ct_total(all, v->metric));
		else
			write_routines(v, ct_total(all, v->metric));
	}
	ct_free(all);
	tb_free(&v->b);
	free(v->r);
	free(v->a);
	free(v->name);
	free(v);
	return status < 0 ? status : rc;
}

static const char *const routines_honours[] = { "tid", "comm", "time", "no-compensate", "inline", "no-inline", NULL };

const struct dec_view view_routines = {
	.name = "routines",
	.help = "per routine: Calls (recursive ones too), Base, Cum, Cum2 (recursion once)",
	.formats = OUT_TABLES,
	.honours = routines_honours,
	.open = open_routines,
	.event = on_event,
	.close = on_close,
};

const struct dec_view view_arcs = {
	.name = "arcs",
	.help = "arcflow: per routine its callers, itself and its callees (calls, base, cum, cumrec)",
	.formats = OUT_TABLES,
	.honours = routines_honours,
	.open = open_arcs,
	.event = on_event,
	.close = on_close,
};
