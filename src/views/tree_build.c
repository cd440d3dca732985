/* Call trees from the event stream (tree_build.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_build.h"
#include "perfdata/pd_read.h"
#include "views/tree_inline.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"

static int oom(void) { return xp_err("decode", "decode a smaller trace or time range", "out of memory"); }

int tb_init(struct tb *b, struct view_ctx *vc)
{
	struct dec_ctx *c = vc->c;

	memset(b, 0, sizeof(*b));
	b->c = c;
	b->time_m = b->samples_m = -1;
	for (unsigned m = 0; m < c->nmetrics; m++) {
		if (c->metrics[m].kind == DEC_M_TIME)
			b->time_m = (int)m;
		if (c->metrics[m].kind == DEC_M_SAMPLES && b->samples_m < 0)
			b->samples_m = (int)m;
	}
	b->compensate = c->merged && b->time_m >= 0 && c->probes && c->probes->calibrated &&
		!dec_opt(c, "no-compensate");
	/* no memory for it: the trees without inline frames */
	b->inl = dec_inline(c) && !c->sampled ? ti_new(c) : NULL;
	b->inl_samples = dec_inline(c) && c->sampled;
	/* a merged tree's exact times are wall times, its samples cpu time: the time a
	 * thread spent switched out is kept apart, under a node of its own */
	if (c->merged && b->time_m >= 0) {
		vc->wants |= DEC_WANT_SWITCH;
		b->off_fn = sym_fn_named(c->sym, "[off-CPU]", "[off-CPU]");
		b->off_cpu = true;
	}
	if (dec_opt(c, "no-compensate") && !(c->merged && c->probes)) {
		xp_usage_error("decode", "--no-compensate: this trace has no probes, whose cost it "
			       "would keep in the times (record with --probe)");
		return -EOPNOTSUPP;	/* the engine's ENG_EREQUEST: a usage error */
	}
	return 0;
}

const struct dec_option tb_options[] = {
	{ "no-compensate", NULL, "trees of probes: raw times (the calibrated cost of probe "
	  "hits not subtracted)" },
	{ "comm-prefix", NULL, "--format folded: each stack starts with its threads' command name "
	  "(as stackcollapse-perf.pl writes them)" },
	{ "inline", NULL, "(the default) tree views: code the compiler inlined (DWARF) as "
	  "nodes 'NAME [inline]' under the function it was inlined into (samples: at the IP, a caller's at its "
	  "return address - 1), on exact traces each entry into it from outside a call (as perf report --inline, addr2line -i); --calls: each such entry a call 'NAME() [inline]'; "
	  "--annotate: the functions inlined at each instruction" },
	{ "no-inline", NULL, "no inline frames: inlined code counts as the function it was inlined into "
	  "(as perf report --no-inline)" },
	{ NULL, NULL, NULL },
};

static struct tb_thread *thread_of(struct tb *b, int32_t pid, int32_t tid)
{
	uint64_t i;

	/* events come in runs of one thread */
	if (b->nth && tid == b->last_tid)
		return &b->th[b->last_th];
	if (xp_map_get(&b->tids, (uint32_t)tid, &i)) {
		b->last_tid = tid;
		b->last_th = (uint32_t)i;
		return &b->th[i];
	}
	if (XP_GROW(b->th, b->capth, b->nth + 1) < 0)
		return NULL;
	struct tb_thread *t = &b->th[b->nth];
	t->pid = pid;
	t->tid = tid;
	t->exact = false;
	t->off = false;
	t->last_time = 0;
	memset(&t->sig, 0, sizeof(t->sig));
	memset(&t->prev, 0, sizeof(t->prev));
	memset(&t->path, 0, sizeof(t->path));
	t->t = ct_new(b->c->nmetrics);
	t->cur = t->t ? ct_cursor_new(t->t) : NULL;
	if (!t->cur || xp_map_put(&b->tids, (uint32_t)tid, b->nth) < 0) {
		ct_cursor_free(t->cur);
		ct_free(t->t);
		return NULL;
	}
	b->last_tid = tid;
	b->last_th = b->nth++;
	return t;
}

/* The functions of a sample's callchain, root first, into b->fns: the frames it
 * shares with the thread's previous sample from the root keep their functions while
 * those hold, the others are looked up. */
