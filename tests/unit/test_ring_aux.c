/* AUX consumer against a simulated perf_event_mmap_page: a tiny "kernel" below writes a
 * known byte stream into the AUX area the way the kernel does in each mode, and every
 * test compares the consumer's output byte for byte with that stream. */
#include "xp_test.h"

#include <errno.h>

#include "record/ring_aux.h"

/* Stream byte k; never zero, like real trace data past a PSB. */
static uint8_t sbyte(uint64_t k)
{
	return (uint8_t)(k % 251 + 1);
}

struct sim {
	struct perf_event_mmap_page pg;
	uint8_t *aux;
	uint64_t size;
	int snapshot;
	int pt_head;		/* snapshot: head is an offset in the buffer (Intel PT) */
	uint64_t written;	/* bytes of the stream produced */
	uint64_t pos;		/* kernel's write position (monotonic) */
	/* PERF_RECORD_AUX records the kernel would put in the data ring. */
	uint8_t recs[4096];
	size_t nrecs;
};

static void sim_init(struct sim *s, uint64_t size, int snapshot, int pt_head)
{
	memset(s, 0, sizeof(*s));
	s->aux = calloc(1, size);
	s->size = size;
	s->snapshot = snapshot;
	s->pt_head = pt_head;
	s->pg.aux_offset = 4096 * 9;
	s->pg.aux_size = size;
}

static void sim_free(struct sim *s)
{
	free(s->aux);
}

static void sim_aux_record(struct sim *s, uint64_t off, uint64_t size, uint64_t flags)
{
	struct perf_event_header h = { PERF_RECORD_AUX, 0, sizeof(h) + 24 };
	uint64_t w[3] = { off, size, flags };

	assert_true(s->nrecs + h.size <= sizeof(s->recs));
	memcpy(s->recs + s->nrecs, &h, sizeof(h));
	memcpy(s->recs + s->nrecs + sizeof(h), w, sizeof(w));
	s->nrecs += h.size;
}

/* The hardware produces n more bytes of the stream.  Full trace: stops at aux_tail and
 * flags the record TRUNCATED (the kernel then disables the event). */
static uint64_t sim_write(struct sim *s, uint64_t n)
{
	uint64_t start = s->pos, flags = 0;

	if (!s->snapshot) {
		uint64_t space = s->size - (s->pos - s->pg.aux_tail);
		if (n > space) {
			n = space;
			flags |= PERF_AUX_FLAG_TRUNCATED;
		}
	} else {
		flags |= PERF_AUX_FLAG_OVERWRITE;
	}
	for (uint64_t i = 0; i < n; i++)
		s->aux[(s->pos + i) & (s->size - 1)] = sbyte(s->written + i);
	s->written += n;
	s->pos += n;
	s->pg.aux_head = s->snapshot && s->pt_head ? s->pos & (s->size - 1) : s->pos;
	sim_aux_record(s, start, n, flags);
	return n;
}

struct out {
	uint8_t buf[1 << 16];
	size_t len;
	unsigned calls;
	uint64_t offsets[64];
	int fail;
};

static int collect(void *ctx, const struct ring_aux_chunk *c)
{
	struct out *o = ctx;

	if (o->fail)
		return 7;
	assert_int_equal(c->n[0] + c->n[1], c->size);
	assert_true(o->len + c->size <= sizeof(o->buf));
	memcpy(o->buf + o->len, c->p[0], c->n[0]);
	memcpy(o->buf + o->len + c->n[0], c->p[1], c->n[1]);
	o->len += c->size;
	if (o->calls < 64)
		o->offsets[o->calls] = c->offset;
	o->calls++;
	return 0;
}

/* out[from .. from+len) must be stream bytes [k, k+len). */
static void assert_stream(const struct out *o, size_t from, uint64_t k, size_t len)
{
	assert_true(from + len <= o->len);
	for (size_t i = 0; i < len; i++) {
		if (o->buf[from + i] != sbyte(k + i))
			fail_msg("byte %zu: got %u, stream byte %llu is %u", from + i,
				 o->buf[from + i], (unsigned long long)(k + i), sbyte(k + i));
	}
}

static void test_full_wraparound(void **state)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	uint64_t got;

	(void)state;
	memset(&o, 0, sizeof(o));
	sim_init(&s, 1024, 0, 0);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 0), 0);
	/* 700, read, 700 (wraps at 1024), read, then 3 more rounds of odd sizes. */
	const uint64_t sizes[] = { 700, 700, 1000, 24, 1024, 333 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		assert_int_equal(sim_write(&s, sizes[i]), sizes[i]);
		assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 0);
		assert_int_equal(got, sizes[i]);
		assert_int_equal(s.pg.aux_tail, s.pos);
	}
	assert_int_equal(o.len, 700 + 700 + 1000 + 24 + 1024 + 333);
	assert_stream(&o, 0, 0, o.len);
	/* Chunk offsets are stream positions: what AUXTRACE records carry. */
	assert_int_equal(o.offsets[1], 700);
	assert_int_equal(o.offsets[2], 1400);
	/* Nothing new: no call, nothing consumed. */
	unsigned calls = o.calls;
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 0);
	assert_int_equal(got, 0);
	assert_int_equal(o.calls, calls);
	assert_int_equal(ra.overrun, 0);
	sim_free(&s);
}

