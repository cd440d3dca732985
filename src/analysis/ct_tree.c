/* Call-tree storage: nodes in one array, (parent, fn) -> child in a map, per-node
 * metric arrays; sampled stacks, merge, finish and walk. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/ct.h"
#include "analysis/ct_int.h"
#include "util/xp_grow.h"

struct ct_tree *ct_new(unsigned nmetrics)
{
	struct ct_tree *t = calloc(1, sizeof(*t));

	if (!t || nmetrics > CT_MAX_METRICS) {
		free(t);
		return NULL;
	}
	t->nm = nmetrics;
	if (ct_grow(t) < 0) {
		ct_free(t);
		return NULL;
	}
	t->n = 1;
	t->nodes[0] = (struct ct_node){ CT_FN_ROOT, CT_NONE, CT_NONE, CT_NONE, 0, 0, 0, false };
	t->last_child[0] = CT_NONE;
	return t;
}

void ct_free(struct ct_tree *t)
{
	if (!t)
		return;
	free(t->nodes);
	free(t->last_child);
	free(t->base);
	free(t->cum);
	xp_map_free(&t->child);
	free(t);
}

unsigned ct_nmetrics(const struct ct_tree *t) { return t->nm; }

int ct_grow(struct ct_tree *t)
{
	uint32_t nc = t->cap ? t->cap * 2 : 1024;
	struct ct_node *nn = realloc(t->nodes, nc * sizeof(*nn));
	if (!nn)
		return -ENOMEM;
	t->nodes = nn;
	uint32_t *lc = realloc(t->last_child, nc * sizeof(*lc));
	if (!lc)
		return -ENOMEM;
	t->last_child = lc;
	size_t m = t->nm ? t->nm : 1;
	uint64_t *nb = realloc(t->base, nc * m * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	t->base = nb;
	uint64_t *cu = realloc(t->cum, nc * m * sizeof(*cu));
	if (!cu)
		return -ENOMEM;
	t->cum = cu;
	memset(t->base + (size_t)t->cap * m, 0, (size_t)(nc - t->cap) * m * sizeof(*nb));
	memset(t->cum + (size_t)t->cap * m, 0, (size_t)(nc - t->cap) * m * sizeof(*cu));
	t->cap = nc;
	return 0;
}

static inline uint64_t hkey(uint32_t parent, uint32_t fn)
{
	return (uint64_t)parent << 32 | fn;
}

uint32_t ct_find_child(const struct ct_tree *t, uint32_t parent, uint32_t fn)
{
	uint64_t i;

	return xp_map_get(&t->child, hkey(parent, fn), &i) ? (uint32_t)i : CT_NONE;
}

void ct_unlink_key(struct ct_tree *t, uint32_t parent, uint32_t fn)
{
	xp_map_del(&t->child, hkey(parent, fn));
	t->unlinks++;
}

uint32_t ct_child(struct ct_tree *t, uint32_t parent, uint32_t fn)
{
	uint64_t k = hkey(parent, fn), found;

	if (xp_map_get(&t->child, k, &found))
		return (uint32_t)found;
	if ((t->n == t->cap && ct_grow(t) < 0) || xp_map_put(&t->child, k, t->n) < 0)
		return CT_NONE;
	uint32_t i = t->n++;
	t->nodes[i] = (struct ct_node){ fn, parent, CT_NONE, CT_NONE, 0, 0, 0, false };
	t->last_child[i] = CT_NONE;
	if (t->last_child[parent] == CT_NONE)
		t->nodes[parent].first_child = i;
	else
		t->nodes[t->last_child[parent]].next_sibling = i;
	t->last_child[parent] = i;
	if (fn != CT_FN_ROOT && fn + 1 > t->max_fn1)
		t->max_fn1 = fn + 1;
	return i;
}

void ct_add_base(struct ct_tree *t, uint32_t node, const uint64_t *w)
{
	uint64_t *b = t->base + (size_t)node * t->nm;

	for (unsigned m = 0; m < t->nm; m++)
		b[m] += w[m];
}

/* One frame down a stack being added: fn's child of node, marked sampled when it is
 * new and the stack is, counted as a call unless the stack says not. */
