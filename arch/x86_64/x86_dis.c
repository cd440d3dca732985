/* Capstone glue (see x86_dis.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <capstone/capstone.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_hint.h"

int x86_dis_init(struct x86_dis *d)
{
	csh h;

	memset(d, 0, sizeof(*d));
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return -ENOMEM;
	/* capstone defaults to Intel syntax; perf and objdump print AT&T. */
	if (cs_option(h, CS_OPT_DETAIL, CS_OPT_ON) != CS_ERR_OK ||
	    cs_option(h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT) != CS_ERR_OK) {
		cs_close(&h);
		return -EINVAL;
	}
	d->handle = h;
	d->hint = -1;
	d->scratch = cs_malloc(h);
	if (!d->scratch) {
		cs_close(&h);
		return -ENOMEM;
	}
	return 0;
}

void x86_dis_fini(struct x86_dis *d)
{
	csh h = d->handle;

	if (d->scratch)
		cs_free(d->scratch, 1);
	if (h)
		cs_close(&h);
	h = d->len_handle;
	if (d->len_scratch)
		cs_free(d->len_scratch, 1);
	if (h)
		cs_close(&h);
	memset(d, 0, sizeof(*d));
}

int x86_dis_set_intel(struct x86_dis *d, int intel)
{
	if (cs_option(d->handle, CS_OPT_SYNTAX, intel ? CS_OPT_SYNTAX_INTEL : CS_OPT_SYNTAX_ATT)
	    != CS_ERR_OK)
		return -EINVAL;
	d->intel = intel;
	return 0;
}

/* Length of a VEX/EVEX instruction (capstone 4 lacks part of AVX-512; glibc's string
 * functions use it on CPUs that have it).  None of them transfers control, so knowing
 * the length is all a block decoder needs.  Returns 0 when `code` is no VEX/EVEX. */
static size_t vex_evex_len(const uint8_t *code, size_t len)
{
	size_t i = 0, need;
	unsigned map, op, modrm, mod, rm;

	while (i < len && i < 4 && (code[i] == 0x26 || code[i] == 0x2e || code[i] == 0x36 ||
				    code[i] == 0x3e || code[i] == 0x64 || code[i] == 0x65 ||
				    code[i] == 0x67))
		i++;
	if (i + 3 > len)
		return 0;
	if (code[i] == 0x62) {		/* EVEX: 62 P0 P1 P2 op */
		if (i + 5 > len)
			return 0;
		map = code[i + 1] & 7;
		i += 4;
	} else if (code[i] == 0xc4) {	/* 3-byte VEX */
		if (i + 4 > len)
			return 0;
		map = code[i + 1] & 0x1f;
		i += 3;
	} else if (code[i] == 0xc5) {	/* 2-byte VEX */
		map = 1;
		i += 2;
	} else {
		return 0;
	}
	op = code[i++];
	if (map == 1 && op == 0x77)	/* vzeroupper/vzeroall: no ModRM */
		return i;
	if (i >= len)
		return 0;
	modrm = code[i++];
	mod = modrm >> 6;
	rm = modrm & 7;
	need = 0;
	if (mod != 3 && rm == 4) {
		if (i >= len)
			return 0;
		if (mod == 0 && (code[i] & 7) == 5)
			need = 4;
		i++;
	}
	if (mod == 0 && rm == 5)
		need = 4;
	else if (mod == 1)
		need = 1;
	else if (mod == 2)
		need = 4;
	i += need;
	if (map == 3 || (map == 1 && ((op >= 0x70 && op <= 0x73) || op == 0xc2 || op == 0xc4 ||
				      op == 0xc5 || op == 0xc6)))
		i++;
	return i <= len && i <= X86_MAX_INSN ? i : 0;
}

unsigned x86_dis_last_id(const struct x86_dis *d)
{
	return ((const cs_insn *)d->scratch)->id;
}

const char *x86_dis_id_name(const struct x86_dis *d, unsigned id)
{
	const char *n = id >= X86_INS_ENDING ? x86_hint_name(id - X86_INS_ENDING) :
			id ? cs_insn_name(d->handle, id) : NULL;

	/* id 0: x86_dis_one read a VEX/EVEX instruction capstone does not know */
	return n ? n : id ? "?" : "(vex/evex)";
}

/* snprintf(dst, size, "%s", src) at a tenth of its cost: every decoded instruction
 * copies its text. */
static void copy_text(char *dst, size_t size, const char *src)
{
	size_t n = strnlen(src, size - 1);
	memcpy(dst, src, n);
	dst[n] = 0;
}

