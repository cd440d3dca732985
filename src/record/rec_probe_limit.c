/* `--probe-limit`: counting each probe's hits as they are written, dropping those past
 * the limit and disarming the probe at it; see rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "record/rec.h"

int rec_probes_which(const struct rec_probes *p, const struct perf_event_header *h, int *fn,
		     int *ret)
{
	uint64_t id, v;

	/* every attr of a recording with probes has PERF_SAMPLE_IDENTIFIER: the id comes
	 * first */
	if (h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) + 8)
		return -ENOENT;
	memcpy(&id, h + 1, 8);
	if (!xp_map_get(&p->ids, id, &v))
		return -ENOENT;
	*fn = (int)(v / 2);
	*ret = (int)(v % 2);
	return 0;
}

static void *closer(void *fd)
{
	close((int)(intptr_t)fd);
	return NULL;
}

void rec_probes_close_fds(const int *fds, int n, int wait)
{
	pthread_t *th = calloc((size_t)(n ? n : 1), sizeof(*th));
	char *started = calloc((size_t)(n ? n : 1), 1);

	for (int k = 0; k < n; k++) {
		if (th && started && pthread_create(&th[k], NULL, closer, (void *)(intptr_t)fds[k]) == 0)
			started[k] = 1;
		else
			close(fds[k]);
		if (started && started[k] && !wait)
			pthread_detach(th[k]);
	}
	for (int k = 0; wait && started && k < n; k++)
		if (started[k])
			pthread_join(th[k], NULL);
	free(th);
	free(started);
}

/* Closing the events (not only disabling them) unregisters the uprobe from the target:
 * a disabled uprobe event still traps at its breakpoint, at several microseconds a
 * call.  Left to threads: the kernel takes ~80 ms per close here (it waits for RCU
 * grace periods), during which the target still traps and the rings wait. */
static void disarm(struct rec_probe_fn *fn, uint64_t t)
{
	for (int k = 0; k < fn->nfds; k++)
		ioctl(fn->fds[k], PERF_EVENT_IOC_DISABLE, 0);
	rec_probes_close_fds(fn->fds, fn->nfds, 0);
	fn->nfds = 0;
	fn->disarmed = t ? t : 1;
}

int rec_probes_hit(struct rec_probes *p, const struct perf_event_header *h)
{
	uint64_t limit = p->o->probe_limit, t = 0;
	struct rec_probe_fn *fn;
	int i, ret;

	if (rec_probes_which(p, h, &i, &ret) < 0)
		return 1;
	fn = &p->fn[i];
	/* A return is kept while returns do not outnumber the limit: for a function that
	 * does not recurse, exactly the returns of the activations whose entry was kept. */
	if (ret) {
		if (limit && fn->rets >= limit)
			return 0;
		fn->rets++;
		return 1;
	}
	if (limit && fn->hits >= limit)
		return 0;
	fn->hits++;
	if (limit && fn->hits == limit) {
		if (p->time_off >= 0 && (size_t)p->time_off + 8 <= h->size)
			memcpy(&t, (const char *)h + p->time_off, 8);
		/* the window whose counts are exact ends at the last entry kept */
		disarm(fn, t);
	}
	return 1;
}
