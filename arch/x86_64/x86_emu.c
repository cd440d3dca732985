/* Straight-line x86-64 emulation (see x86_emu.h). */
#include <errno.h>
#include <string.h>

#include <cpuid.h>
#include <stdbool.h>

#include <capstone/capstone.h>

#include "arch/x86_64/x86_emu_int.h"

#define F_CF (1ull << 0)
#define F_PF (1ull << 2)
#define F_AF (1ull << 4)
#define F_ZF (1ull << 6)
#define F_SF (1ull << 7)
#define F_OF (1ull << 11)
#define F_ARITH (F_CF | F_PF | F_AF | F_ZF | F_SF | F_OF)

/* Condition code (0-15) of a cmovcc (*set = 0) or setcc (*set = 1), or -EINVAL. */
static int cc_of(unsigned id, int *set)
{
	*set = 0;
	switch (id) {
	case X86_INS_CMOVO: return 0x0;
	case X86_INS_CMOVNO: return 0x1;
	case X86_INS_CMOVB: return 0x2;
	case X86_INS_CMOVAE: return 0x3;
	case X86_INS_CMOVE: return 0x4;
	case X86_INS_CMOVNE: return 0x5;
	case X86_INS_CMOVBE: return 0x6;
	case X86_INS_CMOVA: return 0x7;
	case X86_INS_CMOVS: return 0x8;
	case X86_INS_CMOVNS: return 0x9;
	case X86_INS_CMOVP: return 0xa;
	case X86_INS_CMOVNP: return 0xb;
	case X86_INS_CMOVL: return 0xc;
	case X86_INS_CMOVGE: return 0xd;
	case X86_INS_CMOVLE: return 0xe;
	case X86_INS_CMOVG: return 0xf;
	}
	*set = 1;
	switch (id) {
	case X86_INS_SETO: return 0x0;
	case X86_INS_SETNO: return 0x1;
	case X86_INS_SETB: return 0x2;
	case X86_INS_SETAE: return 0x3;
	case X86_INS_SETE: return 0x4;
	case X86_INS_SETNE: return 0x5;
	case X86_INS_SETBE: return 0x6;
	case X86_INS_SETA: return 0x7;
	case X86_INS_SETS: return 0x8;
	case X86_INS_SETNS: return 0x9;
	case X86_INS_SETP: return 0xa;
	case X86_INS_SETNP: return 0xb;
	case X86_INS_SETL: return 0xc;
	case X86_INS_SETGE: return 0xd;
	case X86_INS_SETLE: return 0xe;
	case X86_INS_SETG: return 0xf;
	}
	return -EINVAL;
}

/* cpuid leaf/subleaf: is bit `bit` of register `reg` (0 eax .. 3 edx) set? */
static bool cpu_has(unsigned leaf, unsigned sub, int reg, int bit)
{
	unsigned v[4] = { 0 };

	if ((unsigned)__get_cpuid_max(leaf & 0x80000000u, NULL) < leaf)
		return false;
	__cpuid_count(leaf, sub, v[0], v[1], v[2], v[3]);
	return (v[reg] >> bit) & 1;
}

/* cpuid in a VM exits to the hypervisor: asked once */
static bool cpu_bmi1(void)
{
	static int has = -1;

	if (has < 0)
		has = cpu_has(7, 0, 1, 3);
	return has;
}

static bool cpu_abm(void)
{
	static int has = -1;

	if (has < 0)
		has = cpu_has(0x80000001, 0, 2, 5);
	return has;
}

/* cbw/cwde/cdqe: dst = the widened register; cwd/cdq/cqo: dst = rdx at that size */
static int conv(unsigned id, struct x86_uop *u)
{
	static const struct { unsigned id, reg, from; } t[] = {
		{ X86_INS_CBW, X86_REG_AX, 1 }, { X86_INS_CWDE, X86_REG_EAX, 2 },
		{ X86_INS_CDQE, X86_REG_RAX, 4 }, { X86_INS_CWD, X86_REG_DX, 2 },
		{ X86_INS_CDQ, X86_REG_EDX, 4 }, { X86_INS_CQO, X86_REG_RDX, 8 },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].id == id) {
			u->kind = U_CONV;
			u->dst.kind = X86_OPND_REG;
			u->dst.reg = (uint16_t)t[i].reg;
			u->dst.size = t[i].id == X86_INS_CBW ? 2 : t[i].id == X86_INS_CWDE ? 4 :
				      t[i].id == X86_INS_CDQE ? 8 : (uint8_t)t[i].from;
			u->src.size = (uint8_t)t[i].from;
			return 0;
		}
	return -EINVAL;
}

