/* Code the step tracer cannot decode: an opcode invalid in 64-bit mode (0x06, push %es
 * in 32-bit code) after a few instructions, caught by a SIGILL handler that jumps back
 * to main.  The tracer loses the path that holds it and must say so, in the trace too. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>

static sigjmp_buf env;
static volatile int sink;

static void on_ill(int sig)
{
	(void)sig;
	siglongjmp(env, 1);
}

__attribute__((noinline)) static void bad(void)
{
	sink++;
	__asm__ volatile("nop\n\t.byte 0x06");
}

int main(void)
{
	signal(SIGILL, on_ill);
	if (!sigsetjmp(env, 1))
		bad();
	printf("caught SIGILL\n");
	return 0;
}
