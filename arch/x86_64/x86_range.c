/* LBR range walking with capstone; see x86_range.h. */
#include "arch/x86_64/x86_range.h"

#include <errno.h>

int x86_range_walk(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t start,
		   uint64_t end, struct x86_range_info *ri, enum x86_bclass *cls)
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
				*cls = X86_BR_NONE;
				return 0;
			}
			return run.truncated == -EFAULT ? -EFAULT : -EINVAL;
		}
		if (run.term.ip == end) {
			*cls = run.term.br.cls;
			return 0;
		}
		if (run.term.ip > end || run.term.br.cls != X86_BR_COND)
			return -EINVAL;
		if (ri->ncond < X86_RANGE_MAX_COND) {
			ri->cond_ip[ri->ncond] = run.term.ip;
			ri->cond_next[ri->ncond] = run.term.br.next;
			ri->ncond++;
		}
		ip = run.term.br.next;
	}
	return -EINVAL;
}
