/* perf.data writer: byte layout checked by an independent parser here, and the real
 * perf (when installed) as the oracle that the file is readable and symbolizes. */
#include "xp_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perfdata/pd_read.h"
#include "perfdata/pd_write.h"

/* where the data starts in every file the writer makes */
#define D PD_WRITE_DATA_OFFSET

struct file {
	unsigned char *p;
	size_t n;
	struct pd_file_header h;
};

static void load(struct file *f, const char *path)
{
	FILE *fp = fopen(path, "rb");
	struct stat st;

	assert_non_null(fp);
	assert_int_equal(fstat(fileno(fp), &st), 0);
	f->n = (size_t)st.st_size;
	f->p = malloc(f->n + 1);
	assert_non_null(f->p);
	assert_int_equal(fread(f->p, 1, f->n, fp), f->n);
	fclose(fp);
	assert_true(f->n >= sizeof(f->h));
	memcpy(&f->h, f->p, sizeof(f->h));
}

/* Payload section of feature `feat`, NULL when the bit is clear. */
static const struct pd_section *feat_section(const struct file *f, int feat)
{
	const struct pd_section *sec =
		(const void *)(f->p + f->h.data.offset + f->h.data.size);
	int k = 0;

	if (!(f->h.features[feat / 64] & (1ULL << (feat % 64))))
		return NULL;
	for (int i = 0; i < feat; i++)
		k += !!(f->h.features[i / 64] & (1ULL << (i % 64)));
	return &sec[k];
}

static struct perf_event_attr sw_attr(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	a.size = sizeof(a);
	a.sample_period = 100000;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
	a.sample_id_all = 1;
	a.comm = 1;
	a.mmap2 = 1;
	a.task = 1;
	return a;
}

static void test_string_encoding(void **state)
{
	unsigned char buf[200];
	uint32_t len;

	(void)state;
	assert_int_equal(pd_encode_string(NULL, 0, "vm"), 4 + 64);
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(pd_encode_string(buf, sizeof(buf), "vm"), 68);
	memcpy(&len, buf, 4);
	assert_int_equal(len, 64);
	assert_memory_equal(buf + 4, "vm\0\0", 4);
	assert_int_equal(buf + 67 - buf, 67);
	assert_int_equal(buf[67], 0);
	assert_int_equal(buf[68], 0xee);
	/* 63 characters + NUL fill exactly 64; 64 characters need 128. */
	assert_int_equal(pd_encode_string(NULL, 0, "123456789012345678901234567890123456789012345678901234567890123"), 68);
	assert_int_equal(pd_encode_string(NULL, 0, "1234567890123456789012345678901234567890123456789012345678901234"), 132);
}

