/* --format callgrind for exact (PT) streams: per-instruction Ir (and Cycles when the
 * trace has them) with exact calls= counts and inclusive call costs, in callgrind's
 * format with `positions: instr` (KCachegrind, callgrind_annotate).
 *
 * Functions are known from the trace itself: a call target starts a function (its
 * symbol names it when there is one).  A shadow stack per thread attributes blocks to
 * the function running them and measures each call's inclusive cost.  Returns that skip
 * frames (longjmp) pop to the frame they return into; a return below the first frame
 * (the trace started mid-stack) continues in an anonymous caller; tracing that resumes
 * in a caller (after a call out of an address filter) returns to it; a gap empties the
 * stack.  Memory grows with distinct blocks, functions and call sites, not the trace. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "views/bb_views.h"
#include "output/out.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

/* A map key for a triple.  Triples may share one: the entries' own fields tell them
 * apart, and a new triple takes the next key the map does not hold. */
static uint64_t key3(uint64_t a, uint64_t b, uint64_t c)
{
	return xp_hash_bits(xp_hash_bits(a, 64) ^ b, 64) ^ c;
}

struct fn {
	uint64_t start;		/* key address (symbol start, call target, or return target) */
	char *name;
};

struct blk {
	uint32_t fn;
	int32_t pid;
	uint64_t start, end, count, cycles, time;
};

struct edge {
	uint32_t caller, callee;
	uint64_t site;		/* address of the call */
	uint64_t calls, ir, cycles;
};

struct frame {
	uint32_t fn;		/* the caller, resumed on return */
	uint32_t edge;
	uint64_t site, ir0, cyc0;
};

struct thread {
	int32_t tid;
	uint32_t cur;		/* function running now, UINT32_MAX unknown */
	struct frame *st;
	size_t depth, cap;
	uint64_t ir, cyc;	/* running totals */
	bool jumped;		/* last transfer was a jump (tail call candidate) */
	uint64_t jump_ip;
};

struct bb_cg {
	const struct bb_env *env;
	struct fn *fns;
	size_t nfns, capfns;
	struct xp_map fn_by_addr;
	struct blk *blks;
	size_t nblks, capblks;
	struct xp_map blk_by_key;	/* key3(fn, start, end) -> index in blks */
	struct edge *edges;
	size_t nedges, capedges;
	struct xp_map edge_by_key;	/* key3(caller, callee, site) -> index in edges */
	struct thread *threads;
	size_t nthreads, capthreads;
	bool cycles;
};

struct bb_cg *bb_cg_new(const struct bb_env *env)
{
	struct bb_cg *cg = calloc(1, sizeof(*cg));
	if (cg)
		cg->env = env;
	return cg;
}

void bb_cg_free(struct bb_cg *cg)
{
	if (!cg)
		return;
	for (size_t i = 0; i < cg->nfns; i++)
		free(cg->fns[i].name);
	free(cg->fns);
	xp_map_free(&cg->fn_by_addr);
	free(cg->blks);
	xp_map_free(&cg->blk_by_key);
	free(cg->edges);
	xp_map_free(&cg->edge_by_key);
	for (size_t i = 0; i < cg->nthreads; i++)
		free(cg->threads[i].st);
	free(cg->threads);
	free(cg);
}

/* The function keyed by `addr`; named by the symbol holding it when there is one. */
static uint32_t fn_at(struct bb_cg *cg, const struct xev *ev, uint64_t addr, bool is_entry)
{
	const struct bb_env *env = cg->env;
	uint64_t start = 0, size = 0;
	const char *name = env && env->symbol ?
		env->symbol(env->ctx, ev->pid, ev->time, addr, &start, &size) : NULL;
	uint64_t key = name ? start : addr;
	uint64_t id;
	if (xp_map_get(&cg->fn_by_addr, key, &id))
		return (uint32_t)id;
	if (XP_GROW(cg->fns, cg->capfns, cg->nfns + 1) < 0)
		return UINT32_MAX;
	char buf[600];
	if (name)
		snprintf(buf, sizeof(buf), "%s", name);
	else
		snprintf(buf, sizeof(buf), is_entry ? "%#lx" : "[caller of %#lx]", (unsigned long)addr);
	cg->fns[cg->nfns] = (struct fn){ key, strdup(buf) };
	id = cg->nfns++;
	if (xp_map_put(&cg->fn_by_addr, key, id) < 0)
		return UINT32_MAX;
	return (uint32_t)id;
}

