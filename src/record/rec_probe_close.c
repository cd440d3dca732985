/* Closing probe events, which the kernel makes slow (its unregister of a uprobe: RCU
 * grace periods under a machine-wide mutex, ~80 ms a uprobe-PMU event, 15-35 ms a
 * tracefs event's last close): in threads, or in a process of their own that record
 * does not wait for; and deleting the tracefs definitions once they are closed.  See
 * rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/rec_probe_tfs.h"
#include "util/xp_clock.h"
#include "util/xp_grow.h"

struct close_job {
	int fd;
	struct rec_probe_closing *cl;
};

static void closed(struct rec_probe_closing *cl)
{
	if (cl && atomic_fetch_sub(&cl->left, 1) == 1) {
		atomic_store(&cl->end, xp_now_ns());
		atomic_store(&cl->done, 1);
	}
}

static void *closer(void *arg)
{
	struct close_job *j = arg;

	close(j->fd);
	closed(j->cl);
	free(j);
	return NULL;
}

void rec_probes_close_fds(const int *fds, int n, int wait, struct rec_probe_closing *cl)
{
	pthread_t *th = calloc((size_t)(n ? n : 1), sizeof(*th));
	char *started = calloc((size_t)(n ? n : 1), 1);

	if (cl) {
		atomic_store(&cl->end, n ? 0 : xp_now_ns());
		atomic_store(&cl->done, !n);
		atomic_store(&cl->left, n);
	}
	for (int k = 0; k < n; k++) {
		struct close_job *j = malloc(sizeof(*j));
		if (j)
			*j = (struct close_job){ fds[k], cl };
		if (j && th && started && pthread_create(&th[k], NULL, closer, j) == 0) {
			started[k] = 1;
		} else {
			free(j);
			close(fds[k]);
			closed(cl);
		}
		if (started && started[k] && !wait)
			pthread_detach(th[k]);
	}
	for (int k = 0; wait && started && k < n; k++)
		if (started[k])
			pthread_join(th[k], NULL);
	free(th);
	free(started);
}

int rec_probe_closed(struct rec_probe_closing *cl)
{
	uint64_t end;
	ssize_t n;

	if (cl->fd >= 0) {
		n = read(cl->fd, &end, sizeof(end));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return 0;
		/* its time, or the process gone without one: done by now */
		atomic_store(&cl->end, n == (ssize_t)sizeof(end) ? end : xp_now_ns());
		atomic_store(&cl->done, 1);
		close(cl->fd);
		cl->fd = -1;
	}
	return atomic_load(&cl->done);
}

int rec_probes_closing(const struct rec_probes *p)
{
	for (int i = 0; i < p->nfn; i++)
		if (p->fn[i].closing && !rec_probe_closed(p->fn[i].closing))
			return 1;
	return 0;
}

/* A disarm's closes in a process of their own (per-task events: the target no longer
 * holds the int3, or traps into disabled events until they are closed, whoever closes
 * them): record's exit does not wait for the kernel's ~80 ms unregisters of a window
 * that ended just before the target did (0.3-0.5 s at the end of a sub-second run). */
int rec_probe_fn_close_away(const struct rec_probes *p, struct rec_probe_fn *fn)
{
	struct rec_probe_closing *cl = fn->closing;
	int done[2], e;

	if (XP_GROW(fn->fds, fn->capfds, (size_t)fn->nfds + 2) < 0)
		return -ENOMEM;
	if (pipe2(done, O_CLOEXEC | O_NONBLOCK) < 0)
		return -errno;
	atomic_store(&cl->done, 0);
	atomic_store(&cl->end, 0);
	atomic_store(&cl->left, fn->nfds);
	e = rec_probes_close_away(p, fn->fds, fn->nfds, done[1], 0);
	close(done[1]);
	if (e < 0) {
		close(done[0]);
		return e;
	}
	cl->fd = done[0];
	return 0;
}

void rec_probes_wait_closes(const struct rec_probes *p)
{
	for (int i = 0; i < p->nfn; i++)
		while (p->fn[i].closing && p->fn[i].closing->fd < 0 && !rec_probe_closed(p->fn[i].closing))
			usleep(1000);
}

/* Deletes the tracefs definitions (once no event of theirs is open), waiting up to 5 s
 * for closes that other processes still run. */
void rec_probes_undefine_all(const struct rec_probes *p)
{
	for (int i = 0; p->tfs[0] && i < p->nfn; i++) {
		for (int k = 0; k < 2; k++) {
			char ev[64];

			rec_tfs_event_name(ev, sizeof(ev), p->fn[i].name, i, k);
			for (int t = 0; t < 500 && p->fn[i].tp_id[k] &&
			     rec_tfs_undefine(p->tfs, p->group, ev) == -EBUSY; t++)
				usleep(10000);
		}
	}
}

int rec_probes_close_away(const struct rec_probes *p, int *fds, int n, int done_fd, int undefine)
{
	int go[2], st;
	pid_t mid;

	if (pipe2(go, O_CLOEXEC) < 0)
		return -errno;
	mid = fork();
	if (mid < 0) {
		close(go[0]);
		close(go[1]);
		return -errno;
	}
	if (mid == 0) {
		unsigned from = 3;
		int keep = n + 1, nul;
		uint64_t end;
		char b;

		if (fork() != 0)
			_exit(0);
		setsid();
		prctl(PR_SET_NAME, "xptrace-release");	/* as the calibration's child */
		/* every other fd of record's closed (fds has room for two more); no malloc
		 * here: record's other threads may have held its lock at the fork */
		fds[n] = go[0];
		if (done_fd >= 0)
			fds[keep++] = done_fd;
		for (int k = 1; k < keep; k++)
			for (int m = k; m > 0 && fds[m - 1] > fds[m]; m--) {
				int t = fds[m];
				fds[m] = fds[m - 1];
				fds[m - 1] = t;
			}
		for (int k = 0; k <= keep; k++) {
			unsigned upto = k < keep ? (unsigned)fds[k] - 1 : ~0U;
			if (upto >= from && syscall(SYS_close_range, from, upto, 0) < 0)
				for (unsigned f = from; f <= upto && f < 4096; f++)
					close((int)f);
			from = k < keep ? (unsigned)fds[k] + 1 : from;
		}
		if ((nul = open("/dev/null", O_RDWR)) >= 0) {
			dup2(nul, 0);
			dup2(nul, 1);
			dup2(nul, 2);
			if (nul > 2)
				close(nul);
		}
		while (read(go[0], &b, 1) < 0 && errno == EINTR)
			;
		for (int k = 0; k < keep; k++)
			if (fds[k] != done_fd)
				close(fds[k]);
		end = xp_now_ns();
		if (done_fd >= 0 && write(done_fd, &end, sizeof(end)) < 0)
			_exit(1);	/* record is gone: nobody to tell */
		if (undefine)
			rec_probes_undefine_all(p);
		_exit(0);
	}
	close(go[0]);
	while (waitpid(mid, &st, 0) < 0 && errno == EINTR)
		;
	for (int k = 0; k < n; k++)
		close(fds[k]);
	close(go[1]);
	return 0;
}
