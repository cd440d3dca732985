/* Natural loops of the executed code, with exact trip counts (decode --loops).
 *
 * The loops are known only once the whole control-flow graph the trace exercised is:
 * a back edge is an edge to a block that dominates its source, which the last edge
 * seen may change.  So the analysis reads the stream twice:
 *   pass 1 (lp_event): per function its blocks and intra-function edges, a call's
 *     block joined to the block its return comes back to;
 *   lp_find: per function the leaders (block starts), the edges between them,
 *     dominators from the blocks a frame started at, back edges, the natural loop of
 *     each header (the blocks reaching a back edge's source without passing the
 *     header; loops of one header are one), their nesting;
 *   pass 2 (lp_event again): per thread a stack of frames, each with its loops
 *     active from outer to inner: a node outside an active loop ends that entry
 *     (its trips are the header's executions in it), a header inside its loop is an
 *     iteration, entering a loop is an entry.
 * Memory holds the executed code's graph and per loop the distinct trip counts (up to
 * LP_MAX_DISTINCT of them; past that the median comes from the log2 histogram),
 * never anything per execution. */
#ifndef LP_H
#define LP_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/xev.h"

#define LP_MAX_DISTINCT 16384
#define LP_HIST 64

struct lp_env {
	/* The function holding ip: a non-zero key and its first address; 0 when the
	 * code has no function (the analysis leaves it out). */
	uint64_t (*fn)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start);
	/* How many instructions lie in [from, upto) (decoding from `from`). */
	uint64_t (*ninsns)(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto);
	/* Source position of ip; false when unknown. */
	bool (*srcline)(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **file, int *line);
	/* The smallest source line among the instructions in [from, upto) that come from
	 * the same code as the instruction at `header` (its file, the function inlined
	 * there if any); 0 when none does. */
	int (*min_line)(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto, uint64_t header);
	void *ctx;
};

struct lp_loop {
	uint64_t fn;		/* the lp_env fn key */
	uint64_t fn_start;
	uint64_t header;	/* the header's address */
	int32_t pid;		/* where its function was first seen, for names */
	uint64_t time;
	uint32_t parent;	/* index of the enclosing loop, UINT32_MAX: none */
	uint32_t depth;		/* 1: outermost */
	uint32_t nblocks;	/* leaders in the body */
	uint64_t entries, iterations;
	uint64_t trips_min, trips_max, trips_median;
	bool median_approx;	/* more distinct trip counts than kept: from the histogram */
	uint64_t hist[LP_HIST];	/* entries by floor(log2(trips)) */
	uint64_t insns;		/* instructions run in the body, inner loops included
				 * (the function's own, not its callees') */
	uint64_t fn_insns;	/* the function's own instructions */
	uint64_t cycles;	/* the cycles of the body's blocks, counted as insns
				 * (lp_has_cycles: the trace had cycle counts) */
	const char *file;	/* the header's source position (NULL: unknown) */
	int line;
	/* the smallest line of the body's code that comes from where the header's does
	 * (its file, its inlined function): where the loop's statement begins whatever
	 * block the compiler made its header (what matches the loops of two builds) */
	int first_line;
};

struct lp;

struct lp *lp_new(const struct lp_env *env);
void lp_free(struct lp *a);
/* xev sink (ctx = the analysis): pass 1 before lp_find, pass 2 after. */
int lp_event(void *ctx, const struct xev *ev);
/* Ends pass 1: finds the loops.  0 or -ENOMEM. */
int lp_find(struct lp *a);
/* Ends pass 2: the loops, each function's in nesting order (a loop before those inside
 * it, siblings by address), functions by their instructions, descending; owned by
 * the analysis.  -ENOMEM or the count. */
int lp_loops(struct lp *a, const struct lp_loop **out);
/* Whether pass 2 met blocks with cycle counts (CYC packets). */
bool lp_has_cycles(const struct lp *a);

#endif
