/* A caller whose last instruction is a call to a function that never returns: the
 * return address that call pushes is the first byte after the caller, so a caller
 * frame symbolized at its return address names the next function (or none).
 * Usage: noreturn MILLISECONDS (ends_here spins that long in spin, then exits) */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noreturn)) void spin(double ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 10000; i++)
			sink = sink * 3 + 1;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms);
	exit(0);
}

void ends_here(double ms)
{
	spin(ms);
}

void after(void)	/* what the return address of ends_here's call points into */
{
	sink++;
}

int main(int argc, char **argv)
{
	if (argc > 2)
		after();
	ends_here(argc > 1 ? atof(argv[1]) : 200);
}
