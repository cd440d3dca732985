/* Branch classification and evaluation (see x86_branch.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch/x86_64/x86_branch.h"

static int jcc_code(unsigned id)
{
	switch (id) {
	case X86_INS_JO: return 0x0;
	case X86_INS_JNO: return 0x1;
	case X86_INS_JB: return 0x2;
	case X86_INS_JAE: return 0x3;
	case X86_INS_JE: return 0x4;
	case X86_INS_JNE: return 0x5;
	case X86_INS_JBE: return 0x6;
	case X86_INS_JA: return 0x7;
	case X86_INS_JS: return 0x8;
	case X86_INS_JNS: return 0x9;
	case X86_INS_JP: return 0xa;
	case X86_INS_JNP: return 0xb;
	case X86_INS_JL: return 0xc;
	case X86_INS_JGE: return 0xd;
	case X86_INS_JLE: return 0xe;
	case X86_INS_JG: return 0xf;
	case X86_INS_JRCXZ: return X86_CC_RCXZ;
	case X86_INS_JECXZ: return X86_CC_ECXZ;
	case X86_INS_JCXZ: return X86_CC_ECXZ;	/* not encodable in 64-bit mode */
	case X86_INS_LOOP: return X86_CC_LOOP;
	case X86_INS_LOOPE: return X86_CC_LOOPE;
	case X86_INS_LOOPNE: return X86_CC_LOOPNE;
	default: return -EINVAL;	/* not a conditional branch */
	}
}

static void copy_operand(const cs_x86_op *op, struct x86_operand *o)
{
	memset(o, 0, sizeof(*o));
	o->size = op->size;
	if (op->type == X86_OP_REG) {
		o->kind = X86_OPND_REG;
		o->reg = op->reg;
	} else if (op->type == X86_OP_MEM) {
		o->kind = X86_OPND_MEM;
		o->base = op->mem.base;
		o->index = op->mem.index;
		o->scale = op->mem.scale;
		o->disp = op->mem.disp;
		o->seg = op->mem.segment == X86_REG_FS ? X86_SEG_FS :
			 op->mem.segment == X86_REG_GS ? X86_SEG_GS : X86_SEG_NONE;
	}
}

void x86_branch_from_cs(const struct cs_insn *ci, struct x86_branch *b)
{
	const cs_x86 *x = &ci->detail->x86;
	int cc;

	memset(b, 0, sizeof(*b));
	b->ip = ci->address;
	b->next = ci->address + ci->size;
	b->addr32 = x->prefix[3] == X86_PREFIX_ADDRSIZE;
	cc = jcc_code(ci->id);
	if (cc >= 0) {
		b->cls = X86_BR_COND;
		b->cond = (uint8_t)cc;
		if (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM)
			b->target = (uint64_t)x->operands[0].imm;
		return;
	}
	switch (ci->id) {
	case X86_INS_JMP:
	case X86_INS_CALL:
		if (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM) {
			b->cls = ci->id == X86_INS_JMP ? X86_BR_JMP : X86_BR_CALL;
			b->target = (uint64_t)x->operands[0].imm;
		} else {
			b->cls = ci->id == X86_INS_JMP ? X86_BR_JMP_IND : X86_BR_CALL_IND;
			if (x->op_count >= 1)
				copy_operand(&x->operands[0], &b->opnd);
		}
		return;
	case X86_INS_RET:
		b->cls = X86_BR_RET;
		if (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM)
			b->ret_imm = (uint16_t)x->operands[0].imm;
		return;
	case X86_INS_SYSCALL:
	case X86_INS_SYSENTER:
		b->cls = X86_BR_SYSCALL;
		return;
	case X86_INS_INT:
		b->cls = (x->op_count >= 1 && x->operands[0].type == X86_OP_IMM &&
			  x->operands[0].imm == 0x80) ? X86_BR_SYSCALL : X86_BR_TRAP;
		return;
	case X86_INS_INT3:
	case X86_INS_INT1:
	case X86_INS_INTO:
	case X86_INS_UD0:
	case X86_INS_UD2:
	case X86_INS_UD2B:
		b->cls = X86_BR_TRAP;
		return;
	case X86_INS_LJMP:
	case X86_INS_LCALL:
	case X86_INS_RETF:
	case X86_INS_RETFQ:
	case X86_INS_IRET:
	case X86_INS_IRETD:
	case X86_INS_IRETQ:
	case X86_INS_SYSRET:
	case X86_INS_SYSEXIT:
		b->cls = X86_BR_FAR;
		return;
	default:
		b->cls = X86_BR_NONE;
		return;
	}
}

