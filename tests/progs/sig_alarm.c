/* Call trees of asynchronous signals: SIGALRM every 2 ms (setitimer) interrupts
 * loop(), which main calls 5 times; the handler is entered from the middle of loop's
 * code and sigreturn lands back there.  Exact counts: loop 5, handler >= 1. */
#include <signal.h>
#include <stdio.h>
#include <sys/time.h>

static volatile unsigned long ticks, spins;

static void handler(int sig)
{
	(void)sig;
	ticks++;
}

/* no calls and no syscalls: every signal interrupts user code */
static __attribute__((noinline)) void loop(void)
{
	unsigned long end = ticks + 4;

	while (ticks < end)
		spins++;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = handler };
	struct itimerval it = { { 0, 2000 }, { 0, 2000 } };

	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (int i = 0; i < 5; i++)
		loop();
	it.it_value.tv_usec = 0;
	setitimer(ITIMER_REAL, &it, NULL);
	printf("alarm %d\n", ticks >= 20);
	return 0;
}
