/* Runs until killed, for -p attach tests: the main thread spins in spin_main, a second
 * thread in spin_thread.  Prints "ready" once both run. */
#include <pthread.h>
#include <stdio.h>

static volatile unsigned long sink;
static volatile int thread_runs;

void spin_thread_body(void)
{
	for (;;)
		for (int i = 0; i < 10000; i++)
			sink = sink * 7 + 1;
}

static void *thread_main(void *arg)
{
	(void)arg;
	thread_runs = 1;
	spin_thread_body();
	return NULL;
}

void spin_main(void)
{
	for (;;)
		for (int i = 0; i < 10000; i++)
			sink = sink * 3 + 1;
}

int main(void)
{
	pthread_t th;

	pthread_create(&th, NULL, thread_main, NULL);
	/* "ready" means both threads run: a signal right after it (tests) finds both (on a
	 * loaded machine the thread once had not run yet, and a step trace had one thread) */
	while (!thread_runs)
		;
	printf("ready\n");
	fflush(stdout);
	spin_main();
	return 0;
}
