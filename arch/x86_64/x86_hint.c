/* The hint-NOP and CET opcode space (see x86_hint.h).  The semantics are the SDM's
 * (vol. 2, NOP, ENDBR64, RDSSP, INCSSP, ...); the text follows objdump, which the unit
 * test compares it with. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86_64/x86_hint.h"

enum {
	H_NOP, H_PREFETCHNTA, H_PREFETCHT0, H_PREFETCHT1, H_PREFETCHT2, H_CLDEMOTE,
	H_ENDBR64, H_ENDBR32, H_RDSSPD, H_RDSSPQ, H_INCSSPD, H_INCSSPQ, H_SETSSBSY,
	H_SAVEPREVSSP, H_RSTORSSP, H_CLRSSBSY, H_WRSSD, H_WRSSQ, H_WRUSSD, H_WRUSSQ,
	H_PREFETCH, H_PREFETCHW, H_PREFETCHWT1,
	H_BNDLDX, H_BNDSTX, H_BNDMOV, H_BNDCL, H_BNDCU, H_BNDCN, H_BNDMK, H_N
};

static const struct {
	const char *name;
	uint8_t kind;
} table[H_N] = {
	[H_NOP] = { "nop", X86_HINT_NOP },
	[H_PREFETCHNTA] = { "prefetchnta", X86_HINT_NOP },
	[H_PREFETCHT0] = { "prefetcht0", X86_HINT_NOP },
	[H_PREFETCHT1] = { "prefetcht1", X86_HINT_NOP },
	[H_PREFETCHT2] = { "prefetcht2", X86_HINT_NOP },
	[H_CLDEMOTE] = { "cldemote", X86_HINT_NOP },
	[H_ENDBR64] = { "endbr64", X86_HINT_NOP },
	[H_ENDBR32] = { "endbr32", X86_HINT_NOP },
	[H_RDSSPD] = { "rdsspd", X86_HINT_SSP_READ },
	[H_RDSSPQ] = { "rdsspq", X86_HINT_SSP_READ },
	[H_INCSSPD] = { "incsspd", X86_HINT_SHSTK },
	[H_INCSSPQ] = { "incsspq", X86_HINT_SHSTK },
	[H_SETSSBSY] = { "setssbsy", X86_HINT_PRIV },
	[H_SAVEPREVSSP] = { "saveprevssp", X86_HINT_SHSTK },
	[H_RSTORSSP] = { "rstorssp", X86_HINT_SHSTK },
	[H_CLRSSBSY] = { "clrssbsy", X86_HINT_PRIV },
	[H_WRSSD] = { "wrssd", X86_HINT_SHSTK },
	[H_WRSSQ] = { "wrssq", X86_HINT_SHSTK },
	[H_WRUSSD] = { "wrussd", X86_HINT_PRIV },
	[H_WRUSSQ] = { "wrussq", X86_HINT_PRIV },
	[H_PREFETCH] = { "prefetch", X86_HINT_NOP },
	[H_PREFETCHW] = { "prefetchw", X86_HINT_NOP },
	[H_PREFETCHWT1] = { "prefetchwt1", X86_HINT_NOP },
	/* MPX: NOPs on CPUs without it (it was put in the hint space for that) and when
	 * the kernel has not enabled it, which Linux no longer does */
	[H_BNDLDX] = { "bndldx", X86_HINT_NOP },
	[H_BNDSTX] = { "bndstx", X86_HINT_NOP },
	[H_BNDMOV] = { "bndmov", X86_HINT_NOP },
	[H_BNDCL] = { "bndcl", X86_HINT_NOP },
	[H_BNDCU] = { "bndcu", X86_HINT_NOP },
	[H_BNDCN] = { "bndcn", X86_HINT_NOP },
	[H_BNDMK] = { "bndmk", X86_HINT_NOP },
};

const char *x86_hint_name(unsigned op)
{
	return op < H_N ? table[op].name : NULL;
}

static const char *const r64[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };
static const char *const r32[16] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
	"r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d" };
static const char *const r16[16] = {
	"ax", "cx", "dx", "bx", "sp", "bp", "si", "di",
	"r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w" };

