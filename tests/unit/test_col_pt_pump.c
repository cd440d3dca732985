/* The Intel PT collector's data path on simulated CPUs: a tiny "kernel" fills each
 * CPU's data ring (PERF_RECORD_AUX records) and AUX area (a known byte stream); the pump
 * writes a real perf.data, which is then parsed here: AUXTRACE chunks must carry exactly
 * the stream bytes with the right offsets, cpu and idx, snapshot references must count,
 * and the AUX records (with their TRUNCATED flags) must be copied and counted. */
#include "xp_test.h"

#include <errno.h>
#include <unistd.h>

#include "record/col_pt_pump.h"
#include "util/xp_clock.h"

#define DATA 8192
#define AUX 4096

static uint8_t sbyte(uint64_t k)
{
	return (uint8_t)(k % 253 + 1);
}

struct sim_cpu {
	_Alignas(4096) uint8_t page[4096 + DATA];
	_Alignas(4096) uint8_t aux[AUX];
	uint64_t written;	/* stream bytes produced */
	int pt_head;		/* snapshot: aux_head is a buffer offset */
};

static struct perf_event_mmap_page *pg(struct sim_cpu *s)
{
	return (struct perf_event_mmap_page *)s->page;
}

static void sim_init(struct sim_cpu *s, int snapshot)
{
	memset(s, 0, sizeof(*s));
	pg(s)->data_offset = 4096;
	pg(s)->data_size = DATA;
	pg(s)->aux_offset = 4096 + DATA;
	pg(s)->aux_size = AUX;
	s->pt_head = snapshot;
}

static void put_record(struct sim_cpu *s, const void *rec, size_t n)
{
	uint64_t head = pg(s)->data_head;

	for (size_t i = 0; i < n; i++)
		s->page[4096 + ((head + i) & (DATA - 1))] = ((const uint8_t *)rec)[i];
	pg(s)->data_head = head + n;
}

/* The hardware writes n stream bytes; the kernel announces them with PERF_RECORD_AUX. */
static void sim_trace(struct sim_cpu *s, uint64_t n, uint64_t flags)
{
	struct {
		struct perf_event_header h;
		uint64_t off, size, flags;
	} rec = { { PERF_RECORD_AUX, 0, sizeof(rec) }, s->written, n, flags };

	for (uint64_t i = 0; i < n; i++)
		s->aux[(s->written + i) & (AUX - 1)] = sbyte(s->written + i);
	s->written += n;
	pg(s)->aux_head = s->pt_head ? s->written & (AUX - 1) : s->written;
	put_record(s, &rec, sizeof(rec));
}

struct chunk {
	struct pd_auxtrace_event ev;
	uint8_t data[AUX + 8];
};

struct parsed {
	struct chunk chunks[16];
	int nchunks;
	int aux_records, rounds;
	uint64_t aux_flags;
	uint64_t sample_t[16];	/* the u64 after each SAMPLE's header, in file order */
	int nsamples;
};

/* Reads back DIR/perf.data: the data section's records. */
static void parse(const char *path, struct parsed *out)
{
	FILE *f = fopen(path, "rb");
	struct pd_file_header fh;
	uint8_t *data;

	memset(out, 0, sizeof(*out));
	assert_non_null(f);
	assert_int_equal(fread(&fh, sizeof(fh), 1, f), 1);
	assert_int_equal(fh.magic, PD_MAGIC2);
	data = malloc(fh.data.size);
	assert_non_null(data);
	assert_int_equal(fseek(f, (long)fh.data.offset, SEEK_SET), 0);
	assert_int_equal(fread(data, 1, fh.data.size, f), fh.data.size);
	fclose(f);
	for (uint64_t off = 0; off < fh.data.size;) {
		struct perf_event_header h;

		memcpy(&h, data + off, sizeof(h));
		assert_true(h.size >= 8 && off + h.size <= fh.data.size);
		if (h.type == PD_RECORD_AUXTRACE) {
			struct chunk *c = &out->chunks[out->nchunks++];
			memcpy(&c->ev, data + off, sizeof(c->ev));
			assert_true(c->ev.size <= sizeof(c->data));
			memcpy(c->data, data + off + h.size, c->ev.size);
			off += c->ev.size;
		} else if (h.type == PERF_RECORD_AUX) {
			uint64_t fl;
			memcpy(&fl, data + off + 24, 8);
			out->aux_records++;
			out->aux_flags |= fl;
		} else if (h.type == PERF_RECORD_SAMPLE && h.size >= 16 && out->nsamples < 16) {
			memcpy(&out->sample_t[out->nsamples++], data + off + 8, 8);
		} else if (h.type == PD_RECORD_FINISHED_ROUND) {
			out->rounds++;
		}
		off += h.size;
	}
	free(data);
}