static uint32_t stack_child(struct ct_tree *t, uint32_t node, uint32_t fn, unsigned flags)
{
	uint32_t had = t->n;

	node = ct_child(t, node, fn);
	if (node == CT_NONE)
		return CT_NONE;
	if (node >= had && (flags & CT_SAMPLED))
		t->nodes[node].sampled = true;
	if (!(flags & CT_NO_CALLS))
		t->nodes[node].calls++;
	return node;
}

uint32_t ct_add_stack_at(struct ct_tree *t, uint32_t parent, const uint32_t *fns, uint32_t n,
			 const uint64_t *w, unsigned flags)
{
	uint32_t node = parent;

	for (uint32_t i = 0; i < n; i++)
		if ((node = stack_child(t, node, fns[i], flags)) == CT_NONE)
			return CT_NONE;
	ct_add_base(t, node, w);
	return node;
}

uint32_t ct_add_stack(struct ct_tree *t, const uint32_t *fns, uint32_t n, const uint64_t *w,
		      unsigned flags)
{
	return ct_add_stack_at(t, CT_ROOT, fns, n, w, flags);
}

uint32_t ct_add_stack_path(struct ct_tree *t, struct ct_path *p, const uint32_t *fns, uint32_t n,
			   const uint64_t *w, unsigned flags)
{
	uint32_t k = 0, node = CT_ROOT;

	if (p->tree == t && p->unlinks == t->unlinks)
		while (k < n && k < p->n && p->fn[k] == fns[k])
			k++;
	p->n = 0;	/* until the new path is complete */
	if (XP_GROW(p->fn, p->cap, n) < 0 || XP_GROW(p->node, p->capnode, n) < 0)
		return CT_NONE;
	if (k) {
		node = p->node[k - 1];
		if (!(flags & CT_NO_CALLS))
			for (uint32_t i = 0; i < k; i++)
				t->nodes[p->node[i]].calls++;
	}
	for (uint32_t i = k; i < n; i++) {
		if ((node = stack_child(t, node, fns[i], flags)) == CT_NONE)
			return CT_NONE;
		p->fn[i] = fns[i];
		p->node[i] = node;
	}
	p->tree = t;
	p->unlinks = t->unlinks;
	p->n = n;
	ct_add_base(t, node, w);
	return node;
}

uint64_t ct_moves(const struct ct_tree *t) { return t->unlinks; }

void ct_add_at(struct ct_tree *t, uint32_t leaf, const uint64_t *w, unsigned flags)
{
	if (!(flags & CT_NO_CALLS))
		for (uint32_t v = leaf; v != CT_ROOT; v = t->nodes[v].parent)
			t->nodes[v].calls++;
	ct_add_base(t, leaf, w);
}

void ct_path_free(struct ct_path *p)
{
	free(p->fn);
	free(p->node);
	memset(p, 0, sizeof(*p));
}

/* Adds src's subtree below dst's node `d` (src and dst may be the same tree as long
 * as the subtrees are disjoint).  Iterative: recursion in traces can be deep. */
int ct_merge_subtree(struct ct_tree *dst, uint32_t d, const struct ct_tree *src, uint32_t s)
{
	struct pair { uint32_t s, d; } *stk = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

#define PUSH(a, b) do { \
		if (XP_GROW(stk, cap, n + 1) < 0) { rc = -ENOMEM; goto out; } \
		stk[n++] = (struct pair){ (a), (b) }; \
	} while (0)

	PUSH(s, d);
	while (n) {
		struct pair p = stk[--n];
		for (uint32_t c = src->nodes[p.s].first_child; c != CT_NONE; c = src->nodes[c].next_sibling) {
			uint32_t fn = src->nodes[c].fn, had = dst->n;
			uint32_t dc = ct_child(dst, p.d, fn);
			if (dc == CT_NONE) {
				rc = -ENOMEM;
				goto out;
			}
			/* sampled only where every source is */
			dst->nodes[dc].sampled = dc >= had ? src->nodes[c].sampled :
				dst->nodes[dc].sampled && src->nodes[c].sampled;
			dst->nodes[dc].calls += src->nodes[c].calls;
			ct_add_base(dst, dc, src->base + (size_t)c * src->nm);
			PUSH(c, dc);
		}
	}
