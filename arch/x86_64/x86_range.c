/* LBR range walking with capstone; see x86_range.h. */
#include "x86_range.h"

#include <errno.h>

void x86_range_kind(enum x86_bclass cls, enum xev_kind *kind, uint32_t *flags)
{
	*flags = 0;
	switch (cls) {
	case X86_BR_COND:
		*kind = XEV_BRANCH, *flags = XEV_F_COND;
		break;
	case X86_BR_CALL:
		*kind = XEV_CALL;
		break;
	case X86_BR_CALL_IND:
		*kind = XEV_CALL, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_RET:
		*kind = XEV_RETURN, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_JMP_IND:
		*kind = XEV_BRANCH, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_SYSCALL:
	case X86_BR_FAR:
		*kind = XEV_BRANCH, *flags = XEV_F_SYSCALL;
		break;
	case X86_BR_TRAP:
		*kind = XEV_INTERRUPT;
		break;
	default:
		*kind = XEV_BRANCH;
		break;
	}
}

int x86_range_walk(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t start,
		   uint64_t end, struct dlbr_range_info *ri, enum xev_kind *kind, uint32_t *flags)
{
	uint64_t ip = start;

	ri->insns = 0;
	ri->ncond = 0;
	while (ip <= end) {
		struct x86_run run;
		/* Never decode past the range: bound the run by its bytes (1 byte min/insn). */
		uint32_t max = (uint32_t)(end - ip + 1);
		int rc = x86_dis_run(d, read, ctx, ip, max, &run);

		if (rc < 0)
			return rc == -EINVAL ? -EINVAL : -EFAULT;
		ri->insns += run.ninsns;
		if (run.truncated) {
			/* No branch within the range's bytes: fine only when `end` is the last
			 * instruction (a range may end at a non-branch, e.g. an interrupt). */
			if (run.truncated == -E2BIG && run.term.ip == end) {
				x86_range_kind(X86_BR_NONE, kind, flags);
				return 0;
			}
			return run.truncated == -EFAULT ? -EFAULT : -EINVAL;
		}
		if (run.term.ip == end) {
			x86_range_kind(run.term.br.cls, kind, flags);
			return 0;
		}
		if (run.term.ip > end || run.term.br.cls != X86_BR_COND)
			return -EINVAL;
		if (ri->ncond < DLBR_MAX_COND) {
			ri->cond_ip[ri->ncond] = run.term.ip;
			ri->cond_next[ri->ncond] = run.term.br.next;
			ri->ncond++;
		}
		ip = run.term.br.next;
	}
	return -EINVAL;
}
