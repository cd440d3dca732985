/* --format callgrind for exact (PT) streams: per-instruction Ir (and Cycles when the
 * trace has them) with exact calls= counts and inclusive call costs, in callgrind's
 * format with `positions: instr line` (KCachegrind, callgrind_annotate): each
 * function's object (ob=) and source file (fl=), each instruction's source line from
 * DWARF, fi= where it lies in another file (inlined code).
 *
 * Functions are known from the trace itself: a call target starts a function, named
 * as every report names it (its symbol, or "0x…" of its address in its file); a jump
 * or fall-through to the entry of another symbol enters that one.  A shadow stack per thread attributes blocks to
 * the function running them and measures each call's inclusive cost.  Returns that skip
 * frames (longjmp) pop to the frame they return into; a return below the first frame
 * (the trace started mid-stack) continues in an anonymous caller; tracing that resumes
 * in a caller (after a call out of an address filter) returns to it; a gap empties the
 * stack.  As in the call tree (tree_build.c): tracing that starts or resumes at a
 * function's first instruction (an address filter's entry) is a call of it from
 * untraced code, the first one's caller known when it returns; a signal handler is
 * called from the function it interrupted (ct_sig.h), returns into the trampoline (in
 * the signal's frame: an edge without calls) and sigreturn goes back to the
 * interrupted function.
 * Memory grows with distinct blocks, functions and call sites, not the trace. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "views/bb_views.h"
#include "analysis/ct_sig.h"
#include "output/out.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

struct fn {
	uint64_t start;		/* symbol start, or the address it was entered at */
	uint64_t size;		/* the symbol's (0: not named) */
	char *name;
	const char *module;	/* the env's, valid for the profile's life; NULL unknown */
	bool named;		/* a symbol holds it: start is the symbol's */
	bool defined;		/* its fn= name was written */
	int32_t pid;		/* where it was first seen (source lookups) */
	uint64_t time;
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
	int32_t pid;
	uint64_t time;
};

struct frame {
	uint32_t fn;		/* the caller, resumed on return */
	uint32_t edge;
	uint64_t site, ir0, cyc0;
	uint64_t sig;		/* a handler's or its trampoline's: the signal's id */
	bool tramp;		/* a signal trampoline's, which the handler returned into */
};

struct thread {
	int32_t tid;
	uint32_t cur;		/* function running now, UINT32_MAX unknown */
	struct frame *st;
	size_t depth, cap;
	uint64_t ir, cyc;	/* running totals */
	bool jumped;		/* last transfer was a jump (tail call candidate) */
	uint64_t jump_ip;
	bool begun;		/* a block, call or transfer of it was seen */
	/* its trace began at the entry of `cur` below every frame: a call whose caller
	 * the return out of it names (ir0/cyc0: the totals then) */
	bool entered;
	uint64_t entry_ir0, entry_cyc0;
	struct ct_sig sig;
	uint64_t tramp;		/* the signal whose handler returned into its trampoline */
};

