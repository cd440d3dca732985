/* The perf.data reader on files built byte by byte here (layout from the kernel ABI
 * and perf's header.h, independent of our writer): every sample field, sample ids,
 * ordering by FINISHED_ROUND, AUXTRACE payloads, unknown records, pipe mode, small
 * mapping windows, truncation and corruption. */
#include "xp_test.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfdata/pd_read.h"
#include "util/xp_err.h"

struct buf {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct buf *b, const void *d, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2 + 4096;
		b->p = realloc(b->p, b->cap);
	}
	memcpy(b->p + b->n, d, n);
	b->n += n;
}

static void put64(struct buf *b, uint64_t v) { put(b, &v, 8); }

static void hdr(struct buf *b, uint32_t type, uint16_t misc, size_t size)
{
	struct perf_event_header h = { type, misc, (uint16_t)size };
	put(b, &h, sizeof(h));
}

#define ST_MAIN (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | \
	PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_READ | PERF_SAMPLE_CALLCHAIN | \
	PERF_SAMPLE_RAW | PERF_SAMPLE_BRANCH_STACK | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define ST_SIMPLE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME)

static struct perf_event_attr attr_main(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_HARDWARE, .size = sizeof(a),
		.config = PERF_COUNT_HW_CPU_CYCLES, .sample_type = ST_MAIN,
		.read_format = PERF_FORMAT_GROUP | PERF_FORMAT_ID, .sample_id_all = 1,
		.branch_sample_type = PERF_SAMPLE_BRANCH_ANY | PERF_SAMPLE_BRANCH_HW_INDEX,
		.sample_regs_user = (1 << 6) | (1 << 7) | (1 << 8), .sample_stack_user = 16 };
	return a;
}

static struct perf_event_attr attr_simple(void)
{
	struct perf_event_attr a = { .type = PERF_TYPE_SOFTWARE, .size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK, .sample_type = ST_SIMPLE, .sample_id_all = 1 };
	return a;
}

/* The big sample of attr 0 (id 100), group values for ids 100 and 200. */
static void sample_main(struct buf *b, uint64_t time)
{
	size_t size = 8 + 8 * 6 + (8 + 2 * 16) + (8 + 3 * 8) + (4 + 4) + (8 + 8 + 2 * 24) +
		      (8 + 3 * 8) + (8 + 16 + 8);
	hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, size);
	put64(b, 100);				/* identifier */
	put64(b, 0x401000);			/* ip */
	put64(b, (uint64_t)42 << 32 | 41);	/* pid 41 tid 42 */
	put64(b, time);
	put64(b, 3);				/* cpu 3, res */
	put64(b, 5000);				/* period */
	put64(b, 2);				/* group nr */
	put64(b, 1111); put64(b, 100);
	put64(b, 2222); put64(b, 200);
	put64(b, 3);				/* callchain */
	put64(b, PERF_CONTEXT_USER); put64(b, 0x401000); put64(b, 0x402000);
	uint32_t raw_sz = 4;
	put(b, &raw_sz, 4);
	put(b, "abcd", 4);
	put64(b, 2);				/* branch nr */
	put64(b, 7);				/* hw_idx */
	put64(b, 0x10); put64(b, 0x20); put64(b, 0);
	put64(b, 0x30); put64(b, 0x40); put64(b, 0);
	put64(b, PERF_SAMPLE_REGS_ABI_64);
	put64(b, 0xbbbb); put64(b, 0x5555); put64(b, 0x401000);	/* bp sp ip */
	put64(b, 16);
	put64(b, 0x1122334455667788ULL); put64(b, 0);
	put64(b, 8);				/* dyn size */
}

static void sample_simple(struct buf *b, uint64_t id, uint64_t ip, uint64_t time)
{
	hdr(b, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 32);
	put64(b, id);
	put64(b, ip);
	put64(b, (uint64_t)42 << 32 | 41);
	put64(b, time);
}

/* sample_id_all trailer for attr_simple: TID TIME IDENTIFIER */
static void sid(struct buf *b, uint64_t id, uint64_t time)
{
	put64(b, (uint64_t)42 << 32 | 41);
	put64(b, time);
	put64(b, id);
}

static void comm(struct buf *b, const char *name, uint64_t time)
{
	char n[16] = {0};
	snprintf(n, sizeof(n), "%s", name);
	hdr(b, PERF_RECORD_COMM, 0, 8 + 8 + 16 + 24);
	put64(b, (uint64_t)42 << 32 | 41);
	put(b, n, 16);
	sid(b, 300, time);
}

static void mmap2(struct buf *b, uint64_t time)
{
	char n[16] = "/bin/prog";
	hdr(b, PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER, 8 + 8 + 24 + 24 + 8 + 16 + 24);
	put64(b, (uint64_t)41 << 32 | 41);
	put64(b, 0x400000); put64(b, 0x3000); put64(b, 0);
	put64(b, 8); put64(b, 1234); put64(b, 0);	/* maj min, ino, gen */
	uint32_t prot = 5, flags = 2;
	put(b, &prot, 4);
	put(b, &flags, 4);
	put(b, n, 16);
	sid(b, 300, time);
}

