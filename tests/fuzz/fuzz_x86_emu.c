/* libFuzzer harness, differential: the step tracer's instruction evaluator
 * (arch/x86_64/x86_emu*.c, as x86_isa_translate and x86_emu_exec run it for straight-line
 * code) against this CPU.  Each instruction of the input the evaluator accepts runs on
 * the same registers, flags, xmm registers and memory twice: emulated, and natively in
 * this process (an executable page holding the instruction and a jump back, registers
 * loaded from the state, rsp among them); the registers, the flags the ISA defines after
 * it, the xmm registers and the sandbox page must come out the same, else the harness
 * aborts.  The CPU's state is the next instruction's.  Instructions the evaluator
 * declines (or faults on: it sees memory only in the sandbox page and reads of the code
 * page) never run natively, so a native fault (SIGSEGV past the sandbox, #DE, #GP of a
 * misaligned movdqa) is a difference too: it aborts from the signal handler.
 *
 * Input: 2 bytes, bit i: register i (rax rcx rdx rbx rsp rbp rsi rdi r8-r15) points into
 * the sandbox page (its value's low 12 bits the offset; rsp always does), 1 byte of
 * flags (bits 0-5: CF PF AF ZF SF OF), 16 register values of 8 bytes, then up to 64
 * bytes of code; missing header bytes are 0.  The sandbox's bytes and the xmm registers
 * come from a generator seeded with the header. */
#include <asm/prctl.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_emu.h"
#include "arch/x86_64/x86_isa.h"

#define FLAGS 0x8d5ull	/* CF PF AF ZF SF OF */
#define CF 0x1ull
#define PF 0x4ull
#define AF 0x10ull
#define ZF 0x40ull
#define SF 0x80ull
#define OF 0x800ull
#define HDR (2 + 1 + 16 * 8)
#define MAX_CODE 64
#define PAGE 4096
/* fixed addresses: a finding replays at the same addresses; the sandbox has 256 KB of
 * nothing on either side, so a wrong address faults rather than hitting the harness.
 * Below 2 GB: ASan's shadow memory lies above */
#define ARENA ((uintptr_t)0x50000000ull)
#define GUARD (64 * PAGE)
#define SANDBOX (ARENA + GUARD)
#define CODE (ARENA + 2 * GUARD + PAGE)

/* The native run's state, read and written by nat_run (below). */
struct user_regs_struct nat_regs;
struct user_fpregs_struct nat_fp __attribute__((aligned(16)));
uint64_t nat_code, nat_rsp;
volatile sig_atomic_t nat_in;
void nat_run(void);
void nat_back(void);
/* Callee-saved registers and our rsp kept, the state loaded (rsp and rax last, the
 * flags before the moves, which leave them), a jump to the code; the code jumps back to
 * nat_back, which stores the state with our rsp again. */
__asm__(".text\n.globl nat_run\n.type nat_run,@function\nnat_run:\n"
	"push %rbx\npush %rbp\npush %r12\npush %r13\npush %r14\npush %r15\n"
	"mov %rsp, nat_rsp(%rip)\nfxrstor64 nat_fp(%rip)\nlea nat_regs(%rip), %rax\n"
	"pushq 144(%rax)\npopfq\n"
	"mov 0(%rax), %r15\nmov 8(%rax), %r14\nmov 16(%rax), %r13\nmov 24(%rax), %r12\n"
	"mov 32(%rax), %rbp\nmov 40(%rax), %rbx\nmov 48(%rax), %r11\nmov 56(%rax), %r10\n"
	"mov 64(%rax), %r9\nmov 72(%rax), %r8\nmov 88(%rax), %rcx\nmov 96(%rax), %rdx\n"
	"mov 104(%rax), %rsi\nmov 112(%rax), %rdi\nmov 152(%rax), %rsp\nmov 80(%rax), %rax\n"
	"jmp *nat_code(%rip)\n"
	".globl nat_back\nnat_back:\n"
	"mov %rax, nat_regs+80(%rip)\nmov %rsp, nat_regs+152(%rip)\nmov nat_rsp(%rip), %rsp\n"
	"pushfq\npopq nat_regs+144(%rip)\nlea nat_regs(%rip), %rax\n"
	"mov %r15, 0(%rax)\nmov %r14, 8(%rax)\nmov %r13, 16(%rax)\nmov %r12, 24(%rax)\n"
	"mov %rbp, 32(%rax)\nmov %rbx, 40(%rax)\nmov %r11, 48(%rax)\nmov %r10, 56(%rax)\n"
	"mov %r9, 64(%rax)\nmov %r8, 72(%rax)\nmov %rcx, 88(%rax)\nmov %rdx, 96(%rax)\n"
	"mov %rsi, 104(%rax)\nmov %rdi, 112(%rax)\nfxsave64 nat_fp(%rip)\n"
	"pop %r15\npop %r14\npop %r13\npop %r12\npop %rbp\npop %rbx\nret\n"
	".size nat_run, .-nat_run\n");

