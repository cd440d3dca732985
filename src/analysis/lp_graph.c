/* The loop analysis's graphs (lp.h): pass 1 records each function's blocks, edges and
 * entries; lp_find builds the graph over the leaders, its dominators (Cooper, Harvey
 * and Kennedy's iteration over reverse postorder) and the natural loops. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/lp_int.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"

uint32_t lp_func_index(struct lp *a, uint64_t key, uint64_t start, const struct xev *ev)
{
	uint64_t h = xp_hash_key3(key, start, 0), v;
	/* a colliding hash probes the next one */
	for (;; h++) {
		if (!xp_map_get(&a->func_of, h, &v))
			break;
		struct lp_func *f = &a->funcs[v - 1];
		if (f->key == key && f->start == start)
			return (uint32_t)(v - 1);
	}
	if (a->found)	/* pass 2 meets nothing pass 1 did not */
		return LP_NONE;
	if (XP_GROW(a->funcs, a->capfuncs, a->nfuncs + 1) < 0 || xp_map_put(&a->func_of, h, a->nfuncs + 1) < 0)
		return LP_NONE;
	a->funcs[a->nfuncs] = (struct lp_func){ .key = key, .start = start, .pid = ev->pid, .time = ev->time };
	return a->nfuncs++;
}

static int add_edge(struct lp_func *f, uint64_t from, uint64_t to)
{
	uint64_t h = xp_hash_key3(from, to, 0), v;
	for (;; h++) {
		if (!xp_map_get(&f->edge_of, h, &v))
			break;
		if (f->edges[v - 1][0] == from && f->edges[v - 1][1] == to)
			return 0;
	}
	if (XP_GROW(f->edges, f->capedges, f->nedges + 1) < 0 || xp_map_put(&f->edge_of, h, f->nedges + 1) < 0)
		return -ENOMEM;
	f->edges[f->nedges][0] = from;
	f->edges[f->nedges][1] = to;
	f->nedges++;
	return 0;
}

int lp_record(struct lp_func *f, struct lp_frame *fr, bool fresh, const struct xev *ev)
{
	uint64_t end = 0;
	int r = 0;
	if (fresh)
		r = xp_map_put(&f->entries, ev->ip, 1);
	else if (fr->last_end)
		r = add_edge(f, fr->last_end, ev->ip);
	if (r == 0 && (!xp_map_get(&f->range_end, ev->ip, &end) || end < ev->end))
		r = xp_map_put(&f->range_end, ev->ip, ev->end);
	fr->last_end = ev->end;
	return r;
}