struct pfx {
	uint8_t rep;		/* 0xf3, 0xf2 or 0: the last of them */
	uint8_t opsize, addr32, rex;
	uint8_t seg;		/* the segment override byte, or 0 */
};

/* A ModRM operand: its length from the ModRM byte on, and its AT&T text. */
struct modrm {
	uint8_t mod, reg, rm, len;
	char mem[48];
};

static void reg_name(char *buf, size_t n, unsigned r, unsigned bits)
{
	snprintf(buf, n, "%%%s", bits == 64 ? r64[r] : bits == 16 ? r16[r] : r32[r]);
}

static int parse_modrm(const uint8_t *p, size_t avail, const struct pfx *x, struct modrm *m)
{
	const char *const *ar = x->addr32 ? r32 : r64;
	unsigned base = 0, index = 4, scale = 1, sib = 0, dlen = 0;
	int has_base = 1, rip = 0;
	int32_t disp = 0;
	char d[16] = "", seg[8] = "";

	if (avail < 1)
		return -EINVAL;
	m->mod = p[0] >> 6;
	m->reg = (uint8_t)(((p[0] >> 3) & 7) | (x->rex & 4 ? 8 : 0));
	m->rm = (uint8_t)((p[0] & 7) | (x->rex & 1 ? 8 : 0));
	m->len = 1;
	m->mem[0] = 0;
	if (m->mod == 3)
		return 0;
	if ((p[0] & 7) == 4) {
		if (avail < 2)
			return -EINVAL;
		sib = 1;
		scale = 1u << (p[1] >> 6);
		index = ((p[1] >> 3) & 7) | (x->rex & 2 ? 8 : 0);
		base = (p[1] & 7) | (x->rex & 1 ? 8 : 0);
		if ((p[1] & 7) == 5 && m->mod == 0) {
			has_base = 0;
			dlen = 4;
		}
	} else {
		base = m->rm;
		if ((p[0] & 7) == 5 && m->mod == 0) {
			rip = 1;
			dlen = 4;
		}
	}
	if (m->mod == 1)
		dlen = 1;
	else if (m->mod == 2)
		dlen = 4;
	if (avail < 1u + sib + dlen)
		return -EINVAL;
	if (dlen == 1)
		disp = (int8_t)p[1 + sib];
	else if (dlen == 4)
		disp = (int32_t)((uint32_t)p[1 + sib] | (uint32_t)p[2 + sib] << 8 |
				 (uint32_t)p[3 + sib] << 16 | (uint32_t)p[4 + sib] << 24);
	m->len = (uint8_t)(1 + sib + dlen);
	if (dlen)
		snprintf(d, sizeof(d), "%s0x%x", disp < 0 ? "-" : "",
			 disp < 0 ? -(uint32_t)disp : (uint32_t)disp);
	if (x->seg == 0x64 || x->seg == 0x65)
		snprintf(seg, sizeof(seg), "%%%cs:", x->seg == 0x64 ? 'f' : 'g');
	if (rip)
		snprintf(m->mem, sizeof(m->mem), "%s%s(%%%s)", seg, d, x->addr32 ? "eip" : "rip");
	else if (!sib)
		snprintf(m->mem, sizeof(m->mem), "%s%s(%%%s)", seg, d, ar[base]);
	else if (index == 4 && !has_base)
		snprintf(m->mem, sizeof(m->mem), "%s%s", seg, d);
	else if (index == 4 && (base & 7) == 4)	/* objdump: (%rsp), not (%rsp,%riz,1) */
		snprintf(m->mem, sizeof(m->mem), "%s%s(%%%s)", seg, d, ar[base]);
	else if (index == 4)
		snprintf(m->mem, sizeof(m->mem), "%s%s(%%%s,%%%s,%u)", seg, d, ar[base],
			 x->addr32 ? "eiz" : "riz", scale);
	else
		snprintf(m->mem, sizeof(m->mem), "%s%s(%s%s%s,%%%s,%u)", seg, d,
			 has_base ? "%" : "", has_base ? ar[base] : "", "", ar[index], scale);
	return 0;
}

/* The entry for 0F 18-0F 1F, -ENOENT for MPX.  `rep` is set to 0 when the F3 is part
 * of the opcode. */
