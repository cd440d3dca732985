/* Consumer of a perf data ring (the mmap of a perf event fd), written only against
 * struct perf_event_mmap_page so tests can drive it with a simulated page in memory.
 *
 *   struct ring r;
 *   ring_init(&r, mmap_base, data_size);     // data_size: power of two
 *   ring_begin(&r);                           // acquire-load data_head
 *   while ((h = ring_next(&r)))               // records in order; a record that wraps
 *           use(h);                           // at the end is copied out contiguously
 *   ring_end(&r);                             // release-store data_tail: space reusable
 *
 * The pointer from ring_next() stays valid until the next ring_next()/ring_end().
 * ring_rewind() reads the round's records again (a second pass, before ring_end()).
 * A record with an impossible size (corrupt ring) makes ring_next() return NULL with
 * ring_error() = -EIO; everything up to data_head is then dropped and counted. */
#ifndef RING_H
#define RING_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

struct ring {
	struct perf_event_mmap_page *page;
	unsigned char *data;
	uint64_t size;		/* bytes, power of two */
	uint64_t head;		/* snapshot of data_head taken by ring_begin */
	uint64_t tail;		/* our read position */
	uint64_t begin;		/* tail at ring_begin: where ring_rewind goes back to */
	uint64_t good;		/* end of the last record ring_next returned */
	uint64_t done;		/* before a rewind: how far the first pass consumed */
	uint64_t dropped;	/* bytes skipped after a corrupt record */
	int err;
	_Alignas(8) unsigned char copy[65536 + 8];	/* a wrapped record, copied out */
};

/* `base` is the start of the mapping (the metadata page).  The data area is found
 * through page->data_offset/data_size when the kernel filled them (4.1+), else it
 * follows the first page_size bytes with `data_size` bytes. */
int ring_init(struct ring *r, void *base, size_t data_size);
/* Returns the number of bytes ready to read. */
uint64_t ring_begin(struct ring *r);
const struct perf_event_header *ring_next(struct ring *r);
/* Back to the first record of this round, to read again what ring_next() returned
 * since ring_begin() (a corrupt record ends both passes, its bytes counted once);
 * ring_end() then releases everything the first pass consumed. */
void ring_rewind(struct ring *r);
void ring_end(struct ring *r);
int ring_error(const struct ring *r);
/* Ring i of an array whose elements hold a ring `stride` bytes apart (a member of the
 * collectors' per-cpu structs), from the first one's ring. */
static inline struct ring *ring_at(struct ring *first, size_t stride, int i)
{
	return (struct ring *)((char *)first + (size_t)i * stride);
}
/* Calls fn(ctx, h) on the SAMPLE records of rings 0..n-1 (ring_at), each from where it
 * is to its head, in the order of the u64 time at byte time_off of each record: every
 * ring is in time order, a heap of their next samples merges them.  Equal times (and
 * time_off SIZE_MAX: no times, or a record too short for one, time 0) go lower ring
 * first.  Other records are passed over.  Returns fn's first non-zero value, -ENOMEM,
 * or 0. */
int ring_merge_samples(struct ring *first, size_t stride, int n, size_t time_off,
		       int (*fn)(void *ctx, const struct perf_event_header *h), void *ctx);

/* The barriers, shared with the AUX consumer: head is written by the kernel (or a
 * producer thread in tests) before the record bytes become visible to us. */
static inline uint64_t ring_load_acquire(const __u64 *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static inline void ring_store_release(__u64 *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

#endif
