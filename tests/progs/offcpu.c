/* Waits and runs, for record --off-cpu: naps() sleeps 10 times 20 ms (clock_nanosleep
 * under usleep), then spin() runs 100 ms.  Off the CPU: the naps (and whatever
 * preempts spin on a loaded machine). */
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

void nap(void)
{
	usleep(20000);
}

void naps(int n)
{
	for (int i = 0; i < n; i++)
		nap();
}

void spin(void)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 1000; i++)
			sink++;
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 100000000L);
}

int main(void)
{
	naps(10);
	spin();
	return 0;
}