bool x86_branch_needs_trace(enum x86_bclass cls)
{
	switch (cls) {
	case X86_BR_COND:
	case X86_BR_JMP_IND:
	case X86_BR_CALL_IND:
	case X86_BR_RET:
	case X86_BR_SYSCALL:
	case X86_BR_TRAP:
	case X86_BR_FAR:
		return true;
	default:
		return false;
	}
}

const char *x86_branch_class_name(enum x86_bclass cls)
{
	static const char *const names[X86_BR_NCLASSES] = {
		[X86_BR_NONE] = "none",
		[X86_BR_COND] = "cond",
		[X86_BR_JMP] = "jmp",
		[X86_BR_CALL] = "call",
		[X86_BR_JMP_IND] = "jmp-ind",
		[X86_BR_CALL_IND] = "call-ind",
		[X86_BR_RET] = "ret",
		[X86_BR_SYSCALL] = "syscall",
		[X86_BR_TRAP] = "trap",
		[X86_BR_FAR] = "far",
	};
	return (unsigned)cls < X86_BR_NCLASSES ? names[cls] : "?";
}

#define F_CF (1u << 0)
#define F_PF (1u << 2)
#define F_ZF (1u << 6)
#define F_SF (1u << 7)
#define F_OF (1u << 11)

bool x86_cc_eval(unsigned cc, uint64_t fl)
{
	bool r, sf = fl & F_SF, of = fl & F_OF;

	switch (cc >> 1) {
	case 0: r = fl & F_OF; break;			/* o */
	case 1: r = fl & F_CF; break;			/* b */
	case 2: r = fl & F_ZF; break;			/* e */
	case 3: r = (fl & F_CF) || (fl & F_ZF); break;	/* be */
	case 4: r = sf; break;				/* s */
	case 5: r = fl & F_PF; break;			/* p */
	case 6: r = sf != of; break;			/* l */
	default: r = (fl & F_ZF) || sf != of; break;	/* le */
	}
	return (cc & 1) ? !r : r;
}

bool x86_branch_cond_taken(const struct x86_branch *b, const struct user_regs_struct *r,
			   uint64_t *new_rcx)
{
	uint64_t rcx = r->rcx, cnt;

	*new_rcx = rcx;
	switch (b->cond) {
	case X86_CC_RCXZ:
		return rcx == 0;
	case X86_CC_ECXZ:
		return (uint32_t)rcx == 0;
	case X86_CC_LOOP:
	case X86_CC_LOOPE:
	case X86_CC_LOOPNE:
		if (b->addr32) {
			cnt = (uint32_t)(rcx - 1);
			*new_rcx = (rcx & ~0xffffffffull) | cnt;
		} else {
			cnt = rcx - 1;
			*new_rcx = cnt;
		}
		if (cnt == 0)
			return false;
		if (b->cond == X86_CC_LOOPE)
			return r->eflags & F_ZF;
		if (b->cond == X86_CC_LOOPNE)
			return !(r->eflags & F_ZF);
		return true;
	default:
		return x86_cc_eval(b->cond, r->eflags);
	}
}