/* The registers in hardware order, as offsets into user_regs_struct. */
static const size_t gpr_off[16] = {
	offsetof(struct user_regs_struct, rax), offsetof(struct user_regs_struct, rcx),
	offsetof(struct user_regs_struct, rdx), offsetof(struct user_regs_struct, rbx),
	offsetof(struct user_regs_struct, rsp), offsetof(struct user_regs_struct, rbp),
	offsetof(struct user_regs_struct, rsi), offsetof(struct user_regs_struct, rdi),
	offsetof(struct user_regs_struct, r8), offsetof(struct user_regs_struct, r9),
	offsetof(struct user_regs_struct, r10), offsetof(struct user_regs_struct, r11),
	offsetof(struct user_regs_struct, r12), offsetof(struct user_regs_struct, r13),
	offsetof(struct user_regs_struct, r14), offsetof(struct user_regs_struct, r15),
};
static const char *const gpr_name[16] = { "rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
					  "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15" };

static uint64_t *gpr(struct user_regs_struct *r, int i)
{
	return (uint64_t *)((char *)r + gpr_off[i]);
}

static uint8_t *sandbox, *code;
static uint8_t shadow[PAGE];	/* the emulator's view of the sandbox */
static struct x86_dis dis;
static struct user_fpregs_struct fp0;	/* a valid fxsave image: mxcsr, fcw */
static uint64_t fs_base;
static const uint8_t *cur_insn;
static size_t cur_len;
static struct sigaction old_act[32];

static void say(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		return;
}

static void print_insn(void)
{
	char buf[8 + 3 * X86_MAX_INSN + 2] = "insn:";
	for (size_t i = 0; i < cur_len; i++)
		snprintf(buf + 5 + 3 * i, 4, " %02x", cur_insn[i]);
	strcat(buf, "\n");
	say(buf);
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	if (nat_in) {
		say("fuzz_x86_emu: the instruction the emulator took faults on the CPU (");
		say(strsignal(sig));
		say(")\n");
		print_insn();
		abort();
	}
	/* not ours: whoever handled it before (the sanitizer, libFuzzer) */
	const struct sigaction *o = &old_act[sig];
	if (o->sa_flags & SA_SIGINFO) {
		o->sa_sigaction(sig, si, uc);
	} else if (o->sa_handler != SIG_DFL && o->sa_handler != SIG_IGN) {
		o->sa_handler(sig);
	} else {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP };
	static uint8_t altstack[64 * 1024];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;

	(void)argc;
	(void)argv;
	uint8_t *arena = mmap((void *)ARENA, 3 * GUARD + 2 * PAGE, PROT_NONE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (arena != (uint8_t *)ARENA || x86_dis_init(&dis) < 0 ||
	    mprotect((void *)SANDBOX, PAGE, PROT_READ | PROT_WRITE) < 0 ||
	    mprotect((void *)CODE, PAGE, PROT_READ | PROT_WRITE | PROT_EXEC) < 0 || sigaltstack(&ss, NULL) < 0 ||
	    syscall(SYS_arch_prctl, ARCH_GET_FS, &fs_base) < 0) {
		perror("fuzz_x86_emu: setup");
		exit(1);	/* libFuzzer would go on */
	}
	sandbox = (uint8_t *)SANDBOX;
	code = (uint8_t *)CODE;
	__asm__ volatile("fxsave64 %0" : "=m"(fp0));
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, &old_act[sigs[i]]);
	return 0;
}

