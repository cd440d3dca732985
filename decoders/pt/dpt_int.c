/* What the PT decoders (libipt's loops in dpt_decode.c, the packet walker in
 * dpt_fast.c) share on their way out (declared in dpt_int.h): time, cycles shared over blocks, transactions held
 * until they end, the events of libipt's event records, the pieces' stitch marks,
 * the branch cache's misses, and the trace pages given back behind the decoder. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decoders/pt/dpt_int.h"

static void set_time(struct dctx *c, uint64_t tsc)
{
	const struct dpt_options *o = c->opt;
	c->have_tsc = 1;
	c->tsc = tsc;
	if (!o->have_time_conv) {
		c->tmpl.time = tsc;
	} else {
		/* perf's tsc_to_perf_time: split to keep tsc * mult from overflowing */
		uint64_t quot = tsc >> o->time_shift, rem = tsc & ((1ULL << o->time_shift) - 1);
		c->tmpl.time = o->time_zero + quot * o->time_mult + ((rem * o->time_mult) >> o->time_shift);
	}
	if (o->time_out)
		*o->time_out = c->tmpl.time;
	if (o->space_at) {
		struct dpt_image *img = NULL;
		c->space = o->space_at(o->space_ctx, c->tmpl.time, &img);
		if (img && img != c->img) {	/* libipt allows it between calls */
			c->img = img;
			if (c->is_insn)
				pt_insn_set_image(c->dec, dpt_image_pt(img));
			else
				pt_blk_set_image(c->dec, dpt_image_pt(img));
		}
	}
}

int dpt_flush_group(struct dctx *c, uint64_t cycles)
{
	uint64_t left = cycles, insns_left = c->group_insns;
	for (size_t i = 0; i < c->ngroup; i++) {
		struct xev *ev = &c->group[i];
		if (ev->kind == XEV_BLOCK && cycles != XEV_CYCLES_UNKNOWN) {
			/* shares by instruction count; the last block takes the rounding */
			uint64_t share = insns_left == ev->insns ? left :
				(uint64_t)((double)cycles * (double)ev->insns / (double)c->group_insns + 0.5);
			if (share > left)
				share = left;
			ev->cycles = share;
			left -= share;
			insns_left -= ev->insns;
			if (c->group_blocks > 1)
				ev->flags |= XEV_F_CYC_APPROX;
		}
		if (ev->bytes)
			ev->bytes = c->group_raw[i];
		int r = xev_emit(c->sink, ev);
		if (r) {
			c->ngroup = 0;
			return r;
		}
	}
	c->ngroup = 0;
	c->group_insns = c->group_blocks = 0;
	return 0;
}

int dpt_deliver(struct dctx *c)
{
	struct xev *held = c->next;
	size_t n = (size_t)(held - c->out);
	if (!n)
		return 0;
	c->next = c->out;
	int r = xev_emit_batch(c->sink, c->out, n);
	/* a block being built (held back), or a transfer waiting for its target, is in
	 * *next: it moves with next */
	if (c->held || c->pending)
		*c->next = *held;
	return r;
}

int dpt_emit_group(struct dctx *c, struct xev *ev)
{
	if (c->ngroup == GROUP_MAX) {
		/* no timing packet for too long: these stay without cycles */
		int r = dpt_flush_group(c, XEV_CYCLES_UNKNOWN);
		if (r)
			return r;
	}
	struct xev *g = &c->group[c->ngroup];
	*g = *ev;
	if (ev->bytes)
		memcpy(c->group_raw[c->ngroup], ev->bytes, ev->nbytes < 16 ? ev->nbytes : 16);
	if (ev->kind == XEV_BLOCK) {
		c->group_insns += ev->insns;
		c->group_blocks++;
	}
	c->ngroup++;
	if (ev->kind == XEV_GAP)
		return dpt_flush_group(c, XEV_CYCLES_UNKNOWN);
	return 0;
}

/* The events of the transaction so far go out, marked aborted or not. */
static int tsx_flush(struct dctx *c, bool aborted)
{
	size_t n = c->ntsx;
	c->ntsx = 0;
	for (size_t i = 0; i < n; i++) {
		struct xev *ev = &c->tsx_buf[i];
		if (aborted && (ev->flags & XEV_F_SPECULATIVE))
			ev->flags |= XEV_F_ABORTED;
		if (ev->bytes)
			ev->bytes = c->tsx_raw[i];
		int r = xev_emit(c->user_sink, ev);
		if (r)
			return r;
	}
	return 0;
}

