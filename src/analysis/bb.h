/* Basic-block analyses: block tallies and the stream filters in front of the
 * instruction-level views (views/bb_views.h).  Everything here consumes the common
 * event stream (decode/xev.h) and nothing else: which decoder produced it does not
 * matter.
 *
 * Code bytes and names come from a small interface the caller provides (bb_env), so
 * the same analyses work on raw PT (ptxed-style images) and on perf.data sessions. */
#ifndef BB_H
#define BB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/xev.h"

/* ---- what the views need to know about the traced program ---------------------- */

struct bb_env {
	/* Code bytes at `ip` in process `pid` at `time`: returns bytes read (0 unmapped). */
	size_t (*read)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint8_t *buf, size_t n);
	/* The function holding `ip`: its name (NULL when unknown), start and size. */
	const char *(*symbol)(void *ctx, int32_t pid, uint64_t time, uint64_t ip,
			      uint64_t *start, uint64_t *size);
	/* Source position of `ip`; false when unknown.  May be NULL. */
	bool (*srcline)(void *ctx, int32_t pid, uint64_t time, uint64_t ip,
			const char **file, int *line);
	/* The times [from, to) around `time` over which what read, symbol and srcline give
	 * for `ip` stays the same (a mapping's life, a JIT load until moved or replaced):
	 * how long formatted lines may be reused.  May be NULL: code never changes. */
	void (*span)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *from, uint64_t *to);
	void *ctx;
	/* The name every report gives the code at `ip` (a symbol, or "0x…" of an address
	 * without one, as --functions shows it) and its module in *module; NULL when
	 * unknown.  May be NULL. */
	const char *(*fn_name)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **module);
	/* The object file `ip` lies in and its address there, as objdump shows it (a
	 * PIE's or library's address less its load base): what a profile names for
	 * disassembly (callgrind's ob= and positions); false when unknown (JIT code,
	 * anonymous memory, a file that is no ELF).  May be NULL. */
	bool (*obj)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **path, uint64_t *vaddr);
	/* The name of thread `tid` at `time` (":TID" when it has none).  May be NULL. */
	const char *(*comm)(void *ctx, int32_t tid, uint64_t time);
	/* The file (or [vdso], //anon, ...) mapped at `ip`, as perf script's dso field
	 * names it; NULL when unmapped.  May be NULL. */
	const char *(*dso)(void *ctx, int32_t pid, uint64_t time, uint64_t ip);
	/* The functions inlined at `ip` as "outer > ... > inner" in buf (n bytes); false
	 * when none is.  May be NULL. */
	bool (*inlined)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, char *buf, size_t n);
};

/* ---- stream filters: --tid, --time A-B, --sym (the engine puts the time window in
 * front of every view, the code views add --sym; env may be NULL without sym) ---- */

struct bb_filter {
	int32_t tid;		/* -1: all */
	uint64_t t0, t1;	/* [t0, t1]; t1 = UINT64_MAX open */
	const char *sym;	/* NULL: all; a name or an fnmatch glob */
	const struct bb_env *env;
	struct xev_sink next;
	/* --sym: the last function looked up, to avoid a lookup per event */
	uint64_t fn_start, fn_end;
	bool fn_match, fn_valid;
	bool last_in;		/* the last code event was in the function */
	uint64_t matched;	/* code events --sym let through: none means nothing matched */
};

void bb_filter_init(struct bb_filter *f, const struct bb_env *env, struct xev_sink next);
/* Parses "A-B", "A-", "-B" (integers in the trace's time unit, or seconds with a '.'
 * like perf's --time, converted to ns; "+S": S seconds after `first`), and perf's
 * percentages of the span [first, last]: "A%" (the first slice of A %), "A%/N" (the
 * Nth), "A%-B%".  Returns 0, -EINVAL, or -ENODATA for a relative time or a percentage
 * without a span (first, last 0). */
int bb_parse_time_range(const char *s, uint64_t first, uint64_t last, uint64_t *t0, uint64_t *t1);
int bb_filter_event(void *ctx, const struct xev *ev);

/* ---- block tallies --------------------------------------------------------------- */

struct bb_block {
	uint64_t start, end;	/* first and last instruction */
	uint64_t count;		/* executions */
	uint64_t aborted;	/* executions in transactions that aborted (not in count) */
	uint64_t insns;		/* instructions per execution */
	uint64_t cycles;	/* sum over executions that had a cycle count */
	uint64_t cyc_execs;	/* executions with cycles */
	uint64_t taken, not_taken;	/* terminating conditional branch */
	uint64_t target, fall;	/* its taken target / fall-through (last seen) */
	uint32_t approx;	/* executions whose cycles were apportioned */
	bool cond;
	int32_t pid;		/* first process seen executing it */
	uint64_t time;		/* first time seen (for symbol lookups) */
};

struct bb_tally;

struct bb_tally *bb_tally_new(void);
void bb_tally_free(struct bb_tally *t);
/* What the tally does not look at (a decoder hint, e.g. dpt_options.ignore). */
#define BB_TALLY_IGNORE ((1u << XEV_CALL) | (1u << XEV_RETURN) | (1u << XEV_SAMPLE) | (1u << XEV_TIME))
/* xev sink function (ctx = the tally). */
int bb_tally_event(void *ctx, const struct xev *ev);
int bb_tally_batch(void *ctx, const struct xev *evs, size_t n);
/* Adds the counts of `later`, a tally of the stream right after t's (parallel decode):
 * t is then what one tally of both would be.  0 or -ENOMEM. */
int bb_tally_merge(struct bb_tally *t, const struct bb_tally *later);
size_t bb_tally_nblocks(const struct bb_tally *t);
uint64_t bb_tally_insns(const struct bb_tally *t);
uint64_t bb_tally_gaps(const struct bb_tally *t);
/* Instructions run in transactions that aborted (XEV_F_ABORTED): not in bb_tally_insns. */
uint64_t bb_tally_aborted(const struct bb_tally *t);
bool bb_tally_has_cycles(const struct bb_tally *t);
/* Blocks sorted by cycles (when the trace has any), else by count, descending; ties by
 * address.  The array is owned by the tally and valid until the next event. */
struct bb_block **bb_tally_sorted(struct bb_tally *t, size_t *n);

/* Basic blocks proper: a block that runs into another block's start (libipt starts a
 * block wherever tracing resumed, so a loop's first iteration shares the entry block)
 * is split there and its counts go to both pieces.  `len` gives the length of the
 * instruction at ip (0: unknown; such blocks are kept whole).  A new tally. */
struct bb_tally *bb_tally_basic(struct bb_tally *t, size_t (*len)(void *ctx, const struct bb_block *b,
								  uint64_t ip), void *ctx);

#endif