static void test_layout(void **state)
{
	char path[1024];
	struct pd_writer *w;
	struct perf_event_attr a = sw_attr(), got;
	struct file f;
	struct {
		struct perf_event_header h;
		uint64_t v;
	} rec = { { PERF_RECORD_SAMPLE, 0, 16 }, 0x1122334455667788ULL };
	char *argv[] = { "xptrace", "record", "--", "true" };
	const struct pd_section *s;
	uint64_t ids[3];
	uint32_t u32;

	(void)state;
	snprintf(path, sizeof(path), "%s/layout.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &a, "cpu-clock"), 0);
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	assert_int_equal(pd_writer_add_attr(w, &a, "task-clock"), 1);
	assert_int_equal(pd_writer_add_id(w, 0, 11, 0, -1), 0);
	assert_int_equal(pd_writer_add_id(w, 0, 12, 1, -1), 0);
	assert_int_equal(pd_writer_add_id(w, 1, 13, 0, -1), 0);
	assert_int_equal(pd_writer_add_id(w, 5, 13, 0, -1), -EINVAL);
	assert_int_equal(pd_writer_id_index(w), 0);
	assert_int_equal(pd_writer_record(w, &rec.h), 0);
	assert_int_equal(pd_writer_finished_round(w), 0);
	assert_int_equal(pd_writer_feat_string(w, PD_FEAT_HOSTNAME, "box"), 0);
	assert_int_equal(pd_writer_feat_cmdline(w, 4, argv), 0);
	assert_int_equal(pd_writer_feat_sample_time(w, 5, 9), 0);
	/* 16 (ID_INDEX head) + 3*32 + 16 (sample) + 8 (round). */
	assert_int_equal(pd_writer_data_size(w), 136);
	assert_int_equal(pd_writer_close(w), 0);

	load(&f, path);
	assert_int_equal(f.h.magic, PD_MAGIC2);
	assert_int_equal(f.h.size, 104);
	assert_int_equal(f.h.attr_size, 128 + 16);
	assert_int_equal(f.h.data.offset, D);
	/* attrs and ids before the data: a killed recording keeps them */
	assert_true(f.h.attrs.offset + f.h.attrs.size <= D);
	assert_int_equal(f.h.data.size, 136);
	assert_int_equal(f.h.attrs.size, 2 * 144);
	/* ID_INDEX first: nr 3, then {id, idx, cpu, tid}. */
	assert_int_equal(((struct perf_event_header *)(f.p + D))->type, PD_RECORD_ID_INDEX);
	assert_int_equal(((struct perf_event_header *)(f.p + D))->size, 16 + 96);
	memcpy(ids, f.p + D + 8, 8);
	assert_int_equal(ids[0], 3);
	memcpy(ids, f.p + D + 16 + 64, 24);	/* third entry */
	assert_int_equal(ids[0], 13);
	assert_int_equal(ids[1], 1);
	assert_int_equal(ids[2], 0);
	assert_memory_equal(f.p + D + 112, &rec, 16);
	assert_int_equal(((struct perf_event_header *)(f.p + D + 128))->type, PD_RECORD_FINISHED_ROUND);
	/* attrs: second attr is task-clock with one id (13); size field is 128. */
	memcpy(&got, f.p + f.h.attrs.offset + 144, 128);
	assert_int_equal(got.config, PERF_COUNT_SW_TASK_CLOCK);
	assert_int_equal(got.size, 128);
	{
		struct pd_section ids_sec;
		memcpy(&ids_sec, f.p + f.h.attrs.offset + 128, 16);
		assert_int_equal(ids_sec.size, 16);
		memcpy(ids, f.p + ids_sec.offset, 16);
		assert_int_equal(ids[0], 11);
		assert_int_equal(ids[1], 12);
	}
	/* features: hostname, cmdline, event desc, sample time, nothing else. */
	assert_int_equal(f.h.features[0], (1ULL << PD_FEAT_HOSTNAME) | (1ULL << PD_FEAT_CMDLINE) |
					       (1ULL << PD_FEAT_EVENT_DESC) | (1ULL << PD_FEAT_SAMPLE_TIME));
	s = feat_section(&f, PD_FEAT_HOSTNAME);
	assert_int_equal(s->offset, D + 136 + 4 * 16);
	assert_int_equal(s->size, 68);
	assert_string_equal((char *)f.p + s->offset + 4, "box");
	s = feat_section(&f, PD_FEAT_CMDLINE);
	memcpy(&u32, f.p + s->offset, 4);
	assert_int_equal(u32, 4);
	assert_string_equal((char *)f.p + s->offset + 4 + 4 + 64 + 4 + 64 + 4 + 64 + 4, "true");
	s = feat_section(&f, PD_FEAT_EVENT_DESC);
	memcpy(&u32, f.p + s->offset, 4);
	assert_int_equal(u32, 2);
	memcpy(&u32, f.p + s->offset + 4, 4);
	assert_int_equal(u32, 128);
	memcpy(&u32, f.p + s->offset + 8 + 128, 4);	/* nr_ids of cpu-clock */
	assert_int_equal(u32, 2);
	assert_string_equal((char *)f.p + s->offset + 8 + 128 + 4 + 4, "cpu-clock");
	s = feat_section(&f, PD_FEAT_SAMPLE_TIME);
	memcpy(ids, f.p + s->offset, 16);
	assert_int_equal(ids[0], 5);
	assert_int_equal(ids[1], 9);
	free(f.p);
}

static void test_auxtrace_padding(void **state)
{
	char path[1024];
	struct pd_writer *w;
	struct pd_auxtrace_event ev = { .offset = 4096, .reference = 7, .idx = 0, .tid = 42, .cpu = 1 };
	struct pd_auxtrace_event got;
	const unsigned char a[5] = { 1, 2, 3, 4, 5 }, b[8] = { 6, 7, 8, 9, 10, 11, 12, 13 };
	uint64_t priv[PD_PT_INFO_BASE_WORDS] = { 8, 0, 0, 0, 0, 0, 0, 0, 0, 0 };
	struct file f;
	struct perf_event_attr at = sw_attr();

	(void)state;
	snprintf(path, sizeof(path), "%s/aux.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &at, "x"), 0);
	assert_int_equal(pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, 10), 0);
	assert_int_equal(pd_writer_auxtrace2(w, &ev, a, 5, b, 8), 0);
	assert_int_equal(ev.size, 16);
	assert_int_equal(pd_writer_data_size(w), 16 + 80 + 48 + 16);
	assert_int_equal(pd_writer_close(w), 0);
	load(&f, path);
	assert_int_equal(((struct perf_event_header *)(f.p + D))->type, PD_RECORD_AUXTRACE_INFO);
	assert_int_equal(((struct perf_event_header *)(f.p + D))->size, 96);
	memcpy(&got, f.p + D + 96, sizeof(got));
	assert_int_equal(got.header.type, PD_RECORD_AUXTRACE);
	assert_int_equal(got.header.size, 48);
	assert_int_equal(got.size, 16);
	assert_int_equal(got.tid, 42);
	assert_memory_equal(f.p + D + 96 + 48, "\1\2\3\4\5\6\7\10\11\12\13\14\15\0\0\0", 16);
	free(f.p);
}

static void test_rejects_attr_beyond_perf_size(void **state)
{
	char path[1024];
	struct pd_writer *w;
	struct perf_event_attr a = sw_attr();

	(void)state;
	snprintf(path, sizeof(path), "%s/big.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &a, "ok"), 0);
	if (sizeof(a) > PD_ATTR_SIZE) {
		((unsigned char *)&a)[PD_ATTR_SIZE] = 1;
		assert_int_equal(pd_writer_add_attr(w, &a, "bad"), -EINVAL);
	}
	assert_int_equal(pd_writer_close(w), 0);
}

/* A full file system is simulated with RLIMIT_FSIZE (EFBIG takes the same path as
 * ENOSPC): the writer must cut the data back and still finalize a valid file. */
static void test_disk_full_keeps_file_valid(void **state)
{
	char path[1024];
	pid_t pid;
	int st;
	struct file f;

	(void)state;
	snprintf(path, sizeof(path), "%s/full.data", xp_test_tmp());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 1 << 20, 1 << 20 };
		struct pd_writer *w;
		struct perf_event_attr a = sw_attr();
		struct {
			struct perf_event_header h;
			uint64_t v[7];
		} rec = { { PERF_RECORD_SAMPLE, 0, 64 }, { 0 } };
		int r = 0;
		uint64_t n = 0;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		if (pd_writer_create(&w, path) < 0 || pd_writer_add_attr(w, &a, "c") < 0)
			_exit(10);
		while (r == 0 && n < 100000) {
			rec.v[0] = n++;
			r = pd_writer_record(w, &rec.h);
		}
		if (r != -EFBIG || pd_writer_error(w) != -EFBIG)
			_exit(11);
		if (pd_writer_truncated(w) < PD_WRITE_RESERVE)
			_exit(12);
		if (pd_writer_finalize(w) != 0)
			_exit(13);
		pd_writer_free(w);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	load(&f, path);
	assert_true(f.h.data.size > 0);
	assert_int_equal(f.h.data.size % 64, 0);
	assert_true(f.h.data.size <= (1 << 20) - PD_WRITE_RESERVE);
	assert_int_equal(f.h.attrs.size, 144);
	assert_true(f.h.attrs.offset + 144 <= D);
	assert_non_null(feat_section(&f, PD_FEAT_EVENT_DESC));
	/* The last kept record is intact: its counter is its index. */
	{
		uint64_t v;
		memcpy(&v, f.p + D + f.h.data.size - 56, 8);
		assert_int_equal(v, f.h.data.size / 64 - 1);
	}
	free(f.p);
}

/* The disk takes only part of the first buffer written (200 KiB of 256): the records in
 * that part are kept, but for the reserve.  They were all given back (the cut was made
 * against the data known on disk before the write: none), and a step recording at
 * 300 KB free kept no PT.  The AUX bytes kept are counted without their padding. */
static void test_disk_full_partial_write(void **state)
{
	enum { ROOM = 200 * 1024, CHUNK = 1001, REC = 48 + 1008 };
	char path[1024];
	pid_t pid;
	int st;
	struct file f;

	(void)state;
	snprintf(path, sizeof(path), "%s/full3.data", xp_test_tmp());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { D + ROOM, D + ROOM };
		struct pd_writer *w;
		struct perf_event_attr a = sw_attr();
		static unsigned char pt[CHUNK];
		struct pd_auxtrace_event ev;
		int r = 0;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		if (pd_writer_create(&w, path) < 0 || pd_writer_add_attr(w, &a, "c") < 0)
			_exit(10);
		for (uint64_t n = 0; r == 0 && n < 1000; n++) {
			memset(&ev, 0, sizeof(ev));
			ev.offset = n * CHUNK;
			r = pd_writer_auxtrace(w, &ev, pt, CHUNK);
		}
		if (r != -EFBIG)
			_exit(11);
		if (pd_writer_finalize(w) != 0)
			_exit(13);
		/* what is left of the data is whole AUXTRACE records */
		if (pd_writer_aux_bytes(w) != pd_writer_data_size(w) / REC * CHUNK)
			_exit(14);
		pd_writer_free(w);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	load(&f, path);
	assert_int_equal(f.h.data.size % REC, 0);
	/* the cut: at a boundary (one per 16 KiB) at least the reserve before the 200 KiB */
	assert_true(f.h.data.size <= ROOM - PD_WRITE_RESERVE);
	assert_true(f.h.data.size + PD_WRITE_RESERVE + 16 * 1024 + REC >= ROOM);
	free(f.p);
}

/* The tail (a 600 KiB feature) is larger than the reserve: finalize keeps giving back
 * data until it fits. */
static void test_disk_full_big_tail(void **state)
{
	char path[1024];
	pid_t pid;
	int st;
	struct file f;

	(void)state;
	snprintf(path, sizeof(path), "%s/full2.data", xp_test_tmp());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = { 1 << 20, 1 << 20 };
		struct pd_writer *w;
		struct perf_event_attr a = sw_attr();
		static unsigned char big[600 * 1024];
		struct {
			struct perf_event_header h;
			uint64_t v[7];
		} rec = { { PERF_RECORD_SAMPLE, 0, 64 }, { 0 } };
		int r = 0;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &rl);
		memset(big, 0xab, sizeof(big));
		if (pd_writer_create(&w, path) < 0 || pd_writer_add_attr(w, &a, "c") < 0 ||
		    pd_writer_feature(w, PD_FEAT_CPUDESC, big, sizeof(big)) < 0)
			_exit(10);
		for (uint64_t n = 0; r == 0; n++) {
			rec.v[0] = n;
			r = pd_writer_record(w, &rec.h);
		}
		if (pd_writer_finalize(w) != 0)
			_exit(13);
		pd_writer_free(w);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	load(&f, path);
	assert_true(f.h.data.size + 600 * 1024 + 104 <= (1 << 20));
	/* whole records, or (all given back) the one FINISHED_ROUND perf needs to see the
	 * file as finalized */
	assert_true(f.h.data.size % 64 == 0 || f.h.data.size == 8);
	assert_int_equal(feat_section(&f, PD_FEAT_CPUDESC)->size, 600 * 1024);
	assert_int_equal(f.h.attrs.size, 144);
	assert_true(f.h.attrs.offset + 144 <= f.n);
	free(f.p);
}

