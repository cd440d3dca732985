/* The README quick tour's ./prog (tests/integration/readme_tour.sh): fixed work, so
 * the step tracer stays quick on a small N and sampling has something on a large one.
 * hot_loop has most of the work; A calls B calls C for the probes; crash_handler runs
 * only when asked (--trigger).  Usage: prog [N]  (N x 10000 iterations, default 1000). */
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;

void hot_loop(unsigned long n)
{
	unsigned long x = sink;

	for (unsigned long i = 0; i < n; i++)
		x = x * 33 + i;
	sink = x;
}

void C(unsigned long n)
{
	hot_loop(n / 8);
}

void B(unsigned long n)
{
	C(n);
	hot_loop(n / 8);
}

void A(unsigned long n)
{
	B(n);
}

void crash_handler(void)
{
	sink++;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000;

	for (long k = 0; k < n; k++) {
		hot_loop(7500);
		A(10000);
	}
	if (argc > 2 && strcmp(argv[2], "crash") == 0)
		crash_handler();
	return 0;
}
