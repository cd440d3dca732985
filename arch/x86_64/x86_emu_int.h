/* Inside x86_emu: what x86_emu.c shares with x86_emu_sse.c. */
#ifndef X86_EMU_INT_H
#define X86_EMU_INT_H

#include <capstone/capstone.h>

#include "arch/x86_64/x86_emu.h"

/* A general-purpose register, immediate or memory operand; -EINVAL otherwise. */
int x86_emu_opnd(const cs_x86_op *op, struct x86_uopnd *o);
/* The address of a memory operand (next: the address after the instruction). */
int x86_emu_ea(const struct x86_operand *m, uint64_t next, const struct user_regs_struct *r,
	       uint64_t *addr);

int x86_sse_translate(const cs_insn *ci, int att, struct x86_uop *u);
int x86_sse_exec(const struct x86_uop *u, uint64_t next, struct user_regs_struct *n,
		 x86_mem_read_fn rd, x86_mem_write_fn wr, void *ctx, struct x86_xmm *xmm);

#endif
