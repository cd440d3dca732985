/* Dies of a signal in a known instruction, for the step tracer's fault marking:
 *   step_fault segv     store through NULL (SIGSEGV)
 *   step_fault fpe      integer division by zero (SIGFPE)
 *   step_fault abort    abort(): SIGABRT from the tgkill syscall
 *   step_fault badcall  call through a function pointer read from an unmapped page
 *   step_fault badjump  call to an unmapped address (the fetch faults)
 *   step_fault rodata   store into a read-only object (SIGSEGV; the tracer's own
 *                       /proc/PID/mem writes would go through) */
#include <stdlib.h>
#include <string.h>

static volatile int zero;
static volatile unsigned long sink;
static const int ro = 1;

__attribute__((noinline)) void work(int n)
{
	for (int i = 0; i < n; i++)
		sink = sink * 3 + (unsigned long)i;
}

__attribute__((noinline)) void do_segv(int *p)
{
	*p = 42;
}

/* the store follows a branch, so a stop there emulates it */
__attribute__((noinline)) void do_store(volatile int *p, int n)
{
	for (int i = 0; i < n; i++)
		*p = i;
}

__attribute__((noinline)) int do_fpe(int a)
{
	return a / zero;
}

__attribute__((noinline)) void do_call(void (**fp)(void))
{
	(*fp)();
}

__attribute__((noinline)) void do_jump(void (*fp)(void))
{
	fp();
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "segv";

	work(100);
	if (strcmp(m, "segv") == 0)
		do_segv((int *)(unsigned long)zero);
	else if (strcmp(m, "fpe") == 0)
		sink = (unsigned long)do_fpe(7);
	else if (strcmp(m, "abort") == 0)
		abort();
	else if (strcmp(m, "badcall") == 0)
		do_call((void (**)(void))(unsigned long)(zero + 8));
	else if (strcmp(m, "rodata") == 0)
		do_store((int *)(unsigned long)&ro + zero, 2);
	else if (strcmp(m, "badjump") == 0)
		do_jump((void (*)(void))(unsigned long)(zero + 16));
	return 0;
}
