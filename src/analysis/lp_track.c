/* The loop analysis over the stream (lp.h): each thread's frames (a call's block starts
 * a frame, a return ends one; a block of another function returns to the frame of it
 * below, or starts one: a tail call, a signal handler's return), in pass 1 for the
 * graphs, in pass 2 for the entries and trips of the loops. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/lp_int.h"
#include "util/xp_grow.h"

/* how far below the top a block looks for its function's frame */
#define LP_SEARCH 64

struct lp *lp_new(const struct lp_env *env)
{
	struct lp *a = calloc(1, sizeof(*a));
	if (a)
		a->env = *env;
	return a;
}

void lp_free(struct lp *a)
{
	if (!a)
		return;
	for (uint32_t i = 0; i < a->nfuncs; i++)
		lp_func_free(&a->funcs[i]);
	for (uint32_t i = 0; i < a->nthreads; i++)
		free(a->threads[i].fr);
	for (uint32_t i = 0; i < a->nloops; i++)
		xp_map_free(&a->trips[i].count_of);
	free(a->funcs);
	free(a->threads);
	free(a->loops);
	free(a->trips);
	free(a->out);
	xp_map_free(&a->func_of);
	xp_map_free(&a->thread_of);
	free(a);
}

/* An entry of loop l ends after `trips` executions of its header. */
static void end_entry(struct lp *a, uint32_t l, uint64_t trips)
{
	struct lp_loop *lo = &a->loops[l];
	struct lp_trips *t = &a->trips[l];
	uint64_t c = 0;
	if (!trips)	/* entered past its header (the trace began inside) and left */
		return;
	lo->entries++;
	lo->trips_min = trips < lo->trips_min ? trips : lo->trips_min;
	lo->trips_max = trips > lo->trips_max ? trips : lo->trips_max;
	lo->hist[63 - __builtin_clzll(trips)]++;
	if (t->overflow)
		return;
	bool known = xp_map_get(&t->count_of, trips, &c);
	if ((!known && xp_map_count(&t->count_of) >= LP_MAX_DISTINCT) || xp_map_put(&t->count_of, trips, c + 1) < 0)
		t->overflow = true;
}

static void end_frame(struct lp *a, struct lp_frame *fr)
{
	while (fr->nact) {
		fr->nact--;
		end_entry(a, fr->act[fr->nact].loop, fr->act[fr->nact].trips);
	}
}

static struct lp_thread *thread_of(struct lp *a, int32_t tid)
{
	uint64_t v;
	if (xp_map_get(&a->thread_of, (uint64_t)(uint32_t)tid, &v))
		return &a->threads[v - 1];
	if (XP_GROW(a->threads, a->capthreads, a->nthreads + 1) < 0 ||
	    xp_map_put(&a->thread_of, (uint64_t)(uint32_t)tid, a->nthreads + 1) < 0)
		return NULL;
	a->threads[a->nthreads] = (struct lp_thread){ 0 };
	return &a->threads[a->nthreads++];
}

static struct lp_frame *push(struct lp *a, struct lp_thread *t, uint32_t fn)
{
	if (t->n == LP_MAX_FRAMES) {	/* runaway recursion: the top is replaced */
		end_frame(a, &t->fr[t->n - 1]);
		t->n--;
	}
	if (XP_GROW(t->fr, t->cap, t->n + 1) < 0)
		return NULL;
	struct lp_frame *fr = &t->fr[t->n++];
	fr->fn = fn;
	fr->last_end = 0;
	fr->nact = 0;
	return fr;
}

static void pop_to(struct lp *a, struct lp_thread *t, uint32_t n)
{
	while (t->n > n)
		end_frame(a, &t->fr[--t->n]);
}

/* The frame a block of function fn runs in; *fresh when it begins there. */
static struct lp_frame *frame_for(struct lp *a, struct lp_thread *t, uint32_t fn, bool *fresh)
{
	*fresh = false;
	if (t->n) {
		struct lp_frame *top = &t->fr[t->n - 1];
		if (top->fn == LP_PENDING) {
			top->fn = fn;
			*fresh = true;
			return top;
		}
		if (top->fn == fn)
			return top;
		for (uint32_t k = t->n - 1, lim = t->n > LP_SEARCH ? t->n - LP_SEARCH : 0; k-- > lim;)
			if (t->fr[k].fn == fn) {
				pop_to(a, t, k + 1);
				return &t->fr[k];
			}
	}
	*fresh = true;
	return push(a, t, fn);
}

/* Whether loop m holds loop l (or is it). */
static bool holds(const struct lp *a, uint32_t m, uint32_t l)
{
	for (; l != LP_NONE; l = a->loops[l].parent)
		if (l == m)
			return true;
	return false;
}

