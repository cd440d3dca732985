/* Branch evaluation: condition codes against RFLAGS (truth table from the SDM's Jcc
 * page), loop counters, indirect targets from registers and fake memory. */
#include "xp_test.h"

#include <errno.h>
#include <capstone/capstone.h>

#include "arch/x86_64/x86_dis.h"

#define CF 0x1
#define PF 0x4
#define ZF 0x40
#define SF 0x80
#define OF 0x800

static void test_cc(void **state)
{
	(void)state;
	/* bit cc: o no b ae e ne be a s ns p np l ge le g */
	/* Each row: flags, then the 16 expected outcomes as a bit mask (bit cc). */
	static const struct { uint64_t fl; uint16_t mask; } rows[] = {
		{ 0,		(1 << 1) | (1 << 3) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 11) | (1 << 13) | (1 << 15) },
		{ CF,		(1 << 1) | (1 << 2) | (1 << 5) | (1 << 6) | (1 << 9) | (1 << 11) | (1 << 13) | (1 << 15) },
		{ ZF,		(1 << 1) | (1 << 3) | (1 << 4) | (1 << 6) | (1 << 9) | (1 << 11) | (1 << 13) | (1 << 14) },
		{ SF,		(1 << 1) | (1 << 3) | (1 << 5) | (1 << 7) | (1 << 8) | (1 << 11) | (1 << 12) | (1 << 14) },
		{ OF,		(1 << 0) | (1 << 3) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 11) | (1 << 12) | (1 << 14) },
		{ SF | OF,	(1 << 0) | (1 << 3) | (1 << 5) | (1 << 7) | (1 << 8) | (1 << 11) | (1 << 13) | (1 << 15) },
		{ PF,		(1 << 1) | (1 << 3) | (1 << 5) | (1 << 7) | (1 << 9) | (1 << 10) | (1 << 13) | (1 << 15) },
	};
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
		for (unsigned cc = 0; cc < 16; cc++)
			if (x86_cc_eval(cc, rows[r].fl) != !!(rows[r].mask & (1u << cc)))
				fail_msg("flags %#llx cc %#x", (unsigned long long)rows[r].fl, cc);
}

static void test_loop(void **state)
{
	struct x86_branch b = { .cls = X86_BR_COND, .cond = X86_CC_LOOP };
	struct user_regs_struct r = { 0 };
	uint64_t rcx;

	(void)state;
	r.rcx = 2;
	assert_true(x86_branch_cond_taken(&b, &r, &rcx));
	assert_int_equal(rcx, 1);
	r.rcx = 1;
	assert_false(x86_branch_cond_taken(&b, &r, &rcx));
	assert_int_equal(rcx, 0);
	b.cond = X86_CC_LOOPE;
	r.rcx = 5;
	r.eflags = 0;
	assert_false(x86_branch_cond_taken(&b, &r, &rcx));
	r.eflags = ZF;
	assert_true(x86_branch_cond_taken(&b, &r, &rcx));
	b.cond = X86_CC_LOOPNE;
	assert_false(x86_branch_cond_taken(&b, &r, &rcx));
	/* addr32 loop counts ecx and keeps rcx's upper half */
	b.cond = X86_CC_LOOP;
	b.addr32 = 1;
	r.rcx = 0x500000001ull;
	assert_false(x86_branch_cond_taken(&b, &r, &rcx));
	assert_int_equal(rcx, 0x500000000ull);
	b.addr32 = 0;
	b.cond = X86_CC_RCXZ;
	r.rcx = 0x100000000ull;
	assert_false(x86_branch_cond_taken(&b, &r, &rcx));
	assert_int_equal(rcx, 0x100000000ull);
	b.cond = X86_CC_ECXZ;
	assert_true(x86_branch_cond_taken(&b, &r, &rcx));
}

/* Fake memory: 8-byte words at 0x7000.. hold 0x7000 + 0x100 * i. */
static int read_mem(void *ctx, uint64_t addr, void *buf, size_t len)
{
	uint64_t v;

	(void)ctx;
	if (len != 8 || addr < 0x7000 || addr >= 0x8000 || (addr & 7))
		return -EFAULT;
	v = 0x7000 + 0x100 * ((addr - 0x7000) / 8);
	memcpy(buf, &v, 8);
	return 0;
}

static void target_of(const uint8_t *bytes, size_t len, const struct user_regs_struct *r,
		      int want_err, uint64_t want)
{
	struct x86_dis d;
	struct x86_instr in;
	uint64_t t = 0;

	assert_int_equal(x86_dis_init(&d), 0);
	assert_int_equal(x86_dis_one(&d, bytes, len, 0x1000, &in), 0);
	assert_int_equal(x86_branch_indirect_target(&in.br, r, read_mem, NULL, &t), want_err);
	if (!want_err)
		assert_int_equal(t, want);
	x86_dis_fini(&d);
}

static void test_indirect(void **state)
{
	struct user_regs_struct r = { 0 };

	(void)state;
	r.rax = 0x4242;
	r.rdx = 3;
	r.rsp = 0x7010;
	r.fs_base = 0x6ff0;
	target_of((const uint8_t[]){ 0xff, 0xe0 }, 2, &r, 0, 0x4242);			/* jmp *%rax */
	target_of((const uint8_t[]){ 0x41, 0xff, 0xd3 }, 3, &r, 0, r.r11);		/* call *%r11 */
	target_of((const uint8_t[]){ 0xff, 0x24, 0xd5, 0x00, 0x70, 0, 0 }, 7, &r, 0, 0x7300); /* jmp *0x7000(,%rdx,8) */
	target_of((const uint8_t[]){ 0xff, 0x14, 0x24 }, 3, &r, 0, 0x7200);		/* call *(%rsp) */
	target_of((const uint8_t[]){ 0xff, 0x15, 0xfa, 0x5f, 0, 0 }, 6, &r, 0, 0x7000); /* call *0x5ffa(%rip): [0x7000] */
	target_of((const uint8_t[]){ 0x64, 0xff, 0x24, 0x25, 0x18, 0, 0, 0 }, 8, &r, 0, 0x7100); /* jmp *%fs:0x18 */
	target_of((const uint8_t[]){ 0xc3 }, 1, &r, 0, 0x7200);				/* ret: [rsp] */
	target_of((const uint8_t[]){ 0xff, 0x20 }, 2, &r, -EFAULT, 0);			/* jmp *(%rax): unmapped */
	target_of((const uint8_t[]){ 0xeb, 0x00 }, 2, &r, -EINVAL, 0);			/* direct: not indirect */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cc),
		cmocka_unit_test(test_loop),
		cmocka_unit_test(test_indirect),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