static void round_(struct buf *b) { hdr(b, PD_RECORD_FINISHED_ROUND, 0, 8); }

/* Data stream shared by file and pipe tests (attrs come separately). */
static void events(struct buf *b)
{
	comm(b, "prog", 10);
	mmap2(b, 20);
	sample_simple(b, 300, 0x401100, 50);
	sample_simple(b, 300, 0x401200, 30);	/* earlier than the one before */
	round_(b);
	sample_main(b, 40);			/* still before 50: must come first */
	hdr(b, 1000, 0, 16);			/* unknown type */
	put64(b, 0);
	hdr(b, PD_RECORD_AUXTRACE, 0, sizeof(struct pd_auxtrace_event));
	put64(b, 8); put64(b, 0); put64(b, 0);
	uint32_t w[4] = { 0, 42, 0, 0 };
	put(b, w, 16);
	put64(b, 0xdeadbeefcafef00dULL);	/* the trace bytes */
	round_(b);
	sample_simple(b, 300, 0x401300, 60);
}

static char path[1024];

static void write_file(const struct buf *b)
{
	assert_int_equal(xp_test_path(path, sizeof(path), "pd.data"), 0);
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(b->p, 1, b->n, f), b->n);
	fclose(f);
}

/* A PERFILE2 file: header, attrs with id sections, data, features (hostname). */
static struct buf make_file(bool with_features)
{
	struct buf b = {0}, d = {0};
	struct pd_file_header h = { .magic = PD_MAGIC2, .size = sizeof(h) };
	struct perf_event_attr a0 = attr_main(), a1 = attr_simple();
	uint64_t ids0[] = { 100 }, ids1[] = { 200, 300 };

	events(&d);
	h.attr_size = sizeof(struct perf_event_attr) + sizeof(struct pd_section);
	uint64_t ids_off = sizeof(h);
	uint64_t attrs_off = ids_off + sizeof(ids0) + sizeof(ids1);
	h.attrs = (struct pd_section){ attrs_off, 2 * h.attr_size };
	h.data = (struct pd_section){ attrs_off + 2 * h.attr_size, d.n };
	if (with_features)
		h.features[0] = 1ull << PD_FEAT_HOSTNAME;
	put(&b, &h, sizeof(h));
	put(&b, ids0, sizeof(ids0));
	put(&b, ids1, sizeof(ids1));
	put(&b, &a0, sizeof(a0));
	struct pd_section s0 = { ids_off, sizeof(ids0) }, s1 = { ids_off + sizeof(ids0), sizeof(ids1) };
	put(&b, &s0, sizeof(s0));
	put(&b, &a1, sizeof(a1));
	put(&b, &s1, sizeof(s1));
	put(&b, d.p, d.n);
	if (with_features) {
		struct pd_section fs = { b.n + sizeof(fs), 4 + 8 };
		uint32_t len = 8;
		put(&b, &fs, sizeof(fs));
		put(&b, &len, 4);
		put(&b, "testhost", 8);
	}
	free(d.p);
	return b;
}

struct seen {
	char log[4096];
	size_t n;
	struct pd_sample s;
	uint64_t aux_word;
	uint32_t auxtrace_tid;
};

static int collect(void *arg, const struct pd_rec *r)
{
	struct seen *s = arg;

	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, "%s@%llu", pd_record_name(r->type),
				 (unsigned long long)r->time);
	if (r->type == PERF_RECORD_SAMPLE)
		s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, ":%llx/%u",
					 (unsigned long long)r->u.sample.ip, r->attr->index);
	if (r->type == PERF_RECORD_COMM)
		s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, ":%s", r->u.comm.comm);
	if (r->type == PERF_RECORD_MMAP2)
		s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, ":%s@%llx+%llx", r->u.mmap.filename,
					 (unsigned long long)r->u.mmap.start, (unsigned long long)r->u.mmap.len);
	s->n += (size_t)snprintf(s->log + s->n, sizeof(s->log) - s->n, " ");
	if (r->type == PERF_RECORD_SAMPLE && r->attr->index == 0)
		s->s = r->u.sample;
	if (r->type == PD_RECORD_AUXTRACE && r->aux_size == 8) {
		assert_int_equal(r->aux_size, 8);
		memcpy(&s->aux_word, r->aux, 8);
		s->auxtrace_tid = r->u.auxtrace->tid;
	}
	return 0;
}

/* perf's rule: a round flushes what is older than the previous round's newest time
 * (nothing at the first); user records (AUXTRACE) are delivered when read. */
static const char expected_order[] =
	"FINISHED_ROUND@0 AUXTRACE@0 COMM@10:prog MMAP2@20:/bin/prog@400000+3000 "
	"SAMPLE@30:401200/1 SAMPLE@40:401000/0 SAMPLE@50:401100/1 FINISHED_ROUND@0 "
	"SAMPLE@60:401300/1 ";