/* The function a symbol names at `addr`, when the stream has entered it already. */
static bool fn_named(struct bb_cg *cg, const struct xev *ev, uint64_t addr, uint32_t *id)
{
	const struct bb_env *env = cg->env;
	uint64_t start = 0, size = 0, found;
	if (!env || !env->symbol || !env->symbol(env->ctx, ev->pid, ev->time, addr, &start, &size) ||
	    !xp_map_get(&cg->fn_by_addr, start, &found))
		return false;
	*id = (uint32_t)found;
	return true;
}

/* The depth + 1 of the frame whose call precedes the return address `addr` (a call
 * is <= 15 bytes), 0 when none; frames above it are skipped (longjmp, exceptions). */
static size_t returned_to(const struct thread *t, uint64_t addr)
{
	size_t d = t->depth;
	while (d > 0 && !(addr > t->st[d - 1].site && addr - t->st[d - 1].site <= 15))
		d--;
	return d;
}

static struct thread *thread_of(struct bb_cg *cg, int32_t tid)
{
	for (size_t i = 0; i < cg->nthreads; i++)
		if (cg->threads[i].tid == tid)
			return &cg->threads[i];
	if (XP_GROW(cg->threads, cg->capthreads, cg->nthreads + 1) < 0)
		return NULL;
	struct thread *t = &cg->threads[cg->nthreads++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->cur = UINT32_MAX;
	return t;
}

static uint32_t edge_of(struct bb_cg *cg, uint32_t caller, uint64_t site, uint32_t callee)
{
	uint64_t k = key3(caller, callee, site), i;
	for (; xp_map_get(&cg->edge_by_key, k, &i); k++) {
		const struct edge *e = &cg->edges[i];
		if (e->caller == caller && e->callee == callee && e->site == site)
			return (uint32_t)i;
	}
	if (XP_GROW(cg->edges, cg->capedges, cg->nedges + 1) < 0)
		return UINT32_MAX;
	i = cg->nedges;
	cg->edges[i] = (struct edge){ caller, callee, site, 0, 0, 0 };
	if (xp_map_put(&cg->edge_by_key, k, i) < 0)
		return UINT32_MAX;
	cg->nedges++;
	return (uint32_t)i;
}

static int push(struct bb_cg *cg, struct thread *t, uint64_t site, uint32_t callee)
{
	uint32_t e = edge_of(cg, t->cur, site, callee);
	if (e == UINT32_MAX || XP_GROW(t->st, t->cap, t->depth + 1) < 0)
		return -ENOMEM;
	cg->edges[e].calls++;
	t->st[t->depth++] = (struct frame){ t->cur, e, site, t->ir, t->cyc };
	t->cur = callee;
	return 0;
}

static void pop(struct bb_cg *cg, struct thread *t)
{
	struct frame *f = &t->st[--t->depth];
	cg->edges[f->edge].ir += t->ir - f->ir0;
	cg->edges[f->edge].cycles += t->cyc - f->cyc0;
	t->cur = f->fn;
}

static int add_block(struct bb_cg *cg, struct thread *t, const struct xev *ev)
{
	uint64_t k = key3(t->cur, ev->ip, ev->end), i;
	struct blk *b;
	for (; xp_map_get(&cg->blk_by_key, k, &i); k++) {
		b = &cg->blks[i];
		if (b->fn == t->cur && b->start == ev->ip && b->end == ev->end)
			goto found;
	}
	if (XP_GROW(cg->blks, cg->capblks, cg->nblks + 1) < 0)
		return -ENOMEM;
	i = cg->nblks;
	b = &cg->blks[i];
	*b = (struct blk){ t->cur, ev->pid, ev->ip, ev->end, 0, 0, ev->time };
	if (xp_map_put(&cg->blk_by_key, k, i) < 0)
		return -ENOMEM;
	cg->nblks++;
found:
	b->count++;
	t->ir += ev->insns;
	if (ev->cycles != XEV_CYCLES_UNKNOWN) {
		b->cycles += ev->cycles;
		t->cyc += ev->cycles;
		cg->cycles = true;
	}
	return 0;
}

int bb_cg_event(void *ctx, const struct xev *ev)
{
	struct bb_cg *cg = ctx;
	if (ev->flags & XEV_F_ABORTED)
		return 0;	/* undone by its transaction's abort: as if it had not run */
	struct thread *t = thread_of(cg, ev->tid);
	if (!t)
		return -ENOMEM;
	switch (ev->kind) {
	case XEV_BLOCK:
		if (t->cur == UINT32_MAX) {
			t->cur = fn_at(cg, ev, ev->ip, true);
		} else if (t->jumped && cg->env && cg->env->symbol) {
			/* a jump into another function's entry is a tail call: a frame whose
			 * site is the jump; the callee's return pops it together with the
			 * frame of the call it returns from */
			uint32_t f = fn_at(cg, ev, ev->ip, true);
			if (f != t->cur && cg->fns[f].start == ev->ip && push(cg, t, t->jump_ip, f) < 0)
				return -ENOMEM;
		}
		t->jumped = false;
		if (t->cur == UINT32_MAX)
			return -ENOMEM;
		return add_block(cg, t, ev);
	case XEV_CALL:
		t->jumped = false;
		if (t->cur == UINT32_MAX)
			t->cur = fn_at(cg, ev, ev->ip, true);
		return push(cg, t, ev->ip, fn_at(cg, ev, ev->addr, true));
	case XEV_RETURN: {
		t->jumped = false;
		size_t d = returned_to(t, ev->addr);
		if (d == 0) {
			if (ev->addr) {
				/* below the first frame we saw: an anonymous caller */
				t->depth = 0;
				t->cur = fn_at(cg, ev, ev->addr, false);
			}
			return 0;
		}
		while (t->depth >= d)
			pop(cg, t);
		return 0;
	}
	case XEV_BRANCH:
		t->jumped = !(ev->flags & XEV_F_COND);
		t->jump_ip = ev->ip;
		return 0;
	case XEV_ENABLE: {
		/* tracing resumes where a call out of the traced code (an address filter)
		 * came back: in a function deeper on the stack, or right after one of its
		 * call sites when there are no symbols, that is the return to it */
		t->jumped = false;
		uint32_t f;
		size_t d = 0;
		if (fn_named(cg, ev, ev->ip, &f)) {
			for (d = t->depth; d > 0 && t->st[d - 1].fn != f; d--)
				;
			if (f == t->cur)
				d = 0;
		} else {
			d = returned_to(t, ev->ip);
		}
		while (d && t->depth >= d)
			pop(cg, t);
		return 0;
	}
	case XEV_GAP:
		while (t->depth)
			pop(cg, t);
		t->cur = UINT32_MAX;
		t->jumped = false;
		return 0;
	default:
		return 0;
	}
}

struct cost {
	uint64_t ip, ir;
	double cyc;
};

static int by_ip(const void *a, const void *b)
{
	const struct cost *x = a, *y = b;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

static int by_fn(const void *a, const void *b)
{
	const struct blk *x = a, *y = b;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static int edge_by_caller(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	if (x->caller != y->caller)
		return x->caller < y->caller ? -1 : 1;
	return (x->site > y->site) - (x->site < y->site);
}

int bb_cg_write(struct bb_cg *cg, FILE *out, const char *cmd)
{
	/* frames still open at the end of the trace count what ran so far */
	for (size_t i = 0; i < cg->nthreads; i++)
		while (cg->threads[i].depth)
			pop(cg, &cg->threads[i]);
	struct x86_dis dis;
	if (x86_dis_init(&dis) < 0)
		return -EIO;
	if (cg->nblks)	/* (NULL arrays when empty: qsort's are declared non-null) */
		qsort(cg->blks, cg->nblks, sizeof(*cg->blks), by_fn);
	if (cg->nedges)
		qsort(cg->edges, cg->nedges, sizeof(*cg->edges), edge_by_caller);
	uint64_t tot_ir = 0;
	double tot_cyc = 0;
	static const char *const events[] = { "Ir", "Cycles" };
	struct out_cg w;

	out_cg_begin(&w, out, true, cmd, events, cg->cycles ? 2 : 1, NULL);
	for (size_t i = 0; i < cg->nfns; i++) {
		if (i == 0)
			out_cg_name(&w, "fl", &(struct out_cg_name){ 1, "???" });
		out_cg_name(&w, "fn", &(struct out_cg_name){ (uint32_t)i + 1, cg->fns[i].name });
	}

	size_t bi = 0, ei = 0;
	struct cost *costs = NULL;
	size_t ncost = 0, capcost = 0;
	for (uint32_t f = 0; f < cg->nfns; f++) {
		ncost = 0;
		for (; bi < cg->nblks && cg->blks[bi].fn == f; bi++) {
			const struct blk *b = &cg->blks[bi];
			uint64_t ninsn = 0;
			size_t first = ncost;
			for (uint64_t ip = b->start; ip <= b->end;) {
				uint8_t buf[X86_MAX_INSN];
				struct x86_instr in;
				size_t n = cg->env && cg->env->read ?
					cg->env->read(cg->env->ctx, b->pid, b->time, ip, buf, sizeof(buf)) : 0;
				if (XP_GROW(costs, capcost, ncost + 1) < 0)
					goto fail;
				costs[ncost++] = (struct cost){ ip, b->count, 0 };
				ninsn++;
				if (!n || x86_dis_one(&dis, buf, n, ip, &in) < 0)
					break;	/* no code: the block's cost stays on its first address */
				ip += in.size;
			}
			for (size_t k = first; k < ncost; k++)
				costs[k].cyc = (double)b->cycles / (double)ninsn;
		}
		if (ncost == 0 && (ei >= cg->nedges || cg->edges[ei].caller != f))
			continue;
		out_cg_fn(&w, &(struct out_cg_fn){ .fn = { f + 1, NULL } });
		qsort(costs, ncost, sizeof(*costs), by_ip);
		for (size_t k = 0; k < ncost;) {
			struct cost c = costs[k++];
			while (k < ncost && costs[k].ip == c.ip) {
				c.ir += costs[k].ir;
				c.cyc += costs[k++].cyc;
			}
			tot_ir += c.ir;
			tot_cyc += c.cyc;
			/* shares of a block's cycles, rounded as printf's %.0f rounds */
			out_cg_cost(&w, c.ip, (uint64_t[]){ c.ir, (uint64_t)llrint(c.cyc) });
		}
		for (; ei < cg->nedges && cg->edges[ei].caller == f; ei++) {
			const struct edge *e = &cg->edges[ei];
			out_cg_call(&w, &(struct out_cg_fn){ .fn = { e->callee + 1, NULL } }, e->calls,
				    cg->fns[e->callee].start, e->site, (uint64_t[]){ e->ir, e->cycles });
		}
	}
	out_cg_end(&w, (uint64_t[]){ tot_ir, (uint64_t)llrint(tot_cyc) });
	free(costs);
	x86_dis_fini(&dis);
	return 0;
fail:
	free(costs);
	x86_dis_fini(&dis);
	return -ENOMEM;
}
