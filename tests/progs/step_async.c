/* Step-mode workload: signals that interrupt user code (not a syscall).  A second
 * thread sends SIGUSR1 to the main thread while it spins in a loop without syscalls,
 * three times.  The sender waits until main's loop itself has seen the previous signal
 * (not the handler): a signal sent while the handler still runs is delivered at the end
 * of rt_sigreturn, i.e. into a syscall, not as an interrupt of user code. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <unistd.h>

static volatile int hits, seen = -1;
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
		while (seen < i)
			;
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
	while (hits < 3) {	/* pure user code: the signals interrupt it */
		seen = hits;
		spins++;
	}
	pthread_join(t, NULL);
	printf("async %d %d\n", hits, spins > 0);
	return 0;
}
