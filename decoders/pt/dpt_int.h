/* The PT decoder's state and its hot per-block steps, shared by the libipt loops
 * (dpt_decode.c) and the packet walker (dpt_fast.c): both feed blocks and events
 * through the same code, so the event streams they make cannot drift apart. */
#ifndef DPT_INT_H
#define DPT_INT_H

#include <stdbool.h>
#include <string.h>

#include "decoders/pt/dpt.h"
#include "decoders/pt/dpt_table.h"
#include "arch/x86_64/x86_dis.h"

/* What ends a block, decoded once per address: libipt's block decoder gives neither the
 * fall-through of a conditional branch nor (on its cached fast path) always the class
 * of the last instruction. */
#define BCACHE_BITS 14

enum bclass { B_OTHER, B_COND, B_JUMP, B_CALL, B_RET, B_FAR };

struct bcache_ent {
	uint64_t ip;		/* 0: empty */
	uint64_t next;		/* fall-through, 0 unknown */
	uint8_t cls;		/* enum bclass */
	uint8_t indirect;
};

struct dctx {
	const struct dpt_options *opt;
	const struct xev_sink *sink;
	struct dpt_stats *st;
	struct dpt_image *img;
	size_t len;
	struct xev tmpl;	/* pid/tid/cpu/time of every event */
	int have_tsc;
	uint64_t tsc;
	/* the transfer ending the previous block, waiting for its target, which decides
	 * XEV_F_TAKEN (taken unless it is pend_fall).  Its event is written ahead, all
	 * but the target and time, where it will go: in br_ev, or in the free slot of
	 * out (*next, which dpt_deliver() moves along) */
	int pending;
	uint64_t pend_fall;	/* conditional branches: the fall-through (0 unknown) */
	struct bcache_ent *bcache;	/* keyed by ip ^ space: btab->ent */
	struct dpt_table *btab;	/* in dpt_dec: a checkpoint's restore keeps its notes */
	uint64_t space;		/* the address space the code comes from (space_at) */
	struct x86_dis dis;
	int stop;		/* the sink's non-zero return */
	const uint8_t *buf;
	uint64_t released;	/* bytes of buf given back so far (release_behind) */
	uint32_t steps;
	void *dec;		/* the libipt decoder (core:bus ratio queries) */
	int is_insn;
	/* CYC timing: events since the last time update wait here until the next one
	 * says how many cycles they took (see on_time) */
	int cyc_mode;
	struct xev insn_ev, blk_ev, br_ev;	/* hot-path events, kept filled */
	/* a block that ended without a control transfer (libipt ends blocks at PSBs and
	 * other status updates too): held back and merged with the block that continues
	 * it, so a basic block is never cut where no branch is.  It is built in place, in
	 * blk_slot(): a copy read back right after its stores stalls on store forwarding
	 * (a wide load over narrow recent stores), which cost more than the rest of the
	 * per-block work together */
	int held;
	uint32_t want_ic;	/* (1u << pt_insn_class) whose transfers may be wanted */
	/* block decoder without CYC: blocks and transfers wait here and go to the sink
	 * as an array (xev_emit_batch: one call, not one per event).  The slots keep the
	 * template; only what differs between events is written (see dpt_resolve).  Anything
	 * else emitted delivers them first, and so must every return to the caller (the
	 * block held in *next is not part of them yet). */
	struct xev *out;
	struct xev *next;	/* the first free slot of out */
	struct xev *out_end;	/* out + OUT_MAX */
	struct xev *group;
	uint8_t (*group_raw)[16];
	size_t ngroup;
	uint64_t group_insns, group_blocks;
	/* where the resumable loop stands between dpt_run calls */
	int in_sync;		/* synchronised: `status` is the decoder's */
	int status;
	int err, synced, bad_sync;	/* error waiting for its gap (at err_off), ever synced */
	uint64_t err_off, last_bad, sync;
	uint64_t limit;		/* pause before events later than this */
	int have_saved;		/* the event the pause came at, its time already set */
	struct pt_event saved;
	int done;
	int enabled;		/* tracing is on (an end of the trace then is reported) */
	int query_branch;	/* the instruction decoder failed a branch's query */
	int have_err_off;	/* err_off is already where the error was */
	/* transactions (TSX): XEV_F_SPECULATIVE while in one; its events wait in tsx_buf
	 * (through tsx_sink) until the commit or abort says whether they count */
	uint32_t specf;
	int in_tsx;
	struct xev_sink tsx_sink;
	const struct xev_sink *user_sink;	/* where events go once the outcome is known */
	struct xev *tsx_buf;
	uint8_t (*tsx_raw)[16];
	size_t ntsx;
	/* in dpt_dec: the tables tsx_buf and tsx_raw are (dpt_table.h: 700 KB fresh
	 * from ASan's allocator each time, mapped and unmapped), taken at the first
	 * transaction; a rollback to a checkpoint before it takes them again */
	struct dpt_table *tsx_tab;
	/* a piece of a parallel decode (dpt_options.cont): what of the state before the
	 * piece is still unknown (UNK_*), and the PSB whose PSB+ was last looked at */
	unsigned unk;
	size_t psb_seen;
	/* the packet walker (dpt_fast.c), when dpt_options.pt_decoder lets it decode:
	 * the libipt block decoder takes the stretches it does not handle.  All events go
	 * through `wrap` (to real_sink), which counts what the walker delivered since its
	 * last checkpoint, and makes a libipt decode redoing that stretch skip as many */
	struct dpt_fast *fast;
	int in_fast;		/* the walker decodes now */
	int begun;		/* dpt_fast_begin was called */
	int fast_saved;		/* the walker paused at an event (dpt_run's limit) */
	uint64_t lib_stop;	/* libipt hands over at the PSB+ at this offset */
	uint64_t sync_at;	/* libipt synchronises at the PSB at sync_at - 1 (0: forward) */
	uint64_t counted, skip;
	struct xev_sink wrap;
	const struct xev_sink *real_sink;
};