/* A REX not right before the opcode (another REX or a legacy prefix after it): the CPU
 * ignores it, capstone does not always, and loses a mandatory prefix before it too
 * (f3 48 48 0f bd d1 is lzcnt, capstone says bsr); a VEX after 66, f2, f3 or REX, which
 * is #UD (f3 c4 62 f3 f7 c2, capstone says shlx); a lock capstone does not report
 * when an f2/f3 follows it (f0 f3 b7 3d: #UD, a mov for capstone).  All found by
 * fuzz_x86_emu.
 * *opsize, *rep: a 66, an f2/f3 is there, whatever capstone made of it; *early: another
 * prefix but f2/f3 follows the 66, which capstone then drops at times (66 2e 98 is cbw,
 * capstone says cwde). */
static bool stray_rex(const struct cs_insn *ci, bool *opsize, bool *rep, bool *early)
{
	bool rex = false;

	*opsize = *rep = *early = false;
	for (size_t i = 0; i < ci->size; i++) {
		uint8_t b = ci->bytes[i];
		bool legacy = b == 0xf0 || b == 0xf2 || b == 0xf3 || b == 0x2e || b == 0x36 || b == 0x3e ||
			      b == 0x26 || b == 0x64 || b == 0x65 || b == 0x66 || b == 0x67;

		if ((b & 0xf0) == 0x40) {
			if (rex)
				return true;
			rex = true;
		} else if (legacy) {
			if (rex || b == 0xf0)
				return true;
			*early |= *opsize && b != 0xf2 && b != 0xf3;	/* 66 f3 0f bc: tzcnt */
			*opsize |= b == 0x66;
			*rep |= b == 0xf2 || b == 0xf3;
		} else {
			return (b == 0xc4 || b == 0xc5) && (rex || *opsize || *rep);	/* the opcode */
		}
	}
	return false;
}

/* An SSE encoding whose f2/f3 the CPU reads as another instruction (or #UD) than the
 * one capstone names: f2/f3 select movsd, movss, movdqu and the movq load, and win over
 * a 66 (f3 66 0f eb and f3 0f 29 are #UD, capstone says por and movaps: found by
 * fuzz_x86_emu). */
static bool sse_prefix_mismatch(unsigned id, bool opsize, bool rep)
{
	if (!rep)
		return false;
	return opsize || !(id == X86_INS_MOVDQU || id == X86_INS_MOVQ || id == X86_INS_MOVSD || id == X86_INS_MOVSS);
}