static void test_full_partial_reads(void **state)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	uint64_t got, total = 0;

	(void)state;
	memset(&o, 0, sizeof(o));
	sim_init(&s, 512, 0, 0);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 0), 0);
	sim_write(&s, 400);
	/* Read at most 150 bytes at a time while the hardware keeps writing. */
	assert_int_equal(ring_aux_read(&ra, 150, collect, &o, &got), 0);
	assert_int_equal(got, 150);
	assert_int_equal(s.pg.aux_tail, 150);
	/* Only the consumed part is free again: 250 pending, 262 free. */
	assert_int_equal(sim_write(&s, 300), 262);
	for (int i = 0; i < 10; i++) {
		assert_int_equal(ring_aux_read(&ra, 150, collect, &o, &got), 0);
		total += got;
	}
	assert_int_equal(total, 512);
	assert_int_equal(o.len, 662);
	assert_stream(&o, 0, 0, 662);
	/* The sink refusing data leaves it in the buffer for the next read. */
	sim_write(&s, 100);
	o.fail = 1;
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 7);
	assert_int_equal(got, 0);
	assert_int_equal(s.pg.aux_tail, 662);
	o.fail = 0;
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 0);
	assert_int_equal(got, 100);
	assert_stream(&o, 0, 0, 762);
	sim_free(&s);
}

static void test_full_truncation(void **state)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	struct ring_aux_stats st = { 0 };
	uint64_t got;

	(void)state;
	memset(&o, 0, sizeof(o));
	sim_init(&s, 256, 0, 0);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 0), 0);
	/* The consumer is late: 200 + 200 bytes arrive, only 256 fit. */
	assert_int_equal(sim_write(&s, 200), 200);
	assert_int_equal(sim_write(&s, 200), 56);
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 0);
	assert_int_equal(got, 256);
	assert_stream(&o, 0, 0, 256);
	/* The records say what happened, exactly. */
	for (size_t off = 0; off < s.nrecs;) {
		const struct perf_event_header *h = (const void *)(s.recs + off);
		assert_int_equal(ring_aux_note_record(&st, s.recs + off, s.nrecs - off), 1);
		off += h->size;
	}
	assert_int_equal(st.records, 2);
	assert_int_equal(st.bytes, 256);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.overwrite, 0);
	sim_free(&s);
}

static void test_full_corrupt_page(void **state)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	uint64_t got;

	(void)state;
	memset(&o, 0, sizeof(o));
	sim_init(&s, 256, 0, 0);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 0), 0);
	/* A head that claims more than the buffer holds: the newest 256 bytes are read,
	 * the rest counted as overrun. */
	for (uint64_t k = 300; k < 556; k++)
		s.aux[k & 255] = sbyte(k);
	s.pg.aux_head = 556;
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), 0);
	assert_int_equal(got, 256);
	assert_int_equal(ra.overrun, 300);
	assert_int_equal(s.pg.aux_tail, 556);
	assert_stream(&o, 0, 300, 256);
	/* A head behind the tail is an error, nothing is consumed. */
	s.pg.aux_head = 100;
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), -EIO);
	assert_int_equal(s.pg.aux_tail, 556);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), -EINVAL);
	sim_free(&s);
}

static void snapshot_case(int pt_head)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	uint64_t got;

	memset(&o, 0, sizeof(o));
	sim_init(&s, 8192, 1, pt_head);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 1), 0);
	assert_int_equal(ring_aux_read(&ra, 0, collect, &o, &got), -EINVAL);
	/* Before any wrap: each dump gives what is new. */
	sim_write(&s, 3000);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 3000);
	sim_write(&s, 2000);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 2000);
	assert_int_equal(o.len, 5000);
	assert_stream(&o, 0, 0, 5000);
	assert_int_equal(o.offsets[1], 3000);
	/* The ring overwrites: 5000 + 15000 = 20000 written, the dump is the last 8192
	 * bytes ending at the head, oldest first. */
	sim_write(&s, 15000);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 8192);
	assert_int_equal(o.len, 5000 + 8192);
	assert_stream(&o, 5000, 20000 - 8192, 8192);
	/* Once wrapped, every dump is the whole buffer. */
	sim_write(&s, 100);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 8192);
	assert_stream(&o, 5000 + 8192, 20100 - 8192, 8192);
	sim_free(&s);
}

static void test_snapshot_pt_head(void **state)
{
	(void)state;
	snapshot_case(1);
}

