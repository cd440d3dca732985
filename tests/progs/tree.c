/* A process tree for record tests: two threads spin in thread_spin, a forked child
 * spins in child_spin and then (when given) execs argv[1] with argv[2...].
 * Usage: tree MILLISECONDS [PROGRAM ARGS...] */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double ms;
static volatile unsigned long sink;

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void thread_spin(void)
{
	double t0 = now_ms();
	while (now_ms() - t0 < ms)
		for (int i = 0; i < 10000; i++)
			sink = sink * 3 + 1;
}

void child_spin(void)
{
	double t0 = now_ms();
	while (now_ms() - t0 < ms)
		for (int i = 0; i < 10000; i++)
			sink = sink * 5 + 1;
}

static void *thread_main(void *arg)
{
	(void)arg;
	thread_spin();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[2];
	pid_t pid;

	ms = argc > 1 ? atof(argv[1]) : 200;
	pid = fork();
	if (pid == 0) {
		child_spin();
		if (argc > 2) {
			execv(argv[2], argv + 2);
			perror("execv");
			_exit(127);
		}
		_exit(0);
	}
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, thread_main, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	waitpid(pid, NULL, 0);
	return 0;
}
