/* The one x86 decoding the PT decoder needs by itself: the length, kind and direct
 * target of the branch that ends a block.  libipt's block decoder tells neither
 * where the fall-through of a conditional branch is nor (on its cached fast path)
 * always the class of the last instruction; a full disassembler per block would cost
 * more than the decode, so this reads only prefixes, opcode and ModRM. */
#include "pt.h"

static int is_legacy_prefix(uint8_t b)
{
	switch (b) {
	case 0x26: case 0x2e: case 0x36: case 0x3e: case 0x64: case 0x65:
	case 0x66: case 0x67: case 0xf0: case 0xf2: case 0xf3:
		return 1;
	}
	return 0;
}

/* Bytes taken by ModRM (+SIB, +displacement) starting at b[0]; -1 if short. */
static int modrm_len(const uint8_t *b, size_t n, int addr16)
{
	if (n < 1)
		return -1;
	uint8_t modrm = b[0], mod = modrm >> 6, rm = modrm & 7;
	int len = 1;
	if (mod == 3)
		return 1;
	if (addr16) {
		if (mod == 0 && rm == 6)
			return 3;
		return len + (mod == 1 ? 1 : mod == 2 ? 2 : 0);
	}
	if (rm == 4) {
		if (n < 2)
			return -1;
		len++;
		if (mod == 0 && (b[1] & 7) == 5)
			return len + 4;
	} else if (mod == 0 && rm == 5) {
		return len + 4;	/* disp32 / RIP-relative */
	}
	return len + (mod == 1 ? 1 : mod == 2 ? 4 : 0);
}

static int64_t rel(const uint8_t *p, int size)
{
	switch (size) {
	case 1: return (int8_t)p[0];
	case 2: return (int16_t)(p[0] | p[1] << 8);
	default: return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 |
				  (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
	}
}

int dpt_branch_decode(const uint8_t *b, size_t n, enum pt_exec_mode mode, uint64_t ip,
		      struct dpt_branch *out)
{
	size_t i = 0;
	int opsize16 = 0, addrsize_pfx = 0;

	*out = (struct dpt_branch){ DPT_B_OTHER, 0, 0, 0 };
	while (i < n && i < 14 && is_legacy_prefix(b[i])) {
		opsize16 |= b[i] == 0x66;
		addrsize_pfx |= b[i] == 0x67;
		i++;
	}
	if (mode == ptem_64bit && i < n && (b[i] & 0xf0) == 0x40)
		i++;	/* REX */
	if (i >= n)
		return -1;
	/* Near branches: 64-bit mode ignores 0x66 on Intel (operand size is 64); 16-bit
	 * code segments invert the meaning of 0x66. */
	int disp16 = mode == ptem_64bit ? 0 : (mode == ptem_16bit) != opsize16;
	int addr16 = mode == ptem_64bit ? 0 : (mode == ptem_16bit) != addrsize_pfx;
	int dsz = disp16 ? 2 : 4;
	uint8_t op = b[i++];
	int need;

	switch (op) {
	case 0x70 ... 0x7f:
	case 0xe0 ... 0xe3:
		out->cls = DPT_B_COND;
		need = 1;
		goto direct;
	case 0xeb:
		out->cls = DPT_B_JUMP;
		need = 1;
		goto direct;
	case 0xe9:
		out->cls = DPT_B_JUMP;
		need = dsz;
		goto direct;
	case 0xe8:
		out->cls = DPT_B_CALL;
		need = dsz;
		goto direct;
	case 0xc3:
		out->cls = DPT_B_RET;
		out->indirect = 1;
		out->size = (uint8_t)i;
		return 0;
	case 0xc2:
		out->cls = DPT_B_RET;
		out->indirect = 1;
		out->size = (uint8_t)(i + 2);
		return i + 2 <= n ? 0 : -1;
	case 0xca: case 0xcb: case 0xcf: case 0xcc: case 0xcd: case 0xce:
		out->cls = DPT_B_FAR;
		out->indirect = 1;
		out->size = (uint8_t)(i + (op == 0xca ? 2 : op == 0xcd ? 1 : 0));
		return out->size <= n ? 0 : -1;
	case 0x9a: case 0xea:	/* far call/jmp ptr16:16/32 (not in 64-bit mode) */
		out->cls = DPT_B_FAR;
		out->size = (uint8_t)(i + dsz + 2);
		return out->size <= n ? 0 : -1;
	case 0xff: {
		if (i >= n)
			return -1;
		int reg = (b[i] >> 3) & 7;
		if (reg < 2 || reg > 5 || reg == 7)
			return 0;	/* inc/dec/push */
		int ml = modrm_len(b + i, n - i, addr16);
		if (ml < 0)
			return -1;
		out->cls = reg == 2 ? DPT_B_CALL : reg == 4 ? DPT_B_JUMP : DPT_B_FAR;
		out->indirect = 1;
		out->size = (uint8_t)(i + (size_t)ml);
		return out->size <= n ? 0 : -1;
	}
	case 0x0f:
		if (i >= n)
			return -1;
		op = b[i++];
		if (op >= 0x80 && op <= 0x8f) {
			out->cls = DPT_B_COND;
			need = dsz;
			goto direct;
		}
		if (op == 0x05 || op == 0x07 || op == 0x34 || op == 0x35) {
			out->cls = DPT_B_FAR;	/* syscall, sysret, sysenter, sysexit */
			out->indirect = 1;
			out->size = (uint8_t)i;
		}
		return 0;
	default:
		return 0;
	}
direct:
	if (i + (size_t)need > n)
		return -1;
	out->size = (uint8_t)(i + (size_t)need);
	out->target = ip + out->size + (uint64_t)rel(b + i, need);
	if (mode != ptem_64bit)
		out->target &= disp16 ? 0xffff : 0xffffffff;
	return 0;
}
