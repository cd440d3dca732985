#include "arch/x86_64/x86_regs.h"

#include <asm/perf_regs.h>

uint64_t x86_perf_regs_user_mask(void)
{
	return ((1ULL << PERF_REG_X86_64_MAX) - 1) &
	       ~((1ULL << PERF_REG_X86_DS) | (1ULL << PERF_REG_X86_ES) | (1ULL << PERF_REG_X86_FS) |
		 (1ULL << PERF_REG_X86_GS));
}

uint64_t x86_perf_regs_retval_mask(void)
{
	return 1ULL << PERF_REG_X86_AX;
}

bool x86_perf_regs_retval(uint64_t mask, const uint64_t *regs, uint64_t *val)
{
	if (!regs || !(mask & (1ULL << PERF_REG_X86_AX)))
		return false;
	/* the registers below ax's bit come first */
	*val = regs[__builtin_popcountll(mask & ((1ULL << PERF_REG_X86_AX) - 1))];
	return true;
}
