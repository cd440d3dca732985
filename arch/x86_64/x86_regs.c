#include "arch/x86_64/x86_regs.h"

#include <asm/perf_regs.h>

uint64_t x86_perf_regs_user_mask(void)
{
	return ((1ULL << PERF_REG_X86_64_MAX) - 1) &
	       ~((1ULL << PERF_REG_X86_DS) | (1ULL << PERF_REG_X86_ES) | (1ULL << PERF_REG_X86_FS) |
		 (1ULL << PERF_REG_X86_GS));
}
