/* For step mode's -p test (tests/integration/step_attach.sh): started before the attach,
 * it runs until a line arrives on stdin.  Two workers check a recursive computation in
 * rounds, one sleeping between rounds (found in a syscall by the attach, most of the
 * time; every 10th round it runs one in a new thread), one spinning on atomic adds (found in user code; a locked instruction is left
 * to the CPU, so the tracer stops at each, which keeps a second's trace small); main
 * waits in read().  Prints whether every round of both got the right result: a tracer
 * that changed a register, a stack slot or a code byte shows as bad rounds or a crash. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile int stop;
static long spins;

__attribute__((noinline)) long att_fib(long n)
{
	return n < 2 ? n : att_fib(n - 1) + att_fib(n - 2);
}

__attribute__((noinline)) long att_round(long k)
{
	long s = 0;

	for (long i = 0; i < k; i++)
		s += att_fib(12);
	return s;
}

struct worker {
	int sleeps;
	volatile long rounds;
	long bad;
};

/* A thread started now and then by the sleeping worker: threads created after the
 * attach are traced too. */
static void *att_helper(void *arg)
{
	return (void *)(long)(att_round(1) != (long)arg);
}

static void *att_worker(void *arg)
{
	struct worker *w = arg;
	struct timespec ts = { 0, 10000000 };

	while (!stop) {
		if (att_round(1) != 144)
			w->bad++;
		w->rounds++;
		if (w->sleeps && w->rounds % 10 == 0) {
			pthread_t h;
			void *ret;

			if (pthread_create(&h, NULL, att_helper, (void *)144L) != 0 ||
			    pthread_join(h, &ret) != 0 || ret)
				w->bad++;
		}
		if (w->sleeps)
			nanosleep(&ts, NULL);
		else
			for (int i = 0; i < 1000; i++)
				__atomic_fetch_add(&spins, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

int main(void)
{
	struct worker w[2] = { { .sleeps = 1 }, { .sleeps = 0 } };
	pthread_t th[2];
	char line[64];

	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, att_worker, &w[i]) != 0)
			return 1;
	while (!w[0].rounds || !w[1].rounds)
		;
	printf("ready\n");
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin))
		line[0] = 0;
	stop = 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("attach: %ld bad rounds\n", w[0].bad + w[1].bad);
	return 0;
}