int x86_emu_translate(const struct cs_insn *ci, int att, struct x86_uop *u)
{
	const cs_x86 *x = &ci->detail->x86;
	int nops = 2, cc, set;

	memset(u, 0, sizeof(*u));
	u->len = (uint8_t)ci->size;
	/* lock and rep change what the instruction does; 0x67 the address size.  SSE moves
	 * may carry f2/f3 as part of the opcode (movsd, movq, movdqu). */
	bool opsize, rep, early;

	if (x->prefix[3] || x->prefix[0] == X86_PREFIX_LOCK || stray_rex(ci, &opsize, &rep, &early))
		return -EINVAL;
	/* the padding nops compilers write (66 66 2e 0f 1f 84 ...) do nothing whatever the
	 * size */
	if (early && ci->id != X86_INS_NOP)
		return -EINVAL;
	if (x86_sse_translate(ci, att, u) == 0)
		return sse_prefix_mismatch(ci->id, opsize, rep) ? -EINVAL : 0;
	memset(u, 0, sizeof(*u));
	u->len = (uint8_t)ci->size;
	if (x->prefix[0])
		return -EINVAL;
	/* an f3 capstone took as part of the opcode: only these have one; on others it
	 * dropped it (f3 26 0f bd is lzcnt, capstone says bsr: found by fuzz_x86_emu) */
	if (rep && ci->id != X86_INS_TZCNT && ci->id != X86_INS_LZCNT && ci->id != X86_INS_POPCNT &&
	    ci->id != X86_INS_ENDBR64)
		return -EINVAL;
	switch (ci->id) {
	case X86_INS_NOP:
	case X86_INS_ENDBR64:
		u->kind = U_NOP;
		return 0;
	case X86_INS_LEAVE:
		/* 66: pops 2 bytes into bp (found by fuzz_x86_emu) */
		if (x->prefix[2])
			return -EINVAL;
		u->kind = U_LEAVE;
		return 0;
	case X86_INS_MOV: case X86_INS_MOVABS: u->kind = U_MOV; break;
	case X86_INS_MOVZX: u->kind = U_MOVZX; break;
	case X86_INS_MOVSX: u->kind = U_MOVSX; break;
	case X86_INS_MOVSXD:
		/* without REX.W a 32-bit move, which capstone gives a 64-bit destination
		 * (63 00: found by fuzz_x86_emu) */
		if (!(x->rex & 8))
			return -EINVAL;
		u->kind = U_MOVSX;
		break;
	case X86_INS_LEA: u->kind = U_LEA; break;
	case X86_INS_ADD: u->kind = U_ADD; break;
	case X86_INS_SUB: u->kind = U_SUB; break;
	case X86_INS_CMP: u->kind = U_CMP; break;
	case X86_INS_AND: u->kind = U_AND; break;
	case X86_INS_OR: u->kind = U_OR; break;
	case X86_INS_XOR: u->kind = U_XOR; break;
	case X86_INS_TEST: u->kind = U_TEST; break;
	case X86_INS_SHL: case X86_INS_SAL: u->kind = U_SHL; break;
	case X86_INS_SHR: u->kind = U_SHR; break;
	case X86_INS_SAR: u->kind = U_SAR; break;
	case X86_INS_IMUL: u->kind = U_IMUL; break;
	case X86_INS_INC: u->kind = U_INC; nops = 1; break;
	case X86_INS_DEC: u->kind = U_DEC; nops = 1; break;
	case X86_INS_PUSH: u->kind = U_PUSH; nops = 1; break;
	case X86_INS_POP: u->kind = U_POP; nops = 1; break;
	case X86_INS_NEG: u->kind = U_NEG; nops = 1; break;
	case X86_INS_NOT: u->kind = U_NOT; nops = 1; break;
	case X86_INS_ADC: u->kind = U_ADC; break;
	case X86_INS_SBB: u->kind = U_SBB; break;
	case X86_INS_ROL: u->kind = U_ROL; break;
	case X86_INS_ROR: u->kind = U_ROR; break;
	case X86_INS_BT: u->kind = U_BT; break;
	case X86_INS_BTS: u->kind = U_BTS; break;
	case X86_INS_BTR: u->kind = U_BTR; break;
	case X86_INS_BTC: u->kind = U_BTC; break;
	case X86_INS_TZCNT: u->kind = U_TZCNT; break;
	case X86_INS_LZCNT: u->kind = U_LZCNT; break;
	case X86_INS_POPCNT: u->kind = U_POPCNT; break;
	case X86_INS_BSF: u->kind = U_BSF; break;
	case X86_INS_BSR: u->kind = U_BSR; break;
	case X86_INS_XCHG: u->kind = U_XCHG; break;
	case X86_INS_MUL: u->kind = U_MUL1; nops = 1; break;
	case X86_INS_DIV: u->kind = U_DIV; nops = 1; break;
	case X86_INS_IDIV: u->kind = U_IDIV; nops = 1; break;
	case X86_INS_ANDN: u->kind = U_ANDN; nops = 3; break;
	case X86_INS_BZHI: u->kind = U_BZHI; nops = 3; break;
	case X86_INS_SHLX: u->kind = U_SHLX; nops = 3; break;
	case X86_INS_SHRX: u->kind = U_SHRX; nops = 3; break;
	case X86_INS_SARX: u->kind = U_SARX; nops = 3; break;
	case X86_INS_CBW: case X86_INS_CWDE: case X86_INS_CDQE:
	case X86_INS_CWD: case X86_INS_CDQ: case X86_INS_CQO:
		return conv(ci->id, u);
	default:
		if ((cc = cc_of(ci->id, &set)) < 0)
			return -EINVAL;
		u->kind = set ? U_SET : U_CMOV;
		nops = set ? 1 : 2;
		u->cc = (uint8_t)cc;
		break;
	}
	if (u->kind == U_IMUL && x->op_count == 1)
		u->kind = U_IMUL1, nops = 1;
	if (nops == 3) {
		/* VEX: Intel dst, r/m, vvvv (andn: dst, vvvv, r/m); AT&T the other way round */
		if (x->op_count != 3 || x86_emu_opnd(&x->operands[att ? 2 : 0], &u->dst) < 0 ||
		    x86_emu_opnd(&x->operands[1], &u->src) < 0 ||
		    x86_emu_opnd(&x->operands[att ? 0 : 2], &u->src2) < 0 ||
		    u->dst.kind != X86_OPND_REG || u->src2.kind == X86_UOPND_IMM ||
		    u->src.kind == X86_UOPND_IMM || u->dst.size < 4)
			return -EINVAL;
		return 0;
	}
	if ((u->kind == U_SHL || u->kind == U_SHR || u->kind == U_SAR || u->kind == U_ROL ||
	     u->kind == U_ROR) && x->op_count == 1) {
		/* capstone lists one operand for a shift of memory by cl (d2/d3) and for
		 * some by-one forms (d0/d1): the opcode says which */
		if (x86_emu_opnd(&x->operands[0], &u->dst) < 0)
			return -EINVAL;
		u->src.size = 1;
		if (x->opcode[0] == 0xd2 || x->opcode[0] == 0xd3) {
			u->src.kind = X86_OPND_REG;
			u->src.reg = X86_REG_CL;
		} else if (x->opcode[0] == 0xd0 || x->opcode[0] == 0xd1) {
			u->src.kind = X86_UOPND_IMM;
			u->src.imm = 1;
		} else {
			return -EINVAL;
		}
		return 0;
	}
	if (u->kind == U_IMUL && x->op_count == 3) {
		/* AT&T: imm, src, dst; Intel: dst, src, imm */
		const cs_x86_op *imm = &x->operands[att ? 0 : 2];

		if (imm->type != X86_OP_IMM || x86_emu_opnd(&x->operands[att ? 2 : 0], &u->dst) < 0 ||
		    x86_emu_opnd(&x->operands[1], &u->src) < 0 || u->dst.kind != X86_OPND_REG)
			return -EINVAL;
		u->has_imm = 1;
		u->imm = (int32_t)imm->imm;
		return 0;
	}
	if (x->op_count != nops)
		return -EINVAL;
	if (x86_emu_opnd(&x->operands[nops == 2 && att ? 1 : 0], &u->dst) < 0)
		return -EINVAL;
	if (nops == 2 && x86_emu_opnd(&x->operands[att ? 0 : 1], &u->src) < 0)
		return -EINVAL;
	if (u->dst.kind == X86_UOPND_IMM && u->kind != U_PUSH)
		return -EINVAL;
	if ((u->kind == U_PUSH || u->kind == U_POP) &&
	    (u->dst.size != 8 || (u->dst.kind == X86_OPND_REG && u->dst.reg == X86_REG_RSP)))
		return -EINVAL;
	if (u->kind == U_LEA && (u->src.kind != X86_OPND_MEM || u->src.mem.seg != X86_SEG_NONE))
		return -EINVAL;
	if ((u->kind == U_SHL || u->kind == U_SHR || u->kind == U_SAR || u->kind == U_ROL ||
	     u->kind == U_ROR) &&
	    !(u->src.kind == X86_UOPND_IMM ||
	      (u->src.kind == X86_OPND_REG && u->src.reg == X86_REG_CL)))
		return -EINVAL;
	if ((u->kind == U_CMOV || u->kind == U_IMUL) &&
	    (u->dst.kind != X86_OPND_REG || u->dst.size == 1))
		return -EINVAL;
	if (u->kind == U_SET && u->dst.size != 1)
		return -EINVAL;
	if (u->kind >= U_TZCNT && u->kind <= U_BSR &&
	    (u->dst.kind != X86_OPND_REG || u->dst.size == 1 ||
	     (u->kind == U_TZCNT && !cpu_bmi1()) || (u->kind == U_LZCNT && !cpu_abm())))
		return -EINVAL;	/* without BMI1/ABM the CPU runs them as bsf/bsr */
	if (u->kind == U_XCHG && (u->dst.kind != X86_OPND_REG || u->src.kind != X86_OPND_REG))
		return -EINVAL;
	/* operands of one size, as the encoding has them: capstone gives 66 36 96 as
	 * xchg %si,%eax (found by fuzz_x86_emu) */
	if ((u->kind == U_MOV || (u->kind >= U_ADD && u->kind <= U_TEST) || u->kind == U_ADC ||
	     u->kind == U_SBB || u->kind == U_XCHG || u->kind == U_CMOV) &&
	    u->src.kind != X86_UOPND_IMM && u->src.size != u->dst.size)
		return -EINVAL;
	/* bt with a register offset into memory addresses a bit string */
	if (u->kind >= U_BT && u->kind <= U_BTC && u->dst.kind == X86_OPND_MEM &&
	    u->src.kind != X86_UOPND_IMM)
		return -EINVAL;
	if ((u->kind == U_MUL1 || u->kind == U_IMUL1 || u->kind == U_DIV || u->kind == U_IDIV) &&
	    u->dst.kind == X86_UOPND_IMM)
		return -EINVAL;
	return 0;
}

