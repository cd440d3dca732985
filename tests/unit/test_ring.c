/* Data-ring consumer on a simulated perf_event_mmap_page: a producer here writes
 * records exactly as the kernel does (bytes at head & (size-1), wrapping, then a
 * release store of data_head), and the consumer must return them in order, whole. */
#include "xp_test.h"

#include <errno.h>
#include <unistd.h>

#include "record/ring.h"

#define DATA 256

struct sim {
	_Alignas(4096) unsigned char mem[4096 + DATA];
	struct perf_event_mmap_page *pg;
	uint64_t head;
};

static void sim_init(struct sim *s, uint64_t start)
{
	memset(s->mem, 0, sizeof(s->mem));
	s->pg = (struct perf_event_mmap_page *)s->mem;
	s->pg->data_offset = 4096;
	s->pg->data_size = DATA;
	s->pg->data_head = s->pg->data_tail = start;
	s->head = start;
}

/* Record of `size` bytes: header (type 9 = PERF_RECORD_SAMPLE) then bytes seq, seq+1... */
static void produce(struct sim *s, uint16_t size, unsigned char seq)
{
	unsigned char rec[512];
	struct perf_event_header h = { PERF_RECORD_SAMPLE, 0, size };

	memcpy(rec, &h, sizeof(h));
	for (unsigned i = sizeof(h); i < size; i++)
		rec[i] = (unsigned char)(seq + i);
	for (unsigned i = 0; i < size; i++)
		s->mem[4096 + ((s->head + i) & (DATA - 1))] = rec[i];
	s->head += size;
}

static void publish(struct sim *s)
{
	ring_store_release(&s->pg->data_head, s->head);
}

static void check_rec(const struct perf_event_header *h, uint16_t size, unsigned char seq)
{
	const unsigned char *p = (const unsigned char *)h;

	assert_non_null(h);
	assert_int_equal(h->type, PERF_RECORD_SAMPLE);
	assert_int_equal(h->size, size);
	assert_int_equal((uintptr_t)h % 8, 0);
	for (unsigned i = sizeof(*h); i < size; i++)
		assert_int_equal(p[i], (unsigned char)(seq + i));
}

static void test_in_order_and_tail(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	sim_init(&s, 0);
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	assert_int_equal(ring_begin(&r), 0);
	assert_null(ring_next(&r));
	produce(&s, 16, 1);
	produce(&s, 24, 2);
	publish(&s);
	assert_int_equal(ring_begin(&r), 40);
	check_rec(ring_next(&r), 16, 1);
	check_rec(ring_next(&r), 24, 2);
	assert_null(ring_next(&r));
	assert_int_equal(s.pg->data_tail, 0);	/* nothing released before ring_end */
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 40);
	assert_int_equal(ring_error(&r), 0);
}

static void test_record_wraps(void **state)
{
	static struct sim s;
	struct ring r;
	const struct perf_event_header *h;

	(void)state;
	sim_init(&s, 200);	/* 56 bytes before the end */
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	produce(&s, 48, 3);	/* 200..247: fits */
	produce(&s, 64, 4);	/* 248..311: header fits, body wraps */
	produce(&s, 32, 5);
	publish(&s);
	assert_int_equal(ring_begin(&r), 144);
	h = ring_next(&r);
	check_rec(h, 48, 3);
	assert_ptr_equal(h, s.mem + 4096 + 200);	/* in place, no copy */
	h = ring_next(&r);
	check_rec(h, 64, 4);
	assert_ptr_equal(h, r.copy);
	check_rec(ring_next(&r), 32, 5);
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 344);
}

static void test_header_wraps(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	sim_init(&s, DATA - 4);	/* the 8-byte header itself is split 4 + 4 */
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	produce(&s, 40, 6);
	publish(&s);
	ring_begin(&r);
	check_rec(ring_next(&r), 40, 6);
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, DATA + 36);
}

static void test_partial_record_waits(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	sim_init(&s, 0);
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	produce(&s, 32, 7);
	s.pg->data_head = 20;	/* producer published only part: must not happen, but size > avail */
	ring_begin(&r);
	assert_null(ring_next(&r));
	assert_int_equal(ring_error(&r), -EIO);
	assert_int_equal(r.dropped, 20);
}

/* Records of 16 and 16 bytes then `more` bytes, the second with its size field set
 * to 0, published; the consumer's round begun. */