out:
	free(stk);
	return rc;
#undef PUSH
}

int ct_merge(struct ct_tree *dst, const struct ct_tree *src)
{
	if (dst->nm != src->nm)
		return -EINVAL;
	ct_add_base(dst, CT_ROOT, src->base);
	return ct_merge_subtree(dst, CT_ROOT, src, CT_ROOT);
}

/* Depth-first order of the live tree (nodes unlinked by reparenting are skipped). */
int ct_finish(struct ct_tree *t)
{
	uint32_t *order = malloc((size_t)t->n * sizeof(*order));
	uint32_t *cnt = calloc((size_t)t->max_fn1 + 1, sizeof(*cnt));
	uint32_t *stk = malloc(((size_t)t->n * 2 + 1) * sizeof(*stk));
	size_t no = 0, ns = 0;
	unsigned nm = t->nm;

	if (!order || !cnt || !stk) {
		free(order);
		free(cnt);
		free(stk);
		return -ENOMEM;
	}
	/* nodes unlinked by reparenting keep lvl 0 (live ones get >= 1 below) */
	for (uint32_t i = 0; i < t->n; i++)
		t->nodes[i].lvl = 0;
	/* pre-order: lvl and rl need the path counts, kept with enter/leave markers */
	t->nodes[0].rl = 0;
	stk[ns++] = CT_ROOT;
	while (ns) {
		uint32_t v = stk[--ns];
		if (v & 0x80000000u) {	/* leave */
			v &= 0x7fffffffu;
			if (t->nodes[v].fn < t->max_fn1)
				cnt[t->nodes[v].fn]--;
			continue;
		}
		struct ct_node *nd = &t->nodes[v];
		order[no++] = v;
		if (v != CT_ROOT) {
			nd->lvl = t->nodes[nd->parent].lvl + 1;
			nd->rl = nd->fn < t->max_fn1 ? ++cnt[nd->fn] : 1;
		}
		stk[ns++] = v | 0x80000000u;
		for (uint32_t c = nd->first_child; c != CT_NONE; c = t->nodes[c].next_sibling)
			stk[ns++] = c;
	}
	/* cum: reverse pre-order visits children before parents */
	for (size_t i = 0; i < no; i++)
		memcpy(t->cum + (size_t)order[i] * nm, t->base + (size_t)order[i] * nm, nm * sizeof(uint64_t));
	for (size_t i = no; i-- > 1;) {
		uint32_t v = order[i], p = t->nodes[v].parent;
		for (unsigned m = 0; m < nm; m++)
			t->cum[(size_t)p * nm + m] += t->cum[(size_t)v * nm + m];
	}
	free(order);
	free(cnt);
	free(stk);
	return 0;
}

uint32_t ct_nnodes(const struct ct_tree *t) { return t->n; }
const struct ct_node *ct_node(const struct ct_tree *t, uint32_t i) { return i < t->n ? &t->nodes[i] : NULL; }
uint64_t ct_base(const struct ct_tree *t, uint32_t node, unsigned m) { return t->base[(size_t)node * t->nm + m]; }
uint64_t ct_cum(const struct ct_tree *t, uint32_t node, unsigned m) { return t->cum[(size_t)node * t->nm + m]; }
uint64_t ct_total(const struct ct_tree *t, unsigned m) { return t->cum[m]; }
uint32_t ct_max_fn(const struct ct_tree *t) { return t->max_fn1 ? t->max_fn1 - 1 : 0; }

struct sortctx {
	const struct ct_tree *t;
	unsigned m;
};

static int cmp_children(const void *a, const void *b, void *arg)
{
	const struct sortctx *s = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint64_t cx = s->t->nm ? ct_cum(s->t, x, s->m) : 0, cy = s->t->nm ? ct_cum(s->t, y, s->m) : 0;

	if (cx != cy)
		return cx > cy ? -1 : 1;
	if (s->t->nodes[x].calls != s->t->nodes[y].calls)
		return s->t->nodes[x].calls > s->t->nodes[y].calls ? -1 : 1;
	return x < y ? -1 : x > y;
}

