/* Loops estimated from branch stacks (lpe.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/lpe.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

struct lpe {
	struct lp_env env;
	struct lpe_loop *loops;
	uint32_t nloops, cap;
	struct xp_map loop_of;	/* hash of (fn, header, pid) -> index + 1 */
	uint32_t *win;		/* the window's back edges (loop indexes) */
	uint32_t nwin, capwin;
	uint64_t win_insns;
	bool win_range;		/* a range came in the window: branches end ranges now */
	struct lpe_loop *out;
};

struct lpe *lpe_new(const struct lp_env *env)
{
	struct lpe *a = calloc(1, sizeof(*a));
	if (a)
		a->env = *env;
	return a;
}

void lpe_free(struct lpe *a)
{
	if (!a)
		return;
	free(a->loops);
	free(a->win);
	free(a->out);
	xp_map_free(&a->loop_of);
	free(a);
}

/* The loop of a back edge, added when new; UINT32_MAX: no memory. */
static uint32_t loop_of(struct lpe *a, const struct xev *ev, uint64_t fn, uint64_t start)
{
	uint64_t h = xp_hash_key3(fn, ev->addr, (uint32_t)ev->pid), v;
	for (; xp_map_get(&a->loop_of, h, &v); h++) {
		struct lpe_loop *l = &a->loops[v - 1];
		if (l->l.fn == fn && l->l.header == ev->addr && l->l.pid == ev->pid) {
			if (ev->ip > l->src)
				l->src = ev->ip;
			return (uint32_t)(v - 1);
		}
	}
	if (XP_GROW(a->loops, a->cap, a->nloops + 1) < 0 || xp_map_put(&a->loop_of, h, a->nloops + 1) < 0)
		return UINT32_MAX;
	struct lpe_loop *l = &a->loops[a->nloops];
	memset(l, 0, sizeof(*l));
	l->l.fn = fn;
	l->l.fn_start = start;
	l->l.header = ev->addr;
	l->l.pid = ev->pid;
	l->l.time = ev->time;
	l->src = ev->ip;
	if (!a->env.srcline(a->env.ctx, ev->pid, ev->time, ev->addr, &l->l.file, &l->l.line))
		l->l.file = NULL;
	l->l.first_line = l->l.line;
	return a->nloops++;
}

/* The window ends: each back edge in it k times is k iterations seen, scaled. */
static void window_end(struct lpe *a, uint64_t period)
{
	if (a->win_insns) {
		double scale = (double)period / (double)a->win_insns;
		for (uint32_t i = 0; i < a->nwin; i++) {
			struct lpe_loop *l = &a->loops[a->win[i]];
			l->iterations += scale;
			l->seen++;
			/* a window counts once per loop: its first back edge in it */
			bool first = true;
			for (uint32_t j = 0; j < i && first; j++)
				first = a->win[j] != a->win[i];
			l->windows += first;
		}
	}
	a->nwin = 0;
	a->win_insns = 0;
	a->win_range = false;
}

int lpe_event(void *ctx, const struct xev *ev)
{
	struct lpe *a = ctx;
	uint64_t s1, s2, fn;

	switch (ev->kind) {
	case XEV_BLOCK:
		a->win_insns += ev->insns;
		a->win_range = true;
		return 0;
	case XEV_SAMPLE:
		window_end(a, ev->weight);
		return 0;
	case XEV_BRANCH:
		/* the window's oldest branch ends no range of it: counting it would see N
		 * branches in N - 1 ranges' instructions */
		if (!a->win_range || !(ev->flags & XEV_F_TAKEN) || ev->addr > ev->ip || (ev->flags & XEV_F_SYSCALL))
			return 0;
		fn = a->env.fn(a->env.ctx, ev->pid, ev->time, ev->ip, &s1);
		if (!fn || a->env.fn(a->env.ctx, ev->pid, ev->time, ev->addr, &s2) != fn || s1 != s2)
			return 0;
		uint32_t k = loop_of(a, ev, fn, s1);
		if (k == UINT32_MAX || XP_GROW(a->win, a->capwin, a->nwin + 1) < 0)
			return -ENOMEM;
		a->win[a->nwin++] = k;
		return 0;
	default:
		return 0;
	}
}

/* functions by their loops' estimated iterations, descending; in one, by header, the
 * wider span first (the outer loop of one header) */
static double *sort_fn_total;

static int cmp_loops(const void *x, const void *y)
{
	const struct lpe_loop *p = x, *q = y;
	if (p->l.fn != q->l.fn || p->l.pid != q->l.pid) {
		double a = sort_fn_total[p->l.parent], b = sort_fn_total[q->l.parent];
		if (a != b)
			return a > b ? -1 : 1;
		if (p->l.fn != q->l.fn)
			return p->l.fn < q->l.fn ? -1 : 1;
		return p->l.pid < q->l.pid ? -1 : 1;
	}
	if (p->l.header != q->l.header)
		return p->l.header < q->l.header ? -1 : 1;
	return p->src > q->src ? -1 : p->src < q->src;
}

int lpe_loops(struct lpe *a, const struct lpe_loop **out)
{
	uint32_t n = a->nloops;
	free(a->out);
	a->out = NULL;
	if (!n) {
		*out = NULL;
		return 0;
	}
	a->out = malloc(n * sizeof(*a->out));
	double *total = calloc(n, sizeof(*total));
	if (!a->out || !total) {
		free(total);
		return -ENOMEM;
	}
	memcpy(a->out, a->loops, n * sizeof(*a->out));
	/* each loop's function total, through the first loop of its function (parent
	 * holds that index until the nesting below replaces it) */
	for (uint32_t i = 0; i < n; i++) {
		uint32_t f = i;
		for (uint32_t j = 0; j < i; j++)
			if (a->out[j].l.fn == a->out[i].l.fn && a->out[j].l.pid == a->out[i].l.pid) {
				f = j;
				break;
			}
		a->out[i].l.parent = f;
		total[f] += a->out[i].iterations;
	}
	sort_fn_total = total;
	qsort(a->out, n, sizeof(*a->out), cmp_loops);
	free(total);
	/* nesting: the innermost earlier loop of the function whose span holds this one */
	for (uint32_t i = 0; i < n; i++) {
		struct lpe_loop *l = &a->out[i];
		l->l.parent = UINT32_MAX;
		l->l.depth = 1;
		for (uint32_t j = i; j-- > 0;) {
			const struct lpe_loop *p = &a->out[j];
			if (p->l.fn != l->l.fn || p->l.pid != l->l.pid)
				break;
			if (p->l.header <= l->l.header && l->src <= p->src) {
				l->l.parent = j;
				l->l.depth = p->l.depth + 1;
				break;
			}
		}
		l->l.iterations = (uint64_t)(l->iterations + 0.5);
		int first = a->env.min_line(a->env.ctx, l->l.pid, l->l.time, l->l.header, l->src + 1, l->l.header);
		if (first)
			l->l.first_line = first;
	}
	*out = a->out;
	return (int)n;
}
