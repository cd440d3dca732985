/* AUX area consumer: see ring_aux.h for the two modes. */
#include "record/ring_aux.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* In snapshot mode a wrapped buffer is told apart from a fresh one by looking at bytes
 * the kernel has not written yet: AUX pages are allocated zeroed, so any non-zero byte
 * past the head means the trace went round.  One page of them is plenty. */
#define RING_AUX_WRAP_PROBE 4096

int ring_aux_init(struct ring_aux *ra, struct perf_event_mmap_page *pg, const void *buf,
		  uint64_t size, int snapshot)
{
	if (!pg || !buf || size == 0 || (size & (size - 1)))
		return -EINVAL;
	if (pg->aux_size && pg->aux_size != size)
		return -EINVAL;
	memset(ra, 0, sizeof(*ra));
	ra->pg = pg;
	ra->buf = buf;
	ra->size = size;
	ra->snapshot = snapshot;
	ra->tail = __atomic_load_n(&pg->aux_tail, __ATOMIC_RELAXED);
	return 0;
}

static void split(const struct ring_aux *ra, uint64_t pos, uint64_t len,
		  struct ring_aux_chunk *c)
{
	uint64_t off = pos & (ra->size - 1);
	uint64_t first = ra->size - off;

	if (first > len)
		first = len;
	c->p[0] = ra->buf + off;
	c->n[0] = first;
	c->p[1] = ra->buf;
	c->n[1] = len - first;
	c->size = len;
}

int ring_aux_read(struct ring_aux *ra, uint64_t max, ring_aux_sink_fn fn, void *ctx,
		  uint64_t *got)
{
	struct ring_aux_chunk c = { 0 };
	uint64_t head, avail;
	int rc;

	if (got)
		*got = 0;
	if (ra->snapshot)
		return -EINVAL;
	/* Acquire pairs with the kernel's barrier before it publishes aux_head: the data
	 * below head is visible once head is. */
	head = __atomic_load_n(&ra->pg->aux_head, __ATOMIC_ACQUIRE);
	if (head < ra->tail)
		return -EIO;
	avail = head - ra->tail;
	if (avail > ra->size) {
		/* The kernel never overruns aux_tail in this mode; a page that says so has
		 * lost the oldest bytes, so count them and keep the newest. */
		ra->overrun += avail - ra->size;
		ra->tail = head - ra->size;
		avail = ra->size;
	}
	if (max && avail > max)
		avail = max;
	if (avail == 0)
		return 0;
	split(ra, ra->tail, avail, &c);
	c.offset = ra->tail;
	rc = fn(ctx, &c);
	if (rc)
		return rc;
	ra->tail += avail;
	/* Release: our reads of the data are done before the kernel may reuse the space. */
	__atomic_store_n(&ra->pg->aux_tail, ra->tail, __ATOMIC_RELEASE);
	if (got)
		*got = avail;
	return 0;
}

static int tail_written(const struct ring_aux *ra, uint64_t pos)
{
	uint64_t from = ra->size > RING_AUX_WRAP_PROBE ? ra->size - RING_AUX_WRAP_PROBE : 0;

	if (from < pos)
		from = pos;
	for (uint64_t i = from; i < ra->size; i++)
		if (ra->buf[i])
			return 1;
	return 0;
}

int ring_aux_snapshot(struct ring_aux *ra, ring_aux_sink_fn fn, void *ctx, uint64_t *got)
{
	struct ring_aux_chunk c = { 0 };
	uint64_t head, pos, start, len;
	int wrapped;
	int rc;

	if (got)
		*got = 0;
	if (!ra->snapshot)
		return -EINVAL;
	head = __atomic_load_n(&ra->pg->aux_head, __ATOMIC_ACQUIRE);
	pos = head & (ra->size - 1);
	wrapped = ra->wrapped || head >= ra->size || pos < ra->last ||
		  tail_written(ra, pos);
	if (wrapped) {
		start = pos;
		len = ra->size;
	} else {
		start = ra->last;
		len = pos - ra->last;
	}
	if (len) {
		split(ra, start, len, &c);
		c.offset = ra->stream;
		c.snapshot = 1;
		c.wrapped = wrapped;
		rc = fn(ctx, &c);
		if (rc)
			return rc;
	}
	ra->wrapped = wrapped;
	ra->last = pos;
	ra->stream += len;
	if (got)
		*got = len;
	return 0;
}

int ring_aux_parse_record(const void *rec, size_t len, struct ring_aux_event *out)
{
	struct perf_event_header h;
	uint64_t w[3];

	if (len < sizeof(h) + sizeof(w))
		return -EINVAL;
	memcpy(&h, rec, sizeof(h));
	if (h.type != PERF_RECORD_AUX || h.size < sizeof(h) + sizeof(w) || h.size > len)
		return -EINVAL;
	memcpy(w, (const uint8_t *)rec + sizeof(h), sizeof(w));
	out->offset = w[0];
	out->size = w[1];
	out->flags = w[2];
	return 0;
}

void ring_aux_note(struct ring_aux_stats *s, const struct ring_aux_event *e)
{
	s->records++;
	s->bytes += e->size;
	s->truncated += !!(e->flags & PERF_AUX_FLAG_TRUNCATED);
	s->overwrite += !!(e->flags & PERF_AUX_FLAG_OVERWRITE);
	s->partial += !!(e->flags & PERF_AUX_FLAG_PARTIAL);
	s->collision += !!(e->flags & PERF_AUX_FLAG_COLLISION);
}

int ring_aux_note_record(struct ring_aux_stats *s, const void *rec, size_t len)
{
	struct perf_event_header h;
	struct ring_aux_event e;
	uint64_t w[2];

	if (len < sizeof(h))
		return -EINVAL;
	memcpy(&h, rec, sizeof(h));
	if (h.type == PERF_RECORD_AUX) {
		if (ring_aux_parse_record(rec, len, &e))
			return -EINVAL;
		ring_aux_note(s, &e);
		return 1;
	}
	if (h.type == PERF_RECORD_LOST) {
		/* { u64 id; u64 lost; } */
		if (h.size < sizeof(h) + sizeof(w) || h.size > len)
			return -EINVAL;
		memcpy(w, (const uint8_t *)rec + sizeof(h), sizeof(w));
		s->lost_records++;
		s->lost += w[1];
		return 1;
	}
	return 0;
}

const char *ring_aux_flags_str(uint64_t flags, char *buf, size_t len)
{
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{ PERF_AUX_FLAG_TRUNCATED, "truncated" },
		{ PERF_AUX_FLAG_OVERWRITE, "overwrite" },
		{ PERF_AUX_FLAG_PARTIAL, "partial" },
		{ PERF_AUX_FLAG_COLLISION, "collision" },
	};
	size_t used = 0;

	if (!len)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(flags & names[i].bit))
			continue;
		int n = snprintf(buf + used, len - used, "%s%s", used ? "|" : "", names[i].name);
		if (n < 0 || (size_t)n >= len - used)
			break;
		used += n;
	}
	if (!used)
		snprintf(buf, len, "none");
	return buf;
}