static int in(uint64_t a, size_t n, uintptr_t base)
{
	return a >= base && n <= PAGE && a - base <= PAGE - n;
}

static int mem_rd(void *ctx, uint64_t a, void *b, size_t n)
{
	(void)ctx;
	if (in(a, n, SANDBOX))
		memcpy(b, shadow + (a - SANDBOX), n);
	else if (in(a, n, CODE))
		memcpy(b, code + (a - CODE), n);
	else
		return -EFAULT;
	return 0;
}

static int mem_wr(void *ctx, uint64_t a, const void *b, size_t n)
{
	(void)ctx;
	if (!in(a, n, SANDBOX))
		return -EFAULT;
	memcpy(shadow + (a - SANDBOX), b, n);
	return 0;
}

static struct user_fpregs_struct *xmm_src;

static int xmm_load(void *ctx, struct user_fpregs_struct *fp)
{
	(void)ctx;
	*fp = *xmm_src;
	return 0;
}

/* The flags an instruction leaves undefined (AMD's and Intel's manuals: the wider of
 * the two where they differ, as BT's ZF); the evaluator keeps those as they were. */
static uint64_t undefined_flags(const struct x86_uop *u)
{
	switch (u->kind) {
	case U_AND: case U_OR: case U_XOR: case U_TEST:
		return AF;
	case U_SHL: case U_SHR: case U_SAR:
		return AF | OF;
	case U_ROL: case U_ROR:
		return OF;
	case U_IMUL: case U_MUL1: case U_IMUL1:
		return SF | ZF | AF | PF;
	case U_DIV: case U_IDIV:
		return FLAGS;
	case U_BT: case U_BTS: case U_BTR: case U_BTC:
		return OF | SF | ZF | AF | PF;
	case U_TZCNT: case U_LZCNT:
		return OF | SF | AF | PF;
	case U_BSF: case U_BSR:
		return CF | OF | SF | AF | PF;
	case U_ANDN: case U_BZHI:
		return AF | PF;
	default:
		return 0;
	}
}

static void differs(const char *what, int reg, uint64_t emu, uint64_t cpu)
{
	fprintf(stderr, "fuzz_x86_emu: %s%s%s: emulated %#llx, the CPU %#llx\n", what, reg >= 0 ? " " : "",
		reg >= 0 ? gpr_name[reg] : "", (unsigned long long)emu, (unsigned long long)cpu);
	print_insn();
	abort();
}

/* One instruction at ip (its bytes already in the code page), from state r/fp/sandbox;
 * the CPU's state after it is left there. */
