/* A hot spot under a call path, for `record --adaptive`, and a short function called in
 * timed phases, for `--probe-limit`.
 *
 * usage: adaptive tree SECONDS [wait]
 *   main -> outer -> mid -> hot until SECONDS have passed: outer calls mid 10 times,
 *   mid calls hot exactly 7 times, hot spins ~20 us (nearly all the time is hot's own);
 *   cold_a and cold_b run once per outer call, briefly.  Prints "outer O mid M hot H".
 *   wait: print "ready outer ADDRESS", then read one byte from stdin first (for -p
 *   attach; the test stops it once outer is probed).
 *   until: print "ready outer ADDRESS" and run until SECONDS have passed or stdin has
 *   something to read or is closed (the test ends it once outer is probed, however
 *   long the walk took on a loaded machine).
 * usage: adaptive work N
 *   N calls of outer (the same tree, a fixed amount of work: bench/adaptive-overhead);
 *   prints the counts, the ns the calls took and the CPU ns the process spent meanwhile,
 *   traps into the kernel included ("outer O mid M hot H ns T cpu_ns C").
 * usage: adaptive phases N P [wait]
 *   P phases of N calls to tiny (a few ns of work each); prints each phase's
 *   duration in ns, one per line ("phase I NS").  wait: print "tiny ADDRESS" first, then
 *   read one byte from stdin before each phase (the test reads tiny's code meanwhile). */
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;
static unsigned long n_outer, n_mid, n_hot;

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t now(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

__attribute__((noinline, noclone, used)) void hot(void)
{
	n_hot++;
	for (int i = 0; i < 12000; i++)
		sink += (unsigned long)i ^ sink;
}

__attribute__((noinline, noclone, used)) void mid(void)
{
	n_mid++;
	for (int i = 0; i < 7; i++)
		hot();
}

__attribute__((noinline, noclone, used)) void cold_a(void)
{
	sink += 1;
}

__attribute__((noinline, noclone, used)) void cold_b(void)
{
	sink += 2;
}

__attribute__((noinline, noclone, used)) void outer(void)
{
	n_outer++;
	cold_a();
	for (int i = 0; i < 10; i++)
		mid();
	cold_b();
}

__attribute__((noinline, noclone, used)) void tiny(unsigned long i)
{
	sink += i;
}

int main(int argc, char **argv)
{
	char c;

	if (argc >= 3 && strcmp(argv[1], "tree") == 0) {
		struct pollfd in = { .fd = 0, .events = POLLIN };
		int until = 0;
		uint64_t end;
		if (argc > 3 && strcmp(argv[3], "wait") == 0) {
			printf("ready outer %p\n", (void *)outer);
			fflush(stdout);
			if (read(0, &c, 1) != 1)
				return 1;
		}
		if (argc > 3 && strcmp(argv[3], "until") == 0) {
			printf("ready outer %p\n", (void *)outer);
			fflush(stdout);
			until = 1;
		}
		end = now() + (uint64_t)(atof(argv[2]) * 1e9);
		while (now() < end && !(until && poll(&in, 1, 0) > 0))
			outer();
		printf("outer %lu mid %lu hot %lu\n", n_outer, n_mid, n_hot);
		return 0;
	}
	if (argc >= 3 && strcmp(argv[1], "work") == 0) {
		uint64_t t = now(), cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID);
		for (long i = atol(argv[2]); i > 0; i--)
			outer();
		cpu = clock_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu;
		printf("outer %lu mid %lu hot %lu ns %llu cpu_ns %llu\n", n_outer, n_mid, n_hot,
		       (unsigned long long)(now() - t), (unsigned long long)cpu);
		return 0;
	}
	if (argc >= 4 && strcmp(argv[1], "phases") == 0) {
		long n = atol(argv[2]), p = atol(argv[3]);
		int wait = argc > 4 && strcmp(argv[4], "wait") == 0;
		if (wait) {
			printf("tiny %p\n", (void *)tiny);
			fflush(stdout);
		}
		for (long k = 0; k < p; k++) {
			uint64_t t;
			if (wait && read(0, &c, 1) != 1)
				return 1;
			t = now();
			for (long i = 0; i < n; i++)
				tiny((unsigned long)i);
			printf("phase %ld %llu\n", k + 1, (unsigned long long)(now() - t));
			fflush(stdout);
		}
		return 0;
	}
	fprintf(stderr, "usage: adaptive tree SECONDS [wait] | adaptive work N | adaptive phases N P [wait]\n");
	return 2;
}