int ct_walk(const struct ct_tree *t, unsigned metric, ct_visit_fn fn, void *ctx)
{
	uint32_t *stk = malloc((size_t)t->n * sizeof(*stk)), *kids = NULL;
	size_t ns = 0, kcap = 0;
	struct sortctx sc = { t, metric };
	int rc = 0;

	if (!stk)
		return -ENOMEM;
	stk[ns++] = CT_ROOT;
	while (ns) {
		uint32_t v = stk[--ns];
		if (v != CT_ROOT && (rc = fn(ctx, t, v)) != 0) {
			if (rc != CT_SKIP)
				break;
			rc = 0;
			continue;
		}
		size_t nk = 0;
		for (uint32_t c = t->nodes[v].first_child; c != CT_NONE; c = t->nodes[c].next_sibling) {
			if (XP_GROW(kids, kcap, nk + 1) < 0) {
				rc = -ENOMEM;
				goto out;
			}
			kids[nk++] = c;
		}
		if (nk > 1)	/* a leaf has no array to sort (kids is still NULL) */
			qsort_r(kids, nk, sizeof(*kids), cmp_children, &sc);
		for (size_t i = nk; i-- > 0;)
			stk[ns++] = kids[i];
	}
out:
	free(stk);
	free(kids);
	return rc;
}

int ct_fn_totals(const struct ct_tree *t, struct ct_fn_total *out, uint32_t nout)
{
	memset(out, 0, (size_t)nout * sizeof(*out));
	for (uint32_t v = 1; v < t->n; v++) {
		const struct ct_node *nd = &t->nodes[v];
		if (nd->fn >= nout || !nd->lvl)	/* lvl 0: unlinked by reparenting */
			continue;
		struct ct_fn_total *o = &out[nd->fn];
		o->seen = true;
		o->exact |= !nd->sampled;
		o->calls += nd->calls;
		for (unsigned m = 0; m < t->nm; m++)
			o->base[m] += ct_base(t, v, m);
		if (nd->rl == 1) {
			for (unsigned m = 0; m < t->nm; m++)
				o->cum[m] += ct_cum(t, v, m);
		}
	}
	return 0;
}

/* Splitting one event node's Base: its sampled descendants (not below another event
 * node) get Base[m] * their Base[by] / the total Base[by] of node and descendants,
 * rounded down; the node keeps the rest, so nothing is lost to rounding. */
static int apportion_node(struct ct_tree *t, uint32_t node, unsigned m, unsigned by, uint32_t **stk,
			  uint32_t *cap, uint32_t **sub, uint32_t *subcap)
{
	unsigned nm = t->nm;
	uint64_t total = t->base[(size_t)node * nm + by], share = t->base[(size_t)node * nm + m];
	uint32_t ns = 0, nsub = 0;

	for (uint32_t c = t->nodes[node].first_child; c != CT_NONE; c = t->nodes[c].next_sibling)
		if (t->nodes[c].sampled) {
			if (XP_GROW(*stk, *cap, ns + 1) < 0)
				return -ENOMEM;
			(*stk)[ns++] = c;
		}
	while (ns) {
		uint32_t v = (*stk)[--ns];
		if (XP_GROW(*sub, *subcap, nsub + 1) < 0)
			return -ENOMEM;
		(*sub)[nsub++] = v;
		total += t->base[(size_t)v * nm + by];
		for (uint32_t c = t->nodes[v].first_child; c != CT_NONE; c = t->nodes[c].next_sibling)
			if (t->nodes[c].sampled) {
				if (XP_GROW(*stk, *cap, ns + 1) < 0)
					return -ENOMEM;
				(*stk)[ns++] = c;
			}
	}
	if (!nsub || !total || !share)
		return 0;
	uint64_t given = 0;
	for (uint32_t i = 0; i < nsub; i++) {
		uint64_t *b = &t->base[(size_t)(*sub)[i] * nm];
		uint64_t part = (uint64_t)((unsigned __int128)share * b[by] / total);
		b[m] += part;
		given += part;
	}
	t->base[(size_t)node * nm + m] = share - given;
	return 0;
}