void lp_func_free(struct lp_func *f)
{
	xp_map_free(&f->range_end);
	xp_map_free(&f->edge_of);
	xp_map_free(&f->entries);
	free(f->edges);
	free(f->lead);
	free(f->nins);
	free(f->nend);
	free(f->inner);
	free(f->visits);
	free(f->cycles);
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* index of the greatest leader <= ip, LP_NONE when ip lies before all */
static uint32_t node_at(const struct lp_func *f, uint64_t ip)
{
	uint32_t lo = 0, hi = f->nlead;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->lead[mid] <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : LP_NONE;
}

/* The graph of one function: n nodes and a root (index n) before the nodes frames
 * started at and those nothing reaches; successors and predecessors in CSR form. */
struct graph {
	uint32_t n;
	uint32_t *so, *s;	/* successors of i: s[so[i] .. so[i + 1]) */
	uint32_t *po, *p;	/* predecessors */
	uint32_t *rpo;		/* reverse postorder from the root; nrpo reached */
	uint32_t nrpo;
	uint32_t *order;	/* position in rpo, LP_NONE: unreached */
	uint32_t *idom;
};

static void graph_free(struct graph *g)
{
	free(g->so);
	free(g->s);
	free(g->po);
	free(g->p);
	free(g->rpo);
	free(g->order);
	free(g->idom);
}

/* edge list (pairs) to CSR arrays keyed by `by` (0: successors, 1: predecessors) */
static int csr(uint32_t n, const uint32_t (*e)[2], uint32_t ne, int by, uint32_t **off, uint32_t **adj)
{
	*off = calloc(n + 2, sizeof(**off));
	*adj = malloc((ne ? ne : 1) * sizeof(**adj));
	if (!*off || !*adj)
		return -ENOMEM;
	for (uint32_t i = 0; i < ne; i++)
		(*off)[e[i][by] + 1]++;
	for (uint32_t i = 0; i < n + 1; i++)
		(*off)[i + 1] += (*off)[i];
	uint32_t *fill = calloc(n + 1, sizeof(*fill));
	if (!fill)
		return -ENOMEM;
	for (uint32_t i = 0; i < ne; i++) {
		uint32_t k = e[i][by];
		(*adj)[(*off)[k] + fill[k]++] = e[i][!by];
	}
	free(fill);
	return 0;
}

static int add_pair(uint32_t (**e)[2], uint32_t *ne, uint32_t *cap, uint32_t a, uint32_t b)
{
	if (XP_GROW(*e, *cap, *ne + 1) < 0)
		return -ENOMEM;
	(*e)[*ne][0] = a;
	(*e)[*ne][1] = b;
	(*ne)++;
	return 0;
}

/* The edges between leaders (the root's too) and each node's instructions. */
static int build_edges(struct lp *a, struct lp_func *f, uint32_t (**edges)[2], uint32_t *nedges)
{
	uint32_t n = f->nlead, ne = 0, cap = 0;
	uint32_t(*e)[2] = NULL;
	uint64_t *rend = calloc(n ? n : 1, sizeof(*rend));
	bool *has_pred = calloc(n ? n : 1, sizeof(*has_pred));
	int r = rend && has_pred ? 0 : -ENOMEM;
	size_t it = 0;
	uint64_t s, end;

	/* straight-line runs: a leader inside a block falls through to the next one */
	while (r == 0 && xp_map_next(&f->range_end, &it, &s, &end)) {
		uint32_t i = node_at(f, s);
		for (; r == 0 && i + 1 < n && f->lead[i + 1] <= end; i++) {
			rend[i] = rend[i] > end ? rend[i] : end;
			r = add_pair(&e, &ne, &cap, i, i + 1);
		}
		if (i < n)
			rend[i] = rend[i] > end ? rend[i] : end;
	}
	for (uint32_t k = 0; r == 0 && k < f->nedges; k++) {
		uint32_t x = node_at(f, f->edges[k][0]), y = node_at(f, f->edges[k][1]);
		if (x != LP_NONE && y != LP_NONE)
			r = add_pair(&e, &ne, &cap, x, y);
	}
	for (uint32_t k = 0; k < ne; k++)
		has_pred[e[k][1]] = true;
	for (uint32_t i = 0; r == 0 && i < n; i++)
		if (!has_pred[i] || xp_map_get(&f->entries, f->lead[i], NULL))
			r = add_pair(&e, &ne, &cap, n, i);
	f->nins = calloc(n ? n : 1, sizeof(*f->nins));
	f->nend = calloc(n ? n : 1, sizeof(*f->nend));
	if (r == 0 && (!f->nins || !f->nend))
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < n; i++) {
		uint64_t upto = i + 1 < n && f->lead[i + 1] <= rend[i] ? f->lead[i + 1] : rend[i] + 1;
		f->nend[i] = rend[i] >= f->lead[i] ? upto : f->lead[i];
		f->nins[i] = a->env.ninsns(a->env.ctx, f->pid, f->time, f->lead[i], f->nend[i]);
	}
	free(rend);
	free(has_pred);
	*edges = e;
	*nedges = ne;
	return r;
}

static uint32_t intersect(const struct graph *g, uint32_t x, uint32_t y)
{
	while (x != y) {
		while (g->order[x] > g->order[y])
			x = g->idom[x];
		while (g->order[y] > g->order[x])
			y = g->idom[y];
	}
	return x;
}

/* Reverse postorder from the root (an explicit stack: graphs can be deep), then the
 * dominators. */