enum { UNK_HELD = 1, UNK_PENDING = 2 };

struct dpt_dec {
	struct dctx c;
	struct dpt_table btab;
	struct dpt_table otab;	/* holds c.out (OUT_MAX events), never noted */
	/* c.group and c.group_raw (CYC mode), c.tsx_buf and c.tsx_raw: never noted */
	struct dpt_table group_tab[2], tsx_tab[2];
	struct dpt_options opt;
	struct dpt_stats st;
	struct pt_config cfg;
};

/* run()'s return when the next event is later than the limit */
#define PAUSED (-0x10001)
/* run()'s return when a piece reached the PSB it ends at */
#define PIECE_END (-0x10002)
/* run()'s return when the walker takes over (dpt_fast.c) */
#define HANDOVER (-0x10003)

#define GROUP_MAX 4096
#define OUT_MAX 256
/* Events of one transaction held until it ends.  Hardware transactions are small
 * (their footprint fits the L1 cache); a longer one goes out in parts as it goes,
 * the parts before its end without the abort mark. */
#define TSX_MAX 4096

int dpt_deliver(struct dctx *c);
int dpt_emit_group(struct dctx *c, struct xev *ev);
int dpt_stitch(struct dctx *c, enum xev_stitch sub, uint64_t addr);
const struct bcache_ent *dpt_branch_fill(struct dctx *c, struct bcache_ent *e, uint64_t ip);
int dpt_on_event(struct dctx *c, const struct pt_event *pev);
/* The CYC group waiting for its cycles goes out with `cycles` shared by instruction
 * counts (XEV_CYCLES_UNKNOWN: none known). */
int dpt_flush_group(struct dctx *c, uint64_t cycles);
/* The transfer waiting for its target is dropped: nothing after it is known. */
int dpt_drop_pending(struct dctx *c);
/* The transaction ends: its held events go out, marked aborted or not. */
int dpt_tsx_end(struct dctx *c, bool aborted);
int dpt_at_stop(struct dctx *c, uint64_t off);
int dpt_piece_end(struct dctx *c);
/* Gives back the pages of a release_behind buffer well behind offset `off`. */
void dpt_release(struct dctx *c, uint64_t off);

