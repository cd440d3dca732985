/* The common execution-event stream.  Every decoder (pt, lbr, samples, ...) turns its
 * trace into these events, per thread and in time order; every analysis (blocks,
 * call tree, instruction views, exports) consumes only these.  Analyses never learn
 * which source produced an event, only whether it is exact or sampled (XEV_F_SAMPLED). */
#ifndef XEV_H
#define XEV_H

#include <stddef.h>
#include <stdint.h>

enum xev_kind {
	XEV_BLOCK,	/* straight-line run [ip, end] of `insns` instructions */
	XEV_BRANCH,	/* ip -> addr; XEV_F_TAKEN / XEV_F_COND say which kind */
	XEV_CALL,	/* call at ip to addr (the callee) */
	XEV_RETURN,	/* return at ip to addr */
	XEV_SAMPLE,	/* sampled ip with `weight` and optional callchain */
	XEV_GAP,	/* trace lost: `reason`, `lost` bytes; state is unknown after it */
	XEV_ENABLE,	/* tracing (re)starts at ip (PT TIP.PGE, filter entry) */
	XEV_DISABLE,	/* tracing stops after ip (PT TIP.PGD, syscall, filter exit) */
	XEV_INTERRUPT,	/* asynchronous transfer ip -> addr (signal, interrupt) */
	XEV_TIME,	/* a timestamp with no other event */
	/* the trace ends while tracing was on: nothing after the events before it is
	 * known (PT: the end of the buffer, libipt's pts_eos) */
	XEV_END,
	XEV_POWER,	/* a power event: `sub` (enum xev_power) says which, ip where (0 none) */
	XEV_TSX,	/* a transaction begins, commits or aborts (`sub`: enum xev_tsx) at ip */
	/* parallel decode only (decode/dec_par.h), never seen by a view: where a piece of
	 * a trace meets its neighbours (`sub`: enum xev_stitch) */
	XEV_STITCH,
	/* the thread leaves the cpu (`sub` XEV_SWITCH_OUT) or comes back (XEV_SWITCH_IN);
	 * only to views that ask with DEC_WANT_SWITCH */
	XEV_SWITCH,
};

enum xev_switch { XEV_SWITCH_IN, XEV_SWITCH_OUT };

/* A piece decoded on its own starts without the state the decode before it left (a
 * block running on without a branch, a transfer waiting for its target) and ends with
 * such state unresolved.  The decoder says where each shows, and the engine joins the
 * pieces as one decode would have (engine/eng_par.c). */
enum xev_stitch {
	/* the end of a piece: the block held back (ip, end, insns, time, flags) */
	XEV_ST_HELD,
	/* the end of a piece: the transfer waiting for its target (arg0: its kind, arg1:
	 * the fall-through, ip, flags) */
	XEV_ST_PENDING,
	/* the start of a piece meets a block at addr (time): it resolves the previous
	 * piece's transfer, or the next XEV_BLOCK continues its held block */
	XEV_ST_BLOCK,
	/* the start of a piece meets an event: the previous piece's held block ends here */
	XEV_ST_FLUSH,
	/* the start of a piece resolves the previous piece's transfer to addr (0: none) */
	XEV_ST_RESOLVE,
	/* a queue's decode time moved on to `time`: where a decode of several queues in
	 * time order may turn to another (the decoder's own marks in a stream, dec_par.h
	 * streams; the join never sees them) */
	XEV_ST_TIME,
};

enum xev_power {
	XEV_PWR_MWAIT,	/* arg0 hints, arg1 extensions */
	XEV_PWR_PWRE,	/* arg0 C-state, arg1 sub-state; XEV_F_HW: hardware initiated */
	XEV_PWR_EXSTOP,	/* execution stopped */
	XEV_PWR_PWRX,	/* arg0 last (core) C-state, arg1 deepest; `reason` the wake reason */
};

enum xev_tsx {
	XEV_TSX_BEGIN,
	XEV_TSX_COMMIT,
	XEV_TSX_ABORT,
};

