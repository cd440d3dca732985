/* The straight-line emulator against this CPU: results and flags of add/sub/cmp/and/or/
 * xor/test/inc/dec/shl/shr/sar/imul at every operand size on edge and pseudo-random
 * values, computed natively with the same instruction; translation of known encodings
 * (cmovcc, setcc, the high-byte registers among them). */
#include "xp_test.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <capstone/capstone.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_emu.h"

#define FLAGS 0x8d5ull	/* CF PF AF ZF SF OF */

#define NATIVE2(name, insn, sfx, T)                                                       \
	static uint64_t name(uint64_t a, uint64_t b, uint64_t *res)                      \
	{                                                                                 \
		T x = (T)a, y = (T)b;                                                     \
		uint64_t fl;                                                              \
		__asm__ volatile(insn sfx " %2, %0\n\tpushfq\n\tpop %1"                  \
				 : "+r"(x), "=r"(fl) : "r"(y) : "cc");                    \
		*res = (uint64_t)x;                                                       \
		return fl;                                                                \
	}
#define NATIVE1(name, insn, sfx, T)                                                       \
	static uint64_t name(uint64_t a, uint64_t b, uint64_t *res)                      \
	{                                                                                 \
		T x = (T)a;                                                               \
		uint64_t fl;                                                              \
		(void)b;                                                                  \
		__asm__ volatile("stc\n\t" insn sfx " %0\n\tpushfq\n\tpop %1"            \
				 : "+r"(x), "=r"(fl) : : "cc");                           \
		*res = (uint64_t)x;                                                       \
		return fl;                                                                \
	}
