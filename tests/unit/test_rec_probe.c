/* record --probe: the LIST syntax, vaddr -> file offset through PT_LOAD headers, and
 * finding functions by name or glob in an ELF file (checked against where the kernel
 * mapped this test's own functions). */
#include "xp_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/rec_probe.h"
#include "record/rec_probe_tfs.h"
#include "session/sym_find.h"

__attribute__((noinline, used)) int xp_find_alpha(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline, used)) int xp_find_beta(int x)
{
	__asm__ volatile("" ::: "memory");
	return x * 3;
}

static void test_parse(void **state)
{
	struct rec_probe_item *v;
	char why[256];
	int n;

	(void)state;
	n = rec_probe_parse("C,hot_*,malloc@libc.so.6,f@/usr/lib/x.so,a[bc]?", &v, why, sizeof(why));
	assert_int_equal(n, 5);
	assert_string_equal(v[0].sym, "C");
	assert_null(v[0].module);
	assert_int_equal(v[0].glob, 0);
	assert_string_equal(v[1].sym, "hot_*");
	assert_int_equal(v[1].glob, 1);
	assert_string_equal(v[2].sym, "malloc");
	assert_string_equal(v[2].module, "libc.so.6");
	assert_int_equal(v[2].glob, 0);
	assert_string_equal(v[3].module, "/usr/lib/x.so");
	assert_int_equal(v[4].glob, 1);
	rec_probe_items_free(v, n);
	/* a module's path may hold spaces */
	n = rec_probe_parse("f@/x y/lib z.so", &v, why, sizeof(why));
	assert_int_equal(n, 1);
	assert_string_equal(v[0].sym, "f");
	assert_string_equal(v[0].module, "/x y/lib z.so");
	rec_probe_items_free(v, n);

	static const struct {
		const char *list, *why;
	} bad[] = {
		{ "", "an empty item (two commas, or one at an end)" },
		{ "a,,b", "an empty item (two commas, or one at an end)" },
		{ "a,", "an empty item (two commas, or one at an end)" },
		{ "@libc.so.6", "'@libc.so.6' has no symbol before '@'" },
		{ "malloc@", "'malloc@' has no module after '@'" },
		{ "a@b@c", "'a@b@c' has more than one '@'" },
		{ "a b", "'a b' has a space in its symbol" },
		{ "a b@/x y/lib.so", "'a b@/x y/lib.so' has a space in its symbol" },
		{ "f@lib*.so", "'f@lib*.so': globs are for symbols, a module is a path or a name" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = (void *)1;
		assert_int_equal(rec_probe_parse(bad[i].list, &v, why, sizeof(why)), -EINVAL);
		assert_null(v);
		assert_string_equal(why, bad[i].why);
	}
}

static void test_vaddr_offset(void **state)
{
	/* a PIE's usual layout, and a segment whose file bytes end before its memory */
	static const struct sym_seg segs[] = {
		{ .vaddr = 0x0, .offset = 0x0, .filesz = 0x628 },
		{ .vaddr = 0x1000, .offset = 0x1000, .filesz = 0x1a5 },
		{ .vaddr = 0x3db8, .offset = 0x2db8, .filesz = 0x260 },
	};
	uint64_t off = 7;

	(void)state;
	assert_int_equal(sym_vaddr_offset(segs, 3, 0x1149, &off), 0);
	assert_int_equal(off, 0x1149);
	assert_int_equal(sym_vaddr_offset(segs, 3, 0x3dc0, &off), 0);
	assert_int_equal(off, 0x2dc0);
	assert_int_equal(sym_vaddr_offset(segs, 3, 0x4017, &off), 0);
	assert_int_equal(off, 0x3017);
	off = 7;
	assert_int_equal(sym_vaddr_offset(segs, 3, 0x4018, &off), -ENOENT);	/* .bss */
	assert_int_equal(sym_vaddr_offset(segs, 3, 0x11a5, &off), -ENOENT);	/* between */
	assert_int_equal(off, 7);
	assert_int_equal(sym_vaddr_offset(segs, 0, 0x1000, &off), -ENOENT);
}

/* The first file mapped with this basename (/proc/self/maps); 0 when none. */
static int mapped_file(const char *base, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024], file[900];
	int found = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		const char *b;
		if (sscanf(line, "%*s %*s %*s %*s %*s %899s", file) != 1)
			continue;
		b = strrchr(file, '/');
		if (b && strcmp(b + 1, base) == 0) {
			snprintf(path, len, "%s", file);
			found = 1;
		}
	}
	fclose(f);
	return found;
}

