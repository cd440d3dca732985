/* Spins in crash_spin for about 150 ms, then dies of SIGSEGV. */
#include <time.h>

static volatile unsigned long sink;

void crash_spin(void)
{
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 10000; i++)
			sink = sink * 3 + 1;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < 150);
}

int main(void)
{
	crash_spin();
	*(volatile int *)0 = 1;
	return 0;
}
