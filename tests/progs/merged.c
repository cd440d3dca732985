/* The worked example of issue 12 (merged event/sample call trees), one time unit per
 * step.  Each function spins its own units in its own code (a macro, not a call), so
 * samples land in the function itself and X, a leaf, gets its own samples.
 *
 *   C: 3 units, calls A                  C·A      base 3
 *     A: 3, calls B                      C·A·B    (1st)
 *       B: 2, calls B                    C·A·B·B  base 1
 *         B: 1
 *       A calls B again: 1               C·A·B    (2nd), C·A·B base 2+1 = 3, cum 4
 *   C calls B: 2, calls A                C·B      base 2, cum 9
 *     A: 3, calls B                      C·B·A    base 3, cum 7
 *       B: 2, calls A                    C·B·A·B  base 2, cum 3
 *         A: 1                           C·B·A·B·A
 *     A calls X: 1                       C·B·A·X
 *   C: base 3, cum 19.  Calls: C 1, A 3, B 5, X 1.
 *
 * usage: merged [ITERATIONS_PER_UNIT]
 * Without an argument a unit is 4 ms of time on the cpu, spun on the TSC (the same loop
 * runs at different speeds in different functions: code alignment); with one, a unit is that
 * many iterations of a counting loop: a fixed number of instructions per function,
 * for step traces. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

#define UNIT_NS 4000000

static long iters_per_unit;
static uint64_t tsc_per_unit;	/* 0: count iterations */
static uint64_t tsc_gap;	/* TSC ticks in 20 us */

/* The loop counter lives in memory so -O1 keeps every iteration; the TSC is read
 * inline, so samples land in the function itself.  A unit is time on the cpu: a step
 * of the TSC longer than 20 us is time the process did not run (preempted on a busy
 * machine) and does not count, so each function gets its units' share of the samples
 * whatever the load (4 ms of wall time once gave X no sample at all under load 6). */
#define SPIN(units)                                                                         \
	do {                                                                                \
		if (tsc_per_unit) {                                                         \
			uint64_t left_ = (uint64_t)(units) * tsc_per_unit, prev_ = __rdtsc(); \
			while (left_) {                                                     \
				uint64_t now_ = __rdtsc(), d_ = now_ - prev_;               \
				prev_ = now_;                                               \
				if (d_ < tsc_gap)                                           \
					left_ -= d_ < left_ ? d_ : left_;                   \
			}                                                                   \
		} else {                                                                    \
			for (volatile long i_ = 0; i_ < (units) * iters_per_unit; i_++)     \
				;                                                           \
		}                                                                           \
	} while (0)

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* TSC ticks in UNIT_NS, measured over 50 ms. */
static uint64_t calibrate(void)
{
	uint64_t t0 = now_ns(), c0 = __rdtsc(), t1, c1;
	while ((t1 = now_ns()) - t0 < 50000000u)
		;
	c1 = __rdtsc();
	return (c1 - c0) * UNIT_NS / (t1 - t0);
}

#define PROBED __attribute__((noinline, noclone, used))

enum { A_UNDER_C, A_UNDER_CB, A_UNDER_CBAB };
enum { B_UNDER_CA, B_LEAF, B_UNDER_C, B_UNDER_CBA };

PROBED void A(int how);

PROBED void X(void)
{
	/* a leaf that needs no stack gets no frame even with -fno-omit-frame-pointer:
	 * its samples' frame-pointer chains skip A.  Asking for the frame address makes
	 * the compiler set one up; merged_leaf.c builds it without, as users' code is. */
#ifndef MERGED_FRAMELESS_LEAF
	__asm__ volatile("" : : "r"(__builtin_frame_address(0)));
#endif
	SPIN(1);
}

PROBED void B(int how)
{
	switch (how) {
	case B_UNDER_CA:
		SPIN(2);
		B(B_LEAF);
		break;
	case B_LEAF:
		SPIN(1);
		break;
	case B_UNDER_C:
		SPIN(2);
		A(A_UNDER_CB);
		break;
	case B_UNDER_CBA:
		SPIN(2);
		A(A_UNDER_CBAB);
		break;
	}
}

PROBED void A(int how)
{
	switch (how) {
	case A_UNDER_C:
		SPIN(3);
		B(B_UNDER_CA);
		B(B_LEAF);
		break;
	case A_UNDER_CB:
		SPIN(3);
		B(B_UNDER_CBA);
		X();
		break;
	case A_UNDER_CBAB:
		SPIN(1);
		break;
	}
}

PROBED void C(void)
{
	SPIN(3);
	A(A_UNDER_C);
	B(B_UNDER_C);
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		iters_per_unit = atol(argv[1]);
		if (iters_per_unit <= 0) {
			fprintf(stderr, "usage: merged [ITERATIONS_PER_UNIT > 0]\n");
			return 2;
		}
	} else {
		tsc_per_unit = calibrate();
		tsc_gap = tsc_per_unit / (UNIT_NS / 20000);
	}
	C();
	return 0;
}
