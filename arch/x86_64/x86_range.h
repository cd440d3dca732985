/* What the code says about a range of straight-line execution [start, end] (an LBR
 * range): its instruction count, the conditional branches inside it (all fell through,
 * since the range ran straight), and the kind of the branch at `end`. */
#ifndef X86_RANGE_H
#define X86_RANGE_H

#include <stdint.h>

#include "arch/x86_64/x86_dis.h"

#define X86_RANGE_MAX_COND 256

struct x86_range_info {
	uint64_t insns;			/* instructions in [start, end] */
	uint32_t ncond;			/* conditional branches inside, all not taken */
	uint64_t cond_ip[X86_RANGE_MAX_COND];	/* (the first X86_RANGE_MAX_COND) */
	uint64_t cond_next[X86_RANGE_MAX_COND];	/* their fall-through address */
};

/* Returns 0 with *ri filled and the class of the branch at `end` in *cls (X86_BR_NONE
 * when `end` is no branch), -EFAULT when the bytes cannot be read, -EINVAL when
 * the code contradicts the range (an unconditional transfer before `end`, or `end` not
 * on an instruction boundary): the binary is not the one that ran. */
int x86_range_walk(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t start,
		   uint64_t end, struct x86_range_info *ri, enum x86_bclass *cls);

#endif
