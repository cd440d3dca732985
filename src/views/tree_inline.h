/* Inline frames of exact traces' blocks for the call trees (decode --inline): each
 * block cut into runs of instructions with one chain of inlined functions (DWARF's
 * inlined subroutines, session/sym.h's sym_inline), computed once per block. */
#ifndef TREE_INLINE_H
#define TREE_INLINE_H

#include <stdint.h>

#include "decode/ctx.h"

#define TI_MAX_DEPTH 16

struct ti_seg {
	uint32_t chain;		/* offset of its chain in ti_chains, outermost first */
	uint32_t nchain;
	uint64_t insns;
};

struct ti;

struct ti *ti_new(struct dec_ctx *c);
void ti_free(struct ti *t);
/* The runs of block [ip, end] of process pid at time, `insns` instructions (the
 * block's first: blocks are cut once): *segs (n of them) and the chains they index
 * (*chains), valid until the next call; n 0: the code is unreadable.  0 or -ENOMEM. */
int ti_block(struct ti *t, int32_t pid, uint64_t time, uint64_t ip, uint64_t end, uint64_t insns,
	     const struct ti_seg **segs, uint32_t *n, const uint32_t **chains);

/* A sample's functions (fns, n of them, root first: its callchain's frames, or its IP
 * alone when it has none) into out (room for n * (TI_MAX_DEPTH + 1)), each frame
 * followed by the functions inlined where it was, outermost first: the leaf's at the
 * sample's address, a caller's at its return address minus one (its call
 * instruction, where perf report --inline looks them up).  The count. */
uint32_t ti_sample(struct dec_ctx *c, const struct xev *ev, const uint32_t *fns, uint32_t n, uint32_t *out);

#endif
