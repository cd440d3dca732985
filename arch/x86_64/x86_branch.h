/* x86-64 branch classification: which control transfers a trace must record and how a
 * recorder or decoder learns their outcome.  Built from capstone's decode (x86_dis.c) but
 * usable without capstone: everything needed to evaluate a branch later (condition code,
 * direct target, indirect operand) is copied into struct x86_branch. */
#ifndef X86_BRANCH_H
#define X86_BRANCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/user.h>

enum x86_bclass {
	X86_BR_NONE,		/* not a control transfer */
	X86_BR_COND,		/* jcc, jrcxz/jecxz, loop/loope/loopne: taken or fallthrough */
	X86_BR_JMP,		/* direct jmp rel */
	X86_BR_CALL,		/* direct call rel */
	X86_BR_JMP_IND,		/* jmp reg/mem */
	X86_BR_CALL_IND,	/* call reg/mem */
	X86_BR_RET,		/* near ret [imm16] */
	X86_BR_SYSCALL,		/* syscall, sysenter, int 0x80 */
	X86_BR_TRAP,		/* int n, int3, int1, into, ud0/ud2: raise a signal */
	X86_BR_FAR,		/* ljmp/lcall/lret/iret/sysret/sysexit and other far transfers */
	X86_BR_NCLASSES
};

/* Conditions beyond the 16 x86 condition codes (0x0-0xf, opcode 0x70+cc). */
enum x86_cond {
	X86_CC_RCXZ = 16,	/* jrcxz: rcx == 0 */
	X86_CC_ECXZ,		/* jecxz: ecx == 0 */
	X86_CC_LOOP,		/* --rcx != 0 */
	X86_CC_LOOPE,		/* --rcx != 0 && ZF */
	X86_CC_LOOPNE,		/* --rcx != 0 && !ZF */
};

/* An indirect operand: a register, or memory [seg: base + index*scale + disp]. */
struct x86_operand {
	uint8_t kind;		/* X86_OPND_* */
	uint8_t scale;
	uint8_t seg;		/* 0, or X86_SEG_FS / X86_SEG_GS */
	uint8_t size;		/* bytes read from memory / register width */
	uint16_t reg;		/* X86_OPND_REG: capstone x86_reg */
	uint16_t base;		/* capstone x86_reg, 0 = none; X86_REG_RIP = rip-relative */
	uint16_t index;		/* capstone x86_reg, 0 = none */
	int64_t disp;
};
enum { X86_OPND_NONE, X86_OPND_REG, X86_OPND_MEM };
enum { X86_SEG_NONE, X86_SEG_FS, X86_SEG_GS };

struct x86_branch {
	enum x86_bclass cls;
	uint8_t cond;		/* X86_BR_COND: 0-15 condition code or enum x86_cond */
	uint8_t addr32;		/* 0x67 prefix: loop/jcxz count ecx */
	uint16_t ret_imm;	/* ret imm16: bytes popped after the return address */
	uint64_t ip;		/* address of the branch */
	uint64_t next;		/* fallthrough: ip + size (also the pushed return address) */
	uint64_t target;	/* direct target (COND taken, JMP, CALL); 0 otherwise */
	struct x86_operand opnd;	/* JMP_IND / CALL_IND */
};

struct cs_insn;
/* Fills `b` from a capstone instruction decoded with detail on (x86_dis.c does this). */
void x86_branch_from_cs(const struct cs_insn *ci, struct x86_branch *b);

/* Does a trace have to record this branch's outcome (TNT or TIP)?  True for cond,
 * indirect, ret, syscall and far; false for direct jmp/call and non-branches. */
bool x86_branch_needs_trace(enum x86_bclass cls);
/* Does the instruction end a straight-line run (any control transfer)? */
static inline bool x86_branch_ends_run(enum x86_bclass cls) { return cls != X86_BR_NONE; }
const char *x86_branch_class_name(enum x86_bclass cls);

/* Condition code 0-15 against RFLAGS. */
bool x86_cc_eval(unsigned cc, uint64_t rflags);

/* Evaluates a conditional branch against registers.  For loop* it also returns the
 * decremented count in *new_rcx (the caller writes it back when emulating); *new_rcx is
 * the unchanged rcx for other conditions. */
bool x86_branch_cond_taken(const struct x86_branch *b, const struct user_regs_struct *r,
			   uint64_t *new_rcx);

/* Reads `len` bytes of the tracee at `addr`; returns 0 or a negative errno. */
typedef int (*x86_mem_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Value of a capstone register (any width) in `r`; -EINVAL for registers the emulation
 * does not know (vector, segment selectors). */
int x86_reg_value(const struct user_regs_struct *r, unsigned reg, uint64_t *val);

/* Target of an indirect jmp/call (X86_BR_JMP_IND/CALL_IND) or ret (read at rsp).
 * Returns 0 or a negative error (unknown register, unreadable memory). */
int x86_branch_indirect_target(const struct x86_branch *b, const struct user_regs_struct *r,
			       x86_mem_read_fn read, void *ctx, uint64_t *target);

#endif
