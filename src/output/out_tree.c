/* Call trees as folded stacks and as callgrind profiles. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "util/xp_grow.h"

struct fold {
	FILE *f;
	unsigned metric;
	const struct out_names *n;
	const char *prefix;	/* first frame of every stack (comm-pid/tid), or NULL */
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
	for (uint32_t i = 0; i < nd->lvl + (s->prefix != NULL); i++) {
		const char *nm = s->prefix && i == 0 ? s->prefix :
			s->n->name(s->n->ctx, s->path[i - (s->prefix != NULL)]);
		if (i)
			putc(';', s->f);
		/* ';' separates frames and the last ' ' the count: keep names free of both */
		for (const char *p = nm; *p; p++)
			putc(*p == ';' ? ':' : *p == '\n' ? ' ' : *p, s->f);
	}
	fprintf(s->f, " %" PRIu64 "\n", b);
	return 0;
}

int out_folded(FILE *f, const struct ct_tree *t, unsigned metric, const struct out_names *n,
	       const char *prefix)
{
	struct fold s = { f, metric, n, prefix, NULL, 0 };
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

/* What the lines leave of the self cost in rest; false when they hold more. */
static bool lines_fit(const struct out_line *lv, size_t nl, const uint64_t *self, unsigned nm, uint64_t *rest)
{
	memcpy(rest, self, nm * sizeof(*rest));
	for (size_t i = 0; i < nl; i++)
		for (unsigned m = 0; m < nm; m++) {
			if (lv[i].cost[m] > rest[m])
				return false;
			rest[m] -= lv[i].cost[m];
		}
	return true;
}

int out_callgrind(FILE *f, const struct ct_tree *t, const char *const *events, const char *cmd,
		  const char *desc, const struct out_names *n)
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
	out_cg_begin(&w, f, OUT_CG_LINE, cmd, desc, events, nm, summary);
	for (uint32_t fn = 0; fn < nfn; fn++) {
		struct fnacc *a = &acc[fn];
		uint64_t line, cline;

		if (!a->seen)
			continue;
		struct out_cg_fn at = where(n, fn, &line);
		out_cg_fn(&w, &at);
		/* the self cost on the lines it fell on; what they do not hold (no line
		 * info, time between events) on the function's line */
		const struct out_line *lv = NULL;
		size_t nl = 0;
		uint64_t rest[CT_MAX_METRICS];
		if (n->lines && n->lines(n->lines_ctx, fn, &lv, &nl) < 0) {
			rc = -ENOMEM;
			goto out;
		}
		if (!lines_fit(lv, nl, a->self, nm, rest)) {
			nl = 0;	/* more on the lines than the tree says (adjusted times) */
			memcpy(rest, a->self, sizeof(rest));
		}
		bool left = nl == 0;
		for (unsigned m = 0; m < nm; m++)
			left |= rest[m] != 0;
		if (left)
			out_cg_cost(&w, &(struct out_cg_pos){ 0, line }, rest);
		const char *cur = at.fl.name;
		for (size_t i = 0; i < nl; i++) {
			if (strcmp(lv[i].file, cur) != 0) {
				cur = lv[i].file;
				out_cg_name(&w, "fi", &(struct out_cg_name){ 0, cur });
			}
			out_cg_cost(&w, &(struct out_cg_pos){ 0, lv[i].line }, lv[i].cost);
		}
		for (uint32_t i = 0; i < a->nedges; i++) {
			struct edge *e = &a->edges[i];
			struct out_cg_fn callee = where(n, e->callee, &cline);
			const char *sfile = at.fl.name;
			int sl = (int)line;
			if (n->site && !n->site(n->lines_ctx, fn, e->callee, &sfile, &sl))
				sfile = at.fl.name, sl = (int)line;
			if (strcmp(sfile, cur) != 0) {
				cur = sfile;
				out_cg_name(&w, "fi", &(struct out_cg_name){ 0, cur });
			}
			/* an edge whose call the trace did not see (it began inside the
			 * callee, which was entered by a jump) counts one: with calls=0
			 * callgrind_annotate takes the inclusive cost for the caller's own */
			out_cg_call(&w, &callee, e->calls ? e->calls : 1, &(struct out_cg_pos){ 0, cline },
				    &(struct out_cg_pos){ 0, (uint64_t)sl }, e->incl);
		}
	}
	out_cg_end(&w, NULL);
out:
	for (uint32_t fn = 0; fn < nfn; fn++)
		free(acc[fn].edges);
	free(acc);
	return rc;
}