int x86_reg_value(const struct user_regs_struct *r, unsigned reg, uint64_t *val)
{
	uint64_t v;

	switch (reg) {
	case X86_REG_RAX: case X86_REG_EAX: case X86_REG_AX: case X86_REG_AL: v = r->rax; break;
	case X86_REG_RBX: case X86_REG_EBX: case X86_REG_BX: case X86_REG_BL: v = r->rbx; break;
	case X86_REG_RCX: case X86_REG_ECX: case X86_REG_CX: case X86_REG_CL: v = r->rcx; break;
	case X86_REG_RDX: case X86_REG_EDX: case X86_REG_DX: case X86_REG_DL: v = r->rdx; break;
	case X86_REG_RSI: case X86_REG_ESI: case X86_REG_SI: case X86_REG_SIL: v = r->rsi; break;
	case X86_REG_RDI: case X86_REG_EDI: case X86_REG_DI: case X86_REG_DIL: v = r->rdi; break;
	case X86_REG_RBP: case X86_REG_EBP: case X86_REG_BP: case X86_REG_BPL: v = r->rbp; break;
	case X86_REG_RSP: case X86_REG_ESP: case X86_REG_SP: case X86_REG_SPL: v = r->rsp; break;
	case X86_REG_R8: case X86_REG_R8D: case X86_REG_R8W: case X86_REG_R8B: v = r->r8; break;
	case X86_REG_R9: case X86_REG_R9D: case X86_REG_R9W: case X86_REG_R9B: v = r->r9; break;
	case X86_REG_R10: case X86_REG_R10D: case X86_REG_R10W: case X86_REG_R10B: v = r->r10; break;
	case X86_REG_R11: case X86_REG_R11D: case X86_REG_R11W: case X86_REG_R11B: v = r->r11; break;
	case X86_REG_R12: case X86_REG_R12D: case X86_REG_R12W: case X86_REG_R12B: v = r->r12; break;
	case X86_REG_R13: case X86_REG_R13D: case X86_REG_R13W: case X86_REG_R13B: v = r->r13; break;
	case X86_REG_R14: case X86_REG_R14D: case X86_REG_R14W: case X86_REG_R14B: v = r->r14; break;
	case X86_REG_R15: case X86_REG_R15D: case X86_REG_R15W: case X86_REG_R15B: v = r->r15; break;
	case X86_REG_AH: *val = (r->rax >> 8) & 0xff; return 0;
	case X86_REG_BH: *val = (r->rbx >> 8) & 0xff; return 0;
	case X86_REG_CH: *val = (r->rcx >> 8) & 0xff; return 0;
	case X86_REG_DH: *val = (r->rdx >> 8) & 0xff; return 0;
	default: return -EINVAL;
	}
	switch (reg) {
	case X86_REG_EAX: case X86_REG_EBX: case X86_REG_ECX: case X86_REG_EDX:
	case X86_REG_ESI: case X86_REG_EDI: case X86_REG_EBP: case X86_REG_ESP:
	case X86_REG_R8D: case X86_REG_R9D: case X86_REG_R10D: case X86_REG_R11D:
	case X86_REG_R12D: case X86_REG_R13D: case X86_REG_R14D: case X86_REG_R15D:
		v = (uint32_t)v;
		break;
	case X86_REG_AX: case X86_REG_BX: case X86_REG_CX: case X86_REG_DX:
	case X86_REG_SI: case X86_REG_DI: case X86_REG_BP: case X86_REG_SP:
	case X86_REG_R8W: case X86_REG_R9W: case X86_REG_R10W: case X86_REG_R11W:
	case X86_REG_R12W: case X86_REG_R13W: case X86_REG_R14W: case X86_REG_R15W:
		v = (uint16_t)v;
		break;
	case X86_REG_AL: case X86_REG_BL: case X86_REG_CL: case X86_REG_DL:
	case X86_REG_SIL: case X86_REG_DIL: case X86_REG_BPL: case X86_REG_SPL:
	case X86_REG_R8B: case X86_REG_R9B: case X86_REG_R10B: case X86_REG_R11B:
	case X86_REG_R12B: case X86_REG_R13B: case X86_REG_R14B: case X86_REG_R15B:
		v = (uint8_t)v;
		break;
	default:
		break;
	}
	*val = v;
	return 0;
}

int x86_branch_indirect_target(const struct x86_branch *b, const struct user_regs_struct *r,
			       x86_mem_read_fn read, void *ctx, uint64_t *target)
{
	const struct x86_operand *o = &b->opnd;
	uint64_t addr = 0, v;
	int err;

	if (b->cls == X86_BR_RET)
		return read(ctx, r->rsp, target, 8);
	if (b->cls != X86_BR_JMP_IND && b->cls != X86_BR_CALL_IND)
		return -EINVAL;
	if (o->kind == X86_OPND_REG) {
		if (o->size != 0 && o->size != 8)
			return -EINVAL;	/* 16-bit operand size: not used by compilers */
		return x86_reg_value(r, o->reg, target);
	}
	if (o->kind != X86_OPND_MEM || (o->size != 0 && o->size != 8))
		return -EINVAL;
	if (o->base == X86_REG_RIP) {
		addr = b->next;
	} else if (o->base != X86_REG_INVALID) {
		if ((err = x86_reg_value(r, o->base, &v)) < 0)
			return err;
		addr = v;
	}
	if (o->index != X86_REG_INVALID) {
		if ((err = x86_reg_value(r, o->index, &v)) < 0)
			return err;
		addr += v * o->scale;
	}
	addr += (uint64_t)o->disp;
	if (b->addr32)
		addr = (uint32_t)addr;
	if (o->seg == X86_SEG_FS)
		addr += r->fs_base;
	else if (o->seg == X86_SEG_GS)
		addr += r->gs_base;
	*target = 0;
	return read(ctx, addr, target, 8);
}