static uint64_t mask(int size)
{
	return size == 8 ? ~0ull : (1ull << (size * 8)) - 1;
}

static int get(const struct x86_uopnd *o, uint64_t next, const struct user_regs_struct *r,
	       x86_mem_read_fn rd, void *ctx, uint64_t *val)
{
	uint64_t a, v = 0;
	int err;

	switch (o->kind) {
	case X86_OPND_REG:
		return x86_reg_value(r, o->reg, val);
	case X86_UOPND_IMM:
		*val = (uint64_t)o->imm;
		return 0;
	case X86_OPND_MEM:
		if ((err = x86_emu_ea(&o->mem, next, r, &a)) < 0 || (err = rd(ctx, a, &v, o->size)) < 0)
			return err;
		*val = v;
		return 0;
	default:
		return -EINVAL;
	}
}

static int put(const struct x86_uopnd *o, uint64_t next, struct user_regs_struct *r,
	       x86_mem_write_fn wr, void *ctx, uint64_t val)
{
	uint64_t a;
	int err;

	if (o->kind == X86_OPND_REG)
		return x86_reg_write(r, o->reg, val);
	if (o->kind != X86_OPND_MEM)
		return -EINVAL;
	if ((err = x86_emu_ea(&o->mem, next, r, &a)) < 0)
		return err;
	return wr(ctx, a, &val, o->size);
}

