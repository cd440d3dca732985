/* record --mode step decoded by libipt (not by our code, not by perf): the instruction
 * stream libipt's instruction decoder reconstructs from the AUXTRACE data of the
 * perf.data, with an image built from its MMAP2 records, equals the single-step ground
 * truth of build/progs/xp_sstep instruction for instruction. */
#include "xp_test.h"

#include <intel-pt.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/pd_format.h"

#define PIE_BASE 0x555555554000ull

struct stream {
	uint32_t tid;
	uint8_t *data;
	size_t len;
};

static uint64_t main_offset(const char *prog)
{
	char cmd[8192];
	unsigned long long off = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"main\" { print $1 }'", prog);
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_int_equal(fscanf(p, "%llx", &off), 1);
	pclose(p);
	return off;
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* AUXTRACE data per tid, and every executable mapping into the image. */
static int load(const char *dir, struct pt_image *img, struct stream *st, int maxst)
{
	char path[4096];
	size_t len, off, end;
	uint8_t *f;
	struct pd_file_header h;
	int n = 0;

	assert_true(snprintf(path, sizeof(path), "%s/perf.data", dir) < (int)sizeof(path));
	f = slurp(path, &len);
	assert_true(len >= sizeof(h));
	memcpy(&h, f, sizeof(h));
	off = h.data.offset;
	end = h.data.offset + h.data.size;
	assert_true(end <= len);
	while (off + sizeof(struct perf_event_header) <= end) {
		struct perf_event_header eh;

		memcpy(&eh, f + off, sizeof(eh));
		assert_true(eh.size >= sizeof(eh) && off + eh.size <= end);
		if (eh.type == PD_RECORD_AUXTRACE) {
			struct pd_auxtrace_event a;
			int i;

			memcpy(&a, f + off, sizeof(a));
			for (i = 0; i < n && st[i].tid != a.tid; i++)
				;
			if (i == n) {
				assert_true(n < maxst);
				st[n].tid = a.tid;
				st[n].data = NULL;
				st[n].len = 0;
				n++;
			}
			st[i].data = realloc(st[i].data, st[i].len + a.size);
			assert_non_null(st[i].data);
			memcpy(st[i].data + st[i].len, f + off + eh.size, a.size);
			st[i].len += a.size;
			off += eh.size + a.size;
			continue;
		}
		if (eh.type == PERF_RECORD_MMAP2) {
			const uint8_t *b = f + off + sizeof(eh);
			uint64_t addr, mlen, pgoff;
			const char *name = (const char *)b + 64;
			char file[4096];

			memcpy(&addr, b + 8, 8);
			memcpy(&mlen, b + 16, 8);
			memcpy(&pgoff, b + 24, 8);
			snprintf(file, sizeof(file), "%s", name);
			if (strcmp(name, "[vdso]") == 0 && (eh.misc & PERF_RECORD_MISC_MMAP_BUILD_ID)) {
				char hex[41];

				for (int i = 0; i < b[32] && i < 20; i++)
					snprintf(hex + 2 * i, 3, "%02x", b[36 + i]);
				if (snprintf(file, sizeof(file), "%s/.build-id/%.2s/%s/vdso", dir, hex,
					     hex + 2) >= (int)sizeof(file))
					file[0] = 0;
				pgoff = 0;
			}
			if (file[0] == '/')
				assert_true(pt_image_add_file(img, file, pgoff, mlen, NULL, addr) >= 0);
		}
		off += eh.size;
	}
	free(f);
	return n;
}

/* Decodes one thread's stream; returns the instruction addresses. */
static uint64_t *decode(const struct stream *s, struct pt_image *img, size_t *n)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	struct pt_insn insn;
	struct pt_event ev;
	uint64_t *ips = NULL;
	size_t cap = 0;
	int status;

	pt_config_init(&cfg);
	cfg.begin = s->data;
	cfg.end = s->data + s->len;
	d = pt_insn_alloc_decoder(&cfg);
	assert_non_null(d);
	assert_true(pt_insn_set_image(d, img) >= 0);
	*n = 0;
	status = pt_insn_sync_forward(d);
	assert_true(status >= 0);
	for (;;) {
		while (status & pts_event_pending) {
			status = pt_insn_event(d, &ev, sizeof(ev));
			if (status < 0)
				break;
		}
		if (status < 0)
			break;
		status = pt_insn_next(d, &insn, sizeof(insn));
		if (status < 0)
			break;
		if (*n == cap) {
			cap = cap ? cap * 2 : 65536;
			ips = realloc(ips, cap * sizeof(*ips));
			assert_non_null(ips);
		}
		ips[(*n)++] = insn.ip;
	}
	if (status != -pte_eos)
		fail_msg("tid %u: libipt stops after %zu instructions: %s", s->tid, *n,
			 pt_errstr(pt_errcode(status)));
	pt_insn_free_decoder(d);
	return ips;
}

