/* What the code says about a range of straight-line execution [start, end] (an LBR
 * range): its instruction count, the conditional branches inside it (all fell through,
 * since the range ran straight), and the kind of the branch at `end`. */
#ifndef X86_RANGE_H
#define X86_RANGE_H

#include <stdint.h>

#include "lbr.h"
#include "x86_dis.h"

/* Returns 0 with *ri filled and the branch at `end` in *kind and *flags (XEV_BRANCH with
 * flags 0 when `end` is no branch), -EFAULT when the bytes cannot be read, -EINVAL when
 * the code contradicts the range (an unconditional transfer before `end`, or `end` not
 * on an instruction boundary): the binary is not the one that ran. */
int x86_range_walk(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t start,
		   uint64_t end, struct dlbr_range_info *ri, enum xev_kind *kind, uint32_t *flags);

/* The xev kind and flags of a branch class. */
void x86_range_kind(enum x86_bclass cls, enum xev_kind *kind, uint32_t *flags);

#endif