static int stack_fns(struct tb *b, struct tb_thread *t, const struct xev *ev)
{
	struct tb_stack *p = &t->prev;
	uint32_t n = ev->nstack, k = 0;
	uint64_t gen = dec_fn_gen(b->c);

	if (p->n && p->pid == ev->pid && p->gen == gen &&
	    (ev->time ? p->from <= ev->time && ev->time < p->to : p->to == UINT64_MAX)) {
		while (k < n && k < p->n && p->addr[k] == ev->stack[n - 1 - k])
			k++;
	} else {
		p->pid = ev->pid;
		p->gen = gen;
		p->from = 0;
		p->to = UINT64_MAX;
	}
	p->n = 0;	/* until the new stack is complete */
	if (XP_GROW(p->addr, p->cap, n) < 0 || XP_GROW(p->fn, p->capfn, n) < 0)
		return -ENOMEM;
	/* leaf first: the order functions are first met in is their order in reports */
	for (uint32_t i = n; i-- > k;) {
		uint64_t from, to;
		p->addr[i] = ev->stack[n - 1 - i];
		p->fn[i] = dec_frame_fn_span(b->c, ev->pid, ev->stack, n - 1 - i, ev->time, &from, &to);
		/* the span of all of them */
		p->from = from > p->from ? from : p->from;
		p->to = to < p->to ? to : p->to;
	}
	p->n = n;
	if (n)	/* (an empty callchain: p->fn may be NULL, memcpy's is declared non-null) */
		memcpy(b->fns, p->fn, n * sizeof(*p->fn));
	return 0;
}

static struct tb_sc *sc_slot(struct tb *b, const struct xev *ev)
{
	uint64_t h = (uint64_t)(uint32_t)ev->tid * XP_HASH_MUL;

	for (uint32_t i = 0; i < ev->nstack; i++)
		h = (h ^ ev->stack[i]) * XP_HASH_MUL;
	return &b->sc[h >> (64 - TB_SC_BITS)];
}

/* The leaf node of a stack met before in the thread, CT_NONE when it is not. */
static uint32_t sc_find(struct tb *b, const struct tb_thread *t, const struct tb_sc *e, const struct xev *ev)
{
	if (e->n != ev->nstack || e->tid != ev->tid || e->pid != ev->pid || e->th != (uint32_t)(t - b->th) ||
	    e->gen != dec_fn_gen(b->c) || e->moves != ct_moves(t->t) ||
	    !(ev->time ? e->from <= ev->time && ev->time < e->to : e->to == UINT64_MAX) ||
	    memcmp(e->addr, ev->stack, ev->nstack * sizeof(*ev->stack)) != 0)
		return CT_NONE;
	return e->node;
}

/* A sampled stack of a thread (not merged, no line costs: those need its functions). */
/* A sample of a sampling event other than the one counted (dec_metric_chosen): its
 * period goes to its event's column, it is not one of the nodes' samples. */
static bool other_event(const struct dec_ctx *c, const struct xev *ev)
{
	return c->metrics[0].kind == DEC_M_SAMPLES && c->metrics[0].one_event && ev->event != c->metrics[0].event;
}

static int sampled_stack(struct tb *b, struct tb_thread *t, const struct xev *ev, const uint64_t *w)
{
	unsigned flags = t->exact || other_event(b->c, ev) ? CT_NO_CALLS : 0;
	struct tb_sc *e = NULL;
	uint32_t node;

	if (!b->sc && ev->nstack <= TB_SC_DEPTH)
		b->sc = calloc(TB_SC_SLOTS, sizeof(*b->sc));
	if (b->sc && ev->nstack <= TB_SC_DEPTH) {
		e = sc_slot(b, ev);
		if ((node = sc_find(b, t, e, ev)) != CT_NONE) {
			ct_add_at(t->t, node, w, flags);
			return 0;
		}
	}
	if (stack_fns(b, t, ev) < 0)
		return -ENOMEM;
	node = ct_add_stack_path(t->t, &t->path, b->fns, ev->nstack, w, flags);
	if (node == CT_NONE)
		return -ENOMEM;
	if (e) {
		memcpy(e->addr, ev->stack, ev->nstack * sizeof(*ev->stack));
		e->n = ev->nstack;
		e->th = (uint32_t)(t - b->th);
		e->node = node;
		e->tid = ev->tid;
		e->pid = ev->pid;
		e->gen = t->prev.gen;
		e->from = t->prev.from;
		e->to = t->prev.to;
		e->moves = ct_moves(t->t);
	}
	return 0;
}

/* The frame a block or return target belongs to.  Code without symbols has one id
 * per address, so only calls make frames there (named by their target, as callgrind
 * names functions); blocks and return targets inside it stay in, or pop back to, the
 * frame they are in.  The first frame of a thread is named by its first address. */
static uint32_t frame_fn(struct dec_ctx *c, const struct tb_thread *t, int32_t pid, uint64_t ip,
			 uint64_t time)
{
	uint32_t fn = dec_fn_of(c, pid, ip, time);
	const struct sym_fn *f;
	if (ct_cursor_depth(t->cur) && (f = sym_fn(c->sym, fn)) && !f->resolved)
		return CT_FN_UNKNOWN;
	return fn;
}

