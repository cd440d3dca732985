/* Per-CPU data rings of the sampling collectors; see rec_rings.h. */
#include "record/rec_rings.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/xp_err.h"

int rec_ring_map(struct rec_ring *rg, int fd, int cpu, size_t data_pages)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (data_pages + 1) * pg;
	void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	int e;

	if (base == MAP_FAILED)
		return -errno;
	e = ring_init(&rg->ring, base, data_pages * pg);
	if (e < 0) {
		munmap(base, len);
		return e;
	}
	rg->cpu = cpu;
	rg->fd = fd;
	rg->base = base;
	rg->len = len;
	return 0;
}

/* One pass over rg's round: every record but the samples. */
static int take_sideband(struct rec *r, struct ring *rg)
{
	const struct perf_event_header *h;
	int e = 0;

	while (e == 0 && (h = ring_next(rg)))
		if (h->type != PERF_RECORD_SAMPLE)
			e = rec_record(r, h);
	return e;
}

/* Two passes over a round: the sideband (mmap, comm, fork, lost...) of every ring, then
 * the samples of all, in time order (rec_take_samples).  Readers order a round by time
 * (perf's ordered events, pd_read's queue), so the file means the same; but when the disk fills up in the middle of a round, what
 * is kept still holds the mappings that name its samples: drained ring by ring, a 700 KB
 * disk once kept 104 samples of one CPU's ring and no mmap, which was in the next.  The
 * heads are all taken first: a record is in this round when it was written before its
 * ring's head was taken, so with the heads taken within a few ns of each other, no call
 * can enter on one cpu after its head was taken and return on another before its. */
int rec_rings_drain(struct rec *r, struct rec_ring *rings, int n)
{
	struct ring *one[8], **v = n <= 8 ? one : malloc((size_t)n * sizeof(*v));
	int any = 0, e = 0;

	if (!v)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		any |= ring_begin(v[i] = &rings[i].ring) != 0;
	for (int i = 0; e == 0 && i < n; i++) {
		e = take_sideband(r, v[i]);
		ring_rewind(v[i]);
	}
	if (e == 0)
		e = rec_take_samples(r, v, n);
	for (int i = 0; i < n; i++)
		ring_end(v[i]);
	if (v != one)
		free(v);
	if (e == 0 && any)
		e = rec_round(r);
	return e;
}

int rec_rings_run(struct rec *r, struct rec_ring *rings, int nrings, const int *fds, int nfds,
		  int e)
{
	const struct rec_opts *o = r->opts;
	struct pollfd *pfd = NULL;

	if (e == 0)
		e = rec_target_go(r);
	if (e == 0) {
		pfd = calloc((size_t)nrings, sizeof(*pfd));
		if (!pfd)
			e = -ENOMEM;
	}
	for (int i = 0; e == 0 && i < nrings; i++) {
		pfd[i].fd = rings[i].fd;
		pfd[i].events = POLLIN;
	}
	while (e == 0 && !rec_should_stop(r)) {
		/* The timeout bounds how late we notice --duration or a reaped child; data
		 * wakes us at the ring's watermark. */
		int hup = 0;
		rec_wait(pfd, (unsigned long)nrings, r->hooks.poll_ms ? r->hooks.poll_ms : 100);
		e = rec_rings_drain(r, rings, nrings);
		if (e == 0 && r->hooks.tick)
			e = r->hooks.tick(r);
		for (int i = 0; i < nrings; i++)
			hup += (pfd[i].revents & POLLHUP) != 0;
		/* -p: every thread of the target exited (it may linger as a zombie, which
		 * kill(pid, 0) would not tell). */
		if (o->pid && hup == nrings)
			r->target_done = 1;
	}
	/* Stop counting, then take what is left in the rings. */
	for (int i = 0; i < nfds; i++)
		ioctl(fds[i], PERF_EVENT_IOC_DISABLE, 0);
	if (r->hooks.stop)
		r->hooks.stop(r);
	if (e == 0 || !r->write_err)
		rec_rings_drain(r, rings, nrings);
	for (int i = 0; i < nrings; i++) {
		if (rings[i].ring.dropped && !o->quiet)
			xp_warn("cpu %d: %llu bytes of a corrupt sample buffer skipped", rings[i].cpu,
				(unsigned long long)rings[i].ring.dropped);
		munmap(rings[i].base, rings[i].len);
	}
	for (int i = 0; i < nfds; i++)
		close(fds[i]);
	free(pfd);
	return e;
}
