/* Capstone glue and branch classification on hand-assembled byte sequences (encodings
 * from the Intel SDM opcode tables; targets computed by hand). */
#include "xp_test.h"

#include <errno.h>
#include <capstone/capstone.h>

#include "arch/x86_64/x86_dis.h"

struct d_case {
	const char *name;
	uint8_t bytes[16];
	uint8_t len;
	enum x86_bclass cls;
	int cond;		/* -1: not checked */
	uint64_t target;	/* at ip 0x1000 */
};

static const struct d_case cases[] = {
	{ "je rel8", { 0x74, 0x05 }, 2, X86_BR_COND, 0x4, 0x1007 },
	{ "jne rel32", { 0x0f, 0x85, 0x10, 0, 0, 0 }, 6, X86_BR_COND, 0x5, 0x1016 },
	{ "jg rel8 back", { 0x7f, 0xfe }, 2, X86_BR_COND, 0xf, 0x1000 },
	{ "jo", { 0x70, 0x00 }, 2, X86_BR_COND, 0x0, 0x1002 },
	{ "jrcxz", { 0xe3, 0xfe }, 2, X86_BR_COND, X86_CC_RCXZ, 0x1000 },
	{ "jecxz", { 0x67, 0xe3, 0x00 }, 3, X86_BR_COND, X86_CC_ECXZ, 0x1003 },
	{ "loop", { 0xe2, 0xfe }, 2, X86_BR_COND, X86_CC_LOOP, 0x1000 },
	{ "loope", { 0xe1, 0x02 }, 2, X86_BR_COND, X86_CC_LOOPE, 0x1004 },
	{ "loopne", { 0xe0, 0x02 }, 2, X86_BR_COND, X86_CC_LOOPNE, 0x1004 },
	{ "jmp rel8", { 0xeb, 0xfe }, 2, X86_BR_JMP, -1, 0x1000 },
	{ "jmp rel32", { 0xe9, 0x00, 0x01, 0, 0 }, 5, X86_BR_JMP, -1, 0x1105 },
	{ "call rel32", { 0xe8, 0, 0, 0, 0 }, 5, X86_BR_CALL, -1, 0x1005 },
	{ "jmp *%rax", { 0xff, 0xe0 }, 2, X86_BR_JMP_IND, -1, 0 },
	{ "notrack jmp *%rax", { 0x3e, 0xff, 0xe0 }, 3, X86_BR_JMP_IND, -1, 0 },
	{ "call *%rdx", { 0xff, 0xd2 }, 2, X86_BR_CALL_IND, -1, 0 },
	{ "jmp *0x2000(,%rax,8)", { 0xff, 0x24, 0xc5, 0x00, 0x20, 0, 0 }, 7, X86_BR_JMP_IND, -1, 0 },
	{ "call *0x10(%rip)", { 0xff, 0x15, 0x10, 0, 0, 0 }, 6, X86_BR_CALL_IND, -1, 0 },
	{ "jmp *%fs:0x10", { 0x64, 0xff, 0x24, 0x25, 0x10, 0, 0, 0 }, 8, X86_BR_JMP_IND, -1, 0 },
	{ "ret", { 0xc3 }, 1, X86_BR_RET, -1, 0 },
	{ "repz ret", { 0xf3, 0xc3 }, 2, X86_BR_RET, -1, 0 },
	{ "ret $8", { 0xc2, 0x08, 0x00 }, 3, X86_BR_RET, -1, 0 },
	{ "syscall", { 0x0f, 0x05 }, 2, X86_BR_SYSCALL, -1, 0 },
	{ "sysenter", { 0x0f, 0x34 }, 2, X86_BR_SYSCALL, -1, 0 },
	{ "int $0x80", { 0xcd, 0x80 }, 2, X86_BR_SYSCALL, -1, 0 },
	{ "int $3 (cd 03)", { 0xcd, 0x03 }, 2, X86_BR_TRAP, -1, 0 },
	{ "int3", { 0xcc }, 1, X86_BR_TRAP, -1, 0 },
	{ "ud2", { 0x0f, 0x0b }, 2, X86_BR_TRAP, -1, 0 },
	{ "iretq", { 0x48, 0xcf }, 2, X86_BR_FAR, -1, 0 },
	{ "lret", { 0xcb }, 1, X86_BR_FAR, -1, 0 },
	{ "ljmp *(%rax)", { 0xff, 0x28 }, 2, X86_BR_FAR, -1, 0 },
	{ "sysret", { 0x48, 0x0f, 0x07 }, 3, X86_BR_FAR, -1, 0 },
	{ "mov %rsp,%rbp", { 0x48, 0x89, 0xe5 }, 3, X86_BR_NONE, -1, 0 },
	{ "endbr64", { 0xf3, 0x0f, 0x1e, 0xfa }, 4, X86_BR_NONE, -1, 0 },
	{ "cmovne", { 0x48, 0x0f, 0x45, 0xc1 }, 4, X86_BR_NONE, -1, 0 },
};

