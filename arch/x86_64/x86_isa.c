#include <errno.h>

#include "arch/x86_64/x86_hint.h"
#include "arch/x86_64/x86_isa.h"

bool x86_isa_bp_needed(enum x86_bclass cls)
{
	return x86_branch_needs_trace(cls) && cls != X86_BR_SYSCALL && cls != X86_BR_TRAP &&
	       cls != X86_BR_FAR;
}

bool x86_isa_emulable(enum x86_bclass cls)
{
	switch (cls) {
	case X86_BR_COND: case X86_BR_RET: case X86_BR_JMP_IND: case X86_BR_CALL_IND:
	case X86_BR_JMP: case X86_BR_CALL:
		return true;
	default:
		return false;
	}
}

int x86_isa_push(struct user_regs_struct *r, uint64_t val, const struct x86_isa_mem *m)
{
	int err = m->wr(m->ctx, r->rsp - 8, &val, 8);

	if (err < 0)
		return err;
	r->rsp -= 8;
	return 0;
}

int x86_isa_branch(const struct x86_branch *b, struct user_regs_struct *r,
		   const struct x86_isa_mem *m, int *taken)
{
	uint64_t target, rcx;
	int err;

	switch (b->cls) {
	case X86_BR_JMP:
	case X86_BR_CALL:
		if (b->cls == X86_BR_CALL && (err = x86_isa_push(r, b->next, m)) < 0)
			return err;
		r->rip = b->target;
		return 0;
	case X86_BR_COND:
		*taken = x86_branch_cond_taken(b, r, &rcx);
		r->rcx = rcx;
		r->rip = *taken ? b->target : b->next;
		return 0;
	case X86_BR_RET:
		if ((err = m->rd(m->ctx, r->rsp, &target, 8)) < 0)
			return err;
		r->rsp += 8 + b->ret_imm;
		r->rip = target;
		return 0;
	case X86_BR_JMP_IND:
	case X86_BR_CALL_IND:
		if ((err = x86_branch_indirect_target(b, r, m->rd, m->ctx, &target)) < 0)
			return err;
		if (b->cls == X86_BR_CALL_IND && (err = x86_isa_push(r, b->next, m)) < 0)
			return err;
		r->rip = target;
		return 0;
	default:
		return -EINVAL;
	}
}

int x86_isa_translate(const struct x86_dis *d, struct x86_uop *u)
{
	/* rdssp and the shadow-stack instructions depend on the thread's CET state, which
	 * only the CPU knows: it runs them */
	if (d->hint >= 0) {
		if (d->hint != X86_HINT_NOP)
			return -EINVAL;
		*u = (struct x86_uop){ .kind = U_NOP, .len = d->hint_len };
		return 0;
	}
	return x86_emu_translate(d->scratch, !d->intel, u);
}