static void corrupt_second(struct sim *s, struct ring *r, uint16_t more)
{
	sim_init(s, 0);
	assert_int_equal(ring_init(r, s->mem, DATA), 0);
	produce(s, 16, 1);
	produce(s, 16, 2);
	if (more)
		produce(s, more, 3);
	s->mem[4096 + 16 + 6] = 0;
	s->mem[4096 + 16 + 7] = 0;
	publish(s);
	ring_begin(r);
}

static void test_corrupt_size(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	corrupt_second(&s, &r, 0);
	check_rec(ring_next(&r), 16, 1);
	assert_null(ring_next(&r));
	assert_int_equal(ring_error(&r), -EIO);
	assert_int_equal(r.dropped, 16);
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 32);
}

/* A second pass (sideband first, then samples) sees the same records, the wrapped one
 * copied out again; nothing is released before ring_end, everything after. */
static void test_rewind(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	sim_init(&s, 200);
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	produce(&s, 48, 3);
	produce(&s, 64, 4);	/* wraps */
	publish(&s);
	assert_int_equal(ring_begin(&r), 112);
	check_rec(ring_next(&r), 48, 3);
	check_rec(ring_next(&r), 64, 4);
	assert_null(ring_next(&r));
	ring_rewind(&r);
	assert_int_equal(s.pg->data_tail, 200);
	check_rec(ring_next(&r), 48, 3);
	check_rec(ring_next(&r), 64, 4);
	assert_null(ring_next(&r));
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 312);
	/* the next round starts after them */
	produce(&s, 16, 5);
	publish(&s);
	assert_int_equal(ring_begin(&r), 16);
	check_rec(ring_next(&r), 16, 5);
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 328);
}

/* After a corrupt record the second pass stops where the first did, the bad bytes are
 * counted once, and ring_end releases them with the rest. */
static void test_rewind_corrupt(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	corrupt_second(&s, &r, 24);
	check_rec(ring_next(&r), 16, 1);
	assert_null(ring_next(&r));
	ring_rewind(&r);
	check_rec(ring_next(&r), 16, 1);
	assert_null(ring_next(&r));
	assert_int_equal(r.dropped, 40);
	ring_end(&r);
	assert_int_equal(s.pg->data_tail, 56);
}

/* Many laps: every record comes out once, in order, whatever its place in the ring. */
static void test_many_laps(void **state)
{
	static struct sim s;
	struct ring r;
	unsigned seed = 12345, produced = 0, consumed = 0;
	uint16_t sizes[64];
	unsigned char seqs[64];

	(void)state;
	sim_init(&s, 0);
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	for (int round = 0; round < 2000; round++) {
		/* produce while there is room (head - tail <= DATA) */
		for (;;) {
			uint16_t sz = (uint16_t)(8 * (1 + (seed = seed * 1103515245 + 12345) % 12));
			if (s.head + sz - s.pg->data_tail > DATA)
				break;
			sizes[produced % 64] = sz;
			seqs[produced % 64] = (unsigned char)produced;
			produce(&s, sz, (unsigned char)produced);
			produced++;
			if (seed % 3 == 0)
				break;
		}
		publish(&s);
		ring_begin(&r);
		const struct perf_event_header *h;
		while ((h = ring_next(&r))) {
			check_rec(h, sizes[consumed % 64], seqs[consumed % 64]);
			consumed++;
		}
		ring_end(&r);
		assert_int_equal(consumed, produced);
	}
	assert_true(s.head > 100 * DATA);
	assert_int_equal(ring_error(&r), 0);
}

static void test_legacy_page_layout(void **state)
{
	static struct sim s;
	struct ring r;

	(void)state;
	sim_init(&s, 0);
	s.pg->data_offset = 0;	/* pre-4.1 kernels: data follows one page */
	s.pg->data_size = 0;
	if (sysconf(_SC_PAGESIZE) != 4096)
		skip();
	assert_int_equal(ring_init(&r, s.mem, DATA), 0);
	assert_ptr_equal(r.data, s.mem + 4096);
	assert_int_equal(ring_init(&r, s.mem, 100), -EINVAL);
}

