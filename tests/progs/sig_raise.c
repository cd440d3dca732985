/* Call trees of synchronous signals: 25 x raise(SIGUSR1), each delivered on the way
 * back from raise's tgkill into handler(), which calls work() once.  Exact counts:
 * raise 25, handler 25, work 25, all below main. */
#include <signal.h>
#include <stdio.h>

static volatile int hits;

static __attribute__((noinline)) void work(int sig)
{
	hits += sig;
}

static void handler(int sig)
{
	work(sig);
}

int main(void)
{
	struct sigaction sa = { .sa_handler = handler };

	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 25; i++)
		raise(SIGUSR1);
	printf("raise %d\n", hits == 25 * SIGUSR1);
	return 0;
}
