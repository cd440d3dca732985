/* `--probe-limit`: counting each probe's hits as they are written, dropping those past
 * the limit and disarming the probe at it; see rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <string.h>
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

/* Closing the events (not only disabling them) unregisters the uprobe from the target:
 * a disabled uprobe event still traps at its breakpoint, at the full cost of a hit. */
static void disarm(struct rec_probe_fn *fn, uint64_t t)
{
	for (int k = 0; k < fn->nfds; k++)
		close(fn->fds[k]);
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