static void assert_chunk(const struct chunk *c, uint32_t idx, uint32_t cpu, uint64_t offset,
			 uint64_t stream_from, uint64_t n, uint64_t reference)
{
	assert_int_equal(c->ev.idx, idx);
	assert_int_equal(c->ev.cpu, cpu);
	assert_int_equal(c->ev.tid, (uint32_t)-1);
	assert_int_equal(c->ev.offset, offset);
	assert_int_equal(c->ev.reference, reference);
	assert_int_equal(c->ev.size, (n + 7) & ~7ULL);	/* padded like perf */
	for (uint64_t i = 0; i < n; i++)
		if (c->data[i] != sbyte(stream_from + i))
			fail_msg("chunk byte %llu", (unsigned long long)i);
	for (uint64_t i = n; i < c->ev.size; i++)
		assert_int_equal(c->data[i], 0);
}

static void setup_pump(struct col_pt_pump *p, struct rec *r, struct col_pt_ring *rings,
		       struct sim_cpu **cpus, int n, int snapshot, char *path)
{
	int fd;

	assert_int_equal(xp_test_path(path, 1024, "pump-XXXXXX"), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	memset(r, 0, sizeof(*r));
	r->time_off = -1;
	assert_int_equal(pd_writer_create(&r->w, path), 0);
	for (int i = 0; i < n; i++) {
		memset(&rings[i], 0, sizeof(rings[i]));
		rings[i].cpu = 7 + 2 * i;
		rings[i].fd = -1;
		assert_int_equal(col_pt_ring_init(&rings[i], cpus[i]->page, DATA, cpus[i]->aux, AUX,
						  snapshot), 0);
	}
	*p = (struct col_pt_pump){ .r = r, .rings = rings, .n = n, .snapshot = snapshot };
}

static void test_full_trace(void **state)
{
	static struct sim_cpu a, b;
	struct sim_cpu *cpus[2] = { &a, &b };
	struct col_pt_ring rings[2];
	struct col_pt_pump p;
	struct rec r;
	static struct parsed out;
	char path[1024];
	struct perf_event_attr attr = { .size = sizeof(attr), .type = 8, .sample_id_all = 0 };

	(void)state;
	sim_init(&a, 0);
	sim_init(&b, 0);
	setup_pump(&p, &r, rings, cpus, 2, 0, path);
	assert_int_equal(pd_writer_add_attr(r.w, &attr, "intel_pt//u"), 0);
	sim_trace(&a, 3000, 0);
	sim_trace(&b, 100, PERF_AUX_FLAG_TRUNCATED);
	assert_int_equal(col_pt_drain(&p), 0);
	/* The consumer freed cpu a's AUX: 2000 more wrap around its 4096-byte area. */
	assert_int_equal(pg(&a)->aux_tail, 3000);
	sim_trace(&a, 2000, 0);
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(col_pt_drain(&p), 0);	/* nothing new: a round, no chunk */
	assert_int_equal(p.aux_written, 5100);
	assert_int_equal(p.st.records, 3);
	assert_int_equal(p.st.truncated, 1);
	assert_int_equal(pd_writer_close(r.w), 0);
	parse(path, &out);
	unlink(path);
	assert_int_equal(out.nchunks, 3);
	assert_chunk(&out.chunks[0], 0, 7, 0, 0, 3000, 0);
	assert_chunk(&out.chunks[1], 1, 9, 0, 0, 100, 0);
	assert_chunk(&out.chunks[2], 0, 7, 3000, 3000, 2000, 0);
	assert_int_equal(out.aux_records, 3);
	assert_int_equal(out.aux_flags, PERF_AUX_FLAG_TRUNCATED);
	assert_int_equal(out.rounds, 3);
}

static void test_snapshots(void **state)
{
	static struct sim_cpu a;
	struct sim_cpu *cpus[1] = { &a };
	struct col_pt_ring rings[1];
	struct col_pt_pump p;
	struct rec r;
	static struct parsed out;
	char path[1024];
	struct perf_event_attr attr = { .size = sizeof(attr), .type = 8 };

	(void)state;
	sim_init(&a, 1);
	setup_pump(&p, &r, rings, cpus, 1, 1, path);
	assert_int_equal(pd_writer_add_attr(r.w, &attr, "intel_pt//u"), 0);
	/* Before the first dump the ring went round once and a half: only the last 4096. */
	sim_trace(&a, 6000, PERF_AUX_FLAG_OVERWRITE);
	assert_int_equal(col_pt_drain(&p), 0);		/* snapshot mode: no AUX copied */
	assert_int_equal(p.aux_written, 0);
	assert_int_equal(col_pt_snapshot(&p), 0);
	sim_trace(&a, 104, PERF_AUX_FLAG_OVERWRITE);
	assert_int_equal(col_pt_snapshot(&p), 0);
	assert_int_equal(p.dumps, 2);
	assert_int_equal(pd_writer_close(r.w), 0);
	parse(path, &out);
	unlink(path);
	assert_int_equal(out.nchunks, 2);
	assert_chunk(&out.chunks[0], 0, 7, 0, 6000 - AUX, AUX, 1);
	assert_chunk(&out.chunks[1], 0, 7, AUX, 6104 - AUX, AUX, 2);
	assert_int_equal(out.aux_records, 2);
	assert_int_equal(out.aux_flags, PERF_AUX_FLAG_OVERWRITE);
}

static void test_bad_sizes(void **state)
{
	static struct sim_cpu a;
	struct col_pt_ring ring;

	(void)state;
	sim_init(&a, 0);
	assert_int_equal(col_pt_ring_init(&ring, a.page, DATA, a.aux, 3000, 0), -EINVAL);
}

/* A SAMPLE whose first field is its time (the layout r.time_off = 8 says). */
static void put_sample(struct sim_cpu *s, uint64_t t)
{
	struct {
		struct perf_event_header h;
		uint64_t t;
	} smp = { { PERF_RECORD_SAMPLE, 0, 16 }, t };

	put_record(s, &smp, sizeof(smp));
}

/* Two simulated cpus a and b pumped into a file whose samples carry their TIME first. */
static void setup_timed(struct col_pt_pump *p, struct rec *r, struct col_pt_ring *rings,
			struct sim_cpu *a, struct sim_cpu *b, char *path)
{
	struct sim_cpu *cpus[2] = { a, b };
	struct perf_event_attr attr = { .size = sizeof(attr), .type = 8 };