struct bb_cg {
	const struct bb_env *env;
	struct fn *fns;
	size_t nfns, capfns;
	struct xp_map fn_by_key;	/* hash of (module, name) -> index in fns */
	struct xp_map fn_by_start;	/* symbol start -> index in fns (named ones) */
	struct blk *blks;
	size_t nblks, capblks;
	struct xp_map blk_by_key;	/* xp_hash_key3(fn, start, end) -> index in blks */
	struct edge *edges;
	size_t nedges, capedges;
	struct xp_map edge_by_key;	/* xp_hash_key3(caller, callee, site) -> index in edges */
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
	xp_map_free(&cg->fn_by_key);
	xp_map_free(&cg->fn_by_start);
	free(cg->blks);
	xp_map_free(&cg->blk_by_key);
	free(cg->edges);
	xp_map_free(&cg->edge_by_key);
	for (size_t i = 0; i < cg->nthreads; i++)
		free(cg->threads[i].st);
	free(cg->threads);
	free(cg);
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/* The function holding `addr`, named as the other reports name it. */
static uint32_t fn_at(struct bb_cg *cg, const struct xev *ev, uint64_t addr)
{
	const struct bb_env *env = cg->env;
	uint64_t start = 0, size = 0, id;
	const char *module = NULL;
	const char *name = env && env->fn_name ? env->fn_name(env->ctx, ev->pid, ev->time, addr, &module) : NULL;
	const char *sym = env && env->symbol ? env->symbol(env->ctx, ev->pid, ev->time, addr, &start, &size) : NULL;
	char buf[40];

	if (!name)
		name = sym;
	if (!name) {
		snprintf(buf, sizeof(buf), "%#" PRIx64, addr);
		name = buf;
	}
	uint64_t k = xp_hash_str(xp_hash_str(XP_HASH_STR_SEED, module ? module : ""), name);
	for (; xp_map_get(&cg->fn_by_key, k, &id); k++)
		if (same(cg->fns[id].module, module) && strcmp(cg->fns[id].name, name) == 0)
			return (uint32_t)id;
	if (XP_GROW(cg->fns, cg->capfns, cg->nfns + 1) < 0)
		return UINT32_MAX;
	char *copy = strdup(name);
	if (!copy)
		return UINT32_MAX;
	cg->fns[cg->nfns] = (struct fn){ sym ? start : addr, sym ? size : 0, copy, module, sym != NULL, false,
					 ev->pid, ev->time };
	if (sym && xp_map_put(&cg->fn_by_start, start, cg->nfns) < 0) {
		free(copy);
		return UINT32_MAX;
	}
	id = cg->nfns++;
	if (xp_map_put(&cg->fn_by_key, k, id) < 0)
		return UINT32_MAX;
	return (uint32_t)id;
}

/* The function a symbol names at `addr`, when the stream has entered it already. */
static bool fn_named(struct bb_cg *cg, const struct xev *ev, uint64_t addr, uint32_t *id)
{
	const struct bb_env *env = cg->env;
	uint64_t start = 0, size = 0, found;
	if (!env || !env->symbol || !env->symbol(env->ctx, ev->pid, ev->time, addr, &start, &size) ||
	    !xp_map_get(&cg->fn_by_start, start, &found))
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

static uint32_t edge_of(struct bb_cg *cg, const struct xev *ev, uint32_t caller, uint64_t site, uint32_t callee)
{
	uint64_t k = xp_hash_key3(caller, callee, site), i;
	for (; xp_map_get(&cg->edge_by_key, k, &i); k++) {
		const struct edge *e = &cg->edges[i];
		if (e->caller == caller && e->callee == callee && e->site == site)
			return (uint32_t)i;
	}
	if (XP_GROW(cg->edges, cg->capedges, cg->nedges + 1) < 0)
		return UINT32_MAX;
	i = cg->nedges;
	cg->edges[i] = (struct edge){ caller, callee, site, 0, 0, 0, ev->pid, ev->time };
	if (xp_map_put(&cg->edge_by_key, k, i) < 0)
		return UINT32_MAX;
	cg->nedges++;
	return (uint32_t)i;
}

/* A frame for callee above the running function; `count`: a call (a signal
 * trampoline's frame is entered by no call, its edge carries only the cost). */
static int enter(struct bb_cg *cg, struct thread *t, const struct xev *ev, uint64_t site, uint32_t callee,
		 bool count)
{
	uint32_t e = callee == UINT32_MAX ? UINT32_MAX : edge_of(cg, ev, t->cur, site, callee);
	if (e == UINT32_MAX || XP_GROW(t->st, t->cap, t->depth + 1) < 0)
		return -ENOMEM;
	cg->edges[e].calls += count;
	t->st[t->depth++] = (struct frame){ t->cur, e, site, t->ir, t->cyc, 0, !count };
	t->cur = callee;
	return 0;
}

static int push(struct bb_cg *cg, struct thread *t, const struct xev *ev, uint64_t site, uint32_t callee)
{
	return enter(cg, t, ev, site, callee, true);
}

static void pop(struct bb_cg *cg, struct thread *t)
{
	struct frame *f = &t->st[--t->depth];
	cg->edges[f->edge].ir += t->ir - f->ir0;
	cg->edges[f->edge].cycles += t->cyc - f->cyc0;
	t->cur = f->fn;
}

/* Is `addr` the first instruction of a function (a symbol's start)? */
static bool fn_entry(struct bb_cg *cg, const struct xev *ev, uint64_t addr)
{
	const struct bb_env *env = cg->env;
	uint64_t start = 0, size = 0;
	return env && env->symbol && env->symbol(env->ctx, ev->pid, ev->time, addr, &start, &size) &&
	       start == addr;
}

/* The first entry's caller is the function its return lands in (`to`, at `ret`):
 * the call is counted there, with what ran since as its inclusive cost. */
static int entered_from(struct bb_cg *cg, struct thread *t, const struct xev *ev, uint32_t to, uint64_t ret)
{
	/* the site: inside the call instruction before the return address (its line) */
	uint32_t e = edge_of(cg, ev, to, ret - 1, t->cur);
	if (e == UINT32_MAX)
		return -ENOMEM;
	cg->edges[e].calls++;
	cg->edges[e].ir += t->ir - t->entry_ir0;
	cg->edges[e].cycles += t->cyc - t->entry_cyc0;
	t->entered = false;
	return 0;
}

/* A signal's handler at `at` starts above the function it interrupted at `site`. */
static int sig_enter(struct bb_cg *cg, struct thread *t, const struct xev *ev, uint64_t site, uint64_t at,
		     uint64_t sig)
{
	if (t->cur == UINT32_MAX && (t->cur = fn_at(cg, ev, site)) == UINT32_MAX)
		return -ENOMEM;
	if (push(cg, t, ev, site, fn_at(cg, ev, at)) < 0)
		return -ENOMEM;
	t->st[t->depth - 1].sig = sig;
	t->jumped = false;
	return 0;
}

/* The topmost handler frame (not its trampoline's) + 1, 0 when none. */
static size_t handler_depth(const struct thread *t)
{
	for (size_t d = t->depth; d > 0; d--)
		if (t->st[d - 1].sig && !t->st[d - 1].tramp)
			return d;
	return 0;
}

/* Signal `id`'s frames end: the function it interrupted goes on.  False when it has
 * none (gone with a gap). */
static bool sig_leave(struct bb_cg *cg, struct thread *t, uint64_t id)
{
	for (size_t d = t->depth; d > 0; d--)
		if (t->st[d - 1].sig == id) {
			while (t->depth >= d)
				pop(cg, t);
			t->jumped = false;
			return true;
		}
	return false;
}

/* Signals: 1 when `ev` entered a handler or came back from one (handled), 0 else. */
static int sig_event(struct bb_cg *cg, struct thread *t, const struct xev *ev)
{
	uint64_t at = 0, id = 0;
	switch (ct_sig_event(&t->sig, ev, &at, &id)) {
	case CT_SIG_ENTER:
		if (t->tramp && ev->kind == XEV_ENABLE) {
			/* delivered as the sigreturn of the one whose trampoline ran ended:
			 * that one is over, this one interrupted what it had */
			ct_sig_chain(&t->sig, t->tramp, id);
			sig_leave(cg, t, t->tramp);
		}
		t->tramp = 0;
		t->begun = true;
		return sig_enter(cg, t, ev, ev->kind == XEV_INTERRUPT ? ev->ip : t->sig.st[t->sig.n - 1].lo, at,
				 id) < 0 ? -ENOMEM : 1;
	case CT_SIG_BACK:
		/* sigreturn: the handler's frames end, the interrupted function goes on */
		t->tramp = 0;
		/* else its frame is gone (a gap): as any other landing */
		return sig_leave(cg, t, id);
	default:
		return 0;
	}
}

static int add_block(struct bb_cg *cg, struct thread *t, const struct xev *ev)
{
	uint64_t k = xp_hash_key3(t->cur, ev->ip, ev->end), i;
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
	int sr = ev->flags & XEV_F_FUNC ? 0 : sig_event(cg, t, ev);
	if (sr)
		return sr < 0 ? sr : 0;
	switch (ev->kind) {
	case XEV_BLOCK:
		if (t->cur == UINT32_MAX) {
			/* a thread's trace that starts at a function's first instruction (a
			 * PSB+ whose FUP is the first entry into an address filter) entered it */
			t->cur = fn_at(cg, ev, ev->ip);
			t->entered = !t->begun && !t->depth && fn_entry(cg, ev, ev->ip);
			t->entry_ir0 = t->ir;
			t->entry_cyc0 = t->cyc;
		} else if (cg->env && cg->env->symbol &&
			   !(cg->fns[t->cur].size && ev->ip - cg->fns[t->cur].start < cg->fns[t->cur].size)) {
			/* a jump into another function is a tail call (or a shared tail:
			 * __mempcpy jumps into __memmove): a frame whose site is the jump; the
			 * callee's return pops it together with the frame of the call it
			 * returns from.  Falling through into the next symbol (ld.so's _start
			 * into _dl_start_user) enters it alike, as in the call tree.  A block
			 * inside the running function's symbol needs no lookup. */
			uint32_t f = fn_at(cg, ev, ev->ip);
			if (f != UINT32_MAX && f != t->cur && cg->fns[f].named &&
			    push(cg, t, ev, t->jumped ? t->jump_ip : ev->ip, f) < 0)
				return -ENOMEM;
		}
		t->jumped = false;
		t->begun = true;
		if (t->cur == UINT32_MAX)
			return -ENOMEM;
		return add_block(cg, t, ev);
	case XEV_CALL:
		t->jumped = false;
		t->begun = true;
		t->tramp = 0;
		if (t->cur == UINT32_MAX)
			t->cur = fn_at(cg, ev, ev->ip);
		if (t->cur == UINT32_MAX)
			return -ENOMEM;
		return push(cg, t, ev, ev->ip, fn_at(cg, ev, ev->addr));
	case XEV_RETURN: {
		t->jumped = false;
		t->begun = true;
		size_t d = returned_to(t, ev->addr), h = handler_depth(t);
		if (h > d) {
			/* a handler returns into the signal trampoline the kernel put on the
			 * stack, not after a call: it runs in the signal's frame (an edge
			 * from the interrupted function without calls, as the call tree's
			 * node) until sigreturn */
			uint64_t sig = t->st[h - 1].sig, site = t->st[h - 1].site;
			while (t->depth >= h)
				pop(cg, t);
			t->tramp = sig;
			if (!ev->addr)
				return 0;
			if (enter(cg, t, ev, site, fn_at(cg, ev, ev->addr), false) < 0)
				return -ENOMEM;
			t->st[t->depth - 1].sig = sig;
			return 0;
		}
		t->tramp = 0;
		if (d == 0) {
			if (ev->addr) {
				/* below the first frame we saw: an anonymous caller */
				uint32_t to = fn_at(cg, ev, ev->addr);
				if (to == UINT32_MAX)
					return -ENOMEM;
				while (t->depth)
					pop(cg, t);
				if (t->entered && entered_from(cg, t, ev, to, ev->addr) < 0)
					return -ENOMEM;
				t->cur = to;
			}
			t->entered = false;
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
		 * call sites when there are no symbols, that is the return to it.  At a
		 * function's first instruction it is a call from untraced code; one still
		 * running on top ended out of sight (a return out of the ranges whose
		 * target the trace does not give) */
		t->jumped = false;
		t->tramp = 0;
		uint32_t f;
		size_t d = 0;
		if (t->cur == UINT32_MAX) {
			t->begun = false;	/* the next block starts it: at an entry, a call */
			return 0;
		}
		if (fn_entry(cg, ev, ev->ip)) {
			if ((f = fn_at(cg, ev, ev->ip)) == UINT32_MAX)
				return -ENOMEM;
			if (f == t->cur && t->depth)
				pop(cg, t);
			if (f == t->cur)
				return 0;	/* the caller is not known */
			return push(cg, t, ev, ev->ip, f);
		}
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
		t->entered = false;
		t->tramp = 0;
		return 0;
	default:
		return 0;
	}
}

struct cost {
	uint64_t at;		/* its position: the address in its object file, else ip */
	uint64_t ip, ir;
	double cyc;
	int32_t pid;
	uint64_t time;
};

static int by_ip(const void *a, const void *b)
{
	const struct cost *x = a, *y = b;
	return (x->at > y->at) - (x->at < y->at);
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

/* Names written once, referred to by id after (callgrind's name compression): object
 * and file names. */
struct names {
	struct xp_map by_hash;	/* hash -> index + 1 in v */
	const char **v;
	size_t n, cap;
};

/* The name's id (1-based) in *id; true when it is new (the caller defines it). */
static int name_id(struct names *t, const char *name, uint32_t *id, bool *fresh)
{
	uint64_t k = xp_hash_str(XP_HASH_STR_SEED, name), i;
	for (; xp_map_get(&t->by_hash, k, &i); k++)
		if (strcmp(t->v[i - 1], name) == 0) {
			*id = (uint32_t)i;
			*fresh = false;
			return 0;
		}
	if (XP_GROW(t->v, t->cap, t->n + 1) < 0 || xp_map_put(&t->by_hash, k, t->n + 1) < 0)
		return -ENOMEM;
	t->v[t->n++] = name;
	*id = (uint32_t)t->n;
	*fresh = true;
	return 0;
}

static struct out_cg_name compressed(struct names *t, const char *name, int *rc)
{
	uint32_t id;
	bool fresh;
	if (name_id(t, name, &id, &fresh) < 0) {
		*rc = -ENOMEM;
		return (struct out_cg_name){ 0, name };
	}
	return (struct out_cg_name){ id, fresh ? name : NULL };
}

struct writer {
	struct bb_cg *cg;
	struct out_cg w;
	struct names obs, files;
	const char *file;	/* of the cost lines being written ("???": unknown) */
	int rc;
};

/* The source position of `ip`: file ("???" unknown) and line (0 unknown). */
static const char *srcpos(const struct bb_env *env, int32_t pid, uint64_t time, uint64_t ip, uint64_t *line)
{
	const char *file = NULL;
	int l = 0;
	if (!env || !env->srcline || !env->srcline(env->ctx, pid, time, ip, &file, &l) || !file || l < 0)
		file = "???", l = 0;
	*line = (uint64_t)l;
	return file;
}

/* The position of `ip` in the profile: its address in its object file, as objdump
 * shows it (KCachegrind disassembles ob= at these addresses), else ip itself; *path
 * the object's (NULL unknown). */
static uint64_t obj_pos(const struct bb_env *env, int32_t pid, uint64_t time, uint64_t ip, const char **path)
{
	uint64_t vaddr;
	*path = NULL;
	if (env && env->obj && env->obj(env->ctx, pid, time, ip, path, &vaddr))
		return vaddr;
	*path = NULL;
	return ip;
}

/* ob=, cob=: the function's object file (its path; its module's name when there is
 * no file); fn=, cfn= its name, defined at first use. */
static struct out_cg_fn fn_names(struct writer *wr, uint32_t f, const char *file)
{
	struct fn *fn = &wr->cg->fns[f];
	struct out_cg_fn at = { .fn = { f + 1, fn->defined ? NULL : fn->name } };
	const char *path;
	fn->defined = true;
	obj_pos(wr->cg->env, fn->pid, fn->time, fn->start, &path);
	at.ob = compressed(&wr->obs, path ? path : fn->module ? fn->module : "[unknown]", &wr->rc);
	at.fl = compressed(&wr->files, file, &wr->rc);
	return at;
}

/* fi= before a cost line in another file than the lines before it. */
static void to_file(struct writer *wr, const char *file)
{
	if (strcmp(file, wr->file) == 0)
		return;
	struct out_cg_name n = compressed(&wr->files, file, &wr->rc);
	out_cg_name(&wr->w, "fi", &n);
	wr->file = file;
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
	const struct bb_env *env = cg->env;
	struct writer wr = { .cg = cg };

	out_cg_begin(&wr.w, out, OUT_CG_INSTR | OUT_CG_LINE, cmd, NULL, events, cg->cycles ? 2 : 1, NULL);
	size_t bi = 0, ei = 0;
	struct cost *costs = NULL;
	size_t ncost = 0, capcost = 0;
	for (uint32_t f = 0; f < cg->nfns && wr.rc == 0; f++) {
		ncost = 0;
		for (; bi < cg->nblks && cg->blks[bi].fn == f; bi++) {
			const struct blk *b = &cg->blks[bi];
			uint64_t ninsn = 0;
			size_t first = ncost;
			for (uint64_t ip = b->start; ip <= b->end;) {
				uint8_t buf[X86_MAX_INSN];
				unsigned size;
				size_t n = env && env->read ? env->read(env->ctx, b->pid, b->time, ip, buf, sizeof(buf)) : 0;
				if (XP_GROW(costs, capcost, ncost + 1) < 0)
					goto fail;
				const char *path;
				costs[ncost++] = (struct cost){ obj_pos(env, b->pid, b->time, ip, &path), ip, b->count, 0,
								b->pid, b->time };
				ninsn++;
				if (!n || !(size = x86_dis_len(&dis, buf, n, ip)))
					break;	/* no code: the block's cost stays on its first address */
				ip += size;
			}
			for (size_t k = first; k < ncost; k++)
				costs[k].cyc = (double)b->cycles / (double)ninsn;
		}
		if (ncost == 0 && (ei >= cg->nedges || cg->edges[ei].caller != f))
			continue;
		if (ncost)	/* (a function with edges only: costs may still be NULL) */
			qsort(costs, ncost, sizeof(*costs), by_ip);
		/* the function's file: where its first line with a position lies */
		const struct fn *fn = &cg->fns[f];
		uint64_t line;
		const char *ffile = "???";
		for (size_t k = 0; k < ncost && strcmp(ffile, "???") == 0; k++)
			ffile = srcpos(env, costs[k].pid, costs[k].time, costs[k].ip, &line);
		if (strcmp(ffile, "???") == 0)
			ffile = srcpos(env, fn->pid, fn->time, fn->start, &line);
		struct out_cg_fn at = fn_names(&wr, f, ffile);
		out_cg_fn(&wr.w, &at);
		wr.file = ffile;
		for (size_t k = 0; k < ncost;) {
			struct cost c = costs[k++];
			while (k < ncost && costs[k].at == c.at) {
				c.ir += costs[k].ir;
				c.cyc += costs[k++].cyc;
			}
			tot_ir += c.ir;
			tot_cyc += c.cyc;
			const char *file = srcpos(env, c.pid, c.time, c.ip, &line);
			if (line)
				to_file(&wr, file);
			/* shares of a block's cycles, rounded as printf's %.0f rounds */
			out_cg_cost(&wr.w, &(struct out_cg_pos){ c.at, line },
				    (uint64_t[]){ c.ir, (uint64_t)llrint(c.cyc) });
		}
		for (; ei < cg->nedges && cg->edges[ei].caller == f; ei++) {
			const struct edge *e = &cg->edges[ei];
			const struct fn *callee = &cg->fns[e->callee];
			uint64_t tline, sline;
			const char *tfile = srcpos(env, callee->pid, callee->time, callee->start, &tline);
			const char *sfile = srcpos(env, e->pid, e->time, e->site, &sline);
			if (sline)
				to_file(&wr, sfile);
			struct out_cg_fn cat = fn_names(&wr, e->callee, tfile);
			const char *path;
			uint64_t tat = obj_pos(env, callee->pid, callee->time, callee->start, &path);
			uint64_t sat = obj_pos(env, e->pid, e->time, e->site, &path);
			out_cg_call(&wr.w, &cat, e->calls, &(struct out_cg_pos){ tat, tline },
				    &(struct out_cg_pos){ sat, sline }, (uint64_t[]){ e->ir, e->cycles });
		}
	}
	out_cg_end(&wr.w, (uint64_t[]){ tot_ir, (uint64_t)llrint(tot_cyc) });
	free(costs);
	x86_dis_fini(&dis);
	xp_map_free(&wr.obs.by_hash);
	free(wr.obs.v);
	xp_map_free(&wr.files.by_hash);
	free(wr.files.v);
	return wr.rc;
fail:
	free(costs);
	x86_dis_fini(&dis);
	xp_map_free(&wr.obs.by_hash);
	free(wr.obs.v);
	xp_map_free(&wr.files.by_hash);
	free(wr.files.v);
	return -ENOMEM;
}