#define SIZES2(op, kind)                                                                  \
	NATIVE2(n_##op##8, #op, "b", uint8_t)                                            \
	NATIVE2(n_##op##16, #op, "w", uint16_t)                                          \
	NATIVE2(n_##op##32, #op, "l", uint32_t)                                          \
	NATIVE2(n_##op##64, #op, "q", uint64_t)
SIZES2(add, U_ADD)
SIZES2(sub, U_SUB)
SIZES2(cmp, U_CMP)
SIZES2(and, U_AND)
SIZES2(or, U_OR)
SIZES2(xor, U_XOR)
SIZES2(test, U_TEST)
NATIVE1(n_inc8, "inc", "b", uint8_t)
NATIVE1(n_inc16, "inc", "w", uint16_t)
NATIVE1(n_inc32, "inc", "l", uint32_t)
NATIVE1(n_inc64, "inc", "q", uint64_t)
NATIVE1(n_dec8, "dec", "b", uint8_t)
NATIVE1(n_dec16, "dec", "w", uint16_t)
NATIVE1(n_dec32, "dec", "l", uint32_t)
NATIVE1(n_dec64, "dec", "q", uint64_t)

typedef uint64_t (*native_fn)(uint64_t, uint64_t, uint64_t *);

static const struct {
	const char *name;
	int kind, size, nops;
	native_fn fn;
} ops[] = {
#define E(op, K) \
	{ #op "8", K, 1, 2, n_##op##8 }, { #op "16", K, 2, 2, n_##op##16 }, \
	{ #op "32", K, 4, 2, n_##op##32 }, { #op "64", K, 8, 2, n_##op##64 },
	E(add, U_ADD) E(sub, U_SUB) E(cmp, U_CMP) E(and, U_AND) E(or, U_OR) E(xor, U_XOR)
	E(test, U_TEST)
#undef E
	{ "inc8", U_INC, 1, 1, n_inc8 }, { "inc16", U_INC, 2, 1, n_inc16 },
	{ "inc32", U_INC, 4, 1, n_inc32 }, { "inc64", U_INC, 8, 1, n_inc64 },
	{ "dec8", U_DEC, 1, 1, n_dec8 }, { "dec16", U_DEC, 2, 1, n_dec16 },
	{ "dec32", U_DEC, 4, 1, n_dec32 }, { "dec64", U_DEC, 8, 1, n_dec64 },
};

static const unsigned regs_of_size[] = { 0, X86_REG_AL, X86_REG_AX, 0, X86_REG_EAX,
					 0, 0, 0, X86_REG_RAX };
static const unsigned regs2_of_size[] = { 0, X86_REG_BL, X86_REG_BX, 0, X86_REG_EBX,
					  0, 0, 0, X86_REG_RBX };

static int no_mem(void *ctx, uint64_t a, void *b, size_t n)
{
	(void)ctx, (void)a, (void)b, (void)n;
	return -EFAULT;
}

static int no_wmem(void *ctx, uint64_t a, const void *b, size_t n)
{
	(void)ctx, (void)a, (void)b, (void)n;
	return -EFAULT;
}

static void test_flags_vs_cpu(void **state)
{
	static const uint64_t edge[] = { 0, 1, 2, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
					 0x7fffffff, 0x80000000, 0xffffffff, 0x0f, 0x10,
					 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull };
	uint64_t vals[64], seed = 0x9e3779b97f4a7c15ull;
	size_t nv = 0;

	(void)state;
	for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
		vals[nv++] = edge[i];
	while (nv < 64) {
		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		vals[nv++] = seed;
	}
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (size_t i = 0; i < nv; i++)
			for (size_t j = 0; j < nv; j++) {
				struct x86_uop u = { .kind = (uint8_t)ops[o].kind, .len = 3 };
				struct user_regs_struct r = { 0 };
				uint64_t want_res, want_fl, m, af;

				u.dst.kind = X86_OPND_REG;
				u.dst.size = (uint8_t)ops[o].size;
				u.dst.reg = (uint16_t)regs_of_size[ops[o].size];
				u.src.kind = X86_OPND_REG;
				u.src.size = (uint8_t)ops[o].size;
				u.src.reg = (uint16_t)regs2_of_size[ops[o].size];
				r.rax = vals[i];
				r.rbx = vals[j];
				r.eflags = 0x203;	/* IF, CF set: inc/dec keep CF */
				want_fl = ops[o].fn(vals[i], vals[j], &want_res);
				assert_int_equal(x86_emu_exec(&u, 0x1000, &r, no_mem, no_wmem, NULL, NULL), 0);
				m = ops[o].size == 8 ? ~0ull : (1ull << (ops[o].size * 8)) - 1;
				/* AF is undefined after logic ops: compare it where it is defined */
				af = (ops[o].kind >= U_AND && ops[o].kind <= U_TEST) ? 0x10 : 0;
				if (((r.eflags ^ want_fl) & FLAGS & ~af) ||
				    (ops[o].kind != U_CMP && ops[o].kind != U_TEST &&
				     ((r.rax ^ want_res) & m)))
					fail_msg("%s %#llx, %#llx: emulated %#llx flags %#llx, cpu %#llx "
						 "flags %#llx", ops[o].name, (unsigned long long)vals[i],
						 (unsigned long long)vals[j], (unsigned long long)r.rax,
						 (unsigned long long)(r.eflags & FLAGS),
						 (unsigned long long)want_res,
						 (unsigned long long)(want_fl & FLAGS));
				assert_int_equal(r.rip, 0x1003);
			}
}

/* Shifts by cl against the CPU: every count 1..width (8/16: up to 31 refused past the
 * width), results and flags; OF is compared for a count of 1 only (undefined after),
 * AF never (undefined). */
#define NSHIFT(name, insn, T)                                                             \
	static uint64_t name(uint64_t a, unsigned c, uint64_t *res)                      \
	{                                                                                 \
		T x = (T)a;                                                               \
		uint64_t fl;                                                              \
		__asm__ volatile(insn " %%cl, %0\n\tpushfq\n\tpop %1"                     \
				 : "+r"(x), "=r"(fl) : "c"(c) : "cc");                    \
		*res = (uint64_t)x;                                                       \
		return fl;                                                                \
	}
NSHIFT(n_shl8, "shlb", uint8_t) NSHIFT(n_shl16, "shlw", uint16_t)
NSHIFT(n_shl32, "shll", uint32_t) NSHIFT(n_shl64, "shlq", uint64_t)
NSHIFT(n_shr8, "shrb", uint8_t) NSHIFT(n_shr16, "shrw", uint16_t)
NSHIFT(n_shr32, "shrl", uint32_t) NSHIFT(n_shr64, "shrq", uint64_t)
NSHIFT(n_sar8, "sarb", uint8_t) NSHIFT(n_sar16, "sarw", uint16_t)
NSHIFT(n_sar32, "sarl", uint32_t) NSHIFT(n_sar64, "sarq", uint64_t)

typedef uint64_t (*nshift_fn)(uint64_t, unsigned, uint64_t *);

#define NIMUL(name, sfx, T)                                                               \
	static uint64_t name(uint64_t a, uint64_t b, uint64_t *res)                      \
	{                                                                                 \
		T x = (T)a, y = (T)b;                                                     \
		uint64_t fl;                                                              \
		__asm__ volatile("imul" sfx " %2, %0\n\tpushfq\n\tpop %1"                 \
				 : "+r"(x), "=r"(fl) : "r"(y) : "cc");                    \
		*res = (uint64_t)x;                                                       \
		return fl;                                                                \
	}
NIMUL(n_imul16, "w", uint16_t) NIMUL(n_imul32, "l", uint32_t) NIMUL(n_imul64, "q", uint64_t)

static void test_shift_imul_vs_cpu(void **state)
{
	static const struct { int kind, size; nshift_fn fn; } sh[] = {
		{ U_SHL, 1, n_shl8 }, { U_SHL, 2, n_shl16 }, { U_SHL, 4, n_shl32 }, { U_SHL, 8, n_shl64 },
		{ U_SHR, 1, n_shr8 }, { U_SHR, 2, n_shr16 }, { U_SHR, 4, n_shr32 }, { U_SHR, 8, n_shr64 },
		{ U_SAR, 1, n_sar8 }, { U_SAR, 2, n_sar16 }, { U_SAR, 4, n_sar32 }, { U_SAR, 8, n_sar64 },
	};
	static const struct { int size; native_fn fn; } im[] = {
		{ 2, n_imul16 }, { 4, n_imul32 }, { 8, n_imul64 },
	};
	static const uint64_t vals[] = { 0, 1, 2, 3, 0x7f, 0x80, 0xff, 0x7fff, 0x8000, 0xffff,
					 0x12345, 0x7fffffff, 0x80000000, 0xffffffff,
					 0x123456789abcdefull, 0x8000000000000000ull, ~0ull,
					 0xfedcba9876543210ull, 0x5555555555555555ull, 46341, 65536 };
	size_t nv = sizeof(vals) / sizeof(vals[0]);

	(void)state;
	for (size_t o = 0; o < sizeof(sh) / sizeof(sh[0]); o++)
		for (size_t i = 0; i < nv; i++)
			for (unsigned c = 1; c < 64; c++) {
				struct x86_uop u = { .kind = (uint8_t)sh[o].kind, .len = 2 };
				struct user_regs_struct r = { 0 };
				uint64_t want_res, want_fl, m, cmp;
				int bits = sh[o].size * 8, rc;

				if (sh[o].size < 8 && c > 31)
					break;
				u.dst.kind = X86_OPND_REG;
				u.dst.size = (uint8_t)sh[o].size;
				u.dst.reg = (uint16_t)regs_of_size[sh[o].size];
				u.src.kind = X86_OPND_REG;
				u.src.size = 1;
				u.src.reg = X86_REG_CL;
				r.rax = vals[i];
				r.rcx = c;
				r.eflags = 0x202;
				want_fl = sh[o].fn(vals[i], c, &want_res);
				rc = x86_emu_exec(&u, 0x1000, &r, no_mem, no_wmem, NULL, NULL);
				if ((int)c > bits) {	/* refused: the CPU runs it */
					assert_int_equal(rc, -EINVAL);
					continue;
				}
				assert_int_equal(rc, 0);
				m = sh[o].size == 8 ? ~0ull : (1ull << bits) - 1;
				cmp = FLAGS & ~0x10ull & ~(c == 1 ? 0 : 0x800ull);
				if (((r.eflags ^ want_fl) & cmp) || ((r.rax ^ want_res) & m))
					fail_msg("%d/%d %#llx by %u: emulated %#llx flags %#llx, cpu %#llx "
						 "flags %#llx", sh[o].kind, sh[o].size,
						 (unsigned long long)vals[i], c, (unsigned long long)r.rax,
						 (unsigned long long)(r.eflags & cmp),
						 (unsigned long long)want_res,
						 (unsigned long long)(want_fl & cmp));
			}
	for (size_t o = 0; o < sizeof(im) / sizeof(im[0]); o++)
		for (size_t i = 0; i < nv; i++)
			for (size_t j = 0; j < nv; j++) {
				struct x86_uop u = { .kind = U_IMUL, .len = 3 };
				struct user_regs_struct r = { 0 };
				uint64_t want_res, want_fl, m;

				u.dst.kind = u.src.kind = X86_OPND_REG;
				u.dst.size = u.src.size = (uint8_t)im[o].size;
				u.dst.reg = (uint16_t)regs_of_size[im[o].size];
				u.src.reg = (uint16_t)regs2_of_size[im[o].size];
				r.rax = vals[i];
				r.rbx = vals[j];
				want_fl = im[o].fn(vals[i], vals[j], &want_res);
				assert_int_equal(x86_emu_exec(&u, 0x1000, &r, no_mem, no_wmem, NULL, NULL), 0);
				m = im[o].size == 8 ? ~0ull : (1ull << (im[o].size * 8)) - 1;
				/* CF and OF are what imul defines */
				if (((r.eflags ^ want_fl) & 0x801) || ((r.rax ^ want_res) & m))
					fail_msg("imul%d %#llx, %#llx: emulated %#llx cf/of %#llx, cpu "
						 "%#llx %#llx", im[o].size, (unsigned long long)vals[i],
						 (unsigned long long)vals[j], (unsigned long long)r.rax,
						 (unsigned long long)(r.eflags & 0x801),
						 (unsigned long long)want_res,
						 (unsigned long long)(want_fl & 0x801));
				if (im[o].size == 4)
					assert_int_equal(r.rax >> 32, 0);
			}
}

/* Runs one instruction on this CPU: the registers (but rsp and rip) and the arithmetic
 * flags from *r, the instruction, a ret, back into *r.  nat_run(r, code) with code =
 * the instruction's bytes followed by ret in an executable page. */
struct user_regs_struct *nat_state;
struct user_fpregs_struct nat_fp __attribute__((aligned(16)));	/* xmm0-15 in and out */
void *nat_code;
uint64_t nat_tmp;
void nat_run(struct user_regs_struct *r, void *code);
__asm__(".text\n.globl nat_run\n.type nat_run,@function\nnat_run:\n"
	"push %rbx\npush %rbp\npush %r12\npush %r13\npush %r14\npush %r15\n"
	"mov %rdi, nat_state(%rip)\nmov %rsi, nat_code(%rip)\nmov %rdi, %rax\n"
	"pushq 144(%rax)\npopfq\nfxrstor64 nat_fp(%rip)\n"
	"mov 0(%rax), %r15\nmov 8(%rax), %r14\nmov 16(%rax), %r13\nmov 24(%rax), %r12\n"
	"mov 32(%rax), %rbp\nmov 40(%rax), %rbx\nmov 48(%rax), %r11\nmov 56(%rax), %r10\n"
	"mov 64(%rax), %r9\nmov 72(%rax), %r8\nmov 88(%rax), %rcx\nmov 96(%rax), %rdx\n"
	"mov 104(%rax), %rsi\nmov 112(%rax), %rdi\nmov 80(%rax), %rax\n"
	"call *nat_code(%rip)\n"
	"fxsave64 nat_fp(%rip)\n"
	"mov %rax, nat_tmp(%rip)\npushfq\nmov nat_state(%rip), %rax\npopq 144(%rax)\n"
	"mov %r15, 0(%rax)\nmov %r14, 8(%rax)\nmov %r13, 16(%rax)\nmov %r12, 24(%rax)\n"
	"mov %rbp, 32(%rax)\nmov %rbx, 40(%rax)\nmov %r11, 48(%rax)\nmov %r10, 56(%rax)\n"
	"mov %r9, 64(%rax)\nmov %r8, 72(%rax)\nmov %rcx, 88(%rax)\nmov %rdx, 96(%rax)\n"
	"mov %rsi, 104(%rax)\nmov %rdi, 112(%rax)\nmov nat_tmp(%rip), %rbx\nmov %rbx, 80(%rax)\n"
	"pop %r15\npop %r14\npop %r13\npop %r12\npop %rbp\npop %rbx\nret\n"
	".size nat_run, .-nat_run\n");

/* Memory operands point at rdi: a real buffer both sides read and write. */
static uint8_t nat_buf[64] __attribute__((aligned(16)));

static int real_rd(void *ctx, uint64_t a, void *b, size_t n)
{
	(void)ctx;
	memcpy(b, (const void *)(uintptr_t)a, n);
	return 0;
}

static int real_wr(void *ctx, uint64_t a, const void *b, size_t n)
{
	(void)ctx;
	memcpy((void *)(uintptr_t)a, b, n);
	return 0;
}

/* The registers are in xs.fp already (the test sets them): nothing to fetch. */
static int xmm_load(void *ctx, struct user_fpregs_struct *fp)
{
	(void)ctx, (void)fp;
	return 0;
}

#define GPR_OFFS 15	/* r15 .. rdi in user_regs_struct */

/* Each encoding on many register states: what the emulator computes equals what this
 * CPU computes, registers, memory at rdi and the flags the ISA defines (`defined`);
 * states the emulator refuses (-EINVAL: a count of 0, a division that traps...) are
 * left to the CPU and skipped, but must be rare. */
static void test_vs_cpu(void **state)
{
	static const struct { const char *name; uint8_t len, bytes[8]; uint64_t defined; } t[] = {
		{ "neg %rbx", 3, { 0x48, 0xf7, 0xdb }, FLAGS },
		{ "neg %bl", 2, { 0xf6, 0xdb }, FLAGS },
		{ "negl (%rdi)", 2, { 0xf7, 0x1f }, FLAGS },
		{ "not %ebx", 2, { 0xf7, 0xd3 }, FLAGS },
		{ "notw (%rdi)", 3, { 0x66, 0xf7, 0x17 }, FLAGS },
		{ "cbtw", 2, { 0x66, 0x98 }, FLAGS },
		{ "cwtl", 1, { 0x98 }, FLAGS },
		{ "cltq", 2, { 0x48, 0x98 }, FLAGS },
		{ "cwtd", 2, { 0x66, 0x99 }, FLAGS },
		{ "cltd", 1, { 0x99 }, FLAGS },
		{ "cqto", 2, { 0x48, 0x99 }, FLAGS },
		{ "adc %rbx,%rax", 3, { 0x48, 0x11, 0xd8 }, FLAGS },
		{ "adc %bl,%al", 2, { 0x10, 0xd8 }, FLAGS },
		{ "adc $0,%ecx", 3, { 0x83, 0xd1, 0x00 }, FLAGS },
		{ "sbb %rbx,%rax", 3, { 0x48, 0x19, 0xd8 }, FLAGS },
		{ "sbb %eax,%eax", 2, { 0x19, 0xc0 }, FLAGS },
		{ "sbbw (%rdi),%dx", 3, { 0x66, 0x1b, 0x17 }, FLAGS },
		{ "rol %cl,%rbx", 3, { 0x48, 0xd3, 0xc3 }, 0x801 },
		{ "ror %cl,%ebx", 2, { 0xd3, 0xcb }, 0x801 },
		{ "rol $8,%bx", 4, { 0x66, 0xc1, 0xc3, 0x08 }, 0x801 },
		{ "ror %bl", 2, { 0xd0, 0xcb }, 0x801 | FLAGS },
		{ "rolq $13,(%rdi)", 4, { 0x48, 0xc1, 0x07, 0x0d }, 0x801 },
		{ "bt %rcx,%rbx", 4, { 0x48, 0x0f, 0xa3, 0xcb }, 0x1 },
		{ "bt %cx,%bx", 4, { 0x66, 0x0f, 0xa3, 0xcb }, 0x1 },
		{ "btl $5,(%rdi)", 4, { 0x0f, 0xba, 0x27, 0x05 }, 0x1 },
		{ "bts %rcx,%rbx", 4, { 0x48, 0x0f, 0xab, 0xcb }, 0x1 },
		{ "btr %ecx,%ebx", 3, { 0x0f, 0xb3, 0xcb }, 0x1 },
		{ "btc $33,%rbx", 5, { 0x48, 0x0f, 0xba, 0xfb, 0x21 }, 0x1 },
		{ "btrq $63,(%rdi)", 5, { 0x48, 0x0f, 0xba, 0x37, 0x3f }, 0x1 },
		{ "btsw $3,(%rdi)", 5, { 0x66, 0x0f, 0xba, 0x2f, 0x03 }, 0x1 },
		{ "tzcnt %rbx,%rax", 5, { 0xf3, 0x48, 0x0f, 0xbc, 0xc3 }, 0x41 },
		{ "tzcnt %bx,%ax", 5, { 0x66, 0xf3, 0x0f, 0xbc, 0xc3 }, 0x41 },
		{ "lzcnt %ebx,%eax", 4, { 0xf3, 0x0f, 0xbd, 0xc3 }, 0x41 },
		{ "popcnt %rbx,%rax", 5, { 0xf3, 0x48, 0x0f, 0xb8, 0xc3 }, FLAGS },
		{ "bsf %ebx,%eax", 3, { 0x0f, 0xbc, 0xc3 }, 0x40 },
		{ "bsr %rbx,%rax", 4, { 0x48, 0x0f, 0xbd, 0xc3 }, 0x40 },
		{ "xchg %rbx,%rcx", 3, { 0x48, 0x87, 0xcb }, FLAGS },
		{ "xchg %ebx,%eax", 1, { 0x93 }, FLAGS },
		{ "mul %rbx", 3, { 0x48, 0xf7, 0xe3 }, 0x801 },
		{ "mul %bl", 2, { 0xf6, 0xe3 }, 0x801 },
		{ "imul %ebx", 2, { 0xf7, 0xeb }, 0x801 },
		{ "imulw (%rdi)", 3, { 0x66, 0xf7, 0x2f }, 0x801 },
		{ "div %rbx", 3, { 0x48, 0xf7, 0xf3 }, 0 },
		{ "div %ebx", 2, { 0xf7, 0xf3 }, 0 },
		{ "divb (%rdi)", 2, { 0xf6, 0x37 }, 0 },
		{ "idiv %rbx", 3, { 0x48, 0xf7, 0xfb }, 0 },
		{ "idiv %cx", 3, { 0x66, 0xf7, 0xf9 }, 0 },
		{ "andn %rcx,%rbx,%rax", 5, { 0xc4, 0xe2, 0xe0, 0xf2, 0xc1 }, 0xcc1 & ~0x400ull },
		{ "bzhi %rcx,%rbx,%rax", 5, { 0xc4, 0xe2, 0xf0, 0xf5, 0xc3 }, 0x8c1 },
		{ "bzhi %ecx,(%rdi),%eax", 5, { 0xc4, 0xe2, 0x70, 0xf5, 0x07 }, 0x8c1 },
		{ "shlx %rcx,%rbx,%rax", 5, { 0xc4, 0xe2, 0xf1, 0xf7, 0xc3 }, FLAGS },
		{ "shrx %ecx,%ebx,%eax", 5, { 0xc4, 0xe2, 0x73, 0xf7, 0xc3 }, FLAGS },
		{ "sarx %rcx,%rbx,%rax", 5, { 0xc4, 0xe2, 0xf2, 0xf7, 0xc3 }, FLAGS },
		{ "shl %cl,%rbx", 3, { 0x48, 0xd3, 0xe3 }, 0x1 | 0xc4 },
		{ "sar %cl,%ebx", 2, { 0xd3, 0xfb }, 0x1 | 0xc4 },
		{ "shlq %cl,(%rdi)", 3, { 0x48, 0xd3, 0x27 }, 0x1 | 0xc4 },
		{ "sarw %cl,(%rdi)", 3, { 0x66, 0xd3, 0x3f }, 0x1 | 0xc4 },
		{ "shrb %cl,(%rdi)", 2, { 0xd2, 0x2f }, 0x1 | 0xc4 },
		{ "shrl (%rdi)", 2, { 0xd1, 0x2f }, 0x801 | 0xc4 },
		{ "rorl %cl,(%rdi)", 2, { 0xd3, 0x0f }, 0x801 },
		{ "rolb (%rdi)", 2, { 0xd0, 0x07 }, 0x801 },
		{ "shr %cl,%bx", 3, { 0x66, 0xd3, 0xeb }, 0x1 | 0xc4 },
		{ "shl %cl,%bl", 2, { 0xd2, 0xe3 }, 0x1 | 0xc4 },
		{ "sar $3,%bx", 4, { 0x66, 0xc1, 0xfb, 0x03 }, 0x1 | 0xc4 },
		{ "imul $-7,%rbx,%rax", 4, { 0x48, 0x6b, 0xc3, 0xf9 }, 0x801 },
		{ "cmovl %rbx,%rax", 4, { 0x48, 0x0f, 0x4c, 0xc3 }, FLAGS },
		{ "cmova (%rdi),%eax", 3, { 0x0f, 0x47, 0x07 }, FLAGS },
		{ "setg %cl", 3, { 0x0f, 0x9f, 0xc1 }, FLAGS },
		{ "setbe (%rdi)", 3, { 0x0f, 0x96, 0x07 }, FLAGS },
		{ "movzbl %ah,%ecx", 3, { 0x0f, 0xb6, 0xcc }, FLAGS },
		{ "pxor %xmm1,%xmm0", 4, { 0x66, 0x0f, 0xef, 0xc1 }, FLAGS },
		{ "xorps %xmm2,%xmm2", 3, { 0x0f, 0x57, 0xd2 }, FLAGS },
		{ "pxor (%rdi),%xmm3", 4, { 0x66, 0x0f, 0xef, 0x1f }, FLAGS },
		{ "pand %xmm1,%xmm0", 4, { 0x66, 0x0f, 0xdb, 0xc1 }, FLAGS },
		{ "orpd %xmm1,%xmm0", 4, { 0x66, 0x0f, 0x56, 0xc1 }, FLAGS },
		{ "pandn %xmm1,%xmm0", 4, { 0x66, 0x0f, 0xdf, 0xc1 }, FLAGS },
		{ "paddq %xmm1,%xmm0", 4, { 0x66, 0x0f, 0xd4, 0xc1 }, FLAGS },
		{ "paddq (%rdi),%xmm6", 4, { 0x66, 0x0f, 0xd4, 0x37 }, FLAGS },
		{ "punpcklqdq %xmm1,%xmm0", 4, { 0x66, 0x0f, 0x6c, 0xc1 }, FLAGS },
		{ "punpcklqdq 0x10(%rdi),%xmm2", 5, { 0x66, 0x0f, 0x6c, 0x57, 0x10 }, FLAGS },
		{ "movdqa (%rdi),%xmm1", 4, { 0x66, 0x0f, 0x6f, 0x0f }, FLAGS },
		{ "movdqu %xmm1,(%rdi)", 4, { 0xf3, 0x0f, 0x7f, 0x0f }, FLAGS },
		{ "movdqu 0x1(%rdi),%xmm4", 5, { 0xf3, 0x0f, 0x6f, 0x67, 0x01 }, FLAGS },
		{ "movups (%rdi),%xmm2", 3, { 0x0f, 0x10, 0x17 }, FLAGS },
		{ "movaps %xmm2,%xmm3", 3, { 0x0f, 0x28, 0xda }, FLAGS },
		{ "movapd %xmm3,0x10(%rdi)", 5, { 0x66, 0x0f, 0x29, 0x5f, 0x10 }, FLAGS },
		{ "movq %rbx,%xmm0", 5, { 0x66, 0x48, 0x0f, 0x6e, 0xc3 }, FLAGS },
		{ "movq %xmm0,%rax", 5, { 0x66, 0x48, 0x0f, 0x7e, 0xc0 }, FLAGS },
		{ "movq (%rdi),%xmm1", 4, { 0xf3, 0x0f, 0x7e, 0x0f }, FLAGS },
		{ "movq %xmm1,(%rdi)", 4, { 0x66, 0x0f, 0xd6, 0x0f }, FLAGS },
		{ "movq %xmm1,%xmm2", 4, { 0xf3, 0x0f, 0x7e, 0xd1 }, FLAGS },
		{ "movd %ebx,%xmm0", 4, { 0x66, 0x0f, 0x6e, 0xc3 }, FLAGS },
		{ "movd %xmm0,%eax", 4, { 0x66, 0x0f, 0x7e, 0xc0 }, FLAGS },
		{ "movd %xmm9,(%rdi)", 5, { 0x66, 0x44, 0x0f, 0x7e, 0x0f }, FLAGS },
		{ "movlpd (%rdi),%xmm1", 4, { 0x66, 0x0f, 0x12, 0x0f }, FLAGS },
		{ "movhpd (%rdi),%xmm1", 4, { 0x66, 0x0f, 0x16, 0x0f }, FLAGS },
		{ "movhps %xmm1,(%rdi)", 3, { 0x0f, 0x17, 0x0f }, FLAGS },
		{ "movlps %xmm5,0x8(%rdi)", 4, { 0x0f, 0x13, 0x6f, 0x08 }, FLAGS },
		{ "movsd (%rdi),%xmm1", 4, { 0xf2, 0x0f, 0x10, 0x0f }, FLAGS },
		{ "movsd %xmm2,%xmm1", 4, { 0xf2, 0x0f, 0x10, 0xca }, FLAGS },
		{ "movsd %xmm15,(%rdi)", 5, { 0xf2, 0x44, 0x0f, 0x11, 0x3f }, FLAGS },
		{ "movss %xmm1,(%rdi)", 4, { 0xf3, 0x0f, 0x11, 0x0f }, FLAGS },
		{ "movss (%rdi),%xmm1", 4, { 0xf3, 0x0f, 0x10, 0x0f }, FLAGS },
		{ "movss %xmm3,%xmm12", 5, { 0xf3, 0x44, 0x0f, 0x10, 0xe3 }, FLAGS },
		{ "add %bh,%dl", 2, { 0x00, 0xfa }, FLAGS },
	};
	static const uint64_t edge[] = { 0, 1, 2, 3, 5, 7, 8, 13, 31, 32, 33, 63, 64, 0x7f, 0x80,
					 0xff, 0x100, 0x7fff, 0x8000, 0xffff, 0x7fffffff,
					 0x80000000, 0xffffffff, 0x100000000ull,
					 0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull,
					 0xfffffffffffffff9ull };
	const size_t ne = sizeof(edge) / sizeof(edge[0]);
	uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint64_t seed = 0x243f6a8885a308d3ull;
	struct x86_dis d;
	struct x86_instr in;
	struct x86_xmm xs = { .load = xmm_load };

	(void)state;
	assert_true(code != MAP_FAILED);
	__asm__ volatile("fxsave64 %0" : "=m"(nat_fp));	/* a valid image: mxcsr, fcw */
	assert_int_equal(x86_dis_init(&d), 0);
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++) {
		struct x86_uop u;
		unsigned refused = 0, runs = 0;

		memcpy(code, t[k].bytes, t[k].len);
		code[t[k].len] = 0xc3;
		assert_int_equal(x86_dis_one(&d, t[k].bytes, t[k].len, (uintptr_t)code, &in), 0);
		assert_int_equal(in.size, t[k].len);
		if (x86_emu_translate(d.scratch, !d.intel, &u) < 0)
			fail_msg("%s: not translated", t[k].name);
		for (size_t i = 0; i < ne * ne; i++) {
			struct user_regs_struct want = { 0 }, got;
			uint8_t buf_want[64];
			unsigned long long *w = (unsigned long long *)&want;
			int rc;

			for (int g = 0; g < GPR_OFFS; g++) {
				seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
				w[g] = seed;
			}
			/* the operands (rax, rbx, rcx, rdx) from the edge values in pairs */
			want.rax = edge[i % ne];
			want.rbx = edge[i / ne];
			want.rcx = (i & 1) ? edge[(i / 3) % ne] : seed >> (i % 64);
			want.rdx = (i & 2) ? 0 : edge[(i / 7) % ne];
			want.eflags = 0x202 | (seed & FLAGS);
			want.rdi = (uintptr_t)nat_buf;
			for (size_t b = 0; b < sizeof(nat_buf); b++)
				nat_buf[b] = (uint8_t)(want.rbx >> (8 * (b % 8)));
			for (int b = 0; b < 64; b++) {
				seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
				nat_fp.xmm_space[b] = (unsigned)seed;
			}
			xs.fp = nat_fp;
			xs.loaded = xs.dirty = 0;
			got = want;
			got.rip = (uintptr_t)code;
			rc = x86_emu_exec(&u, (uintptr_t)code, &got, real_rd, real_wr, NULL, &xs);
			if (rc == -EINVAL) {
				refused++;
				memcpy(buf_want, nat_buf, sizeof(nat_buf));
				continue;
			}
			assert_int_equal(rc, 0);
			memcpy(buf_want, nat_buf, sizeof(nat_buf));
			for (size_t b = 0; b < sizeof(nat_buf); b++)
				nat_buf[b] = (uint8_t)(want.rbx >> (8 * (b % 8)));
			nat_run(&want, code);
			runs++;
			for (int g = 0; g < GPR_OFFS; g++)
				if (((unsigned long long *)&got)[g] != w[g])
					fail_msg("%s: reg #%d: emulated %#llx, cpu %#llx (rax %#llx rbx "
						 "%#llx rcx %#llx rdx %#llx in)", t[k].name, g,
						 ((unsigned long long *)&got)[g], w[g],
						 (unsigned long long)edge[i % ne],
						 (unsigned long long)edge[i / ne],
						 (unsigned long long)want.rcx, (unsigned long long)want.rdx);
			if ((got.eflags ^ want.eflags) & t[k].defined)
				fail_msg("%s: flags emulated %#llx, cpu %#llx (rax %#llx rbx %#llx "
					 "rcx %#llx)", t[k].name, got.eflags & t[k].defined,
					 want.eflags & t[k].defined, (unsigned long long)edge[i % ne],
					 (unsigned long long)edge[i / ne], (unsigned long long)want.rcx);
			if (memcmp(buf_want, nat_buf, sizeof(nat_buf)))
				fail_msg("%s: memory differs", t[k].name);
			if (memcmp(xs.fp.xmm_space, nat_fp.xmm_space, sizeof(nat_fp.xmm_space)))
				fail_msg("%s: xmm registers differ", t[k].name);
			assert_int_equal(got.rip, (uintptr_t)code + t[k].len);
		}
		/* refusals are the CPU's corner cases only (count 0, #DE, bsf of 0) */
		if (runs < ne * ne / 4)
			fail_msg("%s: %u of %zu states refused", t[k].name, refused, ne * ne);
	}
	x86_dis_fini(&d);
	munmap(code, 4096);
}

/* Fake memory: 64 bytes at 0x7000. */
static uint8_t mem[64];

static int rd(void *ctx, uint64_t a, void *b, size_t n)
{
	(void)ctx;
	if (a < 0x7000 || a + n > 0x7000 + sizeof(mem))
		return -EFAULT;
	memcpy(b, mem + (a - 0x7000), n);
	return 0;
}

static int wr(void *ctx, uint64_t a, const void *b, size_t n)
{
	(void)ctx;
	if (a < 0x7000 || a + n > 0x7000 + sizeof(mem))
		return -EFAULT;
	memcpy(mem + (a - 0x7000), b, n);
	return 0;
}

static void run(const uint8_t *bytes, size_t len, struct user_regs_struct *r, int want)
{
	struct x86_dis d;
	struct x86_instr in;
	struct x86_uop u;

	assert_int_equal(x86_dis_init(&d), 0);
	assert_int_equal(x86_dis_one(&d, bytes, len, 0x1000, &in), 0);
	if (x86_emu_translate(d.scratch, !d.intel, &u) < 0) {
		assert_int_equal(want, -EINVAL);
	} else {
		assert_int_equal(x86_emu_exec(&u, 0x1000, r, rd, wr, NULL, NULL), want);
		if (!want)
			assert_int_equal(r->rip, 0x1000 + len);
	}
	x86_dis_fini(&d);
}

static void test_translate(void **state)
{
	struct user_regs_struct r = { 0 };
	uint64_t v;

	(void)state;
	memset(mem, 0, sizeof(mem));
	r.rsp = 0x7020;
	r.rbp = 0x1234;
	run((const uint8_t[]){ 0x55 }, 1, &r, 0);			/* push %rbp */
	assert_int_equal(r.rsp, 0x7018);
	memcpy(&v, mem + 0x18, 8);
	assert_int_equal(v, 0x1234);
	run((const uint8_t[]){ 0x48, 0x89, 0xe5 }, 3, &r, 0);		/* mov %rsp,%rbp */
	assert_int_equal(r.rbp, 0x7018);
	run((const uint8_t[]){ 0x48, 0x83, 0xec, 0x08 }, 4, &r, 0);	/* sub $8,%rsp */
	assert_int_equal(r.rsp, 0x7010);
	r.rdi = 0x7018;
	r.rax = ~0ull;
	run((const uint8_t[]){ 0x0f, 0xb6, 0x07 }, 3, &r, 0);		/* movzbl (%rdi),%eax */
	assert_int_equal(r.rax, 0x34);
	run((const uint8_t[]){ 0x48, 0x0f, 0xbe, 0x47, 0x01 }, 5, &r, 0); /* movsbq 1(%rdi),%rax */
	assert_int_equal(r.rax, 0x12);
	run((const uint8_t[]){ 0xc7, 0x45, 0xfc, 0xff, 0xff, 0xff, 0xff }, 7, &r, 0); /* movl $-1,-4(%rbp) */
	run((const uint8_t[]){ 0x48, 0x63, 0x45, 0xfc }, 4, &r, 0);	/* movslq -4(%rbp),%rax */
	assert_int_equal(r.rax, ~0ull);
	run((const uint8_t[]){ 0x8d, 0x44, 0x24, 0x05 }, 4, &r, 0);	/* lea 5(%rsp),%eax */
	assert_int_equal(r.rax, 0x7015);
	r.rax = 0xffffffff00000000ull;
	run((const uint8_t[]){ 0x31, 0xc0 }, 2, &r, 0);			/* xor %eax,%eax */
	assert_int_equal(r.rax, 0);
	assert_true(r.eflags & 0x40);
	run((const uint8_t[]){ 0x83, 0x3f, 0x00 }, 3, &r, 0);		/* cmpl $0,(%rdi) */
	run((const uint8_t[]){ 0xc9 }, 1, &r, 0);			/* leave */
	assert_int_equal(r.rsp, 0x7020);
	assert_int_equal(r.rbp, 0x1234);
	r.rdi = 0x9000;
	run((const uint8_t[]){ 0x8b, 0x07 }, 2, &r, -EFAULT);		/* mov (%rdi),%eax: unmapped */
	run((const uint8_t[]){ 0xf0, 0x48, 0x01, 0x07 }, 4, &r, -EINVAL); /* lock add: refused */
	/* found by fuzz_x86_emu: a REX not right before the opcode, which the CPU ignores:
	 * capstone read f3 48 48 0f bd d1 (lzcnt %rcx,%rdx) as bsr; both refused */
	run((const uint8_t[]){ 0xf3, 0x48, 0x48, 0x0f, 0xbd, 0xd1 }, 6, &r, -EINVAL);
	run((const uint8_t[]){ 0x48, 0x66, 0x01, 0xd8 }, 4, &r, -EINVAL);	/* add %bx,%ax */
	/* found by fuzz_x86_emu: leavew pops 2 bytes, the emulator popped 8 */
	run((const uint8_t[]){ 0x66, 0xc9 }, 2, &r, -EINVAL);
	/* found by fuzz_x86_emu: f3 66 0f eb e3 is #UD (f3 wins), capstone read por */
	run((const uint8_t[]){ 0xf3, 0x66, 0x0f, 0xeb, 0xe3 }, 5, &r, -EINVAL);
	/* found by fuzz_x86_emu: 63 00 without REX.W moves 32 bits, zero-extended; the
	 * emulator sign-extended into rax */
	run((const uint8_t[]){ 0x63, 0x00 }, 2, &r, -EINVAL);
	/* found by fuzz_x86_emu: f3 0f 29 07 is #UD, capstone read movaps */
	run((const uint8_t[]){ 0xf3, 0x0f, 0x29, 0x07 }, 4, &r, -EINVAL);
	/* and f3 before a VEX (shlx %rcx,%rdx,%r8 here) is #UD */
	run((const uint8_t[]){ 0xf3, 0xc4, 0x62, 0xf3, 0xf7, 0xc2 }, 6, &r, -EINVAL);
	/* lock rep mov $0x3d,%bh: #UD, capstone keeps only the f3 */
	run((const uint8_t[]){ 0xf0, 0xf3, 0xb7, 0x3d }, 4, &r, -EINVAL);
	/* f3 26 0f bd d1 is lzcnt %ecx,%edx (es: does nothing), capstone read bsr */
	run((const uint8_t[]){ 0xf3, 0x26, 0x0f, 0xbd, 0xd1 }, 5, &r, -EINVAL);
	/* 66 36 96 is xchg %ax,%si, capstone gives it %eax: the emulator zeroed rax's top */
	run((const uint8_t[]){ 0x66, 0x36, 0x96 }, 3, &r, -EINVAL);
	/* 66 2e 98 is cbw, capstone says cwde */
	run((const uint8_t[]){ 0x66, 0x2e, 0x98 }, 3, &r, -EINVAL);
	/* but the padding nops compilers write run as nops */
	run((const uint8_t[]){ 0x66, 0x66, 0x2e, 0x0f, 0x1f, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00 }, 11, &r, 0);
	r.rax = 0x1234;
	run((const uint8_t[]){ 0x88, 0xe0 }, 2, &r, 0);			/* mov %ah,%al */
	assert_int_equal(r.rax, 0x1212);
	r.rdx = 0xff;
	run((const uint8_t[]){ 0x88, 0xd4 }, 2, &r, 0);			/* mov %dl,%ah */
	assert_int_equal(r.rax, 0xff12);
	r.rax = 3;
	run((const uint8_t[]){ 0x48, 0xd1, 0xe0 }, 3, &r, 0);		/* shl %rax (by 1) */
	assert_int_equal(r.rax, 6);
	run((const uint8_t[]){ 0x48, 0xc1, 0xe0, 0x04 }, 4, &r, 0);	/* shl $4,%rax */
	assert_int_equal(r.rax, 0x60);
	r.rcx = 5;
	run((const uint8_t[]){ 0x48, 0xd3, 0xe8 }, 3, &r, 0);		/* shr %cl,%rax */
	assert_int_equal(r.rax, 3);
	r.rax = 0x80000000;
	run((const uint8_t[]){ 0xc1, 0xf8, 0x1f }, 3, &r, 0);		/* sar $31,%eax */
	assert_int_equal(r.rax, 0xffffffff);
	r.rcx = 0;
	r.rax = 0xffffffff00000005ull;
	r.eflags = 0x8d5;
	run((const uint8_t[]){ 0xd3, 0xe0 }, 2, &r, 0);			/* shl %cl,%eax by 0 */
	assert_int_equal(r.rax, 5);					/* written: zero-extended */
	assert_int_equal(r.eflags, 0x8d5);				/* flags kept */
	r.rdi = 0x7000;
	run((const uint8_t[]){ 0xd3, 0x27 }, 2, &r, -EINVAL);		/* shll %cl,(%rdi) by 0: the CPU's */
	r.rbx = 7;
	run((const uint8_t[]){ 0x6b, 0xc3, 0xfd }, 3, &r, 0);		/* imul $-3,%ebx,%eax */
	assert_int_equal(r.rax, (uint32_t)-21);
	assert_false(r.eflags & 0x801);
	r.rax = 0xffffffff00000005ull;
	run((const uint8_t[]){ 0x0f, 0xaf, 0xc3 }, 3, &r, 0);		/* imul %ebx,%eax */
	assert_int_equal(r.rax, 35);
	r.rax = 0xffffffff00000001ull;
	r.rbx = 2;
	r.eflags = 0;						/* ZF clear: cmove false */
	run((const uint8_t[]){ 0x0f, 0x44, 0xc3 }, 3, &r, 0);		/* cmove %ebx,%eax */
	assert_int_equal(r.rax, 1);				/* 32-bit: zero-extended anyway */
	r.eflags = 0x40;
	run((const uint8_t[]){ 0x48, 0x0f, 0x44, 0xc3 }, 4, &r, 0);	/* cmove %rbx,%rax */
	assert_int_equal(r.rax, 2);
	r.eflags = 0x1;						/* CF: setb, setae */
	r.rdi = 0x7000;
	run((const uint8_t[]){ 0x0f, 0x92, 0xc1 }, 3, &r, 0);		/* setb %cl */
	assert_int_equal(r.rcx, 1);
	run((const uint8_t[]){ 0x0f, 0x93, 0x07 }, 3, &r, 0);		/* setae (%rdi) */
	assert_int_equal(mem[0], 0);
	r.rax = 0xfffffffe;
	r.rbx = 3;
	run((const uint8_t[]){ 0xf7, 0xeb }, 2, &r, 0);		/* imul %ebx: edx:eax = -6 */
	assert_int_equal(r.rax, 0xfffffffa);
	assert_int_equal(r.rdx, 0xffffffff);
	run((const uint8_t[]){ 0xf3, 0x48, 0xab }, 3, &r, -EINVAL);	/* rep stos: refused */
	run((const uint8_t[]){ 0xf3, 0x0f, 0x1e, 0xfa }, 4, &r, 0);	/* endbr64 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags_vs_cpu),
		cmocka_unit_test(test_shift_imul_vs_cpu),
		cmocka_unit_test(test_translate),
		cmocka_unit_test(test_vs_cpu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