enum xev_flags {
	XEV_F_SAMPLED = 1u << 0,	/* statistical, not every execution */
	XEV_F_TAKEN = 1u << 1,		/* branch was taken */
	XEV_F_COND = 1u << 2,		/* conditional branch */
	XEV_F_INDIRECT = 1u << 3,	/* target came from the trace, not the code */
	XEV_F_CYC_APPROX = 1u << 4,	/* cycles apportioned from a shared CYC/LBR value */
	XEV_F_TAIL = 1u << 5,		/* jump used as a tail call */
	/* the transfer is a syscall / far transfer; XEV_DISABLE: one stopped tracing */
	XEV_F_SYSCALL = 1u << 6,
	/* XEV_CALL / XEV_RETURN of an entry/exit event (a probe): the event names a
	 * function, not a branch.  CALL: addr = the function entered, ip = 0 (the caller
	 * is not traced); RETURN: ip = the entry of the function left (0: unknown). */
	XEV_F_FUNC = 1u << 7,
	/* executed inside a transaction (TSX): its effects count only if it commits */
	XEV_F_SPECULATIVE = 1u << 8,
	/* speculative, and the transaction aborted: it ran, but undone (tallies count it
	 * apart) */
	XEV_F_ABORTED = 1u << 9,
	XEV_F_HW = 1u << 10,		/* XEV_POWER: initiated by the hardware */
	/* XEV_RETURN with XEV_F_FUNC: arg0 holds the return value register as the
	 * function left (a return probe's hit took it) */
	XEV_F_RETVAL = 1u << 11,
};

#define XEV_CYCLES_UNKNOWN UINT64_MAX

/* What a tally reads of every block (kind .. cycles) comes first, in one cache line. */
struct xev {
	enum xev_kind kind;
	uint32_t flags;
	uint64_t time;		/* perf clock ns; 0 unknown */
	uint64_t ip;		/* block start, branch/call/return source, sample ip */
	uint64_t end;		/* XEV_BLOCK: address of the last instruction */
	uint64_t addr;		/* branch/call/return/interrupt target */
	uint64_t insns;		/* XEV_BLOCK: instructions in the run */
	uint64_t cycles;	/* XEV_CYCLES_UNKNOWN when the trace has no timing */
	int32_t pid, tid;
	int32_t cpu;		/* -1 unknown */
	uint64_t weight;	/* XEV_SAMPLE: period or count; blocks of sampled ranges: 1 */
	/* XEV_SAMPLE, and an XEV_F_FUNC call whose hit has one: callchain, leaf first
	 * (user addresses) */
	const uint64_t *stack;
	uint32_t nstack;
	uint32_t event;		/* XEV_SAMPLE, XEV_F_FUNC: which recorded event (attr index) */
	const uint64_t *values;	/* XEV_SAMPLE: group counter values, one per event */
	uint32_t nvalues;
	const char *reason;	/* XEV_GAP: why; XEV_DISABLE: "stopped" (PT TraceStop), else NULL */
	uint64_t lost;		/* XEV_GAP: bytes (or records) lost */
	uint64_t offset;	/* position in the source trace (gap reports, --insn) */
	const uint8_t *bytes;	/* XEV_BLOCK of one instruction from an instruction-level
				 * decoder: its bytes (valid during the call); else NULL */
	uint32_t nbytes;
	uint32_t sub;		/* XEV_POWER: enum xev_power; XEV_TSX: enum xev_tsx;
				 * XEV_SWITCH: enum xev_switch */
	uint64_t arg0, arg1;	/* XEV_POWER: its values (enum xev_power); arg0: XEV_F_RETVAL */
};

/* A consumer; returning non-zero stops the producer, which returns that value. */
typedef int (*xev_sink_fn)(void *ctx, const struct xev *ev);
/* The same consumer taking `n` consecutive events at once (what fn would see one by
 * one); it stops at the first event it would stop at. */
typedef int (*xev_batch_fn)(void *ctx, const struct xev *evs, size_t n);

struct xev_sink {
	xev_sink_fn fn;
	void *ctx;
	xev_batch_fn batch;	/* optional (NULL): producers may hand over arrays, one
				 * call per array instead of one per event (hot paths) */
};

static inline int xev_emit(const struct xev_sink *s, const struct xev *ev)
{
	return s->fn(s->ctx, ev);
}

static inline int xev_emit_batch(const struct xev_sink *s, const struct xev *evs, size_t n)
{
	if (s->batch)
		return s->batch(s->ctx, evs, n);
	for (size_t i = 0; i < n; i++) {
		int r = s->fn(s->ctx, &evs[i]);
		if (r)
			return r;
	}
	return 0;
}

#endif