int ct_apportion(struct ct_tree *t, unsigned m, unsigned by)
{
	uint32_t *stk = NULL, *sub = NULL, cap = 0, subcap = 0;
	int rc = 0;

	if (m >= t->nm || by >= t->nm)
		return -EINVAL;
	for (uint32_t v = 0; v < t->n && rc == 0; v++)
		if (!t->nodes[v].sampled && (v == CT_ROOT || t->nodes[v].parent != CT_NONE))
			rc = apportion_node(t, v, m, by, &stk, &cap, &sub, &subcap);
	free(stk);
	free(sub);
	return rc < 0 ? -ENOMEM : 0;
}

/* Saturating: the costs of a damaged feature clamp instead of wrapping round. */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
	unsigned __int128 p = (unsigned __int128)a * b;

	return p > UINT64_MAX ? UINT64_MAX : (uint64_t)p;
}

/* Pushes node v's children onto *stk. */
static int push_children(const struct ct_tree *t, uint32_t v, uint32_t **stk, uint32_t *cap, uint32_t *n)
{
	for (uint32_t c = t->nodes[v].first_child; c != CT_NONE; c = t->nodes[c].next_sibling) {
		if (XP_GROW(*stk, *cap, *n + 1) < 0)
			return -ENOMEM;
		(*stk)[(*n)++] = c;
	}
	return 0;
}

int ct_compensate(struct ct_tree *t, unsigned m, uint64_t caller, uint64_t callee, uint32_t spill,
		  uint64_t *sub)
{
	uint32_t *stk = NULL, cap = 0, ns = 0, *walk = NULL, wcap = 0, nw = 0;
	int rc = 0;

	*sub = 0;
	if (m >= t->nm)
		return -EINVAL;
	/* from the root through the tree (subtrees unlinked by reparenting are not
	 * reached): an event node's caller is the nearest event node above it, or the
	 * root, through any sampled nodes between (the callers of an outermost probe,
	 * from its entry's callchain) */
	if (XP_GROW(stk, cap, 1) < 0)
		return -ENOMEM;
	stk[ns++] = CT_ROOT;
	while (ns && rc == 0) {
		uint32_t v = stk[--ns];
		uint64_t cost = mul_sat(t->nodes[v].calls, callee);
		rc = push_children(t, v, &walk, &wcap, &nw);
		while (nw && rc == 0) {
			uint32_t c = walk[--nw];
			if (t->nodes[c].sampled) {
				rc = push_children(t, c, &walk, &wcap, &nw);
				continue;
			}
			uint64_t add = mul_sat(t->nodes[c].calls, caller);
			cost = cost + add < cost ? UINT64_MAX : cost + add;
			if (XP_GROW(stk, cap, ns + 1) < 0)
				rc = -ENOMEM;
			else
				stk[ns++] = c;
		}
		uint64_t *b = &t->base[(size_t)v * t->nm + m], take = cost < *b ? cost : *b;
		uint32_t s = spill == CT_NONE ? CT_NONE : ct_find_child(t, v, spill);
		*b -= take;
		*sub += take;
		if (take < cost && s != CT_NONE && t->nodes[s].sampled) {
			uint64_t *sb = &t->base[(size_t)s * t->nm + m], more = cost - take;
			more = more < *sb ? more : *sb;
			*sb -= more;
			*sub += more;
		}
	}
	free(stk);
	free(walk);
	return rc;
}

uint64_t ct_leaf_window(const struct ct_tree *t, unsigned m, uint64_t min_calls)
{
	uint64_t best = 0;

	if (m >= t->nm)
		return 0;
	for (uint32_t v = 1; v < t->n; v++) {
		const struct ct_node *nd = &t->nodes[v];
		uint32_t c = nd->first_child;
		if (nd->sampled || nd->parent == CT_NONE || nd->calls < min_calls || !nd->calls)
			continue;
		while (c != CT_NONE && t->nodes[c].sampled)
			c = t->nodes[c].next_sibling;
		if (c != CT_NONE)
			continue;	/* an event child: its hits are in this window too */
		uint64_t w = t->base[(size_t)v * t->nm + m] / nd->calls;
		if (!best || w < best)
			best = w;
	}
	return best;
}