static int hint_space(uint8_t op, const struct modrm *m, struct pfx *x, unsigned *which)
{
	uint8_t modrm = (uint8_t)(m->mod << 6 | (m->reg & 7) << 3 | (m->rm & 7));

	if (op == 0x1e && x->rep == 0xf3 && (modrm == 0xfa || modrm == 0xfb)) {
		*which = modrm == 0xfa ? H_ENDBR64 : H_ENDBR32;
		x->rep = 0;
	} else if (op == 0x1e && x->rep == 0xf3 && m->mod == 3 && (m->reg & 7) == 1) {
		*which = x->rex & 8 ? H_RDSSPQ : H_RDSSPD;
		x->rep = 0;
	} else if ((op == 0x1a || op == 0x1b) && (m->mod != 3 || x->rep || x->opsize)) {
		static const uint8_t bnd[2][4] = {	/* none, 66, F3, F2 */
			{ H_BNDLDX, H_BNDMOV, H_BNDCL, H_BNDCU },
			{ H_BNDSTX, H_BNDMOV, H_BNDMK, H_BNDCN } };
		unsigned p = x->rep == 0xf3 ? 2 : x->rep == 0xf2 ? 3 : x->opsize ? 1 : 0;

		if ((p == 0 || (op == 0x1b && p == 2)) && m->mod == 3)
			return -ENOENT;	/* bndldx, bndstx, bndmk take memory only */
		*which = bnd[op - 0x1a][p];
		x->rep = 0;
		x->opsize = 0;
	} else if (op == 0x18 && m->mod != 3 && (m->reg & 7) < 4) {
		*which = H_PREFETCHNTA + (m->reg & 7);
	} else if (op == 0x1c && m->mod != 3 && (m->reg & 7) == 0 && !x->rep && !x->opsize) {
		*which = H_CLDEMOTE;
	} else {
		*which = H_NOP;
	}
	return 0;
}