static int tsx_hold(void *ctx, const struct xev *ev)
{
	struct dctx *c = ctx;
	if (c->ntsx == TSX_MAX) {
		int r = tsx_flush(c, false);
		if (r)
			return r;
	}
	c->tsx_buf[c->ntsx] = *ev;
	if (ev->bytes)
		memcpy(c->tsx_raw[c->ntsx], ev->bytes, ev->nbytes < 16 ? ev->nbytes : 16);
	c->ntsx++;
	return 0;
}

/* Events go through the transaction's buffer from here on. */
static int tsx_begin(struct dctx *c)
{
	if (!c->tsx_buf) {
		struct dpt_table *t = c->tsx_tab;
		if ((!t[0].ent && dpt_table_get(&t[0], TSX_MAX, sizeof(*c->tsx_buf)) < 0) ||
		    (!t[1].ent && dpt_table_get(&t[1], TSX_MAX, sizeof(*c->tsx_raw)) < 0))
			return -ENOMEM;
		c->tsx_buf = t[0].ent;
		c->tsx_raw = t[1].ent;
	}
	c->user_sink = c->sink;
	c->tsx_sink = (struct xev_sink){ tsx_hold, c, NULL };
	c->sink = &c->tsx_sink;
	c->in_tsx = 1;
	return 0;
}

/* The transaction ends (committed, aborted, or its outcome lost): what waits goes
 * to the consumer, and the events after it straight on. */
int dpt_tsx_end(struct dctx *c, bool aborted)
{
	int r = dpt_deliver(c);
	if (!r && c->ngroup)
		r = dpt_flush_group(c, XEV_CYCLES_UNKNOWN);
	int e = tsx_flush(c, aborted);
	c->sink = c->user_sink;
	c->in_tsx = 0;
	return r ? r : e;
}

/* A new time from a timing packet that binds to the instruction just decoded: the
 * cycles since the previous one (CYC counts, calibrated to TSC units by libipt;
 * Δtsc * CBR / nominal ratio undoes that) belong to the events waiting. */
static int on_time(struct dctx *c, uint64_t tsc)
{
	uint64_t prev = c->tsc;
	int had = c->have_tsc;
	set_time(c, tsc);
	if (!c->cyc_mode || !c->ngroup)
		return 0;
	uint32_t cbr = 0;
	int ok = c->is_insn ? pt_insn_core_bus_ratio(c->dec, &cbr) : pt_blk_core_bus_ratio(c->dec, &cbr);
	uint64_t cycles = XEV_CYCLES_UNKNOWN;
	if (had && ok >= 0 && cbr && tsc >= prev)
		cycles = (uint64_t)((double)(tsc - prev) * cbr / c->opt->nom_freq + 0.5);
	return dpt_flush_group(c, cycles);
}

/* Where a piece meets the state it started without (decode/dec_par.h). */
int dpt_stitch(struct dctx *c, enum xev_stitch sub, uint64_t addr)
{
	struct xev ev = dpt_mkev(c, XEV_STITCH);
	ev.sub = sub;
	ev.addr = addr;
	return dpt_emit(c, &ev);
}

static enum bclass from_x86(enum x86_bclass cls, uint8_t *indirect)
{
	*indirect = 0;
	switch (cls) {
	case X86_BR_COND: return B_COND;
	case X86_BR_JMP: return B_JUMP;
	case X86_BR_CALL: return B_CALL;
	case X86_BR_JMP_IND: *indirect = 1; return B_JUMP;
	case X86_BR_CALL_IND: *indirect = 1; return B_CALL;
	case X86_BR_RET: *indirect = 1; return B_RET;
	case X86_BR_NONE: return B_OTHER;
	default: *indirect = 1; return B_FAR;
	}
}