static void check_main_sample(const struct pd_sample *s)
{
	assert_int_equal(s->ip, 0x401000);
	assert_int_equal(s->pid, 41);
	assert_int_equal(s->tid, 42);
	assert_int_equal(s->cpu, 3);
	assert_int_equal(s->period, 5000);
	assert_int_equal(s->nr_values, 2);
	assert_int_equal(s->values[1].value, 2222);
	assert_int_equal(s->values[1].id, 200);
	assert_int_equal(s->nr_callchain, 3);
	assert_int_equal(s->raw_size, 4);
	assert_int_equal(s->nr_branch, 2);
	assert_int_equal(s->branch_hw_idx, 7);
	assert_int_equal(s->user_abi, PERF_SAMPLE_REGS_ABI_64);
	assert_int_equal(s->user_stack_size, 16);
	assert_int_equal(s->user_stack_dyn_size, 8);
}

static void test_file(void **state)
{
	(void)state;
	struct buf b = make_file(true);
	struct pd_file *f;
	struct seen s = {0};

	write_file(&b);
	assert_int_equal(pd_open(path, &f), 0);
	pd_set_window(f, 4096);	/* records straddle windows */
	assert_int_equal(pd_nattrs(f), 2);
	assert_ptr_equal(pd_attr_by_id(f, 300), pd_attr_at(f, 1));
	assert_string_equal(pd_attr_at(f, 0)->name, "cycles");
	assert_string_equal(pd_feature_str(f, PD_FEAT_HOSTNAME), "testhost");
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_string_equal(s.log, expected_order);
	/* the records after the samples carry their data */
	assert_int_equal(s.aux_word, 0xdeadbeefcafef00dULL);
	assert_int_equal(s.auxtrace_tid, 42);
	const struct pd_stats *st = pd_stats(f);
	assert_int_equal(st->unknown, 1);
	assert_false(st->truncated);
	assert_int_equal(st->by_type[PERF_RECORD_SAMPLE], 4);
	pd_close(f);
	free(b.p);
}

/* The main sample's fields (copied out during the callback). */
static void test_sample_fields(void **state)
{
	(void)state;
	struct buf b = make_file(false);
	struct pd_file *f;
	struct seen s = {0};

	write_file(&b);
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, 0, collect, &s), 0);
	check_main_sample(&s.s);
	pd_close(f);
	free(b.p);
}

/* A sample parsed over the fields of a richer one leaves none of them behind: the
 * parser writes every field instead of clearing the struct first. */
static void test_sample_overwrite(void **state)
{
	(void)state;
	struct pd_attr am = { .attr = attr_main() }, as = { .attr = attr_simple() };
	struct buf b = {0};
	struct pd_sample s;

	memset(&s, 0xa5, sizeof(s));
	sample_main(&b, 10);
	size_t main_size = b.n;
	sample_simple(&b, 300, 0x401100, 20);
	assert_int_equal(pd_parse_sample(&am, b.p, main_size, &s), 0);
	check_main_sample(&s);
	assert_int_equal(pd_parse_sample(&as, b.p + main_size, b.n - main_size, &s), 0);
	assert_int_equal(s.type, ST_SIMPLE);
	assert_int_equal(s.id, 300);
	assert_int_equal(s.ip, 0x401100);
	assert_int_equal(s.pid, 41);
	assert_int_equal(s.tid, 42);
	assert_int_equal(s.time, 20);
	uint64_t zero[] = { s.addr, s.stream_id, s.cpu, s.period, s.time_enabled, s.time_running,
		s.nr_values, s.values_dropped, s.nr_callchain, s.raw_size, s.nr_branch, s.user_abi,
		s.user_regs_mask, s.user_stack_size, s.user_stack_dyn_size, s.weight, s.data_src,
		s.transaction, s.intr_abi, s.intr_regs_mask, s.phys_addr, s.cgroup, s.data_page_size,
		s.code_page_size, s.aux_size };
	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		assert_int_equal(zero[i], 0);
	assert_int_equal(s.branch_hw_idx, UINT64_MAX);
	assert_null(s.callchain);
	assert_null(s.raw);
	assert_null(s.branch);
	assert_null(s.user_regs);
	assert_null(s.user_stack);
	assert_null(s.intr_regs);
	assert_null(s.aux);
	free(b.p);
}

/* Unordered reading delivers file order. */
static void test_unordered(void **state)
{
	(void)state;
	struct buf b = make_file(false);
	struct pd_file *f;
	struct seen s = {0};

	write_file(&b);
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, 0, collect, &s), 0);
	assert_string_equal(s.log, "COMM@10:prog MMAP2@20:/bin/prog@400000+3000 SAMPLE@50:401100/1 "
			    "SAMPLE@30:401200/1 FINISHED_ROUND@0 SAMPLE@40:401000/0 AUXTRACE@0 "
			    "FINISHED_ROUND@0 SAMPLE@60:401300/1 ");
	pd_close(f);
	free(b.p);
}

