/* hot [MS [CPU]]: about 3/4 of the time in hot_inner, 1/4 in cold_path (see main). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

void hot_inner(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

void cold_path(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

void hot_outer(void)
{
	hot_inner(300000);
	cold_path(100000);
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 300, t0 = now_ms();
	unsigned long calls = 0;

	/* At least MS milliseconds (default 300).  With CPU, it first moves to that CPU:
	 * started on another, its mappings (made at exec) and its samples are then in
	 * different CPUs' rings. */
	if (argc > 2) {
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET(atoi(argv[2]), &set);
		if (sched_setaffinity(0, sizeof(set), &set) < 0) {
			perror("hot: sched_setaffinity");
			return 1;
		}
	}
	while (now_ms() - t0 < ms) {
		hot_outer();
		calls++;
	}
	printf("hot: %lu calls\n", calls);
	return 0;
}
