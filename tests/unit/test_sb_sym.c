/* Session address-space history and symbols: mappings over time (replace, exec,
 * fork), thread names over time, ELF symbols with PIE bias from pgoff, demangling,
 * return types from DWARF. */
#include "xp_test.h"

#include "session/sb.h"
#include "session/sym.h"

static struct pd_rec mmap_rec(uint32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
			      const char *file, uint64_t time)
{
	struct pd_rec r = { .type = PERF_RECORD_MMAP2, .misc = PERF_RECORD_MISC_USER, .time = time };
	r.u.mmap = (struct pd_mmap){ .pid = pid, .tid = pid, .start = start, .len = len, .pgoff = pgoff,
				     .prot = 5, .filename = file };
	return r;
}

static void test_history(void **state)
{
	(void)state;
	struct sb_session *s = sb_new();
	struct pd_rec r;

	r = mmap_rec(10, 0x1000, 0x3000, 0, "/a", 100);
	assert_int_equal(sb_feed(s, &r), 0);
	/* a new mapping over the middle page splits the old one */
	r = mmap_rec(10, 0x2000, 0x1000, 0, "/b", 200);
	assert_int_equal(sb_feed(s, &r), 0);
	assert_string_equal(sb_find_map(s, 10, 0x1800, 300)->dso->path, "/a");
	assert_string_equal(sb_find_map(s, 10, 0x2800, 300)->dso->path, "/b");
	const struct sb_map *m = sb_find_map(s, 10, 0x3800, 300);
	assert_string_equal(m->dso->path, "/a");
	assert_int_equal(m->pgoff, 0x2000);	/* the right part keeps its file offset */
	/* before the replacement the old mapping answers */
	assert_string_equal(sb_find_map(s, 10, 0x2800, 150)->dso->path, "/a");
	/* exec ends every mapping */
	r = (struct pd_rec){ .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC, .time = 400 };
	r.u.comm = (struct pd_comm){ 10, 10, true, "newprog" };
	assert_int_equal(sb_feed(s, &r), 0);
	assert_null(sb_find_map(s, 10, 0x1800, 500));
	assert_string_equal(sb_find_map(s, 10, 0x1800, 300)->dso->path, "/a");
	/* fork copies the parent's address space; thread names follow */
	r = mmap_rec(10, 0x5000, 0x1000, 0, "/c", 450);
	sb_feed(s, &r);
	r = (struct pd_rec){ .type = PERF_RECORD_FORK, .time = 600 };
	r.u.task = (struct pd_task){ .pid = 11, .ppid = 10, .tid = 11, .ptid = 10, .time = 600 };
	assert_int_equal(sb_feed(s, &r), 0);
	assert_string_equal(sb_find_map(s, 11, 0x5800, 700)->dso->path, "/c");
	assert_string_equal(sb_comm_at(s, 11, 700), "newprog");
	assert_string_equal(sb_comm_at(s, 99, 0), ":99");
	sb_free(s);
}

/* An exec COMM that reaches the session after the new program's mappings (written
 * after them at the same time, or delivered out of time order) ends only what was
 * mapped before the exec; without times the order decides, as before. */
static void test_exec_after_mmaps(void **state)
{
	(void)state;
	struct sb_session *s = sb_new();
	struct pd_rec r;

	r = mmap_rec(10, 0x1000, 0x1000, 0, "/old", 100);
	assert_int_equal(sb_feed(s, &r), 0);
	r = mmap_rec(10, 0x4000, 0x1000, 0, "/new", 400);
	assert_int_equal(sb_feed(s, &r), 0);
	r = mmap_rec(10, 0x6000, 0x1000, 0, "/late", 450);
	assert_int_equal(sb_feed(s, &r), 0);
	r = (struct pd_rec){ .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC, .time = 400 };
	r.u.comm = (struct pd_comm){ 10, 10, true, "newprog" };
	assert_int_equal(sb_feed(s, &r), 0);
	assert_null(sb_find_map(s, 10, 0x1800, 500));
	assert_string_equal(sb_find_map(s, 10, 0x1800, 300)->dso->path, "/old");
	assert_string_equal(sb_find_map(s, 10, 0x4800, 500)->dso->path, "/new");
	assert_string_equal(sb_find_map(s, 10, 0x6800, 500)->dso->path, "/late");
	const struct sb_map *live;
	assert_int_equal(sb_maps(s, 10, &live), 2);
	sb_free(s);

	s = sb_new();
	r = mmap_rec(10, 0x1000, 0x1000, 0, "/old", 0);
	assert_int_equal(sb_feed(s, &r), 0);
	r = (struct pd_rec){ .type = PERF_RECORD_COMM, .misc = PERF_RECORD_MISC_COMM_EXEC, .time = 0 };
	r.u.comm = (struct pd_comm){ 10, 10, true, "newprog" };
	assert_int_equal(sb_feed(s, &r), 0);
	assert_int_equal(sb_maps(s, 10, &live), 0);
	sb_free(s);
}