__attribute__((noinline)) const struct bcache_ent *dpt_branch_fill(struct dctx *c, struct bcache_ent *e,
									uint64_t ip)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	size_t n = dpt_image_read(c->img, ip, buf, sizeof(buf));
	if (!e->ip)
		dpt_table_note(c->btab, (size_t)(e - c->bcache));
	e->ip = ip ^ c->space;
	if (n && x86_dis_one(&c->dis, buf, n, ip, &in) == 0) {
		e->cls = from_x86(in.br.cls, &e->indirect);
		e->next = ip + in.size;
	} else {
		e->cls = B_OTHER;
		e->indirect = 0;
		e->next = 0;
	}
	return e;
}

/* A transfer whose target will not be known (an overflow, a gap) is forgotten. */
int dpt_drop_pending(struct dctx *c)
{
	if (c->unk & UNK_PENDING) {
		c->unk &= ~(unsigned)UNK_PENDING;
		int r = dpt_stitch(c, XEV_ST_RESOLVE, 0);
		if (r)
			return r;
	}
	c->pending = 0;
	return 0;
}

/* MODE.TSX: a transaction begins, commits or aborts.  In a PSB+ it restates the
 * state (libipt's status update): the state is taken, no event told (as ptxed). */
static int on_tsx(struct dctx *c, const struct pt_event *pev)
{
	int spec = pev->variant.tsx.speculative, aborted = pev->variant.tsx.aborted, r;
	enum xev_tsx sub;

	c->specf = spec ? XEV_F_SPECULATIVE : 0;
	if (aborted) {
		/* the transfer the aborted code was making did not happen (and BDM64: its
		 * target may be wrong) */
		if ((r = dpt_resolve(c, 0)))
			return r;
		sub = XEV_TSX_ABORT;
	} else if (spec != c->in_tsx) {
		sub = spec ? XEV_TSX_BEGIN : XEV_TSX_COMMIT;
		/* control is at the event's IP: the transfer before it ends there (and goes
		 * out before the event, with the code it belongs to) */
		if (!pev->ip_suppressed && (r = dpt_resolve(c, pev->variant.tsx.ip)))
			return r;
	} else {
		return 0;
	}
	if (c->in_tsx && (r = dpt_tsx_end(c, aborted)))
		return r;
	if (!pev->status_update) {
		struct xev ev = dpt_mkev(c, XEV_TSX);
		ev.sub = sub;
		ev.ip = pev->ip_suppressed ? 0 : pev->variant.tsx.ip;
		if ((r = dpt_emit(c, &ev)))
			return r;
	}
	return spec ? tsx_begin(c) : 0;
}

