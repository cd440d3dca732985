/* What the ptrace step tracer (src/record/step/stp.h) needs to know about x86-64: the
 * breakpoint instruction, where the registers of a stop place the event, which branches
 * a stop has to observe and can emulate, and the emulation itself on the registers
 * ptrace hands out.  The tracer keeps its tables and the ptrace loop; every register
 * field and instruction semantic stays here (and in x86_dis, x86_branch, x86_emu). */
#ifndef X86_ISA_H
#define X86_ISA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/user.h>

#include "arch/x86_64/x86_branch.h"
#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_emu.h"

/* int3: one byte, so it fits over any instruction without touching the next one. */
#define X86_ISA_BP_BYTE 0xcc

/* The tracee's memory, for emulation that reads or writes it (stack, operands). */
struct x86_isa_mem {
	x86_mem_read_fn rd;
	x86_mem_write_fn wr;
	void *ctx;
};

static inline uint64_t x86_isa_ip(const struct user_regs_struct *r)
{
	return r->rip;
}

static inline void x86_isa_set_ip(struct user_regs_struct *r, uint64_t ip)
{
	r->rip = ip;
}

/* int3 traps after itself: the breakpoint of a SIGTRAP stop lies one byte back. */
static inline uint64_t x86_isa_bp_addr(const struct user_regs_struct *r)
{
	return r->rip - 1;
}

/* At a syscall-entry stop rip follows the instruction: syscall, sysenter and int 0x80
 * are all 2 bytes. */
static inline uint64_t x86_isa_syscall_ip(const struct user_regs_struct *r)
{
	return r->rip - 2;
}

/* Where a thread stopped by PTRACE_INTERRUPT goes on when resumed without a signal: a
 * syscall the stop interrupted (orig_rax holds its number, rax one of the kernel's
 * -ERESTART* codes: ERESTARTSYS 512, ERESTARTNOINTR 513, ERESTARTNOHAND 514,
 * ERESTART_RESTARTBLOCK 516) is restarted by the kernel on the way out, which puts rip
 * back on the syscall instruction (arch/x86/kernel/signal.c); otherwise rip. */
static inline uint64_t x86_isa_resume_ip(const struct user_regs_struct *r)
{
	long nr = (long)r->orig_rax, rv = (long)r->rax;

	if (nr >= 0 && (rv == -512 || rv == -513 || rv == -514 || rv == -516))
		return r->rip - 2;
	return r->rip;
}

/* Does a run ending in this branch need a breakpoint (its outcome depends on registers
 * or memory: conditional, indirect, return)?  Syscalls, traps and far transfers are
 * seen through their own stops. */
bool x86_isa_bp_needed(enum x86_bclass cls);
/* Can x86_isa_branch() emulate it (so a stop may carry on past it)? */
bool x86_isa_emulable(enum x86_bclass cls);

/* Pushes `val` like a call pushes its return address. */
int x86_isa_push(struct user_regs_struct *r, uint64_t val, const struct x86_isa_mem *m);
/* Emulates branch `b` (one x86_isa_emulable() accepts) on `r`: rip, rsp and the pushed
 * return address, the loop counter; *taken for a conditional branch.  0, or a negative
 * errno (unreadable stack or operand, a class it cannot emulate). */
int x86_isa_branch(const struct x86_branch *b, struct user_regs_struct *r,
		   const struct x86_isa_mem *m, int *taken);
/* Translates the instruction x86_dis_one() last decoded with `d` for x86_emu_exec(). */
int x86_isa_translate(const struct x86_dis *d, struct x86_uop *u);

#endif
