/* AUX area consumer (Intel PT and other AUX-producing PMUs), written against
 * `struct perf_event_mmap_page` only, so tests drive it with a page in memory.
 *
 * Full-trace mode: the AUX area is mapped read-write; the kernel writes at aux_head and
 * never passes aux_tail (it stops and flags the PERF_RECORD_AUX TRUNCATED instead), we
 * copy [aux_tail, aux_head) out and publish the new aux_tail.
 *
 * Snapshot mode: the AUX area is mapped read-only, the kernel overwrites the oldest data
 * and aux_tail is ignored.  Intel PT reports aux_head as an offset inside the buffer in
 * this mode (other drivers keep it growing); both are handled.  A dump yields the last
 * aux_size bytes ending at aux_head, oldest first, once the buffer has wrapped, and only
 * what is new since the previous dump before that. */
#ifndef RING_AUX_H
#define RING_AUX_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

/* One piece of AUX data, in stream order: p[0] then p[1] (p[1] is used when the range
 * wraps the end of the buffer). */
struct ring_aux_chunk {
	const void *p[2];
	size_t n[2];
	uint64_t size;		/* n[0] + n[1] */
	uint64_t offset;	/* stream position of the first byte (AUXTRACE offset) */
	int snapshot;
	int wrapped;		/* snapshot: the buffer had wrapped, older data is gone */
};

/* Returns 0 to go on; non-zero stops the read (and the data is not consumed). */
typedef int (*ring_aux_sink_fn)(void *ctx, const struct ring_aux_chunk *c);

struct ring_aux {
	struct perf_event_mmap_page *pg;
	const uint8_t *buf;
	uint64_t size;		/* power of two */
	int snapshot;
	uint64_t tail;		/* full trace: our consumed position */
	uint64_t last;		/* snapshot: buffer offset reached by the previous dump */
	uint64_t stream;	/* snapshot: bytes handed out so far (chunk offsets) */
	int wrapped;		/* snapshot: wrap seen once, stays set */
	uint64_t overrun;	/* full trace: bytes the page claimed beyond aux_size */
};

/* `buf` is the mapped AUX area of `size` bytes (pg->aux_size).  Returns -EINVAL when
 * the size is not a power of two or disagrees with the page. */
int ring_aux_init(struct ring_aux *ra, struct perf_event_mmap_page *pg, const void *buf,
		  uint64_t size, int snapshot);

/* Full trace: hands [aux_tail, aux_head) to `fn` (at most `max` bytes, 0 = all), then
 * stores aux_tail.  *got (may be NULL) receives the bytes consumed.  Returns 0, -EINVAL in
 * snapshot mode, or the sink's non-zero value. */
int ring_aux_read(struct ring_aux *ra, uint64_t max, ring_aux_sink_fn fn, void *ctx,
		  uint64_t *got);

/* Snapshot: hands the data to `fn` as described above.  The caller disables the event
 * first (PERF_EVENT_IOC_DISABLE) so aux_head is current and the buffer stands still. */
int ring_aux_snapshot(struct ring_aux *ra, ring_aux_sink_fn fn, void *ctx, uint64_t *got);

/* PERF_RECORD_AUX, as found in the data ring or in perf.data. */
struct ring_aux_event {
	uint64_t offset, size, flags;
};

/* Parses a PERF_RECORD_AUX of `len` bytes.  -EINVAL for another type or a short record. */
int ring_aux_parse_record(const void *rec, size_t len, struct ring_aux_event *out);

/* What the kernel told us about AUX data quality, summed over records. */
struct ring_aux_stats {
	uint64_t records;
	uint64_t bytes;		/* announced by the records */
	uint64_t truncated, overwrite, partial, collision;
	uint64_t lost_records;	/* PERF_RECORD_LOST: data-ring records dropped */
	uint64_t lost;		/* sum of their `lost` counts */
};

void ring_aux_note(struct ring_aux_stats *s, const struct ring_aux_event *e);
/* Counts PERF_RECORD_AUX and PERF_RECORD_LOST; other records are ignored.  Returns 1 when
 * the record was counted, 0 otherwise, -EINVAL when it is malformed. */
int ring_aux_note_record(struct ring_aux_stats *s, const void *rec, size_t len);

/* "truncated|partial" (or "none") into buf; returns buf. */
const char *ring_aux_flags_str(uint64_t flags, char *buf, size_t len);

#endif