/* A record of `type` and `size` bytes whose u64 at byte 8 is t (when it fits). */
static void produce_at(struct sim *s, uint32_t type, uint16_t size, uint64_t t)
{
	unsigned char rec[64] = { 0 };
	struct perf_event_header h = { type, 0, size };

	memcpy(rec, &h, sizeof(h));
	if (size >= 16)
		memcpy(rec + 8, &t, 8);
	for (unsigned i = 0; i < size; i++)
		s->mem[4096 + ((s->head + i) & (DATA - 1))] = rec[i];
	s->head += size;
}

struct seen {
	uint64_t t[16];
	uint16_t size[16];
	int n, stop_at;
};

static int see(void *ctx, const struct perf_event_header *h)
{
	struct seen *v = ctx;

	assert_int_equal(h->type, PERF_RECORD_SAMPLE);
	v->t[v->n] = 0;
	v->size[v->n] = h->size;
	if (h->size >= 16)
		memcpy(&v->t[v->n], (const char *)h + 8, 8);
	v->n++;
	return v->n == v->stop_at ? -42 : 0;
}

/* Samples of three rings (one empty), records wrapping at the end of two, a non-sample
 * between them: handed over by time, equal times lower ring first, a sample too short
 * for a time first; without times, ring by ring. */
static void test_merge_samples(void **state)
{
	static struct sim a, b, c;
	static struct ring rg[3];	/* a, b, c */
	struct seen got = { .stop_at = -1 };
	const uint64_t want[] = { 0, 1, 2, 3, 4, 5, 6, 7, 7 }, ring_order[] = { 1, 4, 5, 7, 0, 2, 3, 6, 7 };

	(void)state;
	sim_init(&a, 240);
	sim_init(&b, 232);
	sim_init(&c, 0);
	produce_at(&a, PERF_RECORD_SAMPLE, 24, 1);	/* wraps */
	produce_at(&a, PERF_RECORD_SAMPLE, 24, 4);
	produce_at(&a, PERF_RECORD_MMAP2, 32, 0);
	produce_at(&a, PERF_RECORD_SAMPLE, 24, 5);
	produce_at(&a, PERF_RECORD_SAMPLE, 24, 7);
	produce_at(&b, PERF_RECORD_SAMPLE, 8, 0);	/* no room for a time */
	produce_at(&b, PERF_RECORD_SAMPLE, 24, 2);	/* wraps */
	produce_at(&b, PERF_RECORD_SAMPLE, 24, 3);
	produce_at(&b, PERF_RECORD_SAMPLE, 24, 6);
	produce_at(&b, PERF_RECORD_SAMPLE, 32, 7);
	publish(&a);
	publish(&b);
	assert_int_equal(ring_init(&rg[0], a.mem, DATA), 0);
	assert_int_equal(ring_init(&rg[1], b.mem, DATA), 0);
	assert_int_equal(ring_init(&rg[2], c.mem, DATA), 0);
	for (int i = 0; i < 3; i++)
		ring_begin(&rg[i]);
	assert_int_equal(ring_merge_samples(rg, sizeof(rg[0]), 3, 8, see, &got), 0);
	assert_int_equal(got.n, 9);
	assert_memory_equal(got.t, want, sizeof(want));
	assert_int_equal(got.size[7], 24);	/* a's 7 before b's */
	assert_int_equal(got.size[8], 32);
	for (int i = 0; i < 3; i++)
		ring_rewind(&rg[i]);
	got = (struct seen){ .stop_at = -1 };
	assert_int_equal(ring_merge_samples(rg, sizeof(rg[0]), 3, SIZE_MAX, see, &got), 0);
	assert_int_equal(got.n, 9);
	assert_memory_equal(got.t, ring_order, sizeof(ring_order));
	/* the callback's error ends the merge, and is returned */
	for (int i = 0; i < 3; i++)
		ring_rewind(&rg[i]);
	got = (struct seen){ .stop_at = 3 };
	assert_int_equal(ring_merge_samples(rg, sizeof(rg[0]), 3, 8, see, &got), -42);
	assert_int_equal(got.n, 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_in_order_and_tail),
		cmocka_unit_test(test_record_wraps),
		cmocka_unit_test(test_header_wraps),
		cmocka_unit_test(test_partial_record_waits),
		cmocka_unit_test(test_corrupt_size),
		cmocka_unit_test(test_rewind),
		cmocka_unit_test(test_rewind_corrupt),
		cmocka_unit_test(test_many_laps),
		cmocka_unit_test(test_legacy_page_layout),
		cmocka_unit_test(test_merge_samples),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