static uint64_t szf(uint64_t res, int size)
{
	uint64_t f = 0;
	uint8_t lo = (uint8_t)res;

	res &= mask(size);
	if (res == 0)
		f |= F_ZF;
	if (res >> (size * 8 - 1))
		f |= F_SF;
	if (!__builtin_parity(lo))
		f |= F_PF;
	return f;
}

/* mul/imul/div/idiv of rdx:rax (ax for bytes) by src.  A division by zero or with a
 * quotient too wide raises #DE: -EINVAL, the CPU runs it.  The flags mul/imul leave
 * undefined (SF ZF AF PF) and all of div's keep their value. */
static int muldiv(const struct x86_uop *u, uint64_t next, struct user_regs_struct *n,
		  x86_mem_read_fn rd, void *ctx)
{
	int size = u->dst.size, bits = size * 8, err;
	uint64_t m = mask(size), v, lo = n->rax & m, hi = n->rdx & m;
	unsigned __int128 ua, q;
	__int128 sa, sq;

	if ((err = get(&u->dst, next, n, rd, ctx, &v)) < 0)
		return err;
	v &= m;
	if (size == 1) {
		hi = (n->rax >> 8) & 0xff;
		lo = n->rax & 0xff;
	}
	switch (u->kind) {
	case U_MUL1:
		ua = (unsigned __int128)lo * v;
		n->eflags &= ~(F_CF | F_OF);
		if (ua >> bits)
			n->eflags |= F_CF | F_OF;
		lo = (uint64_t)ua & m;
		hi = (uint64_t)(ua >> bits) & m;
		break;
	case U_IMUL1:
		sa = (__int128)((int64_t)(lo << (64 - bits)) >> (64 - bits)) *
		     ((int64_t)(v << (64 - bits)) >> (64 - bits));
		n->eflags &= ~(F_CF | F_OF);
		if (sa != (__int128)((int64_t)((uint64_t)sa << (64 - bits)) >> (64 - bits)))
			n->eflags |= F_CF | F_OF;
		lo = (uint64_t)sa & m;
		hi = (uint64_t)((unsigned __int128)sa >> bits) & m;
		break;
	case U_DIV:
		ua = (unsigned __int128)hi << bits | lo;
		if (!v || (q = ua / v) >> bits)
			return -EINVAL;
		hi = (uint64_t)(ua % v);
		lo = (uint64_t)q;
		break;
	default: {
		__int128 d = (int64_t)(v << (64 - bits)) >> (64 - bits), r;

		sa = (__int128)(((unsigned __int128)hi << bits | lo) << (128 - 2 * bits)) >>
		     (128 - 2 * bits);
		/* the most negative dividend (shifted unsigned: no signed overflow) */
		__int128 lowest = (__int128)((unsigned __int128)-1 << (2 * bits - 1));

		if (!d || (d == -1 && sa == lowest))
			return -EINVAL;
		sq = sa / d;
		r = sa % d;
		if (sq >= (__int128)1 << (bits - 1) || sq < -((__int128)1 << (bits - 1)))
			return -EINVAL;
		lo = (uint64_t)sq & m;
		hi = (uint64_t)r & m;
		break;
	}
	}
	if (size == 1) {
		n->rax = (n->rax & ~0xffffull) | hi << 8 | lo;
		return 0;
	}
	x86_reg_write(n, size == 8 ? X86_REG_RAX : size == 4 ? X86_REG_EAX : X86_REG_AX, lo);
	x86_reg_write(n, size == 8 ? X86_REG_RDX : size == 4 ? X86_REG_EDX : X86_REG_DX, hi);
	return 0;
}