static void test_demangle(void **state)
{
	(void)state;
	char *d;

	d = sym_demangle("_ZN2ns3fooEi", false);
	assert_string_equal(d, "ns::foo");
	free(d);
	d = sym_demangle("_ZN2ns3fooEi", true);
	assert_string_equal(d, "ns::foo(int)");
	free(d);
	d = sym_demangle("_ZNK3FooclEv", false);
	assert_string_equal(d, "Foo::operator()");
	free(d);
	d = sym_demangle("_Z3fooIiEvT_", false);	/* void foo<int>(int) */
	assert_string_equal(d, "foo<int>");
	free(d);
	d = sym_demangle("_ZN3FoocvbEv", false);	/* Foo::operator bool() */
	assert_string_equal(d, "Foo::operator bool");
	free(d);
	d = sym_demangle("_ZN4core3fmt5write17h0123456789abcdefE", false);
	assert_string_equal(d, "core::fmt::write");
	free(d);
	d = sym_demangle("_ZN49_$LT$alloc..vec..Vec$LT$T$GT$$u20$as$u20$Drop$GT$4drop17h0123456789abcdefE", false);
	assert_string_equal(d, "<alloc::vec::Vec<T> as Drop>::drop");
	free(d);
	d = sym_demangle("_RNvCs1234_7mycrate3foo", false);
	assert_string_equal(d, "mycrate::foo");
	free(d);
	d = sym_demangle("_RNvNtCs1234_7mycrate3bar3baz", false);
	assert_string_equal(d, "mycrate::bar::baz");
	free(d);
	d = sym_demangle("_RINvCs1234_7mycrate3fooNtB2_3BarlE", false);
	assert_string_equal(d, "mycrate::foo::<mycrate::Bar, i32>");
	free(d);
	assert_null(sym_demangle("main", false));
	assert_null(sym_demangle("_RZZZ", false));
}

/* nm's address of `sym` in exe. */
static unsigned long long nm_addr(const char *exe, const char *sym)
{
	char cmd[512];
	unsigned long long va = 0;

	snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3==\"%s\"{print $1}'", exe, sym);
	FILE *p = popen(cmd, "r");
	assert_int_equal(fscanf(p, "%llx", &va), 1);
	pclose(p);
	return va;
}

/* The file offset and address of exe's text segment (readelf -l). */
static void text_segment(const char *exe, unsigned long long *off, unsigned long long *va)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "readelf -lW '%s' | awk '$1==\"LOAD\" && / R E / {print $2, $3}'", exe);
	FILE *p = popen(cmd, "r");
	assert_int_equal(fscanf(p, "%llx %llx", off, va), 2);
	pclose(p);
}

/* The test program itself: a PIE mapped at an arbitrary base with pgoff of its text. */
static void test_elf_symbols(void **state)
{
	(void)state;
	/* test programs are built once, in the plain build */
	const char *exe = XP_SRCDIR "/build/progs/dec_work";
	struct sb_session *s = sb_new();
	struct sym_ctx *c = sym_new(NULL, "/nonexistent");
	char cmd[512];
	unsigned long long spin_va = nm_addr(exe, "spin"), text_off = 0, text_va = 0;
	FILE *p;

	text_segment(exe, &text_off, &text_va);
	uint64_t base = 0x555555554000ULL;
	assert_int_equal(sb_add_map(s, 7, base + text_va, 0x1000, text_off, 5, exe, NULL, 0, 0), 0);
	const struct sb_map *m = sb_find_map(s, 7, base + spin_va + 3, 0);
	assert_non_null(m);
	uint32_t fn = sym_fn_of(c, m, base + spin_va + 3);
	assert_string_equal(sym_fn(c, fn)->name, "spin");
	assert_string_equal(sym_fn(c, fn)->module, "dec_work");
	assert_int_equal(sym_fn_of(c, m, base + spin_va), fn);	/* interned */
	/* PLT entries are named like objdump and perf name them */
	unsigned long long plt_va = 0;
	snprintf(cmd, sizeof(cmd), "objdump -d -j .plt '%s' | sed -n 's/^0*\\([0-9a-f]*\\) <clock_gettime@plt>:/\\1/p'", exe);
	p = popen(cmd, "r");
	assert_int_equal(fscanf(p, "%llx", &plt_va), 1);
	pclose(p);
	assert_int_equal(sb_add_map(s, 7, base + 0x1000, 0x1000, 0x1000, 5, exe, NULL, 0, 0), 0);
	m = sb_find_map(s, 7, base + plt_va + 6, 0);
	assert_string_equal(sym_fn(c, sym_fn_of(c, m, base + plt_va + 6))->name, "clock_gettime@plt");
	m = sb_find_map(s, 7, base + spin_va + 3, 0);

	const char *file;
	int line;
	assert_true(sym_srcline(c, m, base + spin_va + 3, &file, &line));
	assert_non_null(strstr(file, "dec_work.c"));
	assert_true(line > 0);
	sym_free(c);
	sb_free(s);
}