static int dominators(struct graph *g)
{
	uint32_t n = g->n + 1, root = g->n, npost = 0, sp = 0;
	uint32_t *post = malloc(n * sizeof(*post)), *stack = malloc(n * sizeof(*stack));
	uint32_t *next = calloc(n, sizeof(*next));
	bool *seen = calloc(n, sizeof(*seen));
	g->order = malloc(n * sizeof(*g->order));
	g->idom = malloc(n * sizeof(*g->idom));
	g->rpo = malloc(n * sizeof(*g->rpo));
	if (!post || !stack || !next || !seen || !g->order || !g->idom || !g->rpo) {
		free(post);
		free(stack);
		free(next);
		free(seen);
		return -ENOMEM;
	}
	stack[sp++] = root;
	seen[root] = true;
	while (sp) {
		uint32_t x = stack[sp - 1];
		if (g->so[x] + next[x] < g->so[x + 1]) {
			uint32_t y = g->s[g->so[x] + next[x]++];
			if (!seen[y]) {
				seen[y] = true;
				stack[sp++] = y;
			}
			continue;
		}
		post[npost++] = x;
		sp--;
	}
	for (uint32_t i = 0; i < n; i++) {
		g->order[i] = LP_NONE;
		g->idom[i] = LP_NONE;
	}
	g->nrpo = npost;
	for (uint32_t i = 0; i < npost; i++) {
		g->rpo[i] = post[npost - 1 - i];
		g->order[g->rpo[i]] = i;
	}
	free(post);
	free(stack);
	free(next);
	free(seen);
	g->idom[root] = root;
	for (bool changed = true; changed;) {
		changed = false;
		for (uint32_t k = 1; k < g->nrpo; k++) {
			uint32_t b = g->rpo[k], d = LP_NONE;
			for (uint32_t j = g->po[b]; j < g->po[b + 1]; j++) {
				uint32_t p = g->p[j];
				if (g->idom[p] == LP_NONE)
					continue;
				d = d == LP_NONE ? p : intersect(g, p, d);
			}
			if (d != g->idom[b]) {
				g->idom[b] = d;
				changed = true;
			}
		}
	}
	return 0;
}

static bool dominates(const struct graph *g, uint32_t h, uint32_t x)
{
	for (;;) {
		if (x == h)
			return true;
		if (x == g->n || g->idom[x] == LP_NONE)
			return false;
		x = g->idom[x];
	}
}

struct body {
	uint32_t loop;
	uint32_t size;
};

static int by_size(const void *x, const void *y)
{
	const struct body *a = x, *b = y;
	if (a->size != b->size)
		return a->size < b->size ? 1 : -1;
	return a->loop < b->loop ? -1 : a->loop > b->loop;
}

/* The natural loops of f: one per header, bodies gathered backwards from its back
 * edges' sources; nesting from the bodies (largest first, each node's innermost loop
 * is the last that claims it). */