static void test_classify(void **state)
{
	struct x86_dis d;
	struct x86_instr in;

	(void)state;
	assert_int_equal(x86_dis_init(&d), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct d_case *c = &cases[i];
		int err = x86_dis_one(&d, c->bytes, c->len, 0x1000, &in);

		if (err || in.size != c->len || in.br.cls != c->cls)
			fail_msg("%s: err %d size %u class %s", c->name, err, in.size,
				 x86_branch_class_name(in.br.cls));
		assert_int_equal(in.br.next, 0x1000 + c->len);
		if (c->cond >= 0)
			assert_int_equal(in.br.cond, c->cond);
		if (c->cls == X86_BR_COND || c->cls == X86_BR_JMP || c->cls == X86_BR_CALL)
			assert_int_equal(in.br.target, c->target);
		assert_int_equal(x86_branch_needs_trace(c->cls),
				 c->cls != X86_BR_NONE && c->cls != X86_BR_JMP && c->cls != X86_BR_CALL);
	}
	x86_dis_fini(&d);
}

static void test_operands(void **state)
{
	struct x86_dis d;
	struct x86_instr in;
	static const uint8_t tbl[] = { 0xff, 0x24, 0xc5, 0x00, 0x20, 0, 0 };
	static const uint8_t rip[] = { 0xff, 0x15, 0x10, 0, 0, 0 };
	static const uint8_t fs[] = { 0x64, 0xff, 0x24, 0x25, 0x10, 0, 0, 0 };
	static const uint8_t ret8[] = { 0xc2, 0x08, 0x00 };

	(void)state;
	assert_int_equal(x86_dis_init(&d), 0);
	assert_int_equal(x86_dis_one(&d, tbl, sizeof(tbl), 0x1000, &in), 0);
	assert_int_equal(in.br.opnd.kind, X86_OPND_MEM);
	assert_int_equal(in.br.opnd.base, X86_REG_INVALID);
	assert_int_equal(in.br.opnd.index, X86_REG_RAX);
	assert_int_equal(in.br.opnd.scale, 8);
	assert_int_equal(in.br.opnd.disp, 0x2000);
	assert_string_equal(in.mnemonic, "jmpq");
	assert_int_equal(x86_dis_one(&d, rip, sizeof(rip), 0x1000, &in), 0);
	assert_int_equal(in.br.opnd.base, X86_REG_RIP);
	assert_int_equal(in.br.opnd.disp, 0x10);
	assert_int_equal(x86_dis_one(&d, fs, sizeof(fs), 0x1000, &in), 0);
	assert_int_equal(in.br.opnd.seg, X86_SEG_FS);
	assert_int_equal(x86_dis_one(&d, ret8, sizeof(ret8), 0x1000, &in), 0);
	assert_int_equal(in.br.ret_imm, 8);
	assert_int_equal(x86_dis_set_intel(&d, 1), 0);
	assert_int_equal(x86_dis_one(&d, tbl, sizeof(tbl), 0x1000, &in), 0);
	assert_string_equal(in.mnemonic, "jmp");
	assert_string_equal(in.op_str, "qword ptr [rax*8 + 0x2000]");
	x86_dis_fini(&d);
}

static void test_invalid(void **state)
{
	struct x86_dis d;
	struct x86_instr in;
	static const uint8_t bad[] = { 0x0f, 0xff };	/* ud0 needs a ModRM: truncated */
	static const uint8_t trunc[] = { 0x0f, 0x85, 0x10 };

	(void)state;
	assert_int_equal(x86_dis_init(&d), 0);
	assert_int_equal(x86_dis_one(&d, bad, 1, 0x1000, &in), -EINVAL);
	assert_int_equal(x86_dis_one(&d, trunc, sizeof(trunc), 0x1000, &in), -EINVAL);
	/* the step tracer's statistics name what capstone does not know (it said "?") */
	assert_string_equal(x86_dis_id_name(&d, 0), "(vex/evex)");
	static const uint8_t nop[] = { 0x90 };
	assert_int_equal(x86_dis_one(&d, nop, sizeof(nop), 0x1000, &in), 0);
	assert_string_equal(x86_dis_id_name(&d, x86_dis_last_id(&d)), "nop");
	x86_dis_fini(&d);
}


/* x86_dis_len gives x86_dis_one's size, 0 where it fails: at every offset of 256 KiB
 * of libc's code and of pseudo-random bytes (valid, invalid and truncated
 * instructions, prefixes, VEX/EVEX), and for the hint and CET space x86_hint decodes
 * and the AVX-512 capstone 4 lacks. */
static unsigned one_len(struct x86_dis *d, const uint8_t *code, size_t len)
{
	struct x86_instr in;
	return x86_dis_one(d, code, len, 0x1000, &in) == 0 ? in.size : 0;
}

