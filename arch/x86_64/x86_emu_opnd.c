/* Operands of the straight-line emulation: registers by capstone id, operand kinds,
 * effective addresses; shared by the integer (x86_emu.c) and SSE (x86_emu_sse.c) halves,
 * which call down into it and not into each other's helpers. */
#include <errno.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch/x86_64/x86_emu_int.h"

/* The register's 64-bit slot and width; *hi: ah/bh/ch/dh, bits 8-15 of it. */
static unsigned long long *slot(struct user_regs_struct *r, unsigned reg, int *size, int *hi)
{
	*size = 8;
	*hi = 0;
	switch (reg) {
	case X86_REG_AH: *size = 1; *hi = 1; return &r->rax;
	case X86_REG_BH: *size = 1; *hi = 1; return &r->rbx;
	case X86_REG_CH: *size = 1; *hi = 1; return &r->rcx;
	case X86_REG_DH: *size = 1; *hi = 1; return &r->rdx;
#define R(q, d, w, b, f) \
	case X86_REG_##q: return &r->f; \
	case X86_REG_##d: *size = 4; return &r->f; \
	case X86_REG_##w: *size = 2; return &r->f; \
	case X86_REG_##b: *size = 1; return &r->f;
	R(RAX, EAX, AX, AL, rax)
	R(RBX, EBX, BX, BL, rbx)
	R(RCX, ECX, CX, CL, rcx)
	R(RDX, EDX, DX, DL, rdx)
	R(RSI, ESI, SI, SIL, rsi)
	R(RDI, EDI, DI, DIL, rdi)
	R(RBP, EBP, BP, BPL, rbp)
	R(RSP, ESP, SP, SPL, rsp)
	R(R8, R8D, R8W, R8B, r8)
	R(R9, R9D, R9W, R9B, r9)
	R(R10, R10D, R10W, R10B, r10)
	R(R11, R11D, R11W, R11B, r11)
	R(R12, R12D, R12W, R12B, r12)
	R(R13, R13D, R13W, R13B, r13)
	R(R14, R14D, R14W, R14B, r14)
	R(R15, R15D, R15W, R15B, r15)
#undef R
	default:
		return NULL;
	}
}

int x86_reg_write(struct user_regs_struct *r, unsigned reg, uint64_t val)
{
	int size, hi;
	unsigned long long *p = slot(r, reg, &size, &hi);

	if (!p)
		return -EINVAL;
	if (hi) {
		*p = (*p & ~0xff00ull) | (uint64_t)(uint8_t)val << 8;
		return 0;
	}
	switch (size) {
	case 8: *p = val; break;
	case 4: *p = (uint32_t)val; break;
	case 2: *p = (*p & ~0xffffull) | (uint16_t)val; break;
	default: *p = (*p & ~0xffull) | (uint8_t)val; break;
	}
	return 0;
}

int x86_emu_opnd(const cs_x86_op *op, struct x86_uopnd *o)
{
	int size, hi;
	struct user_regs_struct dummy;

	memset(o, 0, sizeof(*o));
	o->size = op->size;
	switch (op->type) {
	case X86_OP_REG:
		if (!slot(&dummy, op->reg, &size, &hi) || size != op->size)
			return -EINVAL;	/* segment, vector registers */
		o->kind = X86_OPND_REG;
		o->reg = op->reg;
		return 0;
	case X86_OP_IMM:
		o->kind = X86_UOPND_IMM;
		o->imm = op->imm;
		return 0;
	case X86_OP_MEM:
		if (op->mem.segment != X86_REG_INVALID && op->mem.segment != X86_REG_FS &&
		    op->mem.segment != X86_REG_GS)
			return -EINVAL;
		if (op->size != 1 && op->size != 2 && op->size != 4 && op->size != 8)
			return -EINVAL;
		o->kind = X86_OPND_MEM;
		o->mem.kind = X86_OPND_MEM;
		o->mem.base = op->mem.base;
		o->mem.index = op->mem.index;
		o->mem.scale = (uint8_t)op->mem.scale;
		o->mem.disp = op->mem.disp;
		o->mem.seg = op->mem.segment == X86_REG_FS ? X86_SEG_FS :
			     op->mem.segment == X86_REG_GS ? X86_SEG_GS : X86_SEG_NONE;
		o->mem.size = op->size;
		return 0;
	default:
		return -EINVAL;
	}
}

int x86_emu_ea(const struct x86_operand *m, uint64_t next, const struct user_regs_struct *r,
	       uint64_t *addr)
{
	uint64_t a = 0, v;

	if (m->base == X86_REG_RIP)
		a = next;
	else if (m->base != X86_REG_INVALID) {
		if (x86_reg_value(r, m->base, &v) < 0)
			return -EINVAL;
		a = v;
	}
	if (m->index != X86_REG_INVALID) {
		if (x86_reg_value(r, m->index, &v) < 0)
			return -EINVAL;
		a += v * m->scale;
	}
	a += (uint64_t)m->disp;
	if (m->seg == X86_SEG_FS)
		a += r->fs_base;
	else if (m->seg == X86_SEG_GS)
		a += r->gs_base;
	*addr = a;
	return 0;
}