static char errs[4096];
static void sink(const char *line, void *ctx)
{
	(void)ctx;
	snprintf(errs + strlen(errs), sizeof(errs) - strlen(errs), "%s\n", line);
}

/* Every truncation point: an error or a partial read, never a crash. */
static void test_truncated(void **state)
{
	(void)state;
	struct buf b = make_file(false);

	xp_err_set_sink(sink, NULL);
	size_t data_end = b.n;
	for (size_t cut = 0; cut < data_end; cut += 7) {
		struct buf t = { b.p, cut, cut };
		struct pd_file *f;
		struct seen s = {0};
		write_file(&t);
		if (pd_open(path, &f) < 0)
			continue;
		assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
		if (cut < data_end)
			assert_true(pd_stats(f)->truncated || pd_stats(f)->bytes_lost);
		pd_close(f);
	}
	/* a cut inside the data: the records before it come through, loss stated */
	struct buf t = { b.p, data_end - 20, 0 };
	struct pd_file *f;
	struct seen s = {0};
	write_file(&t);
	errs[0] = 0;
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_non_null(strstr(s.log, "SAMPLE@40:401000/0"));
	pd_report_losses(f);
	assert_non_null(strstr(errs, "truncated"));
	pd_close(f);
	xp_err_set_sink(NULL, NULL);
	free(b.p);
}

/* Random byte flips in the data section. */
static void test_corrupt(void **state)
{
	(void)state;
	struct buf b = make_file(false);
	uint32_t seed = 12345;

	xp_err_set_sink(sink, NULL);
	for (int round = 0; round < 300; round++) {
		struct buf t = { malloc(b.n), b.n, b.n };
		memcpy(t.p, b.p, b.n);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245 + 12345;
			size_t at = (seed >> 8) % b.n;
			t.p[at] ^= (uint8_t)(1u << (seed % 8));
		}
		write_file(&t);
		struct pd_file *f;
		struct seen s = {0};
		if (pd_open(path, &f) == 0) {
			pd_read_events(f, PD_ORDERED, collect, &s);
			pd_close(f);
		}
		free(t.p);
	}
	xp_err_set_sink(NULL, NULL);
	free(b.p);
}

static void test_bad_headers(void **state)
{
	(void)state;
	struct buf b = make_file(false);
	struct pd_file *f;

	xp_err_set_sink(sink, NULL);
	errs[0] = 0;
	b.p[0] = 'X';
	write_file(&b);
	assert_int_equal(pd_open(path, &f), -EINVAL);
	assert_non_null(strstr(errs, "not a perf.data file"));
	b.p[0] = 'P';
	struct pd_file_header *h = (void *)b.p;
	h->attrs.size = 1u << 30;
	write_file(&b);
	errs[0] = 0;
	assert_int_equal(pd_open(path, &f), -EINVAL);
	assert_non_null(strstr(errs, "bad attribute section"));
	xp_err_set_sink(NULL, NULL);
	free(b.p);
}

/* Pipe mode: magic + size 16, then HEADER_ATTR records, then the stream. */
static struct buf make_pipe(void)
{
	struct buf b = {0};
	struct perf_event_attr a0 = attr_main(), a1 = attr_simple();

	put64(&b, PD_MAGIC2);
	put64(&b, 16);
	hdr(&b, PD_RECORD_HEADER_ATTR, 0, 8 + sizeof(a0) + 8);
	put(&b, &a0, sizeof(a0));
	put64(&b, 100);
	hdr(&b, PD_RECORD_HEADER_ATTR, 0, 8 + sizeof(a1) + 16);
	put(&b, &a1, sizeof(a1));
	put64(&b, 200);
	put64(&b, 300);
	events(&b);
	return b;
}

static void test_pipe(void **state)
{
	(void)state;
	struct buf b = make_pipe();
	int fds[2];
	struct pd_file *f;
	struct seen s = {0};

	assert_int_equal(pipe(fds), 0);
	pid_t child = fork();
	if (child == 0) {
		close(fds[0]);
		for (size_t at = 0; at < b.n;) {	/* dribble: short reads in the reader */
			ssize_t w = write(fds[1], b.p + at, b.n - at < 13 ? b.n - at : 13);
			if (w <= 0)
				_exit(1);
			at += (size_t)w;
		}
		_exit(0);
	}
	close(fds[1]);
	assert_int_equal(pd_open_fd(fds[0], "pipe", &f), 0);
	assert_true(pd_is_pipe(f));
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	/* the HEADER_ATTR records are delivered too */
	assert_string_equal(s.log + strlen("HEADER_ATTR@0 HEADER_ATTR@0 "), expected_order);
	check_main_sample(&s.s);
	assert_false(pd_stats(f)->truncated);
	pd_close(f);
	close(fds[0]);
	waitpid(child, NULL, 0);
	/* the same stream saved to a file */
	write_file(&b);
	memset(&s, 0, sizeof(s));
	assert_int_equal(pd_open(path, &f), 0);
	assert_true(pd_is_pipe(f));
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_string_equal(s.log + strlen("HEADER_ATTR@0 HEADER_ATTR@0 "), expected_order);
	pd_close(f);
	free(b.p);
}