int x86_dis_one(struct x86_dis *d, const uint8_t *code, size_t len, uint64_t ip,
		struct x86_instr *out)
{
	cs_insn *ci = d->scratch;
	const uint8_t *p = code;
	size_t n = len;
	uint64_t a = ip;
	struct x86_hint h;
	int hint = x86_hint_decode(code, len, &h) == 0;
	int cs_ok;

	d->hint = -1;
	/* capstone 4 knows the plain hint NOPs (its text stays), not all CET instructions */
	cs_ok = !(hint && h.kind != X86_HINT_NOP) && cs_disasm_iter(d->handle, &p, &n, &a, ci);
	if (hint && (!cs_ok || ci->size != h.len)) {
		memset(out, 0, sizeof(*out));
		out->ip = ip;
		out->size = h.len;
		memcpy(out->bytes, code, h.len);
		snprintf(out->mnemonic, sizeof(out->mnemonic), "%s", h.mnemonic);
		snprintf(out->op_str, sizeof(out->op_str), "%s", h.op_str);
		out->br.ip = ip;
		out->br.next = ip + h.len;
		ci->id = X86_INS_ENDING + h.op;
		d->hint = h.kind;
		d->hint_len = h.len;
		return 0;
	}
	if (!cs_ok) {
		size_t vl = vex_evex_len(code, len);

		ci->id = 0;
		if (!vl)
			return -EINVAL;
		memset(out, 0, sizeof(*out));
		out->ip = ip;
		out->size = (uint8_t)vl;
		memcpy(out->bytes, code, vl);
		snprintf(out->mnemonic, sizeof(out->mnemonic), "(bad)");
		snprintf(out->op_str, sizeof(out->op_str), "%s",
			 code[0] == 0x62 ? "evex instruction unknown to capstone" :
					   "vex instruction unknown to capstone");
		out->br.ip = ip;
		out->br.next = ip + vl;
		return 0;
	}
	out->ip = ip;
	out->size = (uint8_t)ci->size;
	memcpy(out->bytes, ci->bytes, ci->size < X86_MAX_INSN ? ci->size : X86_MAX_INSN);
	copy_text(out->mnemonic, sizeof(out->mnemonic), ci->mnemonic);
	copy_text(out->op_str, sizeof(out->op_str), ci->op_str);
	x86_branch_from_cs(ci, &out->br);
	return 0;
}

int x86_dis_run(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t ip,
		uint32_t max_insns, struct x86_run *run)
{
	uint8_t buf[256];
	size_t have = 0, pos = 0;
	uint64_t base = ip, cur = ip;
	long got;
	int err;

	memset(run, 0, sizeof(*run));
	run->start = ip;
	while (run->ninsns < max_insns) {
		/* Keep at least one maximal instruction buffered. */
		if (have - pos < X86_MAX_INSN) {
			memmove(buf, buf + pos, have - pos);
			have -= pos;
			base += pos;
			pos = 0;
			got = read(ctx, base + have, buf + have, sizeof(buf) - have);
			if (got > 0)
				have += (size_t)got;
		}
		if (pos == have) {
			err = -EFAULT;
			goto stop;
		}
		err = x86_dis_one(d, buf + pos, have - pos, cur, &run->term);
		if (err < 0)
			goto stop;
		run->ninsns++;
		pos += run->term.size;
		cur += run->term.size;
		if (run->term.br.cls != X86_BR_NONE)
			return 0;
	}
	run->truncated = -E2BIG;
	return 0;
stop:
	if (run->ninsns == 0)
		return err;
	run->truncated = err;
	return 0;
}

/* Capstone decodes the same bytes to the same sizes, and fails on the same, with or
 * without details and in either syntax (every offset of libc's text and of 2 MB of
 * random bytes); its AT&T text and details cost half its time. */
unsigned x86_dis_len(struct x86_dis *d, const uint8_t *code, size_t len, uint64_t ip)
{
	struct x86_hint h;
	int hint = x86_hint_decode(code, len, &h) == 0;
	const uint8_t *p = code;
	size_t n = len;
	uint64_t a = ip;

	if (hint && h.kind != X86_HINT_NOP)
		return h.len;
	if (!d->len_handle) {
		csh c;
		if (cs_open(CS_ARCH_X86, CS_MODE_64, &c) != CS_ERR_OK)
			return 0;
		d->len_scratch = cs_malloc(c);
		if (!d->len_scratch) {
			cs_close(&c);
			return 0;
		}
		d->len_handle = c;
	}
	cs_insn *ci = d->len_scratch;
	bool ok = cs_disasm_iter(d->len_handle, &p, &n, &a, ci);
	if (hint && (!ok || ci->size != h.len))
		return h.len;
	return ok ? ci->size : (unsigned)vex_evex_len(code, len);
}