int dpt_on_event(struct dctx *c, const struct pt_event *pev)
{
	struct xev ev;
	int r;

	/* a block is never continued across an event — except timing (tick, cbr) and the
	 * status updates of a PSB+, which restate state without changing control flow: a
	 * PSB falling inside a block must not split it (the tallies would then split every
	 * execution of that block, depending on where the PSBs happened to land) */
	if (pev->type != ptev_tick && pev->type != ptev_cbr && !pev->status_update &&
	    (r = dpt_flush_held(c)))
		return r;

	/* time only moves forward: libipt stamps some events (a MODE.EXEC read before a
	 * TIP.PGE) with the time of their packet, earlier than an event already seen */
	if (pev->has_tsc && (!c->have_tsc || pev->tsc > c->tsc)) {
		if ((r = on_time(c, pev->tsc)))
			return r;
		/* past dpt_run's limit: this event is taken up again on resume, when its
		 * time (just set) no longer counts as a change.  A block held across a PSB+
		 * ran before it: with split_at_pause it goes out now, at its own time */
		if (c->tmpl.time > c->limit)
			return c->opt->split_at_pause && (r = dpt_flush_held(c)) ? r : PAUSED;
	}
	switch (pev->type) {
	case ptev_enabled:
		c->enabled = 1;
		if ((r = dpt_resolve(c, pev->variant.enabled.ip)))
			return r;
		ev = dpt_mkev(c, XEV_ENABLE);
		ev.ip = pev->variant.enabled.ip;
		return dpt_emit(c, &ev);
	case ptev_disabled: {
		/* a syscall (far transfer) stopped tracing: the thread goes on after it
		 * (or in a signal handler the kernel delivers on its way back) */
		bool far = c->pending && ((c->out ? c->next : &c->br_ev)->flags & XEV_F_SYSCALL);
		c->enabled = 0;
		if ((r = dpt_resolve(c, pev->ip_suppressed ? 0 : pev->variant.disabled.ip)))
			return r;
		ev = dpt_mkev(c, XEV_DISABLE);
		ev.flags |= far ? XEV_F_SYSCALL : 0;
		ev.ip = 0;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.disabled.ip;
		return dpt_emit(c, &ev);
	}
	case ptev_async_disabled:
		c->enabled = 0;
		if ((r = dpt_resolve(c, pev->variant.async_disabled.at)))
			return r;
		ev = dpt_mkev(c, XEV_DISABLE);
		ev.ip = pev->variant.async_disabled.at;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.async_disabled.ip;
		return dpt_emit(c, &ev);
	case ptev_async_branch:
		if ((r = dpt_resolve(c, pev->variant.async_branch.from)))
			return r;
		ev = dpt_mkev(c, XEV_INTERRUPT);
		ev.ip = pev->variant.async_branch.from;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.async_branch.to;
		return dpt_emit(c, &ev);
	case ptev_overflow:
		if ((r = dpt_drop_pending(c)))
			return r;
		c->enabled = !pev->ip_suppressed;
		/* the transaction state is lost with the packets (libipt: not speculative) */
		c->specf = 0;
		if (c->in_tsx && (r = dpt_tsx_end(c, false)))
			return r;
		c->st->overflows++;
		c->st->gaps++;
		ev = dpt_mkev(c, XEV_GAP);
		ev.reason = "overflow";
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.overflow.ip;
		return dpt_emit(c, &ev);
	case ptev_stop:
		if ((r = dpt_resolve(c, 0)))
			return r;
		ev = dpt_mkev(c, XEV_DISABLE);
		ev.reason = "stopped";	/* TraceStop: the disable before it is final */
		return dpt_emit(c, &ev);
	case ptev_tsx:
		return on_tsx(c, pev);
	case ptev_mwait:
		ev = dpt_mkev(c, XEV_POWER);
		ev.sub = XEV_PWR_MWAIT;
		ev.ip = pev->ip_suppressed ? 0 : pev->variant.mwait.ip;
		ev.arg0 = pev->variant.mwait.hints;
		ev.arg1 = pev->variant.mwait.ext;
		return dpt_emit(c, &ev);
	case ptev_pwre:
		ev = dpt_mkev(c, XEV_POWER);
		ev.sub = XEV_PWR_PWRE;
		ev.arg0 = pev->variant.pwre.state;
		ev.arg1 = pev->variant.pwre.sub_state;
		ev.flags = pev->variant.pwre.hw ? XEV_F_HW : 0;
		return dpt_emit(c, &ev);
	case ptev_exstop:
		ev = dpt_mkev(c, XEV_POWER);
		ev.sub = XEV_PWR_EXSTOP;
		ev.ip = pev->ip_suppressed ? 0 : pev->variant.exstop.ip;
		return dpt_emit(c, &ev);
	case ptev_pwrx:
		ev = dpt_mkev(c, XEV_POWER);
		ev.sub = XEV_PWR_PWRX;
		ev.arg0 = pev->variant.pwrx.last;
		ev.arg1 = pev->variant.pwrx.deepest;
		ev.reason = pev->variant.pwrx.interrupt ? "interrupt" : pev->variant.pwrx.store ? "store" :
			pev->variant.pwrx.autonomous ? "autonomous" : NULL;
		return dpt_emit(c, &ev);
	default:
		return 0;	/* paging, mode, ptwrite, tick, cbr: timing only */
	}
}

#define RELEASE_MARGIN (1u << 20)	/* below the decoder: a resync looking further back
					 * re-reads dropped pages from the file */

void dpt_release(struct dctx *c, uint64_t off)
{
	long page = sysconf(_SC_PAGESIZE);
	if (off < c->released + 2 * RELEASE_MARGIN)
		return;
	uintptr_t from = ((uintptr_t)c->buf + c->released + (uintptr_t)page - 1) & ~((uintptr_t)page - 1);
	uintptr_t to = ((uintptr_t)c->buf + off - RELEASE_MARGIN) & ~((uintptr_t)page - 1);
	if (to > from)
		madvise((void *)from, to - from, MADV_DONTNEED);
	c->released = off - RELEASE_MARGIN;
}