static volatile int sink;
__attribute__((noinline, noipa)) static void fn_hot(void) { sink = 1; }
__attribute__((noinline, noipa)) static void fn_cold(void) { sink = 2; }

static int run_cmd(const char *cmd, char *out, size_t outsz)
{
	FILE *p = popen(cmd, "r");
	size_t n;

	if (!p)
		return -1;
	n = fread(out, 1, outsz - 1, p);
	out[n] = 0;
	return pclose(p);
}

/* The oracle: perf reads the file without warnings, shows our header features and
 * symbolizes samples at fn_hot/fn_cold through the MMAP2 of this very test binary. */
static void test_perf_reads_it(void **state)
{
	char path[1024], cmd[1600], out[16384], exe[4096], line[512];
	struct pd_writer *w;
	struct perf_event_attr a = sw_attr();
	unsigned long lo = 0, hi = 0, pgoff = 0;
	FILE *maps;
	char *argv[] = { "test_pd_write" };
	int hot = 0, cold = 0;

	(void)state;
	fn_hot();
	fn_cold();
	if (system("perf version >/dev/null 2>&1") != 0)
		skip();
	ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(el > 0);
	exe[el] = 0;
	maps = fopen("/proc/self/maps", "r");
	assert_non_null(maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long l, h, o;
		char perms[8];
		if (sscanf(line, "%lx-%lx %7s %lx", &l, &h, perms, &o) == 4 && perms[2] == 'x' &&
		    strstr(line, exe) && (unsigned long)fn_hot >= l && (unsigned long)fn_hot < h) {
			lo = l;
			hi = h;
			pgoff = o;
		}
	}
	fclose(maps);
	assert_true(lo != 0);

	snprintf(path, sizeof(path), "%s/perf.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(pd_writer_add_id(w, 0, 77, 0, getpid()), 0);
	assert_int_equal(pd_writer_feat_host(w), 0);
	assert_int_equal(pd_writer_feat_cmdline(w, 1, argv), 0);
	{
		/* COMM: pid, tid, comm[], then sample_id (IDENTIFIER first, then TID, TIME). */
		struct {
			struct perf_event_header h;
			uint32_t pid, tid;
			char comm[16];
			uint64_t sid_tid, sid_time, sid_id;
		} c;
		memset(&c, 0, sizeof(c));
		c.h.type = PERF_RECORD_COMM;
		c.h.size = sizeof(c);
		c.pid = c.tid = (uint32_t)getpid();
		strcpy(c.comm, "pdwtest");
		c.sid_tid = (uint64_t)getpid() | ((uint64_t)getpid() << 32);
		c.sid_time = 1000;
		c.sid_id = 77;
		assert_int_equal(pd_writer_record(w, &c.h), 0);
	}
	{
		unsigned char buf[4096 + 128];
		struct perf_record_mmap2_hd {
			struct perf_event_header h;
			uint32_t pid, tid;
			uint64_t addr, len, pgoff;
			uint32_t maj, min;
			uint64_t ino, ino_gen;
			uint32_t prot, flags;
		} m;
		size_t nlen = strlen(exe) + 1, plen = (nlen + 7) & ~(size_t)7;
		uint64_t sid[3] = { (uint64_t)getpid() | ((uint64_t)getpid() << 32), 1001, 77 };
		memset(&m, 0, sizeof(m));
		m.h.type = PERF_RECORD_MMAP2;
		m.h.size = (uint16_t)(sizeof(m) + plen + sizeof(sid));
		m.pid = m.tid = (uint32_t)getpid();
		m.addr = lo;
		m.len = hi - lo;
		m.pgoff = pgoff;
		m.prot = 5;
		m.flags = 2;
		memset(buf, 0, sizeof(buf));
		memcpy(buf, &m, sizeof(m));
		memcpy(buf + sizeof(m), exe, nlen);
		memcpy(buf + sizeof(m) + plen, sid, sizeof(sid));
		assert_int_equal(pd_writer_record(w, (struct perf_event_header *)buf), 0);
	}
	for (int i = 0; i < 5; i++) {
		/* IDENTIFIER, IP, TID, TIME, PERIOD */
		struct {
			struct perf_event_header h;
			uint64_t id, ip, tid, time, period;
		} s = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 48 }, 77,
			i < 3 ? (uint64_t)fn_hot : (uint64_t)fn_cold,
			(uint64_t)getpid() | ((uint64_t)getpid() << 32), 2000 + (uint64_t)i, 100000 };
		assert_int_equal(pd_writer_record(w, &s.h), 0);
	}
	assert_int_equal(pd_writer_finished_round(w), 0);
	assert_int_equal(pd_writer_feat_sample_time(w, 2000, 2004), 0);
	assert_int_equal(pd_writer_close(w), 0);

	snprintf(cmd, sizeof(cmd), "perf script -i '%s' -F comm,tid,ip,sym 2>&1", path);
	assert_int_equal(run_cmd(cmd, out, sizeof(out)), 0);
	for (char *l = strtok(out, "\n"); l; l = strtok(NULL, "\n")) {
		if (strstr(l, "pdwtest") && strstr(l, "fn_hot"))
			hot++;
		else if (strstr(l, "pdwtest") && strstr(l, "fn_cold"))
			cold++;
		else
			fail_msg("unexpected perf script line: %s", l);
	}
	assert_int_equal(hot, 3);
	assert_int_equal(cold, 2);
	snprintf(cmd, sizeof(cmd), "perf report -i '%s' --header-only 2>&1", path);
	assert_int_equal(run_cmd(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "# cmdline : test_pd_write"));
	assert_non_null(strstr(out, "# event : name = cpu-clock"));
	assert_non_null(strstr(out, "id = { 77 }"));
	assert_non_null(strstr(out, "# perf version : xptrace-"));
	assert_non_null(strstr(out, "# nrcpus online"));
	assert_non_null(strstr(out, "# cpuid : "));
	assert_non_null(strstr(out, "# total memory"));
	assert_non_null(strstr(out, "# time of first sample"));
	assert_null(strstr(out, "WARNING"));
}

