/* The workloads `xptrace selftest` records: part of the xptrace binary, so they run on
 * any machine it was copied to (`xptrace selftest --workload NAME`), with the known
 * counts the checks compare against (selftest.h). */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "cli/selftest.h"

/* volatile sinks: the compiler keeps every call and every iteration */
static volatile uint64_t st_sink;

__attribute__((noinline)) void st_tick(void)
{
	st_sink++;
}

__attribute__((noinline)) void st_loop(void)
{
	for (int i = 0; i < ST_LOOP_TRIPS; i++)
		st_tick();
}

uint64_t st_fib(int n);
/* through a volatile pointer: the compiler cannot turn one of the two calls into a
 * loop (gcc -O2 does with direct calls), so fib(n) makes its 2 fib(n+1) - 1 calls */
static uint64_t (*volatile st_fib_p)(int) = st_fib;

__attribute__((noinline)) uint64_t st_fib(int n)
{
	return n < 2 ? (uint64_t)n : st_fib_p(n - 1) + st_fib_p(n - 2);
}

__attribute__((noinline)) void st_ind_a(void) { st_sink += 1; }
__attribute__((noinline)) void st_ind_b(void) { st_sink += 2; }
__attribute__((noinline)) void st_ind_c(void) { st_sink += 3; }

static void (*volatile st_table[3])(void) = { st_ind_a, st_ind_b, st_ind_c };

__attribute__((noinline)) void st_indirect(void)
{
	for (int i = 0; i < 3 * ST_IND_CALLS; i++)
		st_table[i % 3]();
}

__attribute__((noinline)) void st_library(void)
{
	for (int i = 0; i < ST_LIB_CALLS; i++)
		st_sink += (uint64_t)getppid();
}

__attribute__((noinline)) void st_leaf(void)
{
	st_sink++;
}

static void *st_thread(void *arg)
{
	(void)arg;
	for (int i = 0; i < ST_LEAF_CALLS / 2; i++)
		st_leaf();
	return NULL;
}

__attribute__((noinline)) void st_threads(void)
{
	pthread_t t[2];
	int n = 0;

	for (; n < 2; n++)
		if (pthread_create(&t[n], NULL, st_thread, NULL))
			break;
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

/* The sampled split: the same loop body in each, 3 : 1 iterations. */
#define ST_SPIN(n) do { for (uint64_t i = 0; i < (n); i++) st_sink += i; } while (0)

/* Both aligned alike: the same loop at another offset from a 64-byte boundary ran more
 * than twice as slow on these AMD VMs (st_heavy took 87 % instead of 75 %) */
__attribute__((noinline, aligned(64))) void st_heavy(void)
{
	ST_SPIN(3 * ST_SPLIT_UNIT);
}

__attribute__((noinline, aligned(64))) void st_light(void)
{
	ST_SPIN(ST_SPLIT_UNIT);
}

int st_workload(const char *name)
{
	if (!strcmp(name, "exact")) {
		st_loop();
		st_sink += st_fib(ST_FIB_N);
		st_indirect();
		st_library();
		st_threads();
		return 0;
	}
	if (!strcmp(name, "split")) {
		for (int i = 0; i < ST_SPLIT_ROUNDS; i++) {
			st_heavy();
			st_light();
		}
		return 0;
	}
	return -EINVAL;
}