static int find_loops(struct lp *a, struct lp_func *f, const struct graph *g)
{
	uint32_t n = g->n, first = a->nloops, nb = 0;
	uint32_t *mark = malloc((n ? n : 1) * sizeof(*mark)), *work = malloc((n ? n : 1) * sizeof(*work));
	uint32_t *members = NULL, nmem = 0, capmem = 0;
	uint32_t *memoff = NULL;
	struct body *bodies = NULL;
	size_t capb = 0, capoff = 0;
	int r = mark && work ? 0 : -ENOMEM;

	f->inner = malloc((n ? n : 1) * sizeof(*f->inner));
	if (!f->inner)
		r = -ENOMEM;
	for (uint32_t i = 0; r == 0 && i < n; i++) {
		mark[i] = LP_NONE;
		f->inner[i] = LP_NONE;
	}
	for (uint32_t h = 0; r == 0 && h < n; h++) {
		uint32_t sp = 0, size = 1;
		bool back = false;
		if (g->order[h] == LP_NONE)
			continue;
		mark[h] = h;
		for (uint32_t j = g->po[h]; j < g->po[h + 1]; j++) {
			uint32_t u = g->p[j];
			if (u == n || g->order[u] == LP_NONE || !dominates(g, h, u))
				continue;
			back = true;
			if (mark[u] != h) {
				mark[u] = h;
				work[sp++] = u;
			}
		}
		if (!back)
			continue;
		if ((r = XP_GROW(members, capmem, nmem + 1)) < 0)
			break;
		members[nmem++] = h;
		while (r == 0 && sp) {
			uint32_t x = work[--sp];
			size++;
			if ((r = XP_GROW(members, capmem, nmem + 1)) < 0)
				break;
			members[nmem++] = x;
			for (uint32_t j = g->po[x]; j < g->po[x + 1]; j++) {
				uint32_t p = g->p[j];
				if (p != n && g->order[p] != LP_NONE && mark[p] != h) {
					mark[p] = h;
					work[sp++] = p;
				}
			}
		}
		if (r == 0 && (r = XP_GROW(a->loops, a->caploops, a->nloops + 1)) == 0 &&
		    (r = XP_GROW(a->trips, a->captrips, a->nloops + 1)) == 0 &&
		    (r = XP_GROW(bodies, capb, nb + 1)) == 0 && (r = XP_GROW(memoff, capoff, nb + 2)) == 0) {
			a->loops[a->nloops] = (struct lp_loop){ .fn = f->key, .fn_start = f->start, .header = f->lead[h],
								.pid = f->pid, .time = f->time, .parent = LP_NONE,
								.nblocks = size, .trips_min = UINT64_MAX };
			a->trips[a->nloops] = (struct lp_trips){ 0 };
			memoff[nb] = nmem - size;
			bodies[nb++] = (struct body){ a->nloops++, size };
		}
	}
	if (r == 0) {
		/* bodies[k].loop - first indexes memoff: sort a copy of the order */
		if (nb)	/* (qsort's array is declared non-null) */
			qsort(bodies, nb, sizeof(*bodies), by_size);
		for (uint32_t k = 0; k < nb; k++) {
			struct lp_loop *l = &a->loops[bodies[k].loop];
			uint32_t hn = node_at(f, l->header);
			l->parent = f->inner[hn];
			l->depth = l->parent == LP_NONE ? 1 : a->loops[l->parent].depth + 1;
			const uint32_t *m = members + memoff[bodies[k].loop - first];
			for (uint32_t i = 0; i < bodies[k].size; i++)
				f->inner[m[i]] = bodies[k].loop;
		}
	}
	free(mark);
	free(work);
	free(members);
	free(memoff);
	free(bodies);
	return r;
}

static int find_fn(struct lp *a, struct lp_func *f)
{
	size_t it = 0, cap = 0;
	uint64_t k, v;
	uint32_t n = 0;
	int r = 0;

	while (xp_map_next(&f->range_end, &it, &k, &v)) {
		if (XP_GROW(f->lead, cap, n + 1) < 0)
			return -ENOMEM;
		f->lead[n++] = k;
	}
	if (n)
		qsort(f->lead, n, sizeof(*f->lead), cmp_u64);
	f->nlead = n;
	f->visits = calloc(n ? n : 1, sizeof(*f->visits));
	f->cycles = calloc(n ? n : 1, sizeof(*f->cycles));
	if (!f->visits || !f->cycles)
		return -ENOMEM;

	uint32_t(*e)[2] = NULL, ne = 0;
	struct graph g = { .n = n };
	r = build_edges(a, f, &e, &ne);
	if (r == 0)
		r = csr(n, (const uint32_t(*)[2])e, ne, 0, &g.so, &g.s);
	if (r == 0)
		r = csr(n, (const uint32_t(*)[2])e, ne, 1, &g.po, &g.p);
	if (r == 0)
		r = dominators(&g);
	if (r == 0)
		r = find_loops(a, f, &g);
	free(e);
	graph_free(&g);
	/* what pass 1 kept for the graph is done with */
	xp_map_free(&f->edge_of);
	free(f->edges);
	f->edges = NULL;
	f->nedges = f->capedges = 0;
	return r;
}

int lp_find(struct lp *a)
{
	for (uint32_t i = 0; i < a->nfuncs; i++) {
		int r = find_fn(a, &a->funcs[i]);
		if (r < 0)
			return r;
	}
	/* pass 2 starts afresh: the threads' frames of pass 1 go */
	for (uint32_t i = 0; i < a->nthreads; i++)
		a->threads[i].n = 0;
	a->found = true;
	return 0;
}
