/* LBR range walking on hand-assembled code (bytes and lengths from the Intel SDM). */
#include "xp_test.h"

#include <errno.h>

#include "arch/x86_64/x86_range.h"

/* 0x1000: 48 89 c3        mov %rax,%rbx
 * 0x1003: 74 05           je 0x100a
 * 0x1005: 90              nop
 * 0x1006: 75 02           jne 0x100a
 * 0x1008: ff d0           call *%rax
 * 0x100a: c3              ret
 * 0x100b: eb f3           jmp 0x1000
 * 0x100d: 90              nop */
static const uint8_t code[] = { 0x48, 0x89, 0xc3, 0x74, 0x05, 0x90, 0x75, 0x02, 0xff, 0xd0,
				0xc3, 0xeb, 0xf3, 0x90 };

static long rd(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	(void)ctx;
	if (ip < 0x1000 || ip >= 0x1000 + sizeof(code))
		return 0;
	size_t off = ip - 0x1000, n = sizeof(code) - off;
	if (n > len)
		n = len;
	memcpy(buf, code + off, n);
	return (long)n;
}

static void test_walk(void **state)
{
	struct x86_dis d;
	static struct x86_range_info ri;
	enum x86_bclass k;

	(void)state;
	assert_int_equal(x86_dis_init(&d), 0);
	/* [0x1000, 0x1008]: mov, je (not taken), nop, jne (not taken), call *%rax. */
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x1000, 0x1008, &ri, &k), 0);
	assert_int_equal(ri.insns, 5);
	assert_int_equal(ri.ncond, 2);
	assert_int_equal(ri.cond_ip[0], 0x1003);
	assert_int_equal(ri.cond_next[0], 0x1005);
	assert_int_equal(ri.cond_ip[1], 0x1006);
	assert_int_equal(ri.cond_next[1], 0x1008);
	assert_int_equal(k, X86_BR_CALL_IND);
	/* A range ending at a conditional branch that was taken. */
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x1005, 0x1006, &ri, &k), 0);
	assert_int_equal(ri.insns, 2);
	assert_int_equal(ri.ncond, 0);
	assert_int_equal(k, X86_BR_COND);
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x100a, 0x100a, &ri, &k), 0);
	assert_int_equal(k, X86_BR_RET);
	/* Contradictions: `end` inside an instruction; a ret before `end`. */
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x1000, 0x1004, &ri, &k), -EINVAL);
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x1008, 0x100b, &ri, &k), -EINVAL);
	/* A range that ends at a non-branch (interrupted there). */
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x1000, 0x1000, &ri, &k), 0);
	assert_int_equal(ri.insns, 1);
	assert_int_equal(k, X86_BR_NONE);
	/* Unreadable code. */
	assert_int_equal(x86_range_walk(&d, rd, NULL, 0x2000, 0x2004, &ri, &k), -EFAULT);
	x86_dis_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
