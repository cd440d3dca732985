/* Per-CPU data rings of the sampling collectors (sample, lbr): one ring per CPU shared
 * by every event opened on that CPU (PERF_EVENT_IOC_SET_OUTPUT), drained into the
 * recording, and the loop that records until the end. */
#ifndef REC_RINGS_H
#define REC_RINGS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <sys/types.h>

#include "record/rec.h"
#include "record/ring.h"

struct rec_ring {
	int cpu;
	int fd;			/* the fd whose ring this is */
	void *base;
	size_t len;
	struct ring ring;
};

/* Maps fd's ring (a header page + data_pages) into rg.  0, or a negative errno with
 * nothing mapped. */
int rec_ring_map(struct rec_ring *rg, int fd, int cpu, size_t data_pages);

/* Hands every record of every ring to rec_record(), then ends the round.  0 or the
 * first error. */
int rec_rings_drain(struct rec *r, struct rec_ring *rings, int n);

/* Once the events are open and enabled (or enabled on exec): starts the command and
 * records until rec_should_stop() or, with -p, until every ring hung up (every thread
 * of the target exited); then disables the events, takes what is left, and unmaps and
 * closes everything.  `e` is the error so far (nothing is started when it is set);
 * returns the first error. */
int rec_rings_run(struct rec *r, struct rec_ring *rings, int nrings, const int *fds, int nfds,
		  int e);

#endif