/* The file offset the kernel mapped `addr` from (/proc/self/maps). */
static uint64_t mapped_offset(uintptr_t addr, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long long lo, hi, pg;
	char line[1024], perms[8];
	uint64_t off = 0;
	int at = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &lo, &hi, perms, &pg, &at) == 4 && at &&
		    addr >= lo && addr < hi) {
			off = addr - lo + pg;
			/* the path is the rest of the line: it may hold spaces */
			snprintf(path, len, "%.*s", (int)strcspn(line + at, "\n"), line + at);
		}
	fclose(f);
	assert_true(off != 0);
	return off;
}

static void test_find_own(void **state)
{
	char self[1024];
	struct sym_found *v;
	uint64_t alpha = mapped_offset((uintptr_t)xp_find_alpha, self, sizeof(self));
	uint64_t beta = mapped_offset((uintptr_t)xp_find_beta, self, sizeof(self));
	int n;

	(void)state;
	n = sym_find_funcs(self, "xp_find_alpha", 0, &v);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].name, "xp_find_alpha");
	assert_int_equal(v[0].offset, alpha);
	assert_true(v[0].size > 0);
	assert_int_equal(v[0].ifunc, 0);
	sym_found_free(v, n);

	n = sym_find_funcs(self, "xp_find_*", 1, &v);
	assert_int_equal(n, 2);
	for (int i = 0; i < n; i++)
		assert_int_equal(v[i].offset, strcmp(v[i].name, "xp_find_beta") == 0 ? beta : alpha);
	sym_found_free(v, n);

	assert_int_equal(sym_find_funcs(self, "xp_find_*", 0, &v), 0);	/* not a glob: no match */
	assert_int_equal(sym_find_funcs(self, "xp_nothing_*", 1, &v), 0);
	assert_int_equal(sym_find_funcs("/no/such/file", "f", 0, &v), -ENOENT);
	assert_int_equal(sym_find_funcs(XP_SRCDIR "/Makefile", "f", 0, &v), -ENOEXEC);
}

/* glibc's strlen is an IFUNC: its symbol is the resolver, which --probe must refuse. */
static void test_find_ifunc(void **state)
{
	char libc[1024];
	struct sym_found *v;
	int n, ifunc;

	(void)state;
	if (!mapped_file("libc.so.6", libc, sizeof(libc)))
		skip();	/* not glibc */
	n = sym_find_funcs(libc, "strlen", 0, &v);
	assert_int_equal(n, 1);
	ifunc = v[0].ifunc;
	sym_found_free(v, n);
	assert_int_equal(ifunc, 1);
}

/* rec_probes_unpatch: a child maps the second page of a file executable (pgoff 4096)
 * and, as the kernel does for a uprobe, has 0xcc at one function's first byte; at
 * another offset something else changed the byte.  Only the int3 is replaced, by the
 * file's byte; without a target tree (-a) nothing is written. */