int x86_emu_exec(const struct x86_uop *u, uint64_t ip, struct user_regs_struct *r,
		 x86_mem_read_fn rd, x86_mem_write_fn wr, void *ctx, struct x86_xmm *xmm)
{
	struct user_regs_struct n = *r;	/* committed only when nothing faulted */
	uint64_t next = ip + u->len, a, b, res, m, f = n.eflags;
	int size = u->dst.size, bits = size * 8, err = 0;

	switch (u->kind) {
	case U_NOP:
		break;
	case U_LEAVE:
		n.rsp = n.rbp;
		if ((err = rd(ctx, n.rsp, &n.rbp, 8)) < 0)
			return err;
		n.rsp += 8;
		break;
	case U_PUSH:
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0 ||
		    (err = wr(ctx, n.rsp - 8, &a, 8)) < 0)
			return err;
		n.rsp -= 8;
		break;
	case U_POP:
		if ((err = rd(ctx, n.rsp, &a, 8)) < 0)
			return err;
		n.rsp += 8;
		if ((err = put(&u->dst, next, &n, wr, ctx, a)) < 0)
			return err;
		break;
	case U_MOV:
		if ((err = get(&u->src, next, &n, rd, ctx, &a)) < 0 ||
		    (err = put(&u->dst, next, &n, wr, ctx, a)) < 0)
			return err;
		break;
	case U_MOVZX:
	case U_MOVSX:
		if ((err = get(&u->src, next, &n, rd, ctx, &a)) < 0)
			return err;
		a &= mask(u->src.size);
		if (u->kind == U_MOVSX && (a >> (u->src.size * 8 - 1)))
			a |= ~mask(u->src.size);
		if ((err = put(&u->dst, next, &n, wr, ctx, a)) < 0)
			return err;
		break;
	case U_LEA:
		if ((err = x86_emu_ea(&u->src.mem, next, &n, &a)) < 0 ||
		    (err = x86_reg_write(&n, u->dst.reg, a)) < 0)
			return err;
		break;
	case U_CMOV:
		/* a 32-bit destination is written (zero-extended) even when false */
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0 ||
		    (err = get(&u->src, next, &n, rd, ctx, &b)) < 0 ||
		    (err = x86_reg_write(&n, u->dst.reg, x86_cc_eval(u->cc, f) ? b : a)) < 0)
			return err;
		break;
	case U_SET:
		if ((err = put(&u->dst, next, &n, wr, ctx, x86_cc_eval(u->cc, f))) < 0)
			return err;
		break;
	case U_SHL:
	case U_SHR:
	case U_SAR: {
		unsigned c;

		if ((err = get(&u->src, next, &n, rd, ctx, &b)) < 0 ||
		    (err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		c = (unsigned)b & (size == 8 ? 63 : 31);
		/* count 0: flags kept, a register written anyway (a 32-bit one zero-extends;
		 * the CPU's answer in test_vs_cpu); memory is left to the CPU.  A count past
		 * an 8/16-bit width leaves CF undefined: the CPU runs it. */
		if (c == 0 && u->dst.kind == X86_OPND_REG) {
			if ((err = x86_reg_write(&n, u->dst.reg, a)) < 0)
				return err;
			break;
		}
		if (c == 0 || (int)c > bits)
			return -EINVAL;
		m = mask(size);
		a &= m;
		f &= ~F_ARITH;
		if (u->kind == U_SHL) {
			res = (c == 64 ? 0 : a << c) & m;
			if ((a >> (bits - (int)c)) & 1)
				f |= F_CF;
			if (((res >> (bits - 1)) & 1) ^ (f & F_CF))
				f |= F_OF;
		} else if (u->kind == U_SHR) {
			res = a >> c;
			if ((a >> (c - 1)) & 1)
				f |= F_CF;
			if ((a >> (bits - 1)) & 1)
				f |= F_OF;
		} else {
			int64_t sa = (int64_t)(a << (64 - bits)) >> (64 - bits);

			res = (uint64_t)(sa >> ((int)c > 63 ? 63 : c)) & m;
			if (((uint64_t)sa >> (c - 1)) & 1)
				f |= F_CF;
		}
		/* OF is defined for a count of 1 only, AF never: both as computed */
		f |= szf(res, size);
		if ((err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	}
	case U_IMUL: {
		__int128 p;
		int64_t x, y;

		if ((err = get(&u->src, next, &n, rd, ctx, &b)) < 0)
			return err;
		if (u->has_imm)
			a = (uint64_t)(int64_t)u->imm;
		else if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		x = (int64_t)(a << (64 - bits)) >> (64 - bits);
		y = (int64_t)(b << (64 - bits)) >> (64 - bits);
		if (u->has_imm)
			x = u->imm;
		p = (__int128)x * y;
		res = (uint64_t)p & mask(size);
		f &= ~F_ARITH;
		/* CF = OF: the product does not fit; SF, ZF, PF (undefined) from the result */
		if (p != (__int128)((int64_t)(res << (64 - bits)) >> (64 - bits)))
			f |= F_CF | F_OF;
		f |= szf(res, size);
		if ((err = x86_reg_write(&n, u->dst.reg, res)) < 0)
			return err;
		n.eflags = f;
		break;
	}
	case U_VMOV:
	case U_VALU:
		if ((err = x86_sse_exec(u, next, &n, rd, wr, ctx, xmm)) < 0)
			return err;
		break;
	case U_NEG:
	case U_NOT:
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		m = mask(size);
		a &= m;
		if (u->kind == U_NOT) {
			if ((err = put(&u->dst, next, &n, wr, ctx, ~a & m)) < 0)
				return err;
			break;
		}
		res = -a & m;
		f &= ~F_ARITH;
		f |= szf(res, size);
		if (a)
			f |= F_CF;
		if (a == 1ull << (bits - 1))
			f |= F_OF;
		if ((a ^ res) & 0x10)
			f |= F_AF;
		if ((err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	case U_CONV:
		a = n.rax & mask(u->src.size);
		if (a >> (u->src.size * 8 - 1))
			a |= ~mask(u->src.size);	/* sign-extended */
		if (u->dst.reg == X86_REG_DX || u->dst.reg == X86_REG_EDX || u->dst.reg == X86_REG_RDX)
			a = (int64_t)a < 0 ? ~0ull : 0;
		x86_reg_write(&n, u->dst.reg, a);
		break;
	case U_ADC:
	case U_SBB: {
		uint64_t cf = f & F_CF;

		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0 ||
		    (err = get(&u->src, next, &n, rd, ctx, &b)) < 0)
			return err;
		m = mask(size);
		a &= m;
		b &= m;
		f &= ~F_ARITH;
		if (u->kind == U_ADC) {
			res = (a + b + cf) & m;
			if (res < a || (cf && res == a))
				f |= F_CF;
			if ((((a ^ res) & (b ^ res)) >> (bits - 1)) & 1)
				f |= F_OF;
		} else {
			res = (a - b - cf) & m;
			if (a < b || (cf && a == b))
				f |= F_CF;
			if ((((a ^ b) & (a ^ res)) >> (bits - 1)) & 1)
				f |= F_OF;
		}
		if ((a ^ b ^ res) & 0x10)
			f |= F_AF;
		f |= szf(res, size);
		if ((err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	}
	case U_ROL:
	case U_ROR: {
		unsigned c;

		if ((err = get(&u->src, next, &n, rd, ctx, &b)) < 0 ||
		    (err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		c = ((unsigned)b & (size == 8 ? 63 : 31)) % (unsigned)bits;
		if (c == 0)
			return -EINVAL;	/* flags kept or CF only: the CPU runs it */
		m = mask(size);
		a &= m;
		res = u->kind == U_ROL ? ((a << c) | (a >> (bits - (int)c))) & m
				       : ((a >> c) | (a << (bits - (int)c))) & m;
		f &= ~(F_CF | F_OF);	/* rotates touch no other flag */
		if (u->kind == U_ROL) {
			if (res & 1)
				f |= F_CF;
			if (((res >> (bits - 1)) & 1) ^ (res & 1))
				f |= F_OF;
		} else {
			if ((res >> (bits - 1)) & 1)
				f |= F_CF;
			if (((res >> (bits - 1)) ^ (res >> (bits - 2))) & 1)
				f |= F_OF;
		}
		if ((err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	}
	case U_BT:
	case U_BTS:
	case U_BTR:
	case U_BTC:
		if ((err = get(&u->src, next, &n, rd, ctx, &b)) < 0 ||
		    (err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		b = 1ull << (b & (uint64_t)(bits - 1));
		f &= ~F_CF;
		if (a & b)
			f |= F_CF;
		res = u->kind == U_BTS ? a | b : u->kind == U_BTR ? a & ~b : a ^ b;
		if (u->kind != U_BT && (err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	case U_TZCNT:
	case U_LZCNT:
	case U_POPCNT:
	case U_BSF:
	case U_BSR:
		if ((err = get(&u->src, next, &n, rd, ctx, &a)) < 0)
			return err;
		a &= mask(size);
		if ((u->kind == U_BSF || u->kind == U_BSR) && !a)
			return -EINVAL;	/* the destination is left as the CPU leaves it */
		switch (u->kind) {
		case U_TZCNT: res = a ? (uint64_t)__builtin_ctzll(a) : (uint64_t)bits; break;
		case U_LZCNT: res = a ? (uint64_t)(__builtin_clzll(a) - (64 - bits)) : (uint64_t)bits; break;
		case U_POPCNT: res = (uint64_t)__builtin_popcountll(a); break;
		case U_BSF: res = (uint64_t)__builtin_ctzll(a); break;
		default: res = (uint64_t)(63 - __builtin_clzll(a)); break;
		}
		if (u->kind == U_POPCNT) {
			f &= ~F_ARITH;
			if (!a)
				f |= F_ZF;
		} else if (u->kind == U_TZCNT || u->kind == U_LZCNT) {
			f &= ~(F_CF | F_ZF);
			if (!a)
				f |= F_CF;
			if (!res)
				f |= F_ZF;
		} else {
			f &= ~F_ZF;
		}
		x86_reg_write(&n, u->dst.reg, res);
		n.eflags = f;
		break;
	case U_XCHG:
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0 ||
		    (err = get(&u->src, next, &n, rd, ctx, &b)) < 0)
			return err;
		x86_reg_write(&n, u->dst.reg, b);
		x86_reg_write(&n, u->src.reg, a);
		break;
	case U_MUL1:
	case U_IMUL1:
	case U_DIV:
	case U_IDIV:
		if ((err = muldiv(u, next, &n, rd, ctx)) < 0)
			return err;
		break;
	case U_ANDN:
	case U_BZHI:
	case U_SHLX:
	case U_SHRX:
	case U_SARX: {
		unsigned c;

		if ((err = get(&u->src, next, &n, rd, ctx, &a)) < 0 ||
		    (err = get(&u->src2, next, &n, rd, ctx, &b)) < 0)
			return err;
		m = mask(size);
		a &= m;
		b &= m;
		c = (unsigned)b & (size == 8 ? 63 : 31);
		switch (u->kind) {
		case U_ANDN: res = ~a & b & m; break;	/* ~vvvv & r/m (Intel operands 1, 2) */
		case U_BZHI:
			c = (unsigned)b & 0xff;
			res = c < (unsigned)bits ? a & ((1ull << c) - 1) : a;
			f &= ~(F_CF | F_OF | F_ZF | F_SF);
			if (c > (unsigned)bits - 1)
				f |= F_CF;
			f |= szf(res, size) & (F_ZF | F_SF);
			break;
		case U_SHLX: res = (a << c) & m; break;
		case U_SHRX: res = a >> c; break;
		default: res = (uint64_t)((int64_t)(a << (64 - bits)) >> (64 - bits) >> c) & m; break;
		}
		if (u->kind == U_ANDN) {
			f &= ~(F_CF | F_OF | F_ZF | F_SF);
			f |= szf(res, size) & (F_ZF | F_SF);
		}
		x86_reg_write(&n, u->dst.reg, res);
		n.eflags = f;
		break;
	}
	case U_INC:
	case U_DEC:
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0)
			return err;
		m = mask(size);
		a &= m;
		b = 1;
		res = (u->kind == U_INC ? a + b : a - b) & m;
		f &= ~(F_ARITH & ~F_CF);
		f |= szf(res, size);
		if ((a ^ b ^ res) & 0x10)
			f |= F_AF;
		if (u->kind == U_INC ? (((a ^ res) & (b ^ res)) >> (bits - 1)) & 1
				     : (((a ^ b) & (a ^ res)) >> (bits - 1)) & 1)
			f |= F_OF;
		if ((err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	default:	/* two-operand arithmetic and logic */
		if ((err = get(&u->dst, next, &n, rd, ctx, &a)) < 0 ||
		    (err = get(&u->src, next, &n, rd, ctx, &b)) < 0)
			return err;
		m = mask(size);
		a &= m;
		b &= m;
		f &= ~F_ARITH;
		switch (u->kind) {
		case U_ADD:
			res = (a + b) & m;
			if (res < a)
				f |= F_CF;
			if ((((a ^ res) & (b ^ res)) >> (bits - 1)) & 1)
				f |= F_OF;
			if ((a ^ b ^ res) & 0x10)
				f |= F_AF;
			break;
		case U_SUB:
		case U_CMP:
			res = (a - b) & m;
			if (a < b)
				f |= F_CF;
			if ((((a ^ b) & (a ^ res)) >> (bits - 1)) & 1)
				f |= F_OF;
			if ((a ^ b ^ res) & 0x10)
				f |= F_AF;
			break;
		case U_AND:
		case U_TEST:
			res = a & b;
			break;
		case U_OR:
			res = a | b;
			break;
		default:
			res = a ^ b;
			break;
		}
		f |= szf(res, size);
		if (u->kind != U_CMP && u->kind != U_TEST &&
		    (err = put(&u->dst, next, &n, wr, ctx, res)) < 0)
			return err;
		n.eflags = f;
		break;
	}
	n.rip = next;
	*r = n;
	return 0;
}