/* Pass 2: node i of f runs in frame fr. */
static void visit(struct lp *a, struct lp_func *f, struct lp_frame *fr, uint32_t i)
{
	uint32_t l = f->inner[i], chain[LP_MAX_NEST], n = 0, m;

	f->visits[i]++;
	while (fr->nact && !holds(a, fr->act[fr->nact - 1].loop, l)) {
		fr->nact--;
		end_entry(a, fr->act[fr->nact].loop, fr->act[fr->nact].trips);
	}
	if (l == LP_NONE)
		return;
	uint32_t top = fr->nact ? fr->act[fr->nact - 1].loop : LP_NONE;
	for (m = l; m != top && m != LP_NONE && n < LP_MAX_NEST; m = a->loops[m].parent)
		chain[n++] = m;
	if (m != top || fr->nact + n > LP_MAX_NEST)
		return;	/* nested deeper than followed */
	while (n)
		fr->act[fr->nact++] = (struct lp_act){ chain[--n], 0 };
	if (a->loops[l].header == f->lead[i]) {
		fr->act[fr->nact - 1].trips++;
		a->loops[l].iterations++;
	}
}

static uint32_t first_node(const struct lp_func *f, uint64_t ip)
{
	uint32_t lo = 0, hi = f->nlead;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (f->lead[mid] < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static int block(struct lp *a, struct lp_thread *t, const struct xev *ev)
{
	uint64_t start = 0, key = a->env.fn(a->env.ctx, ev->pid, ev->time, ev->ip, &start);
	uint32_t fn = key ? lp_func_index(a, key, start, ev) : LP_NONE;
	bool fresh;
	if (key && fn == LP_NONE && !a->found)
		return -ENOMEM;
	struct lp_frame *fr = frame_for(a, t, fn, &fresh);
	if (!fr)
		return -ENOMEM;
	if (fn == LP_NONE) {
		fr->last_end = 0;
		return 0;
	}
	struct lp_func *f = &a->funcs[fn];
	if (!a->found)
		return lp_record(f, fr, fresh, ev);
	uint32_t i = first_node(f, ev->ip);
	/* a block spanning several nodes (entered at its start, run through) shares its
	 * cycles by their instructions, as --blocks splits it; the last takes the rest */
	bool cyc = ev->cycles != XEV_CYCLES_UNKNOWN && ev->insns;
	uint64_t left = cyc ? ev->cycles : 0;
	a->has_cycles |= cyc;
	for (; i < f->nlead && f->lead[i] <= ev->end; i++) {
		if (cyc) {
			bool last = i + 1 == f->nlead || f->lead[i + 1] > ev->end;
			uint64_t part = last ? left : ev->cycles * f->nins[i] / ev->insns;
			part = part < left ? part : left;
			f->cycles[i] += part;
			left -= part;
		}
		visit(a, f, fr, i);
	}
	return 0;
}

int lp_event(void *ctx, const struct xev *ev)
{
	struct lp *a = ctx;
	struct lp_thread *t;

	if (ev->kind == XEV_SAMPLE || ev->kind == XEV_TIME || ev->kind == XEV_BRANCH)
		return 0;
	if (!(t = thread_of(a, ev->tid)))
		return -ENOMEM;
	switch (ev->kind) {
	case XEV_BLOCK:
		if (ev->flags & XEV_F_ABORTED) {	/* undone: as if it had not run */
			if (t->n)
				t->fr[t->n - 1].last_end = 0;
			return 0;
		}
		return block(a, t, ev);
	case XEV_CALL:
	case XEV_INTERRUPT:
		if (ev->flags & XEV_F_FUNC)
			return 0;
		return t->n && t->fr[t->n - 1].fn == LP_PENDING ? 0 : push(a, t, LP_PENDING) ? 0 : -ENOMEM;
	case XEV_RETURN:
		if (!(ev->flags & XEV_F_FUNC) && t->n)
			pop_to(a, t, t->n - 1);
		return 0;
	case XEV_GAP:
		pop_to(a, t, 0);
		return 0;
	default:	/* tracing paused or ended: no edge across */
		if (t->n)
			t->fr[t->n - 1].last_end = 0;
		return 0;
	}
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return a < b ? -1 : a > b;
}

/* The lower median of the entries' trips: exact from the distinct values, else the
 * lower end of the histogram bucket holding it. */
static int median(struct lp_loop *l, struct lp_trips *t)
{
	uint64_t want = (l->entries - 1) / 2, seen = 0;
	if (!l->entries)
		return 0;
	if (t->overflow) {
		for (unsigned b = 0; b < LP_HIST; b++) {
			seen += l->hist[b];
			if (seen > want) {
				l->trips_median = 1ull << b;
				break;
			}
		}
		l->median_approx = true;
		return 0;
	}
	size_t n = xp_map_count(&t->count_of), it = 0, k = 0;
	uint64_t *v = malloc((n ? n : 1) * sizeof(*v)), key, c;
	if (!v)
		return -ENOMEM;
	while (xp_map_next(&t->count_of, &it, &key, &c))
		v[k++] = key;
	qsort(v, n, sizeof(*v), cmp_u64);
	for (k = 0; k < n; k++) {
		xp_map_get(&t->count_of, v[k], &c);
		seen += c;
		if (seen > want) {
			l->trips_median = v[k];
			break;
		}
	}
	free(v);
	return 0;
}

/* Each loop's header position and first line. */
static void lines(struct lp *a)
{
	for (uint32_t l = 0; l < a->nloops; l++) {
		struct lp_loop *lo = &a->loops[l];
		if (a->env.srcline(a->env.ctx, lo->pid, lo->time, lo->header, &lo->file, &lo->line))
			lo->first_line = lo->line;
		else
			lo->file = NULL;
	}
	for (uint32_t i = 0; i < a->nfuncs; i++) {
		struct lp_func *f = &a->funcs[i];
		for (uint32_t k = 0; k < f->nlead; k++)
			for (uint32_t l = f->inner[k]; l != LP_NONE; l = a->loops[l].parent) {
				struct lp_loop *lo = &a->loops[l];
				int line = lo->file ? a->env.min_line(a->env.ctx, f->pid, f->time, f->lead[k], f->nend[k],
								      lo->header) : 0;
				if (line > 0 && line < lo->first_line)
					lo->first_line = line;
			}
	}
}

struct ord {
	uint64_t fn_insns, fn, fn_start, header;
	uint32_t loop;
};

static int by_fn(const void *x, const void *y)
{
	const struct ord *a = x, *b = y;
	if (a->fn_insns != b->fn_insns)
		return a->fn_insns < b->fn_insns ? 1 : -1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	if (a->fn_start != b->fn_start)
		return a->fn_start < b->fn_start ? -1 : 1;
	return a->header < b->header ? -1 : a->header > b->header;
}

/* Appends loop l and the loops inside it (by address) to out. */
static void emit(struct lp *a, const struct ord *o, uint32_t n, uint32_t l, uint32_t parent, uint32_t *nout,
		 uint32_t *newidx)
{
	newidx[l] = *nout;
	a->out[*nout] = a->loops[l];
	a->out[(*nout)++].parent = parent;
	for (uint32_t k = 0; k < n; k++)
		if (a->loops[o[k].loop].parent == l)
			emit(a, o, n, o[k].loop, newidx[l], nout, newidx);
}

int lp_loops(struct lp *a, const struct lp_loop **out)
{
	for (uint32_t i = 0; i < a->nthreads; i++)
		pop_to(a, &a->threads[i], 0);
	/* instructions: each node's runs to its loops and its function */
	for (uint32_t i = 0; i < a->nfuncs; i++) {
		struct lp_func *f = &a->funcs[i];
		uint64_t total = 0;
		for (uint32_t k = 0; k < f->nlead; k++) {
			uint64_t c = f->visits[k] * f->nins[k];
			total += c;
			for (uint32_t l = f->inner[k]; l != LP_NONE; l = a->loops[l].parent) {
				a->loops[l].insns += c;
				a->loops[l].cycles += f->cycles[k];
			}
		}
		for (uint32_t l = 0; l < a->nloops; l++)
			if (a->loops[l].fn == f->key && a->loops[l].fn_start == f->start)
				a->loops[l].fn_insns = total;
	}
	lines(a);
	struct ord *o = malloc((a->nloops ? a->nloops : 1) * sizeof(*o));
	uint32_t *newidx = malloc((a->nloops ? a->nloops : 1) * sizeof(*newidx));
	free(a->out);
	a->out = malloc((a->nloops ? a->nloops : 1) * sizeof(*a->out));
	int r = o && newidx && a->out ? 0 : -ENOMEM;
	uint32_t n = 0, nout = 0;
	for (uint32_t l = 0; r == 0 && l < a->nloops; l++) {
		struct lp_loop *lo = &a->loops[l];
		if (lo->trips_min == UINT64_MAX)
			lo->trips_min = 0;
		r = median(lo, &a->trips[l]);
		if (lo->iterations)	/* a loop whose header never ran is no loop of the run */
			o[n++] = (struct ord){ lo->fn_insns, lo->fn, lo->fn_start, lo->header, l };
	}
	if (r == 0) {
		qsort(o, n, sizeof(*o), by_fn);
		for (uint32_t k = 0; k < n; k++) {
			uint32_t p = a->loops[o[k].loop].parent;
			if (p == LP_NONE || !a->loops[p].iterations)
				emit(a, o, n, o[k].loop, LP_NONE, &nout, newidx);
		}
	}
	free(o);
	free(newidx);
	if (r < 0)
		return r;
	*out = a->out;
	return (int)nout;
}

bool lp_has_cycles(const struct lp *a)
{
	return a->has_cycles;
}
