/* The SSE instructions compilers put between branches (struct copies and zeroing,
 * scalar double moves): legacy-encoded moves, 128-bit bitwise ops, paddq and
 * punpcklqdq on xmm0-15.  VEX
 * and EVEX forms zero the upper halves of ymm/zmm, which the fxsave image lacks: the
 * CPU runs those. */
#include <errno.h>
#include <string.h>

#include "arch/x86_64/x86_emu_int.h"

enum x86_vop { V_XOR, V_OR, V_AND, V_ANDN, V_PADDQ, V_PUNPCKLQDQ };

static int vopnd(const cs_x86_op *op, struct x86_uopnd *o)
{
	if (op->type == X86_OP_REG && op->reg >= X86_REG_XMM0 && op->reg <= X86_REG_XMM15) {
		memset(o, 0, sizeof(*o));
		o->kind = X86_UOPND_XMM;
		o->reg = (uint16_t)(op->reg - X86_REG_XMM0);
		o->size = 16;
		return 0;
	}
	if (op->type == X86_OP_MEM && op->size == 16) {
		cs_x86_op m = *op;	/* the size is the move's, x86_emu_opnd takes up to 8 */

		m.size = 8;
		return x86_emu_opnd(&m, o);
	}
	return x86_emu_opnd(op, o);	/* mm registers are refused there */
}

int x86_sse_translate(const cs_insn *ci, int att, struct x86_uop *u)
{
	const cs_x86 *x = &ci->detail->x86;
	int mem_only = 0, xmm_dst = 0;

	u->kind = U_VMOV;
	if (x->prefix[0] == X86_PREFIX_LOCK)
		return -EINVAL;
	switch (ci->id) {
	case X86_INS_MOVDQA: case X86_INS_MOVAPS: case X86_INS_MOVAPD:
		u->valign = 1;
		/* fall through */
	case X86_INS_MOVDQU: case X86_INS_MOVUPS: case X86_INS_MOVUPD:
		u->vlen = 16;
		break;
	case X86_INS_MOVQ: u->vlen = 8; u->vzext = 1; break;
	case X86_INS_MOVD: u->vlen = 4; u->vzext = 1; break;
	case X86_INS_MOVLPD: case X86_INS_MOVLPS: u->vlen = 8; mem_only = 1; break;
	case X86_INS_MOVHPD: case X86_INS_MOVHPS: u->vlen = 8; u->voff = 8; mem_only = 1; break;
	case X86_INS_MOVSD: u->vlen = 8; break;		/* the string movsd has no operands here */
	case X86_INS_MOVSS: u->vlen = 4; break;
	case X86_INS_PXOR: case X86_INS_XORPS: case X86_INS_XORPD: u->vop = V_XOR; goto alu;
	case X86_INS_POR: case X86_INS_ORPS: case X86_INS_ORPD: u->vop = V_OR; goto alu;
	case X86_INS_PAND: case X86_INS_ANDPS: case X86_INS_ANDPD: u->vop = V_AND; goto alu;
	case X86_INS_PANDN: case X86_INS_ANDNPS: case X86_INS_ANDNPD: u->vop = V_ANDN; goto alu;
	case X86_INS_PADDQ: u->vop = V_PADDQ; goto alu;
	case X86_INS_PUNPCKLQDQ: u->vop = V_PUNPCKLQDQ; goto alu;
	default:
		return -EINVAL;
	}
	if (x->op_count != 2 || vopnd(&x->operands[att ? 1 : 0], &u->dst) < 0 ||
	    vopnd(&x->operands[att ? 0 : 1], &u->src) < 0)
		return -EINVAL;
	if (u->dst.kind != X86_UOPND_XMM && u->src.kind != X86_UOPND_XMM)
		return -EINVAL;	/* the string movsd, mmx movq */
	if (u->src.kind == X86_UOPND_IMM)
		return -EINVAL;
	xmm_dst = u->dst.kind == X86_UOPND_XMM;
	if (mem_only && u->dst.kind != X86_OPND_MEM && u->src.kind != X86_OPND_MEM)
		return -EINVAL;	/* movhlps/movlhps share the opcodes */
	/* a general register holds exactly the bytes moved (movd r32, movq r64) */
	if ((u->dst.kind == X86_OPND_REG && u->dst.size != u->vlen) ||
	    (u->src.kind == X86_OPND_REG && u->src.size != u->vlen))
		return -EINVAL;
	if (ci->id == X86_INS_MOVSD || ci->id == X86_INS_MOVSS)
		u->vzext = xmm_dst && u->src.kind == X86_OPND_MEM;	/* reg to reg merges */
	if (!xmm_dst)
		u->vzext = 0;
	return 0;
alu:
	u->kind = U_VALU;
	u->valign = 1;
	if (x->op_count != 2 || vopnd(&x->operands[att ? 1 : 0], &u->dst) < 0 ||
	    vopnd(&x->operands[att ? 0 : 1], &u->src) < 0 || u->dst.kind != X86_UOPND_XMM ||
	    (u->src.kind != X86_UOPND_XMM && u->src.kind != X86_OPND_MEM))
		return -EINVAL;
	return 0;
}

