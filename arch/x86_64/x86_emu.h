/* A small x86-64 emulator for the straight-line code between two branches, so the step
 * tracer can carry one stop on to the next branch without resuming the tracee.  It
 * covers what compilers put between branches most (mov/movzx/movsx/lea, add/sub/cmp,
 * and/or/xor/test, inc/dec, neg/not, adc/sbb, shl/shr/sar/rol/ror, cmovcc/setcc,
 * mul/imul/div/idiv, cbw..cqo, bt/bts/btr/btc, tzcnt/lzcnt/popcnt/bsf/bsr, xchg of registers, the
 * BMI andn/bzhi/shlx/shrx/sarx, push/pop/leave, nop/endbr64, the legacy SSE moves
 * movd/movq/movdqa/movdqu/movaps/movups/movlp/movhp/movsd/movss, pxor/por/pand/pandn
 * with their ps/pd twins, paddq, punpcklqdq) with exact flags (the ones
 * the ISA defines; undefined ones keep their value); anything
 * else makes x86_emu_translate() refuse, and the tracee executes it for real. */
#ifndef X86_EMU_H
#define X86_EMU_H

#include <stdint.h>
#include <sys/user.h>

#include "arch/x86_64/x86_branch.h"

struct cs_insn;

enum x86_uop_kind {
	U_NOP, U_MOV, U_MOVZX, U_MOVSX, U_LEA, U_ADD, U_SUB, U_CMP, U_AND, U_OR, U_XOR,
	U_TEST, U_INC, U_DEC, U_PUSH, U_POP, U_LEAVE,
	U_SHL, U_SHR, U_SAR,	/* src: the count (imm or cl) */
	U_CMOV, U_SET,		/* cc: the condition */
	U_IMUL,			/* dst *= src, or dst = src * imm (has_imm) */
	U_NEG, U_NOT,
	U_CONV,			/* cbw/cwde/cdqe (dst: the register), cwd/cdq/cqo (dst: rdx) */
	U_ADC, U_SBB,
	U_ROL, U_ROR,		/* src: the count */
	U_BT, U_BTS, U_BTR, U_BTC,	/* CF = bit src of dst; set, reset, flip it */
	U_TZCNT, U_LZCNT, U_POPCNT, U_BSF, U_BSR,	/* dst = f(src) */
	U_XCHG,			/* registers only (with memory it is a locked access) */
	U_MUL1, U_IMUL1, U_DIV, U_IDIV,	/* rdx:rax with src */
	U_ANDN, U_BZHI, U_SHLX, U_SHRX, U_SARX,	/* dst = f(src, src2) */
	U_VMOV,			/* SSE move of vlen bytes (x86_emu_sse.c) */
	U_VALU,			/* SSE 128-bit xor/or/and/andn/paddq/punpcklqdq (vop) */
};

struct x86_uopnd {
	uint8_t kind;		/* X86_OPND_NONE/REG/MEM, or X86_UOPND_IMM */
	uint8_t size;		/* bytes */
	uint16_t reg;		/* capstone x86_reg */
	int64_t imm;
	struct x86_operand mem;
};
#define X86_UOPND_IMM 3
#define X86_UOPND_XMM 4		/* reg: 0-15 */

struct x86_uop {
	uint8_t kind;		/* enum x86_uop_kind */
	uint8_t len;		/* instruction length */
	uint8_t cc;		/* U_CMOV, U_SET: condition code 0-15 */
	uint8_t has_imm;	/* U_IMUL: three operands */
	int32_t imm;		/* U_IMUL: the immediate */
	uint8_t vlen;		/* U_VMOV: bytes moved */
	uint8_t voff;		/* U_VMOV: where in the xmm register (8: movhpd/movhps) */
	uint8_t vzext;		/* U_VMOV: the rest of an xmm destination becomes zero */
	uint8_t valign;		/* a memory operand must be 16-byte aligned (else #GP) */
	uint8_t vop;		/* U_VALU: enum x86_vop */
	struct x86_uopnd dst, src, src2;
};

/* The SSE registers, fetched on first use (legacy SSE encodings only: they leave the
 * upper halves of ymm/zmm alone, which the fxsave image does not hold).  `dirty`: the
 * caller writes fp back before the thread runs. */
struct x86_xmm {
	struct user_fpregs_struct fp;
	int loaded, dirty;
	int (*load)(void *ctx, struct user_fpregs_struct *fp);
	void *ctx;
};

/* Reads or writes `len` bytes of the tracee at addr; 0 or a negative errno. */
typedef int (*x86_mem_write_fn)(void *ctx, uint64_t addr, const void *buf, size_t len);

/* 0 and `u` filled when the instruction (decoded with detail) can be emulated.  `att`:
 * the handle printed AT&T syntax, where capstone lists the operands source first. */
int x86_emu_translate(const struct cs_insn *ci, int att, struct x86_uop *u);
/* Executes u at `ip` (rip becomes ip + len).  On a memory fault nothing is changed and
 * the error is returned (the real instruction will fault the same way); -EINVAL for a
 * case left to the CPU.  xmm: NULL refuses the SSE instructions. */
int x86_emu_exec(const struct x86_uop *u, uint64_t ip, struct user_regs_struct *r,
		 x86_mem_read_fn rd, x86_mem_write_fn wr, void *ctx, struct x86_xmm *xmm);

/* Register write with x86 semantics: 32-bit writes zero the upper half, 8/16-bit ones
 * keep it.  -EINVAL for registers the emulator does not model. */
int x86_reg_write(struct user_regs_struct *r, unsigned reg, uint64_t val);

#endif
