/* The probe-overhead compensation example of issue 13: A runs 1 ms of its own, calls B,
 * which runs 8 ms of its own and calls P (a short routine) 2000 times on the way, then
 * A runs 1 more ms.  Probed (`xptrace record --probe A,B,P -g`), every call of P costs
 * two probe hits inside B's time; decode subtracts the calibrated cost, and the
 * figures should come back to what this program measures of itself unprobed.
 *
 * usage: compensate [REPEAT]   runs main -> A REPEAT times (default 1)
 * Prints its own measurements (clock_gettime around the calls, summed over the runs):
 *   a_cum_ns N a_self_ns N b_cum_ns N p_calls N
 * Time is spun in each function's own code with relative waits (each spin starts when
 * the previous step ended), so probe hits lengthen the run instead of being absorbed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PROBED __attribute__((noinline, noclone, used))
#define P_CALLS 2000

static uint64_t b_cum, p_calls;

static inline uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* inline: samples land in the function that spins */
static inline __attribute__((always_inline)) void spin(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	while (now_ns() < end)
		;
}

PROBED void P(void)
{
	/* a frame of its own, so frame-pointer callchains through it are whole */
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
	p_calls++;
}

/* 8 ms of its own: 2000 steps of 4 us, each followed by a call of P */
PROBED void B(void)
{
	for (int i = 0; i < P_CALLS; i++) {
		spin(4000);
		P();
	}
}

PROBED void A(void)
{
	spin(1000000);
	uint64_t t0 = now_ns();
	B();
	b_cum += now_ns() - t0;
	spin(1000000);
}

int main(int argc, char **argv)
{
	long repeat = argc > 1 ? atol(argv[1]) : 1;
	uint64_t a_cum = 0;

	if (repeat <= 0) {
		fprintf(stderr, "usage: compensate [REPEAT > 0]\n");
		return 2;
	}
	for (long r = 0; r < repeat; r++) {
		uint64_t t0 = now_ns();
		A();
		a_cum += now_ns() - t0;
	}
	printf("a_cum_ns %llu a_self_ns %llu b_cum_ns %llu p_calls %llu\n", (unsigned long long)a_cum,
	       (unsigned long long)(a_cum - b_cum), (unsigned long long)b_cum, (unsigned long long)p_calls);
	return 0;
}
