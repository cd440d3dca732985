/* User registers samples take (PERF_SAMPLE_REGS_USER): for DWARF unwinding, for return
 * values. */
#ifndef X86_REGS_H
#define X86_REGS_H

#include <stdbool.h>
#include <stdint.h>

/* perf's x86_64 PERF_REGS_MASK: every general register except the segment registers
 * ds/es/fs/gs, which the kernel does not sample for 64-bit tasks. */
uint64_t x86_perf_regs_user_mask(void);

/* The register holding an integer or pointer return value (rax, System V ABI): its
 * PERF_SAMPLE_REGS_USER bit, and its value in a sample's registers (`regs` one per bit
 * of `mask`, in bit order); false when the sample has not got it. */
uint64_t x86_perf_regs_retval_mask(void);
bool x86_perf_regs_retval(uint64_t mask, const uint64_t *regs, uint64_t *val);

#endif
