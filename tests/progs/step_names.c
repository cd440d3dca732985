/* Thread names: the main thread renames itself with prctl(PR_SET_NAME) and names a
 * second thread with pthread_setname_np (a write to /proc/self/task/TID/comm); each
 * then runs its own function, alpha_work ALPHA times and beta_work BETA times.  argv[1]
 * scales the work (sample mode needs it long enough to be sampled). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>

#define ALPHA 3
#define BETA 5

static pthread_barrier_t named;	/* the worker runs beta_work once it is named beta */
static long scale = 1;
static volatile long sum;

static long alpha_work(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i & 1 ? i : -i;
	return s;
}

static long beta_work(long n)
{
	long s = 0;

	for (long i = 0; i < n; i++)
		s += i % 3 ? i : 1;
	return s;
}

static void *worker(void *arg)
{
	long s = 0;

	(void)arg;
	pthread_barrier_wait(&named);
	for (int i = 0; i < BETA; i++)
		s += beta_work(20 * scale + i);
	sum += s;
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	long s = 0;

	if (argc > 1)
		scale = atol(argv[1]);
	if (prctl(PR_SET_NAME, "alpha") != 0 || pthread_barrier_init(&named, NULL, 2) != 0 ||
	    pthread_create(&t, NULL, worker, NULL) != 0 || pthread_setname_np(t, "beta") != 0)
		return 1;
	pthread_barrier_wait(&named);
	for (int i = 0; i < ALPHA; i++)
		s += alpha_work(20 * scale + i);
	pthread_join(t, NULL);
	printf("names %ld\n", sum + s);
	return 0;
}