static void test_len(void **state)
{
	struct x86_dis one, len;
	static const uint8_t cases[][X86_MAX_INSN] = {
		{ 0xf3, 0x0f, 0x1e, 0xfa },		/* endbr64 */
		{ 0xf3, 0x48, 0x0f, 0x1e, 0xc8 },	/* rdsspq %rax */
		{ 0xf3, 0x0f, 0x01, 0xea },		/* saveprevssp */
		{ 0x0f, 0x1f, 0x44, 0x00, 0x00 },	/* nopl 0(%rax,%rax) */
		{ 0x62, 0xf2, 0xfd, 0x48, 0x8a, 0xc1 },	/* vcompresspd %zmm0,%zmm1 */
		{ 0xc5, 0xf8, 0x77 },			/* vzeroupper */
		{ 0x0f, 0xff },				/* ud0, its ModRM cut off at 1 byte */
	};
	uint8_t buf[X86_MAX_INSN + 1];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned nonzero = 0;

	(void)state;
	assert_int_equal(x86_dis_init(&one), 0);
	assert_int_equal(x86_dis_init(&len), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (size_t n = 1; n <= X86_MAX_INSN; n++)
			assert_int_equal(x86_dis_len(&len, cases[i], n, 0x1000), one_len(&one, cases[i], n));
	assert_int_equal(x86_dis_len(&len, cases[0], 4, 0x1000), 4);
	assert_int_equal(x86_dis_len(&len, cases[4], 6, 0x1000), 6);
	assert_int_equal(x86_dis_len(&len, cases[6], 1, 0x1000), 0);
	for (unsigned i = 0; i < 200000; i++) {
		for (size_t k = 0; k < sizeof(buf); k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[k] = (uint8_t)x;
		}
		unsigned l = x86_dis_len(&len, buf, X86_MAX_INSN, 0x1000);
		assert_int_equal(l, one_len(&one, buf, X86_MAX_INSN));
		nonzero += l != 0;
	}
	assert_true(nonzero > 100000);
	FILE *f = fopen("/usr/lib/x86_64-linux-gnu/libc.so.6", "rb");
	uint8_t *code = malloc(0x40000 + X86_MAX_INSN);
	assert_non_null(f);
	assert_non_null(code);
	assert_int_equal(fseek(f, 0x30000, SEEK_SET), 0);
	assert_int_equal(fread(code, 1, 0x40000 + X86_MAX_INSN, f), 0x40000 + X86_MAX_INSN);
	fclose(f);
	for (size_t off = 0; off < 0x40000; off++)
		assert_int_equal(x86_dis_len(&len, code + off, X86_MAX_INSN, 0x30000 + off),
				 one_len(&one, code + off, X86_MAX_INSN));
	free(code);
	x86_dis_fini(&one);
	x86_dis_fini(&len);
}

/* A fake code image for x86_dis_run: mov; add; nop; jne back; ret. */
static const uint8_t image[] = {
	0x48, 0x89, 0xe5,		/* 0x2000 mov %rsp,%rbp */
	0x48, 0x83, 0xc0, 0x01,		/* 0x2003 add $1,%rax */
	0x90,				/* 0x2007 nop */
	0x75, 0xf6,			/* 0x2008 jne 0x2000 */
	0xc3,				/* 0x200a ret */
};

static long read_image(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	size_t lim = ctx ? *(size_t *)ctx : sizeof(image);

	if (ip < 0x2000 || ip >= 0x2000 + lim)
		return 0;
	if (len > 0x2000 + lim - ip)
		len = 0x2000 + lim - ip;
	memcpy(buf, image + (ip - 0x2000), len);
	return (long)len;
}

static void test_run(void **state)
{
	struct x86_dis d;
	struct x86_run run;
	size_t lim = 6;

	(void)state;
	assert_int_equal(x86_dis_init(&d), 0);
	assert_int_equal(x86_dis_run(&d, read_image, NULL, 0x2000, 100, &run), 0);
	assert_int_equal(run.ninsns, 4);
	assert_int_equal(run.truncated, 0);
	assert_int_equal(run.term.ip, 0x2008);
	assert_int_equal(run.term.br.cls, X86_BR_COND);
	assert_int_equal(run.term.br.target, 0x2000);
	assert_int_equal(run.term.br.next, 0x200a);
	assert_int_equal(x86_dis_run(&d, read_image, NULL, 0x200a, 100, &run), 0);
	assert_int_equal(run.ninsns, 1);
	assert_int_equal(run.term.br.cls, X86_BR_RET);
	/* max_insns stops early */
	assert_int_equal(x86_dis_run(&d, read_image, NULL, 0x2000, 2, &run), 0);
	assert_int_equal(run.ninsns, 2);
	assert_int_equal(run.truncated, -E2BIG);
	/* unreadable bytes after the first instruction: a partial run */
	assert_int_equal(x86_dis_run(&d, read_image, &lim, 0x2000, 100, &run), 0);
	assert_int_equal(run.ninsns, 1);
	assert_true(run.truncated < 0);
	/* nothing readable: an error */
	assert_true(x86_dis_run(&d, read_image, NULL, 0x3000, 100, &run) < 0);
	x86_dis_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify),
		cmocka_unit_test(test_operands),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_len),
		cmocka_unit_test(test_run),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
