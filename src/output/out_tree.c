/* Call trees as folded stacks and as callgrind profiles. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "util/xp_grow.h"

struct fold {
	FILE *f;
	const char *prefix;
	unsigned metric;
	const struct out_names *n;
	uint32_t *path;
	uint32_t cap;
};

static int fold_node(void *arg, const struct ct_tree *t, uint32_t v)
{
	struct fold *s = arg;
	const struct ct_node *nd = ct_node(t, v);
	uint64_t b = ct_base(t, v, s->metric);

	if (!b)
		return 0;
	if (XP_GROW(s->path, s->cap, nd->lvl) < 0)
		return -ENOMEM;
	uint32_t u = v;
	for (uint32_t i = nd->lvl; i-- > 0;) {
		s->path[i] = ct_node(t, u)->fn;
		u = ct_node(t, u)->parent;
	}
	for (uint32_t i = 0; i <= nd->lvl; i++) {
		const char *nm = i ? s->n->name(s->n->ctx, s->path[i - 1]) : s->prefix;
		if (!nm)
			continue;
		if (i && (i > 1 || s->prefix))
			putc(';', s->f);
		/* ';' separates frames and the last ' ' the count: keep names free of both */
		for (const char *p = nm; *p; p++)
			putc(*p == ';' ? ':' : *p == '\n' ? ' ' : *p, s->f);
	}
	fprintf(s->f, " %" PRIu64 "\n", b);
	return 0;
}

int out_folded(FILE *f, const struct ct_tree *t, unsigned metric, const struct out_names *n, const char *prefix)
{
	struct fold s = { f, prefix, metric, n, NULL, 0 };
	int rc = ct_walk(t, metric, fold_node, &s);

	free(s.path);
	return rc;
}

/* ---- callgrind ---- */

struct edge {
	uint32_t caller, callee;
	uint64_t calls;
	uint64_t incl[CT_MAX_METRICS];
};

struct fnacc {
	uint64_t self[CT_MAX_METRICS];
	bool seen;
	uint32_t nedges, capedges;
	struct edge *edges;
};

/* The function's names; its line (0 unknown) in *line. */
static struct out_cg_fn where(const struct out_names *n, uint32_t fn, uint64_t *line)
{
	const char *file = NULL;
	int l = 0;

	if (!n->srcline || !n->srcline(n->ctx, fn, &file, &l) || l < 0)
		file = "???", l = 0;
	*line = (uint64_t)l;
	return (struct out_cg_fn){ { 0, n->module ? n->module(n->ctx, fn) : NULL }, { 0, file },
				   { 0, n->name(n->ctx, fn) } };
}

int out_callgrind(FILE *f, const struct ct_tree *t, const char *const *events, const char *cmd,
		  const struct out_names *n)
{
	unsigned nm = ct_nmetrics(t);
	uint32_t nfn = ct_max_fn(t) + 1;
	struct fnacc *acc = calloc(nfn, sizeof(*acc));
	int rc = 0;

	if (!acc)
		return -ENOMEM;
	for (uint32_t v = 1; v < ct_nnodes(t); v++) {
		const struct ct_node *nd = ct_node(t, v);
		if (!nd->lvl || nd->fn >= nfn)
			continue;
		struct fnacc *a = &acc[nd->fn];
		a->seen = true;
		for (unsigned m = 0; m < nm; m++)
			a->self[m] += ct_base(t, v, m);
		if (nd->parent == CT_ROOT)
			continue;
		/* the edge parent-fn -> this fn; recursion inclusive cost counted at the
		 * outermost occurrence only, so callers' totals stay true */
		uint32_t caller = ct_node(t, nd->parent)->fn;
		struct fnacc *ca = &acc[caller];
		struct edge *e = NULL;
		for (uint32_t i = 0; i < ca->nedges; i++)
			if (ca->edges[i].callee == nd->fn) {
				e = &ca->edges[i];
				break;
			}
		if (!e) {
			if (XP_GROW(ca->edges, ca->capedges, ca->nedges + 1) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			e = &ca->edges[ca->nedges++];
			memset(e, 0, sizeof(*e));
			e->caller = caller;
			e->callee = nd->fn;
		}
		e->calls += nd->calls;
		if (nd->rl == 1 || caller != nd->fn)
			for (unsigned m = 0; m < nm; m++)
				e->incl[m] += ct_cum(t, v, m);
	}
	uint64_t summary[CT_MAX_METRICS];
	struct out_cg w;

	for (unsigned m = 0; m < nm; m++)
		summary[m] = ct_total(t, m);
	out_cg_begin(&w, f, false, cmd, events, nm, summary);
	for (uint32_t fn = 0; fn < nfn; fn++) {
		struct fnacc *a = &acc[fn];
		uint64_t line, cline;

		if (!a->seen)
			continue;
		struct out_cg_fn at = where(n, fn, &line);
		out_cg_fn(&w, &at);
		out_cg_cost(&w, line, a->self);
		for (uint32_t i = 0; i < a->nedges; i++) {
			struct edge *e = &a->edges[i];
			struct out_cg_fn callee = where(n, e->callee, &cline);

			out_cg_call(&w, &callee, e->calls, cline, line, e->incl);
		}
	}
	out_cg_end(&w, NULL);
out:
	for (uint32_t fn = 0; fn < nfn; fn++)
		free(acc[fn].edges);
	free(acc);
	return rc;
}