/* sample_id trailer order from the kernel's perf_event__id_header_size(). */
static void test_id_sample(void **state)
{
	uint64_t out[6];
	uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		      PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;

	(void)state;
	memset(out, 0xff, sizeof(out));
	assert_int_equal(pd_id_sample(out, st, 7, 9, 1234, 55, 1), 32);
	assert_int_equal(out[0], 7 | (9ULL << 32));
	assert_int_equal(out[1], 1234);
	assert_int_equal(out[2], 1);	/* cpu, res */
	assert_int_equal(out[3], 55);	/* IDENTIFIER last */
	assert_int_equal(out[4], ~0ULL);
	assert_int_equal(pd_id_sample(out, PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID, 1, 1, 1, 8, 0), 16);
	assert_int_equal(out[0], 8);
	assert_int_equal(out[1], 8);
	assert_int_equal(pd_id_sample(out, PERF_SAMPLE_IP, 1, 1, 1, 8, 0), 0);
	/* TIME follows header, IDENTIFIER, IP, TID (in sample_type bit order). */
	assert_int_equal(pd_sample_time_offset(st), 32);
	assert_int_equal(pd_sample_time_offset(PERF_SAMPLE_TIME), 8);
	assert_int_equal(pd_sample_time_offset(PERF_SAMPLE_IP | PERF_SAMPLE_TIME), 16);
	assert_int_equal(pd_sample_time_offset(PERF_SAMPLE_IP), -ENOENT);
}

