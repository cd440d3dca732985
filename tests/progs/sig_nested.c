/* Call trees of nested signal handlers on an alternate stack: 5 x raise(SIGUSR1),
 * whose handler (on a sigaltstack) raises SIGUSR2, whose handler calls work().  Exact
 * counts: outer 5, inner 5, work 5; inner below outer's raise. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

static volatile int hits;

static __attribute__((noinline)) void work(int sig)
{
	hits += sig;
}

static void inner(int sig)
{
	work(sig);
}

static void outer(int sig)
{
	(void)sig;
	raise(SIGUSR2);
}

int main(void)
{
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };
	struct sigaction sa = { .sa_handler = outer, .sa_flags = SA_ONSTACK };

	if (!ss.ss_sp || sigaltstack(&ss, NULL) != 0)
		return 1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = inner;
	sigaction(SIGUSR2, &sa, NULL);
	for (int i = 0; i < 5; i++)
		raise(SIGUSR1);
	printf("nested %d\n", hits == 5 * SIGUSR2);
	return 0;
}