/* --inline: a block's cost by runs of one inline chain, the instructions each its
 * own, what else it weighs (cycles) on the last run, where the block ends. */
static int inline_cost(struct tb *b, struct tb_thread *t, const struct xev *ev, const uint64_t *w)
{
	struct dec_ctx *c = b->c;
	const struct ti_seg *s;
	const uint32_t *chains;
	uint32_t n;
	uint32_t fn = frame_fn(c, t, ev->pid, ev->ip, ev->time);
	if (ti_block(b->inl, ev->pid, ev->time, ev->ip, ev->end, ev->insns, &s, &n, &chains) < 0)
		return -ENOMEM;
	if (!n)
		return ct_cost_inline(t->cur, fn, NULL, 0, w);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t ws[DEC_MAX_METRICS];
		for (unsigned m = 0; m < c->nmetrics; m++)
			ws[m] = c->metrics[m].kind == DEC_M_INSNS ? s[i].insns : i + 1 == n ? w[m] : 0;
		if (ct_cost_inline(t->cur, fn, s[i].nchain ? chains + s[i].chain : NULL, s[i].nchain, ws) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* A sample of a merged trace: below the event node active in its thread, the frames
 * of its callchain under that node's function (the innermost activation of it); all
 * of it from the root when no event node is active.  Either way the nodes it makes
 * are sampled: their Calls are unknown.  When the node's function is not on the
 * stack, the frame-pointer walk skipped it: the sample's IP lies in a function that
 * keeps no frame of its own (a leaf, or code without frame pointers), so the chain
 * goes from the IP to the return address into the node's caller.  The IP's function
 * is then a sampled callee of the node, unless it is the node's own.  A sample in the
 * kernel's uprobe page (an instruction a probe displaced, stepped there, or the return
 * probe's trampoline) is the probes' cost: the node's own time, which compensation
 * takes off, not a function of the program. */
static int merged_sample(struct tb *b, struct tb_thread *t, const uint32_t *fns, uint32_t n,
			 const uint64_t *w)
{
	uint32_t node = ct_cursor_node(t->cur), from = 0;
	const struct sym_fn *leaf = sym_fn(b->c->sym, fns[n - 1]);

	if (leaf && leaf->module && strcmp(leaf->module, "[uprobes]") == 0) {
		ct_add_base(t->t, node, w);
		return 0;
	}
	if (node != CT_ROOT) {
		uint32_t fn = ct_node(t->t, node)->fn;
		from = fns[n - 1] == fn ? n : n - 1;
		for (uint32_t i = n; i-- > 0;)
			if (fns[i] == fn) {
				from = i + 1;
				break;
			}
	}
	return ct_add_stack_at(t->t, node, fns + from, n - from, w, CT_NO_CALLS | CT_SAMPLED) == CT_NONE ?
		oom() : 0;
}

/* The node an outermost entry goes below: the sampled path of its callers from its
 * hit's callchain (main, _start, ... above the first probe), the root without one. */
static uint32_t callers_node(struct tb *b, struct tb_thread *t, const struct xev *ev)
{
	static const uint64_t zero[DEC_MAX_METRICS];

	if (ev->nstack < 2 || ct_cursor_depth(t->cur))
		return CT_ROOT;
	if (XP_GROW(b->fns, b->capfns, ev->nstack) < 0)
		return CT_NONE;
	for (uint32_t i = 1; i < ev->nstack; i++)
		b->fns[ev->nstack - 1 - i] = dec_fn_of(b->c, ev->pid, ev->stack[i], ev->time);
	return ct_add_stack_at(t->t, CT_ROOT, b->fns, ev->nstack - 1, zero, CT_NO_CALLS | CT_SAMPLED);
}

/* An entry/exit event names the function; an entry's callers are sampled (its
 * callchain) or unknown. */
static int func_event(struct tb *b, struct tb_thread *t, const struct xev *ev)
{
	struct dec_ctx *c = b->c;

	t->exact = true;
	if (ev->kind == XEV_CALL) {
		uint32_t fn = dec_fn_of(c, ev->pid, ev->addr, ev->time), at = callers_node(b, t, ev);
		const struct pd_probe *p = dec_probe_of(c, ev->event);
		if (at == CT_NONE || (p && xp_map_put(&b->probe_fns, fn, (uint64_t)(p - c->probes->p)) < 0))
			return oom();
		return ct_call_at(t->cur, at, fn) < 0 ? oom() : 0;
	}
	int r = ev->ip ? ct_leave(t->cur, dec_fn_of(c, ev->pid, ev->ip, ev->time)) : -ENOENT;
	if (r == -ENOENT)
		b->repairs++;
	else if (r > 0)
		b->repairs += (uint64_t)r;
	return 0;
}

/* A sample's cost on its leaf's address, and the call sites of its callchain (a
 * caller's return address follows its call). */
static int sample_lines(struct tb *b, const struct xev *ev, uint32_t n, const uint64_t *w)
{
	uint64_t leaf = ev->nstack ? ev->stack[0] : ev->ip;
	if (tl_sample(b->lines, b->fns[n - 1], ev->pid, ev->time, leaf, w) < 0)
		return -ENOMEM;
	for (uint32_t i = 0; i + 1 < ev->nstack; i++)
		if (ev->stack[i + 1] &&
		    tl_site(b->lines, b->fns[n - 2 - i], b->fns[n - 1 - i], ev->pid, ev->time, ev->stack[i + 1] - 1) < 0)
			return -ENOMEM;
	return 0;
}

bool tb_exec_between(struct dec_ctx *c, int32_t tid, uint64_t from, uint64_t to)
{
	const struct sb_thread *th = sb_thread(c->sb, tid);

	for (uint32_t i = th ? th->ncomms : 0; i-- > 0;)
		if (th->comms[i].time <= from)
			break;
		else if (th->comms[i].time <= to)
			return true;
	return false;
}

int tb_event(void *ctx, const struct xev *ev)
{
	struct tb *b = ctx;
	struct dec_ctx *c = b->c;
	uint64_t w[DEC_MAX_METRICS];
	struct tb_thread *t;

	if (ev->time) {
		if (!b->first_time || ev->time < b->first_time)
			b->first_time = ev->time;
		if (ev->time > b->last_time)
			b->last_time = ev->time;
	}
	if (b->time_m < 0 && (ev->kind == XEV_TIME || (ev->kind == XEV_BRANCH && !(ev->flags & XEV_F_INDIRECT))))
		return 0;
	/* Sampled calls, returns and blocks (branch stacks) are windows of execution, not
	 * a continuous history: a shadow stack cannot be kept from them.  Their samples
	 * (XEV_SAMPLE, with the callchain) carry the tree. */
	if (ev->kind != XEV_SAMPLE && (ev->flags & XEV_F_SAMPLED))
		return 0;
	/* code of a transaction that aborted ran, but as if it had not: its calls and
	 * returns make no frames, its instructions are counted apart */
	if (ev->flags & XEV_F_ABORTED) {
		if (ev->kind == XEV_BLOCK && dec_thread_selected(c, ev->tid, ev->time))
			b->aborted += ev->insns;
		return 0;
	}
	if (!dec_thread_selected(c, ev->tid, ev->time))
		return 0;
	t = thread_of(b, ev->pid, ev->tid);
	if (!t)
		return oom();
	if (b->time_m >= 0 && ev->time) {
		/* the time since the thread's previous event was spent where it was then,
		 * on the cpu or, since it was switched out, off it */
		if (t->last_time && ev->time > t->last_time) {
			memset(w, 0, sizeof(w));
			w[b->time_m] = ev->time - t->last_time;
			if (!t->off)
				ct_add_base(t->t, ct_cursor_node(t->cur), w);
			else if (ct_add_stack_at(t->t, ct_cursor_node(t->cur), &b->off_fn, 1, w,
						 CT_NO_CALLS | CT_SAMPLED) == CT_NONE)
				return oom();
		}
		if (ev->time > t->last_time)
			t->last_time = ev->time;
		b->timed = true;
	}
	if (ev->kind == XEV_SWITCH) {
		t->off = ev->sub == XEV_SWITCH_OUT;
		return 0;
	}
	if (!(ev->flags & XEV_F_FUNC)) {
		uint64_t at = 0, sig = 0;
		if (ev->kind == XEV_ENABLE && t->sig.lo && tb_exec_between(c, ev->tid, t->sig.stop_time, ev->time))
			ct_sig_exec(&t->sig);
		switch (ct_sig_event(&t->sig, ev, &at, &sig)) {
		case CT_SIG_ENTER: {
			uint64_t old = ev->kind == XEV_ENABLE ? ct_in_trampoline(t->cur) : 0;
			if (old) {	/* delivered as old's sigreturn ended */
				ct_sig_chain(&t->sig, old, sig);
				ct_resume(t->cur, old);
			}
			t->exact = true;
			return ct_signal(t->cur, dec_fn_of(c, ev->pid, at, ev->time), sig) < 0 ? oom() : 0;
		}
		case CT_SIG_BACK:
			if (ct_resume(t->cur, sig))
				return 0;
			break;	/* its frame is gone (a gap): as any other landing */
		case CT_SIG_NONE:
			break;
		}
	}
	switch (ev->kind) {
	case XEV_SAMPLE: {
		uint32_t n = ev->nstack ? ev->nstack : 1;
		if (XP_GROW(b->fns, b->capfns, n) < 0)
			return oom();
		dec_weights(c, ev, w);
		if (ev->nstack && !b->lines && !c->merged && !b->inl_samples)
			return sampled_stack(b, t, ev, w) < 0 ? oom() : 0;
		if (!ev->nstack)
			b->fns[0] = dec_fn_of(c, ev->pid, ev->ip, ev->time);
		else if (stack_fns(b, t, ev) < 0)
			return oom();
		if (b->lines && sample_lines(b, ev, n, w) < 0)
			return oom();
		const uint32_t *fns = b->fns;
		if (b->inl_samples) {
			if (XP_GROW(b->xfns, b->capxfns, (size_t)n * (TI_MAX_DEPTH + 1)) < 0)
				return oom();
			n = ti_sample(c, ev, b->fns, n, b->xfns);
			fns = b->xfns;
		}
		if (c->merged)
			return merged_sample(b, t, fns, n, w);
		if (ct_add_stack_path(t->t, &t->path, fns, n, w,
				      t->exact || other_event(c, ev) ? CT_NO_CALLS : 0) == CT_NONE)
			return oom();
		return 0;
	}
	case XEV_CALL:
	case XEV_RETURN: {
		if (ev->flags & XEV_F_FUNC)
			return func_event(b, t, ev);
		static const uint64_t zero[DEC_MAX_METRICS];
		uint32_t at = dec_fn_of(c, ev->pid, ev->ip, ev->time);
		/* a return goes back to the function of its call instruction, which ends
		 * before the return address: after ld.so's `call _dl_start` in _start the
		 * next instruction is the label _dl_start_user, entered by falling through */
		uint32_t to = ev->kind == XEV_CALL ? dec_fn_of(c, ev->pid, ev->addr, ev->time) :
			/* a handler returns to the start of the signal trampoline */
			ct_in_handler(t->cur) ? dec_fn_of(c, ev->pid, ev->addr, ev->time) :
			frame_fn(c, t, ev->pid, ev->addr ? ev->addr - 1 : 0, ev->time);
		int rc;
		t->exact = true;
		if (ct_cursor_depth(t->cur) == 0 && ct_cost(t->cur, at, zero) < 0)
			return oom();
		if (ev->kind == XEV_CALL && b->lines &&
		    tl_site(b->lines, ct_node(t->t, ct_cursor_node(t->cur))->fn, to, ev->pid, ev->time, ev->ip) < 0)
			return oom();
		if (ev->kind == XEV_CALL)
			rc = ct_call(t->cur, to, ev->flags & XEV_F_TAIL ? CT_TAIL : 0);
		else
			rc = ct_return(t->cur, to);
		return rc < 0 ? oom() : 0;
	}
	case XEV_BLOCK:
		/* a thread's trace that starts at a function's first instruction (a PSB+
		 * whose FUP is the first entry into an address filter) entered it */
		if (!t->exact && dec_fn_entry(c, ev->pid, ev->ip, ev->time) &&
		    ct_call(t->cur, dec_fn_of(c, ev->pid, ev->ip, ev->time), 0) < 0)
			return oom();
		t->exact = true;
		if (!dec_weights(c, ev, w))
			return 0;
		if (b->inl) {
			if (inline_cost(b, t, ev, w) < 0)
				return oom();
		} else if (ct_cost(t->cur, frame_fn(c, t, ev->pid, ev->ip, ev->time), w) < 0)
			return oom();
		if (b->lines && tl_block(b->lines, ct_node(t->t, ct_cursor_node(t->cur))->fn, ev->pid, ev->time, ev->ip,
					 ev->end, w) < 0)
			return oom();
		return 0;
	case XEV_BRANCH: {
		/* longjmp lands with an indirect jump in the middle of a live frame: leave the
		 * frames it skips.  A jump to a function's entry stays a tail call. */
		if (!(ev->flags & XEV_F_INDIRECT) || (ev->flags & (XEV_F_COND | XEV_F_SYSCALL)) ||
		    !ct_cursor_depth(t->cur))
			return 0;
		uint32_t to = frame_fn(c, t, ev->pid, ev->addr, ev->time);
		if (to == CT_FN_UNKNOWN || to == dec_fn_of(c, ev->pid, ev->ip, ev->time) ||
		    to != dec_fn_of(c, ev->pid, ev->addr - 1, ev->time))
			return 0;
		return ct_jump(t->cur, to) < 0 ? oom() : 0;
	}
	case XEV_ENABLE: {
		/* tracing resumes where a call or return out of the traced code (an address
		 * filter) came back.  At a function's first instruction that is a call into
		 * it from untraced code (a return lands after its call, inside a function);
		 * in a function deeper on the stack, the return to it.  Anywhere else (a
		 * callback entered mid-function) the next block enters its function. */
		t->exact = true;
		if (dec_fn_entry(c, ev->pid, ev->ip, ev->time)) {
			/* entered again while its activation on top is still open: that one
			 * ended out of sight (a return out of the ranges whose target the
			 * trace does not give) */
			uint32_t fn = dec_fn_of(c, ev->pid, ev->ip, ev->time);
			if (ct_node(t->t, ct_cursor_node(t->cur))->fn == fn)
				ct_leave(t->cur, fn);
			return ct_call(t->cur, fn, 0) < 0 ? oom() : 0;
		}
		uint32_t to = frame_fn(c, t, ev->pid, ev->ip, ev->time);
		return to != CT_FN_UNKNOWN && ct_jump(t->cur, to) < 0 ? oom() : 0;
	}
	case XEV_GAP:
		ct_gap(t->cur);
		return 0;
	default:
		return 0;
	}
}

/* Probed leaves called this often, at least, show the trace's own in-call cost. */
#define TB_LEAF_CALLS 1000
/* A leaf's window per call above this many times the calibrated in-call cost is taken
 * as the leaf's own work, not as the hits' cost (the target's hits measured 0.8-3 x
 * the calibrated ones: docs/decode.md, Accuracy). */
#define TB_LEAF_MAX_X 4

/* The costs to subtract: the calibration's, followed to the trace's own when a probed
 * leaf called often shows it (the calibration ran in another process at another
 * moment, and a hit's cost varies with the machine's load: 1.3-3 x between
 * recordings), the caller's share scaled alike. */
static void tb_costs(struct tb *b)
{
	const struct pd_probes *ps = b->c->probes;
	uint64_t leaf = 0;

	b->caller_ns = ps->caller_ns;
	b->callee_ns = ps->callee_ns;
	b->leaf_ns = 0;
	if (b->time_m < 0 || !ps->callee_ns)
		return;
	for (uint32_t i = 0; i < b->nth; i++) {
		uint64_t w = ct_leaf_window(b->th[i].t, (unsigned)b->time_m, TB_LEAF_CALLS);
		if (w && (!leaf || w < leaf))
			leaf = w;
	}
	if (!leaf || leaf == ps->callee_ns || leaf > TB_LEAF_MAX_X * ps->callee_ns)
		return;
	b->leaf_ns = leaf;
	b->caller_ns = (uint64_t)((unsigned __int128)ps->caller_ns * leaf / ps->callee_ns);
	b->callee_ns = leaf;
}

/* A trace with no event has nothing to measure, like a sample trace with no sample:
 * an empty report.  Time is a probe trace's default metric: --metric is named only
 * when it was given. */
int tb_check_timed(const struct tb *b, const char *cmd)
{
	if (b->time_m < 0 || b->timed || !b->nth)
		return 0;
	const char *name = b->c->metrics[b->time_m].name, *asked = b->c->opts->metric;
	if (asked && strcmp(asked, name) == 0)
		return xp_err(cmd, "use --metric insns, or record with timestamps",
			      "--metric %s: the trace has no timestamps", name);
	return xp_err(cmd, "choose another metric with --metric",
		      "the trace has no timestamps, which its %s metric needs", name);
}

int tb_finish(struct tb *b)
{
	if (!b->c->merged)
		return 0;
	if (b->compensate)
		tb_costs(b);
	for (uint32_t i = 0; i < b->nth; i++) {
		/* activations still open when the trace ended */
		b->repairs += ct_cursor_depth(b->th[i].cur);
		if (b->compensate) {
			uint64_t sub;
			if (ct_compensate(b->th[i].t, (unsigned)b->time_m, b->caller_ns, b->callee_ns,
					  b->off_cpu ? b->off_fn : CT_NONE, &sub) < 0)
				return oom();
			b->compensated += sub;
		}
		if (b->time_m >= 0 && b->samples_m >= 0 &&
		    ct_apportion(b->th[i].t, (unsigned)b->time_m, (unsigned)b->samples_m) < 0)
			return oom();
	}
	return 0;
}

struct ct_tree *tb_merge_all(struct tb *b)
{
	struct ct_tree *all = ct_new(b->c->nmetrics);

	for (uint32_t i = 0; all && i < b->nth; i++)
		if (ct_merge(all, b->th[i].t) < 0) {
			ct_free(all);
			all = NULL;
		}
	return all;
}

void tb_free(struct tb *b)
{
	for (uint32_t i = 0; i < b->nth; i++) {
		ct_cursor_free(b->th[i].cur);
		ct_free(b->th[i].t);
		free(b->th[i].prev.addr);
		free(b->th[i].prev.fn);
		ct_path_free(&b->th[i].path);
	}
	free(b->th);
	free(b->sc);
	xp_map_free(&b->tids);
	xp_map_free(&b->probe_fns);
	tl_free(b->lines);
	ti_free(b->inl);
	free(b->xfns);
	free(b->fns);
	memset(b, 0, sizeof(*b));
}

const struct pd_probe *tb_window(const struct tb *b, uint32_t fn, uint64_t *from, uint64_t *to)
{
	uint64_t i;

	if (!xp_map_get(&b->probe_fns, fn, &i))
		return NULL;
	const struct pd_probes *ps = b->c->probes;
	const struct pd_probe *p = &ps->p[i];
	/* a probe re-armed has a line per window, in order: its calls were counted from
	 * the first's start to the last's end, not in the gaps */
	bool partial = dec_probe_window(p, b->first_time, b->last_time, from, to);
	for (size_t k = i + 1; k < ps->n && strcmp(ps->p[k].name, p->name) == 0; k++) {
		uint64_t f, t;
		dec_probe_window(&ps->p[k], b->first_time, b->last_time, &f, &t);
		*to = t;
		partial = true;
	}
	return partial ? p : NULL;
}

void tb_header(const struct tb *b, FILE *f, unsigned metric)
{
	const struct pd_probes *ps = b->c->probes;
	bool timed = (int)metric == b->time_m;

	if (b->aborted)
		fprintf(f, "# %" PRIu64 " instructions ran in transactions that aborted: not in the tree\n",
			b->aborted);
	if (!ps || !b->c->merged)
		return;
	/* compensation subtracts time: a count of samples or events has nothing taken */
	if (timed) {
		if (!ps->calibrated)
			fprintf(f, "# probe overhead not compensated: the trace has no calibration\n");
		else if (!b->compensate)
			fprintf(f, "# probe overhead not compensated (--no-compensate): a probed call costs %" PRIu64
				" ns in its caller, %" PRIu64 " ns in itself\n", ps->caller_ns, ps->callee_ns);
		else if (!b->leaf_ns)
			fprintf(f, "# probe overhead compensated: %" PRIu64 " ns per probed call in its caller, %"
				PRIu64 " ns in itself (calibrated over %" PRIu64 " runs); %" PRIu64 " ns subtracted\n",
				b->caller_ns, b->callee_ns, ps->runs, b->compensated);
		else
			fprintf(f, "# probe overhead compensated: %" PRIu64 " ns per probed call in its caller, %"
				PRIu64 " ns in itself (the trace's shortest probed leaf per call; calibrated %"
				PRIu64 " + %" PRIu64 " over %" PRIu64 " runs); %" PRIu64 " ns subtracted\n",
				b->caller_ns, b->callee_ns, ps->caller_ns, ps->callee_ns, ps->runs, b->compensated);
	}
	for (size_t i = 0; i < ps->n; i++) {
		uint64_t from, to;
		/* times as perf script prints them: seconds.ns */
#define TB_S(t) (t) / 1000000000, (t) % 1000000000
		/* armed after the trace's last event (the target had ended, or recording
		 * stopped, while its open waited): an empty window, not one past the end */
		if (ps->p[i].armed > b->last_time && b->last_time)
			fprintf(f, "# %s: armed at %" PRIu64 ".%09" PRIu64 " s, after the trace's last event"
				" (%" PRIu64 ".%09" PRIu64 "): no calls counted\n", dec_probe_fn(&ps->p[i]),
				TB_S(ps->p[i].armed), TB_S(b->last_time));
		else if (dec_probe_window(&ps->p[i], b->first_time, b->last_time, &from, &to))
			fprintf(f, "# %s: exact from %" PRIu64 ".%09" PRIu64 " to %" PRIu64 ".%09" PRIu64
				" s (of %" PRIu64 ".%09" PRIu64 "..%" PRIu64 ".%09" PRIu64 "), its Calls marked ~\n",
				dec_probe_fn(&ps->p[i]), TB_S(from), TB_S(to), TB_S(b->first_time),
				TB_S(b->last_time));
#undef TB_S
	}
}

const char *tb_fn_name(void *ctx, uint32_t fn)
{
	const struct sym_fn *f = sym_fn(ctx, fn);

	return f ? f->name : "?";
}

const char *tb_fn_module(void *ctx, uint32_t fn)
{
	const struct sym_fn *f = sym_fn(ctx, fn);

	return f && f->module && *f->module ? f->module : "[unknown]";
}

const char *tb_fn_object(void *ctx, uint32_t fn)
{
	const struct sym_fn *f = sym_fn(ctx, fn);
	const char *file = f ? sb_dso_file(f->dso) : NULL;

	return file ? file : tb_fn_module(ctx, fn);
}

bool tb_fn_srcline(void *ctx, uint32_t fn, const char **file, int *line)
{
	return sym_fn_srcline(ctx, fn, file, line);
}

void tb_units_init(struct tb_units *u, const struct dec_ctx *c, unsigned metric, enum out_format f,
		   uint64_t total)
{
	const struct dec_metric *dm = &c->metrics[metric];

	memset(u, 0, sizeof(*u));
	u->ns = dm->ns;
	u->text = f == OUT_TEXT;
	u->traced = dm->kind == DEC_M_TIME && c->traced_time;
	u->unit = out_time_unit(total);
}

struct out_col tb_cost_col(struct tb_units *u, unsigned k, const char *name)
{
	struct out_col col = { name, OUT_INT, 12, 0 };

	if (!u->ns || k >= 3)
		return col;
	if (u->text) {
		snprintf(u->names[k], sizeof(u->names[k]), "%s(%s)", name, u->unit.name);
		col.type = OUT_FLOAT;
		col.flags = OUT_DEC(u->unit.ns > 1 ? 3 : 0);
	} else {
		snprintf(u->names[k], sizeof(u->names[k]), "%s_%sns", name, u->traced ? "traced_" : "");
	}
	col.name = u->names[k];
	return col;
}

struct out_val tb_cost(const struct tb_units *u, uint64_t x)
{
	if (u->ns && u->text)
		return (struct out_val){ .d = (double)x / u->unit.ns };
	return (struct out_val){ .u = x };
}

/* What the count and cost columns mean for this trace, in one line: Calls are exact
 * only where events saw the calls; a tree of sampled stacks counts samples instead. */
static void legend(FILE *f, const struct dec_ctx *c, unsigned metric, bool rec)
{
	const char *name = c->metrics[metric].name, *ev = "the sampling event";

	for (unsigned k = 0; k < c->nmetrics; k++)
		if (c->metrics[k].kind == DEC_M_EVENT) {
			ev = c->metrics[k].name;
			break;
		}
	if (c->sampled && !c->merged)
		fprintf(f, "# Samples: samples of %s", ev);
	else if (c->merged)
		fprintf(f, "# Calls: exact calls (- where samples alone saw the function)");
	else
		fprintf(f, "# Calls: exact calls");
	fprintf(f, "; Base: self %s; Cum: with callees%s\n", name,
		rec ? ", recursion once; CumRec: every activation summed" : "");
}

void tb_total_line(const struct tb_units *u, FILE *f, const char *what, const struct dec_ctx *c,
		   unsigned metric, uint64_t total, bool rec)
{
	const char *name = c->metrics[metric].name;

	if (u->ns)
		fprintf(f, "# %s: %s, total %.*f %s\n", what, name, u->unit.ns > 1 ? 3 : 0,
			(double)total / u->unit.ns, u->unit.name);
	else
		fprintf(f, "# %s: %s, total %" PRIu64 "\n", what, name, total);
	legend(f, c, metric, rec);
	char engine[128], cpu[512];
	int dbt = c->pd && pd_engine(c->pd, engine, sizeof(engine), cpu, sizeof(cpu)) == 0;

	if (dbt)
		fprintf(f, "# engine: %s, the program saw the CPU as %s\n", engine, cpu);
	if (u->traced)
		fprintf(f, "# time: of the traced run (%s), not native times; --metric insns counts "
			"exactly\n", dbt ? "translated by valgrind" :
			"step mode stops the program at its branches");
}

bool tb_fn_where(void *ctx, uint32_t fn, struct out_fn_where *w)
{
	const struct sym_fn *f = sym_fn(ctx, fn);

	if (!f || !f->dso)
		return false;
	*w = (struct out_fn_where){ .file = f->dso->path, .build_id = f->dso->build_id,
				    .build_id_size = f->dso->bid_size, .module = f->dso->id, .addr = f->start };
	return true;
}

struct out_metric tb_metric(const struct dec_ctx *c, unsigned m)
{
	const struct dec_metric *dm = &c->metrics[m];

	switch (dm->kind) {
	case DEC_M_SAMPLES:
		return (struct out_metric){ "samples", "count" };
	case DEC_M_TIME:
		return (struct out_metric){ "time", "nanoseconds" };
	case DEC_M_INSNS:
		return (struct out_metric){ "instructions", "count" };
	case DEC_M_CYCLES:
		return (struct out_metric){ "cycles", "count" };
	default:
		/* the period of software clocks is in ns; of any other event, a count */
		return (struct out_metric){ dm->name, strncmp(dm->name, "cpu-clock", 9) == 0 ||
					    strncmp(dm->name, "task-clock", 10) == 0 ? "nanoseconds" : "count" };
	}
}