/* A sample of sw_attr(): IDENTIFIER, IP, TID, TIME, PERIOD. */
static int put_sample(struct pd_writer *w, uint64_t id, uint64_t ip, uint64_t time)
{
	struct {
		struct perf_event_header h;
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time, period;
	} r = { { PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER, 48 }, id, ip, 7, 7, time, 100000 };
	return pd_writer_record(w, &r.h);
}

struct got {
	char log[2048];
	size_t n, samples;
};

static int log_sample(void *ctx, const struct pd_rec *r)
{
	struct got *g = ctx;
	if (r->type != PERF_RECORD_SAMPLE)
		return 0;
	g->samples++;
	if (g->n < sizeof(g->log) - 64)
		g->n += (size_t)snprintf(g->log + g->n, sizeof(g->log) - g->n, "%llx/%u ",
					 (unsigned long long)r->u.sample.ip, r->attr->index);
	return 0;
}

/* Reads path's samples as "ip/attr " into g; the open's result. */
static int read_samples(const char *path, struct got *g, struct pd_stats *st)
{
	struct pd_file *f;
	memset(g, 0, sizeof(*g));
	int rc = pd_open(path, &f);
	if (rc < 0)
		return rc;
	rc = pd_read_events(f, 0, log_sample, g);
	*st = *pd_stats(f);
	pd_close(f);
	return rc;
}