/* The kernel's uprobes page (uretprobe trampoline, probed instructions stepped out of
 * line) has no file: one name, "[uprobes]", wherever in it an address lies. */
static void test_uprobes_page(void **state)
{
	(void)state;
	struct sb_session *s = sb_new();
	struct sym_ctx *c = sym_new(NULL, "/nonexistent");

	assert_int_equal(sb_add_map(s, 7, 0x7fffffffe000ULL, 0x1000, 0, 5, "[uprobes]", NULL, 0, 0), 0);
	const struct sb_map *m = sb_find_map(s, 7, 0x7fffffffe00dULL, 0);
	assert_non_null(m);
	uint32_t fn = sym_fn_of(c, m, 0x7fffffffe00dULL);
	assert_string_equal(sym_fn(c, fn)->name, "[uprobes]");
	assert_string_equal(sym_fn(c, fn)->module, "[uprobes]");
	assert_int_equal(sym_fn_of(c, m, 0x7fffffffe001ULL), fn);
	assert_true(sym_map_uprobes(m));
	sym_free(c);
	sb_free(s);
}

/* The header's build-ids are the session's from sb_set_build_ids on: the reader's
 * list they came from moves when a HEADER_BUILD_ID record in the data adds to it
 * (fuzz_perfdata: a mapping read after such a record looked at the freed list). */
static void test_build_ids_copied(void **state)
{
	(void)state;
	struct sb_session *s = sb_new();
	struct pd_build_id *list = calloc(2, sizeof(*list));
	char a[] = "/usr/lib/liba.so", b[] = "/usr/lib/libb.so";

	assert_non_null(list);
	list[0] = (struct pd_build_id){ .pid = -1, .build_id = { 0xaa, 1 }, .size = 20, .filename = a };
	list[1] = (struct pd_build_id){ .pid = -1, .build_id = { 0xbb, 2 }, .size = 8, .filename = b };
	assert_int_equal(sb_set_build_ids(s, list, 2), 0);
	/* the reader's array reused for something else, as a realloc leaves it */
	list[1].build_id[0] = 0xcc;
	list[1].size = 4;
	assert_int_equal(sb_add_map(s, 7, 0x10000, 0x1000, 0, 5, b, NULL, 0, 10), 0);
	assert_int_equal(sb_add_map(s, 7, 0x20000, 0x1000, 0, 5, "/usr/lib/libc.so", NULL, 0, 10), 0);
	const struct sb_map *m = sb_find_map(s, 7, 0x10000, 0);
	assert_non_null(m);
	assert_int_equal(m->dso->bid_size, 8);
	assert_int_equal(m->dso->build_id[0], 0xbb);
	assert_int_equal(m->dso->build_id[1], 2);
	m = sb_find_map(s, 7, 0x20000, 0);
	assert_non_null(m);
	assert_int_equal(m->dso->bid_size, 0);
	sb_free(s);
	free(list);
}

/* Sessions reading through one symbol cache (a fuzzer's inputs) name every address as
 * a session without it: the second takes the table the first read, its functions
 * interned in another order. */