static void test_snapshot_monotonic_head(void **state)
{
	(void)state;
	snapshot_case(0);
}

/* Intel PT in snapshot mode: a head that wrapped exactly back to where the previous dump
 * ended; only the bytes past the head show the wrap. */
static void test_snapshot_wrap_to_same_offset(void **state)
{
	static struct out o;
	struct sim s;
	struct ring_aux ra;
	uint64_t got;

	(void)state;
	memset(&o, 0, sizeof(o));
	sim_init(&s, 8192, 1, 1);
	assert_int_equal(ring_aux_init(&ra, &s.pg, s.aux, s.size, 1), 0);
	sim_write(&s, 1000);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 1000);
	sim_write(&s, 8192);
	assert_int_equal(s.pg.aux_head, 1000);
	assert_int_equal(ring_aux_snapshot(&ra, collect, &o, &got), 0);
	assert_int_equal(got, 8192);
	assert_stream(&o, 1000, 1000, 8192);
	/* And a dump with nothing new and no wrap yields nothing. */
	struct sim t;
	struct ring_aux rb;
	sim_init(&t, 4096, 1, 1);
	assert_int_equal(ring_aux_init(&rb, &t.pg, t.aux, t.size, 1), 0);
	assert_int_equal(ring_aux_snapshot(&rb, collect, &o, &got), 0);
	assert_int_equal(got, 0);
	sim_free(&t);
	sim_free(&s);
}

static void test_records_and_flags(void **state)
{
	struct ring_aux_stats st = { 0 };
	struct ring_aux_event e;
	uint8_t rec[64] = { 0 };
	struct perf_event_header h = { PERF_RECORD_AUX, 0, 8 + 24 + 8 };	/* + sample_id */
	uint64_t w[3] = { 4096, 512, PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL };
	char buf[64];

	(void)state;
	memcpy(rec, &h, sizeof(h));
	memcpy(rec + 8, w, sizeof(w));
	assert_int_equal(ring_aux_parse_record(rec, h.size, &e), 0);
	assert_int_equal(e.offset, 4096);
	assert_int_equal(e.size, 512);
	assert_int_equal(e.flags, 5);
	assert_int_equal(ring_aux_parse_record(rec, 20, &e), -EINVAL);
	ring_aux_note(&st, &e);
	assert_int_equal(st.truncated, 1);
	assert_int_equal(st.partial, 1);
	assert_string_equal(ring_aux_flags_str(e.flags, buf, sizeof(buf)), "truncated|partial");
	assert_string_equal(ring_aux_flags_str(PERF_AUX_FLAG_OVERWRITE | PERF_AUX_FLAG_COLLISION,
					       buf, sizeof(buf)), "overwrite|collision");
	assert_string_equal(ring_aux_flags_str(0, buf, sizeof(buf)), "none");

	struct perf_event_header lh = { PERF_RECORD_LOST, 0, 8 + 16 };
	uint64_t lw[2] = { 77, 12 };
	memcpy(rec, &lh, sizeof(lh));
	memcpy(rec + 8, lw, sizeof(lw));
	assert_int_equal(ring_aux_note_record(&st, rec, lh.size), 1);
	assert_int_equal(st.lost_records, 1);
	assert_int_equal(st.lost, 12);
	lh.size = 12;
	memcpy(rec, &lh, sizeof(lh));
	assert_int_equal(ring_aux_note_record(&st, rec, 24), -EINVAL);
	struct perf_event_header ch = { PERF_RECORD_COMM, 0, 16 };
	memcpy(rec, &ch, sizeof(ch));
	assert_int_equal(ring_aux_note_record(&st, rec, 16), 0);
	assert_int_equal(ring_aux_parse_record(rec, 40, &e), -EINVAL);
}

static void test_init_checks(void **state)
{
	struct perf_event_mmap_page pg = { 0 };
	struct ring_aux ra;
	static uint8_t buf[4096];

	(void)state;
	assert_int_equal(ring_aux_init(&ra, &pg, buf, 3000, 0), -EINVAL);
	pg.aux_size = 2048;
	assert_int_equal(ring_aux_init(&ra, &pg, buf, 4096, 0), -EINVAL);
	pg.aux_size = 4096;
	pg.aux_tail = 8192;	/* resuming a buffer someone consumed before */
	assert_int_equal(ring_aux_init(&ra, &pg, buf, 4096, 0), 0);
	assert_int_equal(ra.tail, 8192);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_wraparound),
		cmocka_unit_test(test_full_partial_reads),
		cmocka_unit_test(test_full_truncation),
		cmocka_unit_test(test_full_corrupt_page),
		cmocka_unit_test(test_snapshot_pt_head),
		cmocka_unit_test(test_snapshot_monotonic_head),
		cmocka_unit_test(test_snapshot_wrap_to_same_offset),
		cmocka_unit_test(test_records_and_flags),
		cmocka_unit_test(test_init_checks),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
