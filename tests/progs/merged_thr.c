/* Two threads, each running its own probed function with its own sampled callees, for
 * merged trees that must place each sample under its own thread's event node:
 * thread 1 calls thr_one 5 times (callees one_leaf_a, one_leaf_b), thread 2 calls
 * thr_two 3 times (callee two_leaf).  Both run at the same time.
 *
 * usage: merged_thr [ITERATIONS_PER_UNIT [wait]]   (a unit is a few ms by default)
 *   wait: both threads exist, then "ready" is printed and they start once a byte
 *   arrives on stdin: `record -p` probes the threads a process has when it attaches. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static long iters_per_unit = 10000000;

#define SPIN(units)                                                                         \
	do {                                                                                \
		for (volatile long i_ = 0; i_ < (units) * iters_per_unit; i_++)             \
			;                                                                   \
	} while (0)

#define PROBED __attribute__((noinline, noclone, used))

PROBED void one_leaf_a(void) { SPIN(2); }
PROBED void one_leaf_b(void) { SPIN(1); }
PROBED void two_leaf(void) { SPIN(3); }

PROBED void thr_one(void)
{
	SPIN(1);
	one_leaf_a();
	one_leaf_b();
}

PROBED void thr_two(void)
{
	SPIN(1);
	two_leaf();
}

static pthread_barrier_t start;

static void *run_two(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (int i = 0; i < 3; i++)
		thr_two();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	if (argc > 1)
		iters_per_unit = atol(argv[1]);
	if (iters_per_unit <= 0) {
		fprintf(stderr, "usage: merged_thr [ITERATIONS_PER_UNIT > 0]\n");
		return 2;
	}
	pthread_barrier_init(&start, NULL, 2);
	if (pthread_create(&t, NULL, run_two, NULL)) {
		fprintf(stderr, "merged_thr: pthread_create failed\n");
		return 1;
	}
	if (argc > 2 && strcmp(argv[2], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 1;
	}
	pthread_barrier_wait(&start);
	for (int i = 0; i < 5; i++)
		thr_one();
	pthread_join(t, NULL);
	return 0;
}
