/* Step-mode workload: signals that interrupt user code (not a syscall).  A second
 * thread sends SIGUSR1 to the main thread while it spins in a loop without syscalls,
 * three times, each after the handler acknowledged the previous one. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int hits, sent;
static pid_t main_tid;

static void on_usr1(int sig)
{
	(void)sig;
	hits++;
}

static void *sender(void *arg)
{
	(void)arg;
	for (int i = 0; i < 3; i++) {
		while (hits < i)
			;
		sent = i + 1;
		syscall(SYS_tgkill, getpid(), main_tid, SIGUSR1);
	}
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_usr1 };
	pthread_t t;
	unsigned long spins = 0;

	main_tid = (pid_t)syscall(SYS_gettid);
	sigaction(SIGUSR1, &sa, NULL);
	if (pthread_create(&t, NULL, sender, NULL) != 0)
		return 1;
	while (hits < 3)	/* pure user code: the signals interrupt it */
		spins++;
	pthread_join(t, NULL);
	printf("async %d %d\n", hits, spins > 0);
	return 0;
}
