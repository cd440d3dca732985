/* User registers a DWARF-unwinding sample needs (PERF_SAMPLE_REGS_USER). */
#ifndef X86_REGS_H
#define X86_REGS_H

#include <stdint.h>

/* perf's x86_64 PERF_REGS_MASK: every general register except the segment registers
 * ds/es/fs/gs, which the kernel does not sample for 64-bit tasks. */
uint64_t x86_perf_regs_user_mask(void);

#endif