/* The walker (dpt_fast.c). */
int dpt_fast_init(struct dctx *c);
void dpt_fast_free(struct dctx *c);
/* libipt makes tick events (enable_tick_events): the walker makes them too. */
void dpt_fast_ticks(struct dctx *c, bool ticks);
/* At the start of a decode: the walker starts when buf begins with a PSB+ it takes,
 * else sets where libipt should hand over (lib_stop). */
void dpt_fast_begin(struct dctx *c);
/* libipt dequeued the first event of a PSB+ (at decoder offset `off`): 1 when the
 * walker takes over there (the event is its, with the time libipt had) */
int dpt_fast_take_over(struct dctx *c, uint64_t off, const struct pt_event *pev);
/* Decodes from where it took over: returns like run() (0 never: the end of the
 * buffer is libipt's), after setting up libipt to redo what it could not do. */
int dpt_fast_run(struct dctx *c);

static inline int dpt_commit(struct dctx *c)
{
	return ++c->next == c->out_end ? dpt_deliver(c) : 0;
}

/* Any event: the ones waiting in out go first. */
static inline int dpt_emit(struct dctx *c, struct xev *ev)
{
	if (c->next != c->out) {
		int r = dpt_deliver(c);
		if (r)
			return r;
	}
	if (!c->cyc_mode)
		return xev_emit(c->sink, ev);
	return dpt_emit_group(c, ev);
}

static inline struct xev dpt_mkev(const struct dctx *c, enum xev_kind kind)
{
	struct xev ev = c->tmpl;
	ev.kind = kind;
	return ev;
}

static inline const struct bcache_ent *dpt_branch_at(struct dctx *c, uint64_t ip)
{
	struct bcache_ent *e = &c->bcache[(ip ^ (ip >> BCACHE_BITS)) & ((1u << BCACHE_BITS) - 1)];
	if (e->ip == (ip ^ c->space) && ip)
		return e;
	return dpt_branch_fill(c, e, ip);
}

/* What libipt's class of the last instruction says, and what its transfers are as
 * events (XEV_F_TAKEN of a conditional branch is decided by its target). */
static const uint8_t ic_bclass[] = {
	[ptic_call] = B_CALL, [ptic_return] = B_RET, [ptic_jump] = B_JUMP, [ptic_cond_jump] = B_COND,
	[ptic_far_call] = B_FAR, [ptic_far_return] = B_FAR, [ptic_far_jump] = B_FAR,
};

static const struct {
	uint8_t kind, flags;
} bclass_ev[] = {
	[B_COND] = { XEV_BRANCH, XEV_F_COND },
	[B_JUMP] = { XEV_BRANCH, XEV_F_TAKEN },
	[B_CALL] = { XEV_CALL, XEV_F_TAKEN },
	[B_RET] = { XEV_RETURN, XEV_F_TAKEN | XEV_F_INDIRECT },
	[B_FAR] = { XEV_BRANCH, XEV_F_TAKEN | XEV_F_SYSCALL },
};

/* A transfer whose destination the trace does not give (tracing stopped with it, a
 * gap) is dropped: consumers only see transfers with both ends. */
static inline __attribute__((always_inline)) int dpt_resolve_in(struct dctx *c, uint64_t to, const bool out)
{
	if (!c->pending)
		return 0;
	uint64_t fall = c->pend_fall;
	c->pending = 0;
	if (!to)
		return 0;
	struct xev *ev = out ? c->next : &c->br_ev;
	ev->flags |= to != fall ? XEV_F_TAKEN : 0;
	ev->time = c->tmpl.time;
	ev->addr = to;
	return out ? dpt_commit(c) : dpt_emit(c, ev);
}

