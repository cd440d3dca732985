/* The /proc and /sys readers of the collector's synthesizer (src/record/rec_synth.c):
 * the threads of a process (this one, with threads whose ids the test knows) and the
 * online cpus (as many as sysconf counts). */
#include "xp_test.h"

#include <pthread.h>
#include <sys/syscall.h>

#include "record/rec.h"

#define NTHREADS 3

static pthread_barrier_t started, done;
static pid_t tids[NTHREADS];

static void *thread(void *arg)
{
	*(pid_t *)arg = (pid_t)syscall(SYS_gettid);
	pthread_barrier_wait(&started);
	pthread_barrier_wait(&done);
	return NULL;
}

static int has(const pid_t *v, int n, pid_t x)
{
	for (int i = 0; i < n; i++)
		if (v[i] == x)
			return 1;
	return 0;
}

static void test_list_threads(void **state)
{
	(void)state;
	pthread_t th[NTHREADS];
	pid_t *v = NULL;
	assert_int_equal(pthread_barrier_init(&started, NULL, NTHREADS + 1), 0);
	assert_int_equal(pthread_barrier_init(&done, NULL, NTHREADS + 1), 0);
	for (int i = 0; i < NTHREADS; i++)
		assert_int_equal(pthread_create(&th[i], NULL, thread, &tids[i]), 0);
	pthread_barrier_wait(&started);
	int n = rec_list_threads(getpid(), &v);
	pthread_barrier_wait(&done);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	/* the main thread and the three, ascending */
	assert_int_equal(n, NTHREADS + 1);
	assert_true(has(v, n, getpid()));
	for (int i = 0; i < NTHREADS; i++)
		assert_true(has(v, n, tids[i]));
	for (int i = 1; i < n; i++)
		assert_true(v[i - 1] < v[i]);
	free(v);
	pthread_barrier_destroy(&started);
	pthread_barrier_destroy(&done);
}

static void test_no_such_process(void **state)
{
	(void)state;
	pid_t *v = NULL;
	/* above pid_max (at most 2^22) */
	assert_int_equal(rec_list_threads(0x7ffffff0, &v), -ENOENT);
	assert_null(v);
}

static void test_online_cpus(void **state)
{
	(void)state;
	int *c = NULL;
	int n = rec_online_cpus(&c);
	assert_int_equal(n, sysconf(_SC_NPROCESSORS_ONLN));
	for (int i = 1; i < n; i++)
		assert_true(c[i - 1] < c[i]);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_list_threads),
		cmocka_unit_test(test_no_such_process),
		cmocka_unit_test(test_online_cpus),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