static void one(const struct x86_uop *u, uint64_t ip, struct user_regs_struct *r, struct user_fpregs_struct *fp)
{
	struct user_regs_struct e = *r;
	struct x86_xmm xs = { .load = xmm_load };

	memcpy(shadow, sandbox, PAGE);
	xmm_src = fp;
	e.rip = ip;
	if (x86_emu_exec(u, ip, &e, mem_rd, mem_wr, NULL, &xs) < 0)
		return;	/* declined: the CPU would run it */
	if (e.rip != ip + u->len)
		differs("rip", -1, e.rip, ip + u->len);

	nat_regs = *r;
	nat_fp = *fp;
	nat_code = ip;
	nat_in = 1;
	nat_run();
	nat_in = 0;

	for (int i = 0; i < 16; i++)
		if (*gpr(&e, i) != *gpr(&nat_regs, i))
			differs("register", i, *gpr(&e, i), *gpr(&nat_regs, i));
	uint64_t m = FLAGS & ~undefined_flags(u);
	if ((e.eflags ^ nat_regs.eflags) & m)
		differs("flags (defined ones)", -1, e.eflags & m, nat_regs.eflags & m);
	if (xs.loaded && memcmp(xs.fp.xmm_space, nat_fp.xmm_space, sizeof(nat_fp.xmm_space))) {
		for (int i = 0; i < 64; i++)
			if (xs.fp.xmm_space[i] != nat_fp.xmm_space[i])
				differs("xmm dword", -1, xs.fp.xmm_space[i], nat_fp.xmm_space[i]);
	}
	for (int i = 0; memcmp(shadow, sandbox, PAGE) && i < PAGE; i++)
		if (shadow[i] != sandbox[i]) {
			char what[48];
			snprintf(what, sizeof(what), "the byte at %#llx", (unsigned long long)SANDBOX + (unsigned)i);
			differs(what, -1, shadow[i], sandbox[i]);
		}
	for (int i = 0; i < 16; i++)
		*gpr(r, i) = *gpr(&nat_regs, i);
	r->eflags = nat_regs.eflags;
	*fp = nat_fp;
}

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t hdr[HDR] = { 0 };
	struct user_regs_struct r;
	struct user_fpregs_struct fp = fp0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	sigset_t all, old;

	memcpy(hdr, data, size < HDR ? size : HDR);
	const uint8_t *text = size > HDR ? data + HDR : NULL;
	size_t tlen = size > HDR ? size - HDR : 0;
	if (tlen > MAX_CODE)
		tlen = MAX_CODE;

	memset(&r, 0, sizeof(r));
	unsigned ptr = hdr[0] | hdr[1] << 8 | 1u << 4;
	for (int i = 0; i < 16; i++) {
		uint64_t v;
		memcpy(&v, hdr + 3 + 8 * i, 8);
		seed = (seed ^ v) * 0x100000001b3ull;
		*gpr(&r, i) = ptr & (1u << i) ? SANDBOX + (v & (PAGE - 1)) : v;
	}
	r.eflags = 0x202 | ((hdr[2] & 1) ? CF : 0) | ((hdr[2] & 2) ? PF : 0) | ((hdr[2] & 4) ? AF : 0) |
		   ((hdr[2] & 8) ? ZF : 0) | ((hdr[2] & 16) ? SF : 0) | ((hdr[2] & 32) ? OF : 0);
	r.fs_base = fs_base;
	seed |= 1;
	for (int i = 0; i < PAGE; i += 8) {
		uint64_t v = next(&seed);
		memcpy(sandbox + i, &v, 8);
	}
	for (int i = 0; i < 64; i++)
		fp.xmm_space[i] = (uint32_t)next(&seed);

	/* no asynchronous signal while rsp points into the sandbox (libFuzzer's alarm,
	 * an interrupt): its frame would be written there */
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigdelset(&all, SIGFPE);
	sigdelset(&all, SIGILL);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGABRT);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	for (size_t off = 0; off < tlen;) {
		struct x86_instr insn;
		struct x86_uop u;
		uint64_t ip = CODE + off;

		if (x86_dis_one(&dis, text + off, tlen - off, ip, &insn) < 0)
			break;
		cur_insn = text + off;
		cur_len = insn.size;
		off += insn.size;
		if (insn.br.cls != X86_BR_NONE || x86_isa_translate(&dis, &u) < 0)
			continue;
		/* the instruction at its address, then jmp *0(%rip) to nat_back */
		memcpy(code + (ip - CODE), insn.bytes, insn.size);
		uint8_t *j = code + (ip - CODE) + insn.size;
		uint64_t back = (uint64_t)(uintptr_t)nat_back;
		memcpy(j, "\xff\x25\x00\x00\x00\x00", 6);
		memcpy(j + 6, &back, 8);
		one(&u, ip, &r, &fp);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 0;
}
