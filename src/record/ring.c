/* perf data-ring consumer (see ring.h). */
#include "record/ring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int ring_init(struct ring *r, void *base, size_t data_size)
{
	struct perf_event_mmap_page *pg = base;
	uint64_t off = pg->data_offset, size = pg->data_size;

	if (!off || !size) {
		off = (uint64_t)sysconf(_SC_PAGESIZE);
		size = data_size;
	}
	if (size == 0 || (size & (size - 1)))
		return -EINVAL;
	r->page = pg;
	r->data = (unsigned char *)base + off;
	r->size = size;
	r->tail = r->head = r->begin = r->good = r->done = ring_load_acquire(&pg->data_tail);
	r->dropped = 0;
	r->err = 0;
	return 0;
}

uint64_t ring_begin(struct ring *r)
{
	r->head = ring_load_acquire(&r->page->data_head);
	/* A head more than one ring ahead means the producer overwrote unread data (only
	 * possible for a non-writable, overwrite-mode ring): skip to what is intact. */
	if (r->head - r->tail > r->size) {
		r->dropped += r->head - r->tail;
		r->tail = r->head;
		r->err = -EIO;
	}
	r->begin = r->good = r->done = r->tail;
	return r->head - r->tail;
}

const struct perf_event_header *ring_next(struct ring *r)
{
	uint64_t avail = r->head - r->tail, off = r->tail & (r->size - 1);
	struct perf_event_header h;
	unsigned char *p = r->data + off;

	if (avail < sizeof(h))
		return NULL;
	if (off + sizeof(h) <= r->size) {
		memcpy(&h, p, sizeof(h));
	} else {
		size_t first = (size_t)(r->size - off);
		memcpy(&h, p, first);
		memcpy((unsigned char *)&h + first, r->data, sizeof(h) - first);
	}
	if (h.size < sizeof(h) || h.size > avail) {
		r->dropped += avail;
		r->tail = r->head;
		r->err = -EIO;
		return NULL;
	}
	r->tail += h.size;
	r->good = r->tail;
	if (off + h.size <= r->size)
		return (const struct perf_event_header *)p;
	{
		size_t first = (size_t)(r->size - off);
		memcpy(r->copy, p, first);
		memcpy(r->copy + first, r->data, h.size - first);
	}
	return (const struct perf_event_header *)r->copy;
}

void ring_rewind(struct ring *r)
{
	if (r->tail > r->done)
		r->done = r->tail;
	r->head = r->good;
	r->tail = r->begin;
}

void ring_end(struct ring *r)
{
	if (r->done > r->tail)
		r->tail = r->done;
	ring_store_release(&r->page->data_tail, r->tail);
}

int ring_error(const struct ring *r)
{
	return r->err;
}

/* A ring's next sample in the merge, and its time. */
struct head {
	const struct perf_event_header *h;
	uint64_t t;
	struct ring *rg;
	int ring;
};

static int before(const struct head *a, const struct head *b)
{
	return a->t != b->t ? a->t < b->t : a->ring < b->ring;
}

static void next_sample(size_t time_off, struct head *hd)
{
	const struct perf_event_header *h;

	while ((h = ring_next(hd->rg)) && h->type != PERF_RECORD_SAMPLE)
		;
	hd->h = h;
	hd->t = 0;
	if (h && time_off <= h->size && h->size - time_off >= 8)
		memcpy(&hd->t, (const char *)h + time_off, 8);
}

static void sift_down(struct head *heap, int n, int i)
{
	for (;;) {
		int m = i, c = 2 * i + 1;
		struct head tmp;

		if (c < n && before(&heap[c], &heap[m]))
			m = c;
		if (c + 1 < n && before(&heap[c + 1], &heap[m]))
			m = c + 1;
		if (m == i)
			return;
		tmp = heap[i];
		heap[i] = heap[m];
		heap[m] = tmp;
		i = m;
	}
}

int ring_merge_samples(struct ring *first, size_t stride, int n, size_t time_off,
		       int (*fn)(void *ctx, const struct perf_event_header *h), void *ctx)
{
	struct head one[8], *heap = n <= 8 ? one : malloc((size_t)n * sizeof(*heap));
	int nh = 0, e = 0;

	if (!heap)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		heap[nh].ring = i;
		heap[nh].rg = ring_at(first, stride, i);
		next_sample(time_off, &heap[nh]);
		nh += heap[nh].h != NULL;
	}
	for (int i = nh / 2 - 1; i >= 0; i--)
		sift_down(heap, nh, i);
	while (e == 0 && nh > 0) {
		e = fn(ctx, heap[0].h);
		next_sample(time_off, &heap[0]);
		if (!heap[0].h)
			heap[0] = heap[--nh];
		sift_down(heap, nh, 0);
	}
	if (heap != one)
		free(heap);
	return e;
}