/* pd_open_mem on a perf.data's bytes reads what pd_open reads from a file of the same
 * bytes, at every length (the whole and every cut): the same result and messages, the
 * same records in the same order, the same losses.  Each length is a heap copy of
 * exactly that many bytes, so a read past its end is an ASan report. */
static void mem_as_file(const struct buf *b, bool pipe_mode)
{
	char ef[4096];

	xp_err_set_sink(sink, NULL);
	for (size_t cut = 0; cut <= b->n; cut++) {
		struct buf t = { b->p, cut, cut };
		struct pd_file *ff, *fm;
		struct seen sf = {0}, sm = {0};
		uint8_t *copy = malloc(cut ? cut : 1);

		assert_non_null(copy);
		memcpy(copy, b->p, cut);
		write_file(&t);
		errs[0] = 0;
		int rf = pd_open(path, &ff);
		snprintf(ef, sizeof(ef), "%s", errs);
		errs[0] = 0;
		int rm = pd_open_mem(copy, cut, path, &fm);
		assert_int_equal(rm, rf);
		assert_string_equal(errs, ef);
		if (rf == 0) {
			assert_int_equal(pd_is_pipe(fm), pd_is_pipe(ff));
			assert_int_equal(pd_is_pipe(fm), pipe_mode);
			assert_int_equal(pd_nattrs(fm), pd_nattrs(ff));
			assert_int_equal(pd_read_events(fm, PD_ORDERED, collect, &sm),
					 pd_read_events(ff, PD_ORDERED, collect, &sf));
			assert_string_equal(sm.log, sf.log);
			const struct pd_stats *a = pd_stats(fm), *e = pd_stats(ff);
			assert_int_equal(a->records, e->records);
			assert_int_equal(a->unknown, e->unknown);
			assert_int_equal(a->bad, e->bad);
			assert_int_equal(a->truncated, e->truncated);
			assert_int_equal(a->truncated_at, e->truncated_at);
			assert_int_equal(a->bytes_lost, e->bytes_lost);
			pd_close(ff);
			pd_close(fm);
		}
		free(copy);
	}
	xp_err_set_sink(NULL, NULL);
}

static void test_mem(void **state)
{
	(void)state;
	struct buf b = make_file(true), p = make_pipe();
	struct pd_file *f;
	struct seen s = {0};

	/* the whole file: what test_file reads */
	assert_int_equal(pd_open_mem(b.p, b.n, "mem", &f), 0);
	assert_false(pd_is_pipe(f));
	assert_string_equal(pd_name(f), "mem");
	assert_string_equal(pd_feature_str(f, PD_FEAT_HOSTNAME), "testhost");
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_string_equal(s.log, expected_order);
	assert_int_equal(s.aux_word, 0xdeadbeefcafef00dULL);
	check_main_sample(&s.s);
	assert_false(pd_stats(f)->truncated);
	pd_close(f);
	/* a stream: the HEADER_ATTRs first, as test_pipe reads */
	memset(&s, 0, sizeof(s));
	assert_int_equal(pd_open_mem(p.p, p.n, "mem", &f), 0);
	assert_true(pd_is_pipe(f));
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_string_equal(s.log, "HEADER_ATTR@0 HEADER_ATTR@0 " "FINISHED_ROUND@0 AUXTRACE@0 "
			    "COMM@10:prog MMAP2@20:/bin/prog@400000+3000 SAMPLE@30:401200/1 "
			    "SAMPLE@40:401000/0 SAMPLE@50:401100/1 FINISHED_ROUND@0 SAMPLE@60:401300/1 ");
	pd_close(f);
	/* cut 20 bytes into the last sample (40 bytes): the records before it, the loss at
	 * its offset */
	size_t last = p.n - 40;
	memset(&s, 0, sizeof(s));
	xp_err_set_sink(sink, NULL);
	assert_int_equal(pd_open_mem(p.p, p.n - 20, "mem", &f), 0);
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_non_null(strstr(s.log, "FINISHED_ROUND@0 "));
	assert_null(strstr(s.log, "SAMPLE@60"));
	assert_true(pd_stats(f)->truncated);
	assert_int_equal(pd_stats(f)->truncated_at, last);
	errs[0] = 0;
	pd_report_losses(f);
	assert_non_null(strstr(errs, "truncated"));
	pd_close(f);
	xp_err_set_sink(NULL, NULL);
	/* too short for a header */
	errs[0] = 0;
	xp_err_set_sink(sink, NULL);
	assert_int_equal(pd_open_mem(b.p, 15, "mem", &f), -EIO);
	assert_non_null(strstr(errs, "mem: too short for a perf.data header"));
	xp_err_set_sink(NULL, NULL);
	mem_as_file(&b, false);
	mem_as_file(&p, true);
	free(b.p);
	free(p.p);
}

