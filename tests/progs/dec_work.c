/* Decode test workload: known call structure with recursion and a function reached
 * from two callers.  Runs about `ms` milliseconds (argv[1], default 600). */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void tick(void) { sink ^= 1; }

/* Not a leaf (it calls tick): gcc then sets up its frame, so frame-pointer stacks
 * sampled inside it keep the caller. */
__attribute__((noinline)) void spin(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		sink += i * 7;
		if ((i & 0xfffff) == 0xfffff)
			tick();
	}
}

/* work after each call keeps it a real call (no tail call: frame-pointer stacks
 * then show every caller) */
__attribute__((noinline)) void work_a(void)
{
	spin(300000);
	sink++;
}

__attribute__((noinline)) void work_b(void)
{
	spin(200000);
	work_a();
	sink++;
}

__attribute__((noinline)) int recurse(int depth)
{
	spin(50000);
	return depth ? recurse(depth - 1) + 1 : 0;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double ms = argc > 1 ? atof(argv[1]) : 600, t0 = now_ms();

	/* at least one round: a slow tracer (step mode on a loaded machine) may spend the
	 * whole budget between the two clock reads */
	do {
		work_a();
		work_b();
		recurse(3);
	} while (now_ms() - t0 < ms);
	return 0;
}