static void check_program(const char *name)
{
	char prog[4096], cmd[16384], dir[4096], truth[4096];
	struct stream st[8];
	struct pt_image *img = pt_image_alloc(name);
	uint64_t off, start, *ips, want;
	size_t n, i, j;
	int nst;
	FILE *f;

	snprintf(prog, sizeof(prog), "%s/build/progs/%s", XP_SRCDIR, name);
	off = main_offset(prog);
	start = PIE_BASE + off;
	snprintf(dir, sizeof(dir), "%s/%s", xp_test_tmp(), name);
	n = (size_t)snprintf(cmd, sizeof(cmd),
		 "setarch -R '%s/build/progs/xp_sstep' '%s/%s.truth' %#llx -- '%s' >/dev/null && "
		 "setarch -R '%s' record -q --mode step -o '%s' -- '%s' >/dev/null",
		 XP_SRCDIR, xp_test_tmp(), name, (unsigned long long)off, prog, xp_test_xptrace(), dir, prog);
	assert_true(n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
	nst = load(dir, img, st, 8);
	assert_int_equal(nst, 1);
	ips = decode(&st[0], img, &n);
	for (i = 0; i < n && ips[i] != start; i++)
		;
	assert_true(i < n);
	snprintf(truth, sizeof(truth), "%s/%s.truth.0", xp_test_tmp(), name);
	f = fopen(truth, "r");
	assert_non_null(f);
	for (j = 0; fscanf(f, "%llx", (unsigned long long *)&want) == 1; j++, i++) {
		if (i >= n)
			fail_msg("%s: libipt's stream ends after %zu instructions of the truth", name, j);
		if (ips[i] != want)
			fail_msg("%s: instruction %zu: libipt %#llx, truth %#llx", name, j,
				 (unsigned long long)ips[i], (unsigned long long)want);
	}
	fclose(f);
	if (i != n)
		fail_msg("%s: libipt decodes %zu instructions more than the truth", name, n - i);
	assert_true(j > 1000);
	free(ips);
	free(st[0].data);
	pt_image_free(img);
}

static void test_basic(void **state)
{
	(void)state;
	check_program("step_basic");
}

static void test_signal(void **state)
{
	(void)state;
	check_program("step_signal");
}

static void test_dlopen(void **state)
{
	(void)state;
	check_program("step_dlopen");
}

/* Signals interrupting user code (FUP + TIP): libipt decodes both threads to the end
 * and the main thread enters the handler three times. */
static void test_async(void **state)
{
	char prog[4096], cmd[16384], dir[4096];
	struct stream st[8];
	struct pt_image *img = pt_image_alloc("async");
	uint64_t handler = 0, *ips;
	size_t n, entries = 0, total = 0;
	char line[256];
	FILE *p;
	int nst;

	(void)state;
	snprintf(prog, sizeof(prog), "%s/build/progs/step_async", XP_SRCDIR);
	snprintf(dir, sizeof(dir), "%s/async", xp_test_tmp());
	n = (size_t)snprintf(cmd, sizeof(cmd), "setarch -R '%s' record -q --mode step -o '%s' -- '%s' >/dev/null",
			     xp_test_xptrace(), dir, prog);
	assert_true(n < sizeof(cmd));
	assert_int_equal(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3 == \"on_usr1\" { print $1 }'", prog);
	p = popen(cmd, "r");
	assert_non_null(p);
	if (fgets(line, sizeof(line), p))
		handler = PIE_BASE + strtoull(line, NULL, 16);
	pclose(p);
	nst = load(dir, img, st, 8);
	assert_int_equal(nst, 2);
	for (int i = 0; i < nst; i++) {
		ips = decode(&st[i], img, &n);
		for (size_t j = 0; j < n; j++)
			entries += ips[j] == handler;
		total += n;
		free(ips);
		free(st[i].data);
	}
	assert_int_equal(entries, 3);
	assert_true(total > 10000);
	pt_image_free(img);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_basic),
		cmocka_unit_test(test_signal),
		cmocka_unit_test(test_dlopen),
		cmocka_unit_test(test_async),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
