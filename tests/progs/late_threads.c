/* A thread pool started late: the main thread sleeps, then starts 3 workers that each
 * call work() CALLS times (default 200), so probes must follow threads created after
 * recording began.  Each worker calls work() from its own function (worker_0, worker_1,
 * worker_2), so a call tree shows 200 calls of work under each.
 *
 * usage: late_threads [SLEEP_MS [CALLS]]   (SLEEP_MS default 200) */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#define PROBED __attribute__((noinline, noclone, used))

static long calls = 200;

PROBED void work(void)
{
	for (volatile int i = 0; i < 2000; i++)
		;
}

PROBED static void *worker_0(void *arg)
{
	for (long i = 0; i < calls; i++)
		work();
	return arg;
}

PROBED static void *worker_1(void *arg)
{
	for (long i = 0; i < calls; i++)
		work();
	return arg;
}

PROBED static void *worker_2(void *arg)
{
	for (long i = 0; i < calls; i++)
		work();
	return arg;
}

int main(int argc, char **argv)
{
	void *(*const fns[3])(void *) = { worker_0, worker_1, worker_2 };
	long ms = argc > 1 ? atol(argv[1]) : 200;
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	pthread_t t[3];

	if (argc > 2)
		calls = atol(argv[2]);
	nanosleep(&ts, NULL);
	for (int i = 0; i < 3; i++)
		if (pthread_create(&t[i], NULL, fns[i], NULL) != 0)
			return 1;
	for (int i = 0; i < 3; i++)
		pthread_join(t[i], NULL);
	return 0;
}