static uint8_t *xreg(struct x86_xmm *x, unsigned i)
{
	return (uint8_t *)x->fp.xmm_space + 16 * i;
}

int x86_sse_exec(const struct x86_uop *u, uint64_t next, struct user_regs_struct *n,
		 x86_mem_read_fn rd, x86_mem_write_fn wr, void *ctx, struct x86_xmm *x)
{
	uint8_t buf[16], cur[16];
	uint64_t a = 0, v, p[2], q[2];
	const struct x86_uopnd *mo = u->dst.kind == X86_OPND_MEM ? &u->dst :
				     u->src.kind == X86_OPND_MEM ? &u->src : NULL;
	unsigned len = u->kind == U_VALU ? 16 : u->vlen;
	int err;

	if (!x)
		return -EINVAL;
	if (!x->loaded) {
		if ((err = x->load(x->ctx, &x->fp)) < 0)
			return err;
		x->loaded = 1;
	}
	if (mo) {
		if ((err = x86_emu_ea(&mo->mem, next, n, &a)) < 0)
			return err;
		if (u->valign && (a & 15))
			return -EINVAL;	/* #GP: the CPU raises it */
	}
	switch (u->src.kind) {	/* the bytes moved, or the second operand */
	case X86_UOPND_XMM:
		memcpy(buf, xreg(x, u->src.reg) + (u->dst.kind == X86_UOPND_XMM ? 0 : u->voff), len);
		break;
	case X86_OPND_REG:
		if ((err = x86_reg_value(n, u->src.reg, &v)) < 0)
			return err;
		memcpy(buf, &v, len);
		break;
	default:
		if ((err = rd(ctx, a, buf, len)) < 0)
			return err;
		break;
	}
	if (u->kind == U_VALU) {
		memcpy(p, xreg(x, u->dst.reg), 16);
		memcpy(q, buf, 16);
		if (u->vop == V_PUNPCKLQDQ)
			p[1] = q[0];	/* the low quadwords side by side */
		else
			for (int i = 0; i < 2; i++)
				p[i] = u->vop == V_XOR ? p[i] ^ q[i] : u->vop == V_OR ? p[i] | q[i] :
				       u->vop == V_AND ? p[i] & q[i] : u->vop == V_ANDN ? ~p[i] & q[i] :
				       p[i] + q[i];
		memcpy(xreg(x, u->dst.reg), p, 16);
		x->dirty = 1;
		return 0;
	}
	switch (u->dst.kind) {
	case X86_UOPND_XMM:
		memcpy(cur, xreg(x, u->dst.reg), 16);
		if (u->vzext)
			memset(cur, 0, 16);
		memcpy(cur + u->voff, buf, len);
		memcpy(xreg(x, u->dst.reg), cur, 16);
		x->dirty = 1;
		return 0;
	case X86_OPND_REG:
		v = 0;
		memcpy(&v, buf, len);
		return x86_reg_write(n, u->dst.reg, v);
	default:
		return wr(ctx, a, buf, len);
	}
}