static void test_unpatch(void **state)
{
	char path[1024], memp[64];
	unsigned char page[8192] = { 0 }, b;
	struct rec_probes p;
	struct rec_probe_fn fn;
	int fd, go[2], ready[2], mem;
	uintptr_t base;
	pid_t pid;

	(void)state;
	assert_int_equal(xp_test_path(path, sizeof(path), "unpatch-XXXXXX"), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	page[4096 + 16] = 0x55;	/* push %rbp */
	page[4096 + 32] = 0x90;
	assert_int_equal(write(fd, page, sizeof(page)), (ssize_t)sizeof(page));
	assert_int_equal(pipe(go), 0);
	assert_int_equal(pipe(ready), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		unsigned char *m;

		close(go[1]);
		m = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 4096);
		if (m == MAP_FAILED || mprotect(m, 4096, PROT_READ | PROT_WRITE) < 0)
			_exit(1);
		m[16] = 0xcc;
		m[32] = 0x91;
		if (mprotect(m, 4096, PROT_READ | PROT_EXEC) < 0)
			_exit(1);
		base = (uintptr_t)m;
		if (write(ready[1], &base, sizeof(base)) != sizeof(base))
			_exit(1);
		(void)read(go[0], &b, 1);
		_exit(0);
	}
	close(fd);
	assert_int_equal(read(ready[0], &base, sizeof(base)), (ssize_t)sizeof(base));
	memset(&p, 0, sizeof(p));
	memset(&fn, 0, sizeof(fn));
	fn.path = path;
	fn.offset = 4096 + 16;
	assert_int_equal(rec_probes_unpatch(&p, &fn), -EPERM);	/* no tree: -a */
	p.root = pid;
	assert_int_equal(rec_probes_unpatch(&p, &fn), 0);
	fn.offset = 4096 + 32;
	assert_int_equal(rec_probes_unpatch(&p, &fn), 0);
	snprintf(memp, sizeof(memp), "/proc/%d/mem", (int)pid);
	mem = open(memp, O_RDONLY);
	assert_true(mem >= 0);
	assert_int_equal(pread(mem, &b, 1, (off_t)(base + 16)), 1);
	assert_int_equal(b, 0x55);
	assert_int_equal(pread(mem, &b, 1, (off_t)(base + 32)), 1);
	assert_int_equal(b, 0x91);	/* not an int3: not ours */
	close(mem);
	close(go[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(go[0]);
	close(ready[0]);
	close(ready[1]);
	unlink(path);
}

/* tracefs takes names of at most 63 chars of [A-Za-z0-9_]; the index keeps apart names
 * that sanitize alike */
static void test_tfs_names(void **state)
{
	char name[128], group[32];

	(void)state;
	rec_tfs_event_name(name, sizeof(name), "malloc", 3, 0);
	assert_string_equal(name, "e3_malloc");
	rec_tfs_event_name(name, sizeof(name), "operator new[](unsigned long)", 12, 1);
	assert_string_equal(name, "r12_operator_new___unsigned_long_");
	rec_tfs_event_name(name, sizeof(name), "a_very_long_name_that_goes_on_and_on_and_on_and_on_past_the_limit_x", 7, 0);
	assert_int_equal(strlen(name), 63);
	assert_memory_equal(name, "e7_a_very_long_name", 19);
	rec_tfs_group(group, sizeof(group), 4242);
	assert_string_equal(group, "xptrace_4242");
}

/* A SIGKILLed recorder's group (its pid dead, or now ours) is deleted; a live one's, and
 * other tools' probes, stay: the deletions appended to a stand-in uprobe_events are
 * exactly that. */
static void test_tfs_clean_stale(void **state)
{
	char dir[] = "/tmp/xp_tfs_XXXXXX", path[64], buf[1024], want[512];
	pid_t dead = fork();
	FILE *f;
	size_t n;

	(void)state;
	if (dead == 0)
		_exit(0);
	assert_int_equal(waitpid(dead, NULL, 0), dead);
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/uprobe_events", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "p:xptrace_%d/e0_work /bin/true:0x0000000000001139\n"
		   "r:xptrace_%d/r0_work /bin/true:0x0000000000001139\n"
		   "p:xptrace_%d/e0_live /bin/true:0x10\n"
		   "p:xptrace_%d/e1_reused /bin/true:0x10\n"
		   "p:probe_libc/malloc /usr/lib/libc.so.6:0x100\n", (int)dead, (int)dead,
		(int)getppid(), (int)getpid());
	fclose(f);
	assert_int_equal(rec_tfs_clean_stale(dir), 3);
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	snprintf(want, sizeof(want), "p:probe_libc/malloc /usr/lib/libc.so.6:0x100\n"
		 "-:xptrace_%d/e0_work\n-:xptrace_%d/r0_work\n-:xptrace_%d/e1_reused\n",
		 (int)dead, (int)dead, (int)getpid());
	assert_non_null(strstr(buf, want));
	unlink(path);
	rmdir(dir);
}

/* $XPTRACE_TRACEFS names the directory; without a uprobe_events there, why says so
 * (what record's warning and info's "uprobe placement" print) */
static void test_tfs_root(void **state)
{
	char dir[] = "/tmp/xp_tfsroot_XXXXXX", path[64], root[256], why[512], want[512];

	(void)state;
	assert_non_null(mkdtemp(dir));
	setenv("XPTRACE_TRACEFS", dir, 1);
	assert_int_equal(rec_tfs_root(root, sizeof(root), why, sizeof(why)), -ENOENT);
	snprintf(want, sizeof(want), "no uprobe_events in %s ($XPTRACE_TRACEFS)", dir);
	assert_string_equal(why, want);
	snprintf(path, sizeof(path), "%s/uprobe_events", dir);
	close(open(path, O_WRONLY | O_CREAT, 0600));
	assert_int_equal(rec_tfs_root(root, sizeof(root), why, sizeof(why)), 0);
	assert_string_equal(root, dir);
	unsetenv("XPTRACE_TRACEFS");
	unlink(path);
	rmdir(dir);
}

/* A probe hit as the collector reads it: IDENTIFIER, IP, TID, TIME. */
static void put_hit(struct rec_probes *p, uint64_t id, uint32_t tid, uint64_t t, int kept)
{
	struct {
		struct perf_event_header h;
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t t;
	} s = { { PERF_RECORD_SAMPLE, 0, sizeof(s) }, id, 0x1000, tid, tid, t };

	assert_int_equal(rec_probes_hit(p, &s.h), kept);
}

/* The return of the call in flight when a window opened is dropped, also when it is read
 * after the thread's first entry in the window (a round later, from another cpu's ring):
 * the hits in the order read give 2 entries and 2 returns, not 3 returns; and a return
 * without a kept entry to pair with is dropped, whatever its time. */
static void test_hit_in_flight_return(void **state)
{
	struct rec_opts o = { 0 };
	struct rec_probe_fn fn = { .armed = 100 };
	struct rec_probes p = { .o = &o, .fn = &fn, .nfn = 1, .time_off = 32 };

	(void)state;
	assert_int_equal(xp_map_put(&p.ids, 7, 0), 0);	/* entry */
	assert_int_equal(xp_map_put(&p.ids, 8, 1), 0);	/* return */
	put_hit(&p, 8, 5, 90, 0);	/* before the window */
	put_hit(&p, 8, 5, 120, 0);	/* no entry in the window yet */
	put_hit(&p, 7, 5, 150, 1);
	put_hit(&p, 8, 5, 140, 0);	/* read late: the in-flight call's */
	put_hit(&p, 8, 5, 160, 1);
	put_hit(&p, 8, 5, 165, 0);	/* no entry left to pair with */
	put_hit(&p, 7, 6, 155, 1);	/* another thread */
	put_hit(&p, 8, 6, 170, 1);
	assert_int_equal(fn.hits, 2);
	assert_int_equal(fn.rets, 2);
	xp_map_free(&p.ids);
	xp_map_free(&fn.entered);
	xp_map_free(&fn.open);
}

/* A probe the budget disarmed whose entries from before that disarm, read after it,
 * reach --probe-limit: its end is the limit's, and it is never re-armed (it was: every
 * hit of its next window dropped past the limit while its int3 trapped). */
static void test_limit_after_budget_disarm(void **state)
{
	struct rec_opts o = { .probe_limit = 3 };
	struct rec_probe_fn fn = { .armed = 100, .disarmed = 200, .over_budget = 1 };
	struct rec_probes p = { .o = &o, .fn = &fn, .nfn = 1, .time_off = 32 };

	(void)state;
	assert_int_equal(xp_map_put(&p.ids, 7, 0), 0);
	put_hit(&p, 7, 5, 150, 1);
	put_hit(&p, 7, 5, 160, 1);
	put_hit(&p, 7, 5, 170, 1);	/* the limit */
	put_hit(&p, 7, 5, 180, 0);
	rec_probes_cost(&p, 1000);	/* what charges the last close, as each tick does */
	assert_int_equal(fn.hits, 3);
	assert_int_equal(fn.disarmed, 200);
	assert_int_equal(fn.over_budget, 0);
	assert_int_equal(rec_probes_rearm(&p, 0), 0);
	assert_int_equal(fn.arming, 0);
	xp_map_free(&p.ids);
	xp_map_free(&fn.entered);
	xp_map_free(&fn.open);
	free(fn.closing);
	free(fn.win);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_vaddr_offset),
		cmocka_unit_test(test_find_own),
		cmocka_unit_test(test_find_ifunc),
		cmocka_unit_test(test_unpatch),
		cmocka_unit_test(test_tfs_names),
		cmocka_unit_test(test_tfs_clean_stale),
		cmocka_unit_test(test_tfs_root),
		cmocka_unit_test(test_hit_in_flight_return),
		cmocka_unit_test(test_limit_after_budget_disarm),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