int x86_hint_decode(const uint8_t *code, size_t len, struct x86_hint *h)
{
	struct pfx x = { 0 };
	struct modrm m = { 0 };
	size_t i = 0;
	unsigned which, op, bits;
	const char *pw = "";
	int err, mem_sfx = 0;

	for (; i < len && i < 14; i++) {
		uint8_t b = code[i];

		if (b == 0xf3 || b == 0xf2)
			x.rep = b;
		else if (b == 0x66)
			x.opsize = 1;
		else if (b == 0x67)
			x.addr32 = 1;
		else if (b == 0x26 || b == 0x2e || b == 0x36 || b == 0x3e || b == 0x64 || b == 0x65)
			x.seg = b;
		else
			break;
	}
	if (i < len && (code[i] & 0xf0) == 0x40)
		x.rex = code[i++];
	if (i + 2 > len)
		return i < len && code[i] != 0x0f ? -ENOENT : -EINVAL;
	if (code[i] != 0x0f)
		return -ENOENT;
	op = code[i + 1];
	i += 2;
	if (op == 0x0d) {
		if ((err = parse_modrm(code + i, len - i, &x, &m)) < 0)
			return err;
		if (m.mod == 3)
			return -ENOENT;
		which = (m.reg & 7) == 1 ? H_PREFETCHW : (m.reg & 7) == 2 ? H_PREFETCHWT1 : H_PREFETCH;
	} else if (op >= 0x18 && op <= 0x1f) {
		if ((err = parse_modrm(code + i, len - i, &x, &m)) < 0)
			return err;
		if ((err = hint_space((uint8_t)op, &m, &x, &which)) < 0)
			return err;
		mem_sfx = which == H_NOP;
	} else if (op == 0xae && x.rep == 0xf3) {
		if ((err = parse_modrm(code + i, len - i, &x, &m)) < 0)
			return err;
		if ((m.reg & 7) == 5 && m.mod == 3)
			which = x.rex & 8 ? H_INCSSPQ : H_INCSSPD;
		else if ((m.reg & 7) == 6 && m.mod != 3)
			which = H_CLRSSBSY;
		else
			return -ENOENT;
		x.rep = 0;
	} else if (op == 0x01 && x.rep == 0xf3) {
		if ((err = parse_modrm(code + i, len - i, &x, &m)) < 0)
			return err;
		if (code[i] == 0xe8)
			which = H_SETSSBSY;
		else if (code[i] == 0xea)
			which = H_SAVEPREVSSP;
		else if ((m.reg & 7) == 5 && m.mod != 3)
			which = H_RSTORSSP;
		else
			return -ENOENT;
		x.rep = 0;
	} else if (op == 0x38 && i < len && !x.rep &&
		   ((code[i] == 0xf6 && !x.opsize) || (code[i] == 0xf5 && x.opsize))) {
		which = code[i] == 0xf6 ? (x.rex & 8 ? H_WRSSQ : H_WRSSD) :
					  (x.rex & 8 ? H_WRUSSQ : H_WRUSSD);
		i++;
		if ((err = parse_modrm(code + i, len - i, &x, &m)) < 0)
			return err;
		if (m.mod == 3)
			return -ENOENT;
	} else {
		return -ENOENT;
	}
	i += m.len;
	if (i > 15)
		return -ENOENT;	/* longer than any instruction: #UD, not ours */
	if (len < i)
		return -EINVAL;

	memset(h, 0, sizeof(*h));
	h->len = (uint8_t)i;
	h->op = (uint8_t)which;
	h->kind = table[which].kind;
	/* objdump names a prefix that does nothing here as a word before the mnemonic */
	if (x.rep)
		pw = x.rep == 0xf3 ? "repz " : "repnz ";
	bits = x.rex & 8 ? 64 : x.opsize ? 16 : 32;
	snprintf(h->mnemonic, sizeof(h->mnemonic), "%s%s%s%s",
		 x.seg == 0x26 ? "es " : x.seg == 0x2e ? "cs " : x.seg == 0x36 ? "ss " :
		 x.seg == 0x3e ? "ds " : (x.seg && m.mod == 3) ? (x.seg == 0x64 ? "fs " : "gs ") : "",
		 pw, table[which].name,
		 mem_sfx && m.mod != 3 ? (bits == 64 ? "q" : bits == 16 ? "w" : "l") : "");
	switch (which) {
	case H_ENDBR64: case H_ENDBR32: case H_SETSSBSY: case H_SAVEPREVSSP:
		break;
	case H_RDSSPD: case H_INCSSPD:
		reg_name(h->op_str, sizeof(h->op_str), m.rm, 32);
		break;
	case H_RDSSPQ: case H_INCSSPQ:
		reg_name(h->op_str, sizeof(h->op_str), m.rm, 64);
		break;
	case H_BNDLDX: case H_BNDMOV: case H_BNDCL: case H_BNDCU: case H_BNDCN: case H_BNDMK:
	case H_BNDSTX: {
		/* AT&T: source first; the bnd register is ModRM.reg, 0F 1B stores it */
		char rm[48];

		if (m.mod != 3)
			snprintf(rm, sizeof(rm), "%s", m.mem);
		else if (which == H_BNDMOV)
			snprintf(rm, sizeof(rm), "%%bnd%u", m.rm & 3);
		else
			reg_name(rm, sizeof(rm), m.rm, 64);
		if (op == 0x1b && which != H_BNDMK && which != H_BNDCN)
			snprintf(h->op_str, sizeof(h->op_str), "%%bnd%u,%s", m.reg & 3, rm);
		else
			snprintf(h->op_str, sizeof(h->op_str), "%s,%%bnd%u", rm, m.reg & 3);
		break;
	}
	case H_WRSSD: case H_WRSSQ: case H_WRUSSD: case H_WRUSSQ:
		reg_name(h->op_str, sizeof(h->op_str), m.reg, x.rex & 8 ? 64 : 32);
		snprintf(h->op_str + strlen(h->op_str), sizeof(h->op_str) - strlen(h->op_str),
			 ",%s", m.mem);
		break;
	default:
		if (m.mod == 3)
			reg_name(h->op_str, sizeof(h->op_str), m.rm, bits);
		else
			snprintf(h->op_str, sizeof(h->op_str), "%s", m.mem);
	}
	return 0;
}