static void test_sym_cache(void **state)
{
	(void)state;
	const char *exe = XP_SRCDIR "/build/progs/dec_work";
	unsigned long long spin_va = nm_addr(exe, "spin"), main_va = nm_addr(exe, "main"), off = 0, va = 0;
	struct sym_cache *k = sym_cache_new();
	const uint64_t base = 0x555555554000ULL;

	text_segment(exe, &off, &va);
	assert_non_null(k);
	for (int round = 0; round < 2; round++) {
		struct sb_session *s = sb_new();
		struct sym_ctx *c = sym_new(NULL, "/nonexistent");
		uint64_t first = round ? main_va : spin_va, second = round ? spin_va : main_va;

		sym_use_cache(c, k);
		assert_int_equal(sb_add_map(s, 7, base + va, 0x1000, off, 5, exe, NULL, 0, 0), 0);
		const struct sb_map *m = sb_find_map(s, 7, base + va, 0);
		uint32_t a = sym_fn_of(c, m, base + first), b = sym_fn_of(c, m, base + second);
		assert_string_equal(sym_fn(c, a)->name, round ? "main" : "spin");
		assert_string_equal(sym_fn(c, b)->name, round ? "spin" : "main");
		assert_int_equal(sym_fn(c, a)->start, first);
		sym_free(c);
		sb_free(s);
	}
	sym_cache_free(k);
}

/* The cache keeps 16 files' tables.  A first session reads 16 files through it; a
 * second reads them from the cache, then a 17th: the table that replaces none of the
 * first 16, which the second session reads in place (a replaced one is freed: ASan's
 * use-after-free), and its lookups in all 17 are right to the end.  17 copies of
 * dec_work, each its own inode, mapped at 17 places. */
static void test_sym_cache_full(void **state)
{
	(void)state;
	const char *exe = XP_SRCDIR "/build/progs/dec_work";
	unsigned long long spin_va = nm_addr(exe, "spin"), main_va = nm_addr(exe, "main"), off = 0, va = 0;
	struct sym_cache *k = sym_cache_new();
	char copy[17][1024];
	static char bytes[1 << 22];
	FILE *in = fopen(exe, "rb");

	assert_non_null(in);
	size_t n = fread(bytes, 1, sizeof(bytes), in);
	assert_true(n > 0 && n < sizeof(bytes));
	fclose(in);
	text_segment(exe, &off, &va);
	for (int i = 0; i < 17; i++) {
		char name[32];
		snprintf(name, sizeof(name), "dec_work.%d", i);
		assert_int_equal(xp_test_path(copy[i], sizeof(copy[i]), name), 0);
		FILE *out = fopen(copy[i], "wb");
		assert_non_null(out);
		assert_int_equal(fwrite(bytes, 1, n, out), n);
		assert_int_equal(fclose(out), 0);
	}
	for (int files = 16; files <= 17; files++) {
		struct sb_session *s = sb_new();
		struct sym_ctx *c = sym_new(NULL, "/nonexistent");
		sym_use_cache(c, k);
		for (int i = 0; i < files; i++) {
			uint64_t base = 0x10000000ULL * (uint64_t)(i + 1);
			assert_int_equal(sb_add_map(s, 7, base + va, 0x1000, off, 5, copy[i], NULL, 0, 0), 0);
			const struct sb_map *m = sb_find_map(s, 7, base + va, 0);
			assert_string_equal(sym_fn(c, sym_fn_of(c, m, base + spin_va))->name, "spin");
		}
		for (int i = 0; i < files; i++) {
			uint64_t base = 0x10000000ULL * (uint64_t)(i + 1);
			const struct sb_map *m = sb_find_map(s, 7, base + va, 0);
			uint32_t fn = sym_fn_of(c, m, base + main_va);
			assert_string_equal(sym_fn(c, fn)->name, "main");
			assert_string_equal(sym_fn(c, fn)->module, strrchr(copy[i], '/') + 1);
			assert_int_equal(sym_fn(c, fn)->start, main_va);
		}
		sym_free(c);
		sb_free(s);
	}
	sym_cache_free(k);
}