/* Records whose payload follows them uncounted (HEADER_TRACING_DATA, AUXTRACE with
 * an empty payload) in a pipe stream: the next record is found. */
static void test_trailing_payloads(void **state)
{
	(void)state;
	struct buf b = {0};
	struct perf_event_attr a1 = attr_simple();
	struct pd_file *f;
	struct seen s = {0};

	put64(&b, PD_MAGIC2);
	put64(&b, 16);
	hdr(&b, PD_RECORD_HEADER_ATTR, 0, 8 + sizeof(a1) + 8);
	put(&b, &a1, sizeof(a1));
	put64(&b, 300);
	hdr(&b, PD_RECORD_HEADER_TRACING_DATA, 0, 16);
	uint32_t tsz[2] = { 13, 0 };
	put(&b, tsz, 8);
	put(&b, "tracing data\0\0\0\0", 16);	/* 13 bytes, padded to 16 */
	hdr(&b, PD_RECORD_AUXTRACE, 0, sizeof(struct pd_auxtrace_event));
	put64(&b, 0); put64(&b, 0); put64(&b, 0);
	uint32_t w[4] = { 0, 42, 0, 0 };
	put(&b, w, 16);
	sample_simple(&b, 300, 0x401300, 60);
	write_file(&b);
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_string_equal(s.log, "HEADER_ATTR@0 HEADER_TRACING_DATA@0 AUXTRACE@0 SAMPLE@60:401300/0 ");
	assert_int_equal(pd_stats(f)->bad, 0);
	assert_false(pd_stats(f)->truncated);
	pd_close(f);
	free(b.p);
}

static int check_aligned(void *arg, const struct pd_rec *r)
{
	assert_int_equal((uintptr_t)r->raw & 7, 0);
	return collect(arg, r);
}

/* A data section at an offset that is not a multiple of 8 (perf reads it): every
 * record, user records (AUXTRACE) included, is delivered 8-aligned (UBSan:
 * misaligned u64 reads in user_record). */
static void test_data_at_odd_offset(void **state)
{
	(void)state;
	struct buf b = make_file(false), o = {0};
	struct pd_file_header h;
	memcpy(&h, b.p, sizeof(h));
	h.data.offset += 4;
	put(&o, &h, sizeof(h));
	put(&o, b.p + sizeof(h), b.n - sizeof(h) - h.data.size);
	put(&o, "\0\0\0\0", 4);
	put(&o, b.p + b.n - h.data.size, h.data.size);
	write_file(&o);
	struct pd_file *f;
	struct seen s = {0};
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, PD_ORDERED, check_aligned, &s), 0);
	assert_string_equal(s.log, expected_order);
	assert_int_equal(s.aux_word, 0xdeadbeefcafef00dULL);
	assert_int_equal(s.auxtrace_tid, 42);
	assert_false(pd_stats(f)->truncated);
	pd_close(f);
	free(b.p);
	free(o.p);
}

