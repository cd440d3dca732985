/* Time on and off the cpu, inside and outside a probed function: main sleeps SLEEP_MS
 * (default 300), spins 40 ms of its own cpu time in hot(), then calls slow(), which
 * sleeps 200 ms and spins 20 ms.  Spins count the thread's cpu time, so they take that
 * much cpu whatever the machine's load.
 *
 * usage: wallcpu [SLEEP_MS] */
#include <stdlib.h>
#include <time.h>

#define PROBED __attribute__((noinline, noclone, used))

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

static long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#define SPIN_MS(ms)                                                                         \
	do {                                                                                \
		long long end_ = cpu_ns() + (ms) * 1000000LL;                               \
		while (cpu_ns() < end_)                                                     \
			;                                                                   \
	} while (0)

PROBED void hot(void)
{
	SPIN_MS(40);
}

PROBED void slow(void)
{
	sleep_ms(200);
	SPIN_MS(20);
}

int main(int argc, char **argv)
{
	sleep_ms(argc > 1 ? atol(argv[1]) : 300);
	hot();
	slow();
	return 0;
}