/* A recorder killed mid-run (the writer never closed) leaves a file that reads: attrs
 * and ids before the data, the data size in the header at each timed flush, an attr
 * added after data was written (uprobes armed mid-run) included.  Once the header
 * was written last, and a killed recording held nothing readable. */
static void test_killed_writer_file_reads(void **state)
{
	char path[1024];
	struct pd_writer *w;
	struct perf_event_attr a = sw_attr();
	struct got g;
	struct pd_stats st;

	(void)state;
	snprintf(path, sizeof(path), "%s/killed.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(pd_writer_add_id(w, 0, 11, 0, -1), 0);
	assert_int_equal(pd_writer_feat_string(w, PD_FEAT_HOSTNAME, "box"), 0);
	assert_int_equal(put_sample(w, 11, 0x1000, 1), 0);
	usleep(120000);
	assert_int_equal(put_sample(w, 11, 0x1001, 2), 0);	/* a flush is due */
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	assert_int_equal(pd_writer_add_attr(w, &a, "task-clock"), 1);
	assert_int_equal(pd_writer_add_id(w, 1, 22, 0, -1), 0);
	assert_int_equal(put_sample(w, 22, 0x2000, 3), 0);
	usleep(120000);
	assert_int_equal(put_sample(w, 22, 0x2001, 4), 0);
	assert_int_equal(put_sample(w, 11, 0x1002, 5), 0);	/* in the buffer: lost */
	assert_int_equal(read_samples(path, &g, &st), 0);
	assert_string_equal(g.log, "1000/0 1001/0 2000/1 2001/1 ");
	assert_false(st.truncated);
	struct file f;
	load(&f, path);
	assert_int_equal(f.h.data.offset, D);
	assert_int_equal(f.h.data.size, 4 * 48);
	assert_int_equal(f.h.attrs.size, 2 * 144);
	assert_true(f.h.attrs.offset + f.h.attrs.size <= D);
	assert_int_equal(f.h.features[0], 0);	/* they come at close */
	free(f.p);
	/* records flushed after the last header update (a full buffer) are read too */
	for (int i = 0; i < 6000; i++)
		assert_int_equal(put_sample(w, 11, 0x3000, 6), 0);
	assert_int_equal(read_samples(path, &g, &st), 0);
	/* at least the full buffer (256 KiB: 5461 whole samples) after the first four */
	assert_true(g.samples >= 4 + 262144 / 48);
	pd_writer_free(w);	/* killed: never finalized */
}

/* A finalized file cut at every 8th offset from the end of its attrs on: each cut
 * opens, reads the samples before the cut and says what was lost. */
static void test_cut_files_read(void **state)
{
	char path[1024], cut[1024];
	struct pd_writer *w;
	struct perf_event_attr a = sw_attr();
	struct got g;
	struct pd_stats st;

	(void)state;
	snprintf(path, sizeof(path), "%s/whole.data", xp_test_tmp());
	snprintf(cut, sizeof(cut), "%s/cut.data", xp_test_tmp());
	assert_int_equal(pd_writer_create(&w, path), 0);
	assert_int_equal(pd_writer_add_attr(w, &a, "cpu-clock"), 0);
	assert_int_equal(pd_writer_add_id(w, 0, 11, 0, -1), 0);
	assert_int_equal(pd_writer_feat_string(w, PD_FEAT_HOSTNAME, "box"), 0);
	for (int i = 0; i < 20; i++)
		assert_int_equal(put_sample(w, 11, 0x1000 + (uint64_t)i, (uint64_t)i), 0);
	assert_int_equal(pd_writer_close(w), 0);
	struct file f;
	load(&f, path);
	uint64_t attrs_end = f.h.attrs.offset + f.h.attrs.size, data_end = D + f.h.data.size;
	assert_true(attrs_end <= D);
	for (uint64_t n = attrs_end; n <= f.n; n += 8) {
		FILE *o = fopen(cut, "wb");
		assert_non_null(o);
		assert_int_equal(fwrite(f.p, 1, n, o), n);
		fclose(o);
		assert_int_equal(read_samples(cut, &g, &st), 0);
		uint64_t whole = n < D ? 0 : (n - D) / 48;
		if (whole > 20)
			whole = 20;
		char want[2048] = "";
		for (uint64_t i = 0; i < whole; i++)
			snprintf(want + strlen(want), sizeof(want) - strlen(want), "%llx/0 ",
				 (unsigned long long)(0x1000 + i));
		assert_string_equal(g.log, want);
		/* the loss is stated: records cut, or data missing */
		if (n < data_end)
			assert_true(st.truncated || st.bytes_lost == data_end - (n > D ? n : D));
	}
	free(f.p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_string_encoding),
		cmocka_unit_test(test_id_sample),
		cmocka_unit_test(test_layout),
		cmocka_unit_test(test_auxtrace_padding),
		cmocka_unit_test(test_rejects_attr_beyond_perf_size),
		cmocka_unit_test(test_disk_full_keeps_file_valid),
		cmocka_unit_test(test_disk_full_big_tail),
		cmocka_unit_test(test_disk_full_partial_write),
		cmocka_unit_test(test_perf_reads_it),
		cmocka_unit_test(test_killed_writer_file_reads),
		cmocka_unit_test(test_cut_files_read),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
