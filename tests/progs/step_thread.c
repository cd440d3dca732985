/* Step-mode ground-truth workload: a second thread with its own loop. */
#include <pthread.h>
#include <stdio.h>

static volatile long sum;

static void *worker(void *arg)
{
	long n = (long)arg, s = 0;

	for (long i = 0; i < n; i++)
		s += i % 3 ? i : -i;
	sum = s;
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, worker, (void *)40L) != 0)
		return 1;
	pthread_join(t, NULL);
	printf("thread %ld\n", sum);
	return 0;
}