static inline int dpt_resolve(struct dctx *c, uint64_t to)
{
	if (__builtin_expect(c->unk & UNK_PENDING, 0)) {
		c->unk &= ~(unsigned)UNK_PENDING;
		int r = dpt_stitch(c, XEV_ST_RESOLVE, to);
		if (r)
			return r;
	}
	return c->out ? dpt_resolve_in(c, to, true) : dpt_resolve_in(c, to, false);
}

/* Remembers the transfer made by the instruction at `ip` ending a block.  `out` as in
 * dpt_resolve_in: where its event waits. */
static inline __attribute__((always_inline)) void dpt_set_pending(struct dctx *c, uint64_t ip,
							      enum pt_insn_class ic, const bool out)
{
	/* the common case: no transfer, or one the consumer does not want */
	if (!(c->want_ic & (1u << ic)))
		return;
	const struct bcache_ent *br = dpt_branch_at(c, ip);
	enum bclass cls = ic == ptic_error ? (enum bclass)br->cls :
		(size_t)ic < sizeof(ic_bclass) ? (enum bclass)ic_bclass[ic] : B_OTHER;
	if (cls == B_OTHER)
		return;
	c->pending = 1;
	c->pend_fall = cls == B_COND ? br->next : 0;	/* the others are always taken */
	struct xev *ev = out ? c->next : &c->br_ev;
	ev->kind = bclass_ev[cls].kind;
	ev->flags = bclass_ev[cls].flags | (br->indirect ? XEV_F_INDIRECT : 0) | c->specf;
	ev->ip = ip;
	if (out) {	/* a slot blocks used too (br_ev keeps the template's zeros) */
		ev->end = 0;
		ev->insns = 0;
	}
}

static inline int dpt_flush_held(struct dctx *c)
{
	if (c->unk & UNK_HELD) {
		c->unk &= ~(unsigned)UNK_HELD;
		int r = dpt_stitch(c, XEV_ST_FLUSH, 0);
		if (r)
			return r;
	}
	if (!c->held)
		return 0;
	c->held = 0;
	c->st->blocks++;
	return c->out ? dpt_commit(c) : dpt_emit(c, &c->blk_ev);
}

/* One block from libipt, taken in: 0, or the sink's stop (then in c->stop).  `out` is
 * c->out != NULL, a constant in each of the two instances below, so the per-block
 * path has no test of it. */
static inline __attribute__((always_inline)) int dpt_blk_take(struct dctx *c, const struct pt_block *b,
							  const bool out, uint64_t *insns, uint64_t *blocks)
{
	int r;
	if (!b->ninsn)
		return 0;
	/* the first block of a piece: it resolves the transfer the piece before it left,
	 * or continues its block */
	if (__builtin_expect(c->unk, 0)) {
		c->unk = 0;
		if ((r = dpt_stitch(c, XEV_ST_BLOCK, b->ip)))
			goto stop;
	}
	if (c->pending && (r = dpt_resolve_in(c, b->ip, out)))
		goto stop;
	*insns += b->ninsn;
	struct xev *ev = out ? c->next : &c->blk_ev;
	if (c->held) {
		ev->end = b->end_ip;
		ev->insns += b->ninsn;
	} else {
		ev->kind = XEV_BLOCK;
		ev->flags = b->speculative ? XEV_F_SPECULATIVE : 0;
		ev->addr = 0;
		ev->ip = b->ip;
		ev->end = b->end_ip;
		ev->insns = b->ninsn;
		ev->time = c->tmpl.time;
	}
	/* no transfer: the block goes on in the next one */
	if (b->iclass == ptic_other || (b->iclass == ptic_error && dpt_branch_at(c, b->end_ip)->cls == B_OTHER)) {
		c->held = 1;
		return 0;
	}
	c->held = 0;
	++*blocks;
	if ((r = out ? dpt_commit(c) : dpt_emit(c, ev)))
		goto stop;
	dpt_set_pending(c, b->end_ip, b->iclass, out);
	return 0;
stop:
	c->stop = r;
	return r;
}

#endif