/* The process's peak of virtual memory (kB), from /proc/self/status. */
static unsigned long long vm_peak_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	unsigned long long kb = 0;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmPeak: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Pipe mode: an AUXTRACE that claims 4 GiB in a 40-byte stream is a truncation at
 * its offset, read in the memory the bytes take: the buffer once grew to 8 GiB
 * before the first read (seen in the peak of virtual memory, in a child so that
 * earlier tests' peaks do not count). */
static void test_pipe_aux_claim(void **state)
{
	(void)state;
	struct buf b = {0};
	struct perf_event_attr a1 = attr_simple();
	put64(&b, PD_MAGIC2);
	put64(&b, 16);
	hdr(&b, PD_RECORD_HEADER_ATTR, 0, 8 + sizeof(a1) + 8);
	put(&b, &a1, sizeof(a1));
	put64(&b, 300);
	uint64_t at = b.n;
	hdr(&b, PD_RECORD_AUXTRACE, 0, sizeof(struct pd_auxtrace_event));
	put64(&b, 0xfffffff8ULL); put64(&b, 0); put64(&b, 0);
	uint32_t w[4] = { 0, 42, 0, 0 };
	put(&b, w, 16);
	put(&b, "40 bytes of trace, not 4 GiB, then EOF..", 40);
	write_file(&b);
	free(b.p);
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct pd_file *f;
		struct seen s = {0};
		if (pd_open(path, &f) < 0 || !pd_is_pipe(f))
			_exit(11);
		unsigned long long peak = vm_peak_kb();
		if (pd_read_events(f, PD_ORDERED, collect, &s) != 0)
			_exit(12);
		if (vm_peak_kb() - peak > 64 * 1024)
			_exit(14);
		if (strcmp(s.log, "HEADER_ATTR@0 ") != 0 || !pd_stats(f)->truncated || pd_stats(f)->truncated_at != at)
			_exit(13);
		pd_close(f);
		_exit(0);
	}
	int st;
	assert_int_equal(waitpid(child, &st, 0), child);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A queue limit far below the data: everything still arrives (early flushes). */
struct ordered {
	uint64_t n, last, bad;
};

static int check_sorted(void *arg, const struct pd_rec *r)
{
	struct ordered *o = arg;

	if (r->type != PERF_RECORD_SAMPLE)
		return 0;
	/* the ip of a round's sample tells its time: its bytes are intact */
	if ((r->u.sample.time >= 1000 && r->u.sample.ip != 0x400000 + r->u.sample.time) ||
	    r->u.sample.time < o->last)
		o->bad++;
	o->last = r->u.sample.time;
	o->n++;
	return 0;
}

/* Records are queued in place in the mapped window: rounds of samples written in
 * reverse time order span many one-page windows; the windows they lie in stay mapped
 * until they are delivered (ASan: no read of an unmapped window). */
static void test_windows_in_place(void **state)
{
	(void)state;
	struct buf b = make_file(false), d = {0};
	size_t nrounds = 40, per = 60;

	for (size_t k = 0; k < nrounds; k++) {
		for (size_t j = per; j > 0; j--) {
			uint64_t t = 1000 * (k + 1) + j;
			sample_simple(&d, 300, 0x400000 + t, t);
		}
		round_(&d);
	}
	/* make_file's data ends the file: append the rounds and grow the data section */
	put(&b, d.p, d.n);
	struct pd_file_header *h = (struct pd_file_header *)b.p;
	h->data.size += d.n;
	for (unsigned lim = 0; lim < 2; lim++) {
		struct pd_file *f;
		struct ordered o = {0};
		write_file(&b);
		assert_int_equal(pd_open(path, &f), 0);
		pd_set_window(f, 4096);
		if (lim)
			pd_set_queue_limit(f, 8192);	/* flushes halves early: out of order then */
		assert_int_equal(pd_read_events(f, PD_ORDERED, check_sorted, &o), 0);
		assert_int_equal(o.n, 4 + nrounds * per);
		if (!lim)
			assert_int_equal(o.bad, 0);
		pd_close(f);
	}
	free(d.p);
	free(b.p);
}

/* PD_RAW with an unmap hook (decode/ctx.c's reader thread): samples arrive unparsed
 * and uncounted, in time order, and those in place stay readable after their callback
 * until the hook's mappings are unmapped; pd_parse_record parses and counts them. */
struct kept {
	struct { const void *raw; uint64_t offset; uint8_t copy[64]; bool in_place; } r[4000];
	size_t n;
	struct { void *p; size_t len; } m[4000];
	size_t nm;
	bool parsed_early;	/* a sample came parsed */
};

static int keep_rec(void *arg, const struct pd_rec *r)
{
	struct kept *k = arg;

	if (r->type != PERF_RECORD_SAMPLE || k->n == 4000)
		return 0;
	k->parsed_early |= r->attr != NULL;
	k->r[k->n].raw = r->raw;
	k->r[k->n].offset = r->offset;
	k->r[k->n].in_place = r->in_place;
	if (!r->in_place && r->size <= 64)
		memcpy(k->r[k->n].copy, r->raw, r->size);
	k->n++;
	return 0;
}

static void keep_unmap(void *arg, void *p, size_t len)
{
	struct kept *k = arg;

	assert_true(k->nm < 4000);
	k->m[k->nm].p = p;
	k->m[k->nm++].len = len;
}

static void test_raw_samples_kept(void **state)
{
	(void)state;
	struct buf b = make_file(false), d = {0};
	size_t nrounds = 40, per = 60;
	struct kept *k = calloc(1, sizeof(*k));

	assert_non_null(k);
	for (size_t r = 0; r < nrounds; r++) {
		for (size_t j = per; j > 0; j--) {
			uint64_t t = 1000 * (r + 1) + j;
			sample_simple(&d, 300, 0x400000 + t, t);
		}
		round_(&d);
	}
	put(&b, d.p, d.n);
	((struct pd_file_header *)b.p)->data.size += d.n;
	write_file(&b);
	struct pd_file *f;
	assert_int_equal(pd_open(path, &f), 0);
	pd_set_window(f, 4096);
	pd_set_unmap_hook(f, keep_unmap, k);
	assert_int_equal(pd_read_events(f, PD_ORDERED | PD_RAW, keep_rec, k), 0);
	pd_set_unmap_hook(f, NULL, NULL);
	assert_int_equal(k->n, 4 + nrounds * per);
	assert_false(k->parsed_early);
	assert_true(k->nm > 10);	/* one-page windows let go of as the read went */
	uint64_t last = 0, in_place = 0;
	struct pd_tally t = {0};
	for (size_t i = 0; i < k->n; i++) {
		struct pd_rec r;
		const void *raw = k->r[i].in_place ? k->r[i].raw : k->r[i].copy;
		uint16_t size;
		memcpy(&size, (const uint8_t *)raw + 6, 2);
		assert_int_equal(pd_parse_record(f, raw, size, k->r[i].offset, &t, &r), 0);
		assert_true(r.u.sample.time >= last);
		if (r.u.sample.time >= 1000)
			assert_int_equal(r.u.sample.ip, 0x400000 + r.u.sample.time);
		last = r.u.sample.time;
		in_place += k->r[i].in_place;
	}
	assert_true(in_place >= nrounds * per);
	/* counted by pd_parse_record, not by the read */
	assert_int_equal(pd_stats(f)->by_type[PERF_RECORD_SAMPLE], 0);
	assert_int_equal(t.st.by_type[PERF_RECORD_SAMPLE], k->n);
	assert_int_equal(t.st.out_of_order, 0);
	pd_add_tally(f, &t);
	assert_int_equal(pd_stats(f)->by_type[PERF_RECORD_SAMPLE], k->n);
	for (size_t i = 0; i < k->nm; i++)
		munmap(k->m[i].p, k->m[i].len);
	pd_close(f);
	free(k);
	free(d.p);
	free(b.p);
}

/* A raw read parsed by pd_parse_record counts what a plain read counts: a damaged
 * sample (cut after its period) whose time lies before what was delivered is damaged,
 * not out of time order as well. */
static int parse_raw(void *arg, const struct pd_rec *r)
{
	struct pd_rec p;
	if (r->type < PD_RECORD_HEADER_ATTR)
		pd_parse_record(((void **)arg)[0], r->raw, r->size, r->offset, ((void **)arg)[1], &p);
	return 0;
}

static int nothing(void *arg, const struct pd_rec *r)
{
	(void)arg;
	(void)r;
	return 0;
}

static void test_raw_counts_as_read(void **state)
{
	(void)state;
	struct buf b = make_file(false), d = {0};

	for (size_t r = 0; r < 3; r++) {
		for (size_t j = 1; j <= 10; j++)
			sample_simple(&d, 300, 0x400000 + j, 1000 * (r + 1) + j);
		if (r == 2) {
			hdr(&d, PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 8 + 6 * 8);
			put64(&d, 100);
			put64(&d, 0x401000);
			put64(&d, (uint64_t)42 << 32 | 41);
			put64(&d, 5);	/* before every sample delivered */
			put64(&d, 3);
			put64(&d, 5000);
		}
		round_(&d);
	}
	put(&b, d.p, d.n);
	((struct pd_file_header *)b.p)->data.size += d.n;
	write_file(&b);
	struct pd_file *f, *g;
	struct pd_tally t = {0};
	void *arg[2];
	assert_int_equal(pd_open(path, &f), 0);
	assert_int_equal(pd_read_events(f, PD_ORDERED, nothing, NULL), 0);
	assert_int_equal(pd_open(path, &g), 0);
	arg[0] = g;
	arg[1] = &t;
	assert_int_equal(pd_read_events(g, PD_ORDERED | PD_RAW, parse_raw, arg), 0);
	pd_add_tally(g, &t);
	const struct pd_stats *a = pd_stats(f), *c = pd_stats(g);
	assert_int_equal(a->bad, 1);
	assert_int_equal(c->bad, a->bad);
	assert_int_equal(c->out_of_order, a->out_of_order);
	assert_int_equal(c->records, a->records);
	assert_memory_equal(c->by_type, a->by_type, sizeof(a->by_type));
	pd_close(f);
	pd_close(g);
	free(d.p);
	free(b.p);
}

static void test_queue_limit(void **state)
{
	(void)state;
	struct buf b = make_file(false);
	struct pd_file *f;
	struct seen s = {0};

	write_file(&b);
	assert_int_equal(pd_open(path, &f), 0);
	pd_set_queue_limit(f, 1);
	assert_int_equal(pd_read_events(f, PD_ORDERED, collect, &s), 0);
	assert_int_equal(pd_stats(f)->by_type[PERF_RECORD_SAMPLE], 4);
	assert_string_equal(s.log, "COMM@10:prog MMAP2@20:/bin/prog@400000+3000 SAMPLE@30:401200/1 "
			    "FINISHED_ROUND@0 SAMPLE@40:401000/0 AUXTRACE@0 SAMPLE@50:401100/1 "
			    "FINISHED_ROUND@0 SAMPLE@60:401300/1 ");
	pd_close(f);
	free(b.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_file),
		cmocka_unit_test(test_raw_samples_kept),
		cmocka_unit_test(test_raw_counts_as_read),
		cmocka_unit_test(test_sample_fields),
		cmocka_unit_test(test_sample_overwrite),
		cmocka_unit_test(test_unordered),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_bad_headers),
		cmocka_unit_test(test_pipe),
		cmocka_unit_test(test_mem),
		cmocka_unit_test(test_queue_limit),
		cmocka_unit_test(test_windows_in_place),
		cmocka_unit_test(test_trailing_payloads),
		cmocka_unit_test(test_data_at_odd_offset),
		cmocka_unit_test(test_pipe_aux_claim),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
