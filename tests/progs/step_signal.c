/* Step-mode ground-truth workload: a signal handler entered from a syscall (raise) and
 * from user code interrupted by a timer signal is not deterministic, so only raise. */
#include <signal.h>
#include <stdio.h>
#include <string.h>

static volatile int hits;

static void on_usr1(int sig)
{
	int i;

	for (i = 0; i < 5; i++)
		hits += sig & 1 ? i : -i;
}

int main(void)
{
	struct sigaction sa;
	int i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	for (i = 0; i < 3; i++) {
		raise(SIGUSR1);
		hits++;
	}
	printf("signal %d\n", hits);
	return 0;
}
