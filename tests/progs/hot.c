/* A CPU-bound workload with known proportions: hot_outer spends about three quarters
 * of the time in hot_inner and one quarter in cold_path (per call of work()).
 * Usage: hot [MILLISECONDS]  (default 300): runs at least that long. */
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

	while (now_ms() - t0 < ms) {
		hot_outer();
		calls++;
	}
	printf("hot: %lu calls\n", calls);
	return 0;
}