/* What tests/progs/retval.c's functions return, as --calls reads their values. */
static void test_ret_types(void **state)
{
	(void)state;
	const char *exe = XP_SRCDIR "/build/progs/retval";
	static const struct { const char *name; enum sym_ret_kind kind; unsigned size; } want[] = {
		{ "fib", SYM_RET_SIGNED, 4 }, { "neg", SYM_RET_SIGNED, 4 }, { "small", SYM_RET_UNSIGNED, 1 },
		{ "ptr", SYM_RET_POINTER, 8 }, { "none", SYM_RET_VOID, 0 },
	};
	struct sb_session *s = sb_new();
	struct sym_ctx *c = sym_new(NULL, "/nonexistent");
	uint64_t base = 0x555555554000ULL;

	/* the whole file mapped at its virtual addresses (a PIE's first page at 0) */
	assert_int_equal(sb_add_map(s, 7, base, 0x100000, 0, 5, exe, NULL, 0, 0), 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		char cmd[512];
		unsigned long long va = 0;
		snprintf(cmd, sizeof(cmd), "nm '%s' | awk '$3==\"%s\"{print $1}'", exe, want[i].name);
		FILE *p = popen(cmd, "r");
		assert_int_equal(fscanf(p, "%llx", &va), 1);
		pclose(p);
		uint32_t fn = sym_fn_of(c, sb_find_map(s, 7, base + va, 0), base + va);
		assert_string_equal(sym_fn(c, fn)->name, want[i].name);
		struct sym_ret r = sym_fn_ret(c, fn);
		assert_int_equal(r.kind, want[i].kind);
		if (r.kind != SYM_RET_VOID && r.kind != SYM_RET_POINTER)
			assert_int_equal(r.size, want[i].size);
	}
	/* no function, no type */
	assert_int_equal(sym_fn_ret(c, sym_fn_named(c, "[unknown]", NULL)).kind, SYM_RET_UNKNOWN);
	sym_free(c);
	sb_free(s);
}

/* Kernel symbols from a trace's kallsyms snapshot, in address order (the kernel's own,
 * read as they come) and with a module's listed after them out of order (sorted):
 * each address names the symbol listed last there, as perf does, its size up to the
 * next; data symbols are no functions. */
static void kallsyms_names(const char *lines, const char *const *want)
{
	static const uint8_t bid[20] = { 0xab, 0xcd, 1, 2, 3 };
	char dir[PATH_MAX], path[2 * PATH_MAX], hex[41];
	struct sb_session *s = sb_new();
	static const uint64_t at[] = { 0xffffffff81000000ull, 0xffffffff81000010ull, 0xffffffff81000028ull,
				       0xffffffff81000100ull, 0xffffffffc0001004ull, 0xffffffffc0002000ull };

	assert_int_equal(xp_test_path(dir, sizeof(dir), "ktrace"), 0);
	sym_bid_hex(bid, 20, hex);
	snprintf(path, sizeof(path), "mkdir -p '%s/.build-id/%.2s/%s'", dir, hex, hex + 2);
	assert_int_equal(system(path), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s/kallsyms", dir, hex, hex + 2);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(lines, f);
	fclose(f);
	struct sym_ctx *c = sym_new(dir, "/nonexistent");
	assert_int_equal(sb_add_map(s, SB_PID_KERNEL, 0xffffffff81000000ull, 0x40000000, 0xffffffff81000000ull, 5,
				    "[kernel.kallsyms]", bid, 20, 0), 0);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		const struct sb_map *m = sb_find_map(s, 7, at[i], 0);
		assert_non_null(m);
		assert_string_equal(sym_fn(c, sym_fn_of(c, m, at[i]))->name, want[i]);
	}
	sym_free(c);
	sb_free(s);
}

static void test_kallsyms(void **state)
{
	(void)state;
	static const char *const want[] = { "_stext", "second", "second", "third", "mod_b", "mod_a" };
#define KERNEL_OWN "ffffffff81000000 T _text\n"		\
		   "ffffffff81000000 T _stext\n"		\
		   "ffffffff81000010 t __pi_second\n"	\
		   "ffffffff81000010 T second\n"		\
		   "ffffffff81000020 D some_data\n"	\
		   "ffffffff81000100 T third\n"
	kallsyms_names(KERNEL_OWN "ffffffffc0001000 t mod_b\t[mod]\n"
				  "ffffffffc0002000 t mod_a\t[mod]\n", want);
	kallsyms_names(KERNEL_OWN "ffffffffc0002000 t mod_a\t[mod]\n"
				  "ffffffffc0001000 t mod_b\t[mod]\n", want);
#undef KERNEL_OWN
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_history),
		cmocka_unit_test(test_exec_after_mmaps),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_elf_symbols),
		cmocka_unit_test(test_build_ids_copied),
		cmocka_unit_test(test_sym_cache),
		cmocka_unit_test(test_sym_cache_full),
		cmocka_unit_test(test_ret_types),
		cmocka_unit_test(test_uprobes_page),
		cmocka_unit_test(test_kallsyms),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
