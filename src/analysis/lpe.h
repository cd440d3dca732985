/* Loops estimated from sampled branch stacks (decode --loops on LBR traces).
 *
 * A branch stack is a window of consecutive taken branches before its sample (N
 * branches, N - 1 ranges between them: each but the oldest ends a range).  A
 * taken jump to an address at or before its own in the same function is a back
 * edge; its target, the loop's header.  A back edge taken k times in one window is k
 * iterations seen; each window stands for `period / instructions it covers` of the
 * execution (a sample every `period` instructions, each window covering its ranges'
 * instructions), so the iterations seen scale by that ratio.  The sampling event must
 * count instructions for the scale to be iterations (perf inject --itrace=iN,
 * instructions); entries and trip counts are not seen in windows.  Loops of one
 * function nest by their spans [header, furthest back edge].  Memory holds the
 * loops and one window. */
#ifndef LPE_H
#define LPE_H

#include "analysis/lp.h"

struct lpe_loop {
	struct lp_loop l;	/* fn, fn_start, header, pid, time, parent, depth, file, line,
				 * first_line (of [header, src], as lp's), iterations (rounded) */
	uint64_t src;		/* the furthest back edge's source */
	double iterations;	/* estimated */
	uint64_t seen;		/* back edges taken in windows (ending one of their ranges) */
	uint64_t windows;	/* windows that took one */
};

struct lpe;

struct lpe *lpe_new(const struct lp_env *env);
void lpe_free(struct lpe *a);
/* xev sink (ctx = the analysis): taken branches, ranges, samples ending windows. */
int lpe_event(void *ctx, const struct xev *ev);
/* The loops, by function (by estimated iterations, descending), each function's in
 * nesting order (a loop before those inside it, siblings by address); owned by the
 * analysis.  -ENOMEM or the count. */
int lpe_loops(struct lpe *a, const struct lpe_loop **out);

#endif
