/* Per-CPU data rings of the sampling collectors; see rec_rings.h. */
#include "record/rec_rings.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
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

int rec_rings_drain(struct rec *r, struct rec_ring *rings, int n)
{
	int e = n ? rec_take_round(r, &rings[0].ring, sizeof(*rings), n, NULL, NULL) : 0;

	return e > 0 ? rec_round(r) : e;
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
	r->rings_final = 1;	/* nothing newer can come: no sample is held back */
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