	sim_init(a, 0);
	sim_init(b, 0);
	setup_pump(p, r, rings, cpus, 2, 0, path);
	r->time_off = 8;
	assert_int_equal(pd_writer_add_attr(r->w, &attr, "intel_pt//u"), 0);
}

/* The file's samples: exactly `want`'s times, in that order. */
static void assert_times(struct rec *r, const char *path, const uint64_t *want, int n,
			 struct parsed *out)
{
	assert_int_equal(pd_writer_close(r->w), 0);
	parse(path, out);
	unlink(path);
	assert_int_equal(out->nsamples, n);
	assert_memory_equal(out->sample_t, want, (size_t)n * sizeof(*want));
}

/* Probe hits on two cpus (a call entered on one, returning on the other) reach the file
 * in the order of their times, not ring by ring; the AUX records are still counted. */
static void test_samples_by_time(void **state)
{
	static struct sim_cpu a, b;
	struct col_pt_ring rings[2];
	struct col_pt_pump p;
	struct rec r;
	static struct parsed out;
	char path[1024];
	const uint64_t ta[] = { 2, 5 }, tb[] = { 1, 3, 4 }, want[] = { 1, 2, 3, 4, 5 };

	(void)state;
	setup_timed(&p, &r, rings, &a, &b, path);
	for (int i = 0; i < 2; i++)
		put_sample(&a, ta[i]);
	sim_trace(&a, 100, 0);
	for (int i = 0; i < 3; i++)
		put_sample(&b, tb[i]);
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(p.st.records, 1);
	assert_times(&r, path, want, 5, &out);
	assert_int_equal(out.aux_records, 1);
}

/* With CLOCK_MONOTONIC times (r.hold), a round holds the samples written after it began
 * for the next: a thread's entry on one cpu, timed after the round began, is not written
 * ahead of its previous call's return on another cpu that the round did not see (its
 * ring's head taken first); the last round (the events disabled) takes everything.
 * Without the hold the file has them the wrong way round. */
static void test_held_for_next_round(void **state)
{
	static struct sim_cpu a, b;
	struct col_pt_ring rings[2];
	struct col_pt_pump p;
	struct rec r;
	static struct parsed out;
	char path[1024];
	uint64_t now = xp_now_ns(), want[3];

	(void)state;
	setup_timed(&p, &r, rings, &a, &b, path);
	r.hold = 1;
	want[0] = now - 1000000000ull;	/* long before the round: taken in it */
	want[1] = now + 500000000ull;	/* the return, in a's ring after its head was taken */
	want[2] = now + 1000000000ull;	/* the next entry, in b's ring, seen by the round */
	put_sample(&b, want[0]);
	put_sample(&b, want[2]);
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(r.samples, 1);
	assert_int_equal(r.held.len, 16);
	put_sample(&a, want[1]);
	r.rings_final = 1;
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(r.samples, 3);
	assert_int_equal(r.held.len, 0);
	assert_times(&r, path, want, 3, &out);
	free(r.held.buf);
}

/* A sample held by one round and still not before the next round's start (a TIME
 * ahead of the clock) is held again, behind the earlier sample that round read, not
 * written ahead of it. */
static void test_held_again(void **state)
{
	static struct sim_cpu a, b;
	struct col_pt_ring rings[2];
	struct col_pt_pump p;
	struct rec r;
	static struct parsed out;
	char path[1024];
	uint64_t now = xp_now_ns(), want[2] = { now + 500000000ull, now + 1000000000ull };

	(void)state;
	setup_timed(&p, &r, rings, &a, &b, path);
	r.hold = 1;
	put_sample(&b, want[1]);
	assert_int_equal(col_pt_drain(&p), 0);
	put_sample(&a, want[0]);
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(r.samples, 0);
	assert_int_equal(r.held.len, 32);
	r.rings_final = 1;
	assert_int_equal(col_pt_drain(&p), 0);
	assert_int_equal(r.samples, 2);
	assert_times(&r, path, want, 2, &out);
	free(r.held.buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_full_trace),
		cmocka_unit_test(test_snapshots),
		cmocka_unit_test(test_bad_sizes),
		cmocka_unit_test(test_samples_by_time),
		cmocka_unit_test(test_held_for_next_round),
		cmocka_unit_test(test_held_again),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
