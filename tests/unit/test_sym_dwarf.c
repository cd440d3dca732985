/* DWARF read faster, answering the same: sym_inline_span's runs (every address of a
 * run has the chain sym_inline gives it, asked address by address in a session of
 * its own), and compressed DWARF inflated by sym_dwsec (the same inline chains and
 * source lines as libdw reading the file's uncompressed copy, objcopy's). */
#include "xp_test.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>

#include "session/sb.h"
#include "session/sym.h"
#include "session/sym_dwsec.h"

#define PROG XP_SRCDIR "/build/progs/inline"
#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define BASE 0x7f0000000000ULL

static void run(const char *cmd)
{
	assert_int_equal(system(cmd), 0);
}

/* A section's address and size (readelf -S). */
static void section(const char *file, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[512];
	unsigned long long a = 0, n = 0;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' | sed 's/^ *\\[ *[0-9]*\\]//' | awk '$1==\"%s\"{print $3, $5}'",
		 file, name);
	FILE *p = popen(cmd, "r");
	assert_int_equal(fscanf(p, "%llx %llx", &a, &n), 2);
	pclose(p);
	*addr = a;
	*size = n;
}

/* A session with `file` mapped whole at BASE (file offsets as addresses: a PIE's
 * text lies at its offset), and a symbol context for it. */
struct one {
	struct sb_session *s;
	struct sym_ctx *c;
	const struct sb_map *m;
};

static void one_open(struct one *o, const char *file)
{
	o->s = sb_new();
	o->c = sym_new(NULL, "/nonexistent");
	assert_int_equal(sb_add_map(o->s, 7, BASE, 0x10000000, 0, 5, file, NULL, 0, 0), 0);
	o->m = sb_find_map(o->s, 7, BASE, 0);
	assert_non_null(o->m);
}

static void one_close(struct one *o)
{
	sym_free(o->c);
	sb_free(o->s);
}

/* The chain at va as names ("top [inline]|mid [inline]|"), innermost first. */
static void chain_names(struct one *o, uint64_t va, char *buf, size_t n)
{
	uint32_t fns[16];
	unsigned k = sym_inline(o->c, o->m, BASE + va, fns, 16);
	size_t at = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < k && at < n; i++)
		at += (size_t)snprintf(buf + at, n - at, "%s|", sym_fn(o->c, fns[i])->name);
}

/* Every address of [lo, hi): the run sym_inline_span gives from its start has, at each
 * address, the chain sym_inline gives there in a session asked address by address.
 * Returns how many runs there were; *inlined: addresses with a chain. */
static uint64_t check_runs(const char *file, uint64_t lo, uint64_t hi, uint64_t *inlined)
{
	struct one a, b;
	uint64_t runs = 0;
	char want[1024], got[1024];

	one_open(&a, file);
	one_open(&b, file);
	*inlined = 0;
	for (uint64_t va = lo; va < hi; runs++) {
		uint32_t fns[16];
		uint64_t until;
		unsigned k = sym_inline_span(a.c, a.m, BASE + va, fns, 16, &until);
		size_t at = 0;
		got[0] = 0;
		for (unsigned i = 0; i < k; i++)
			at += (size_t)snprintf(got + at, sizeof(got) - at, "%s|", sym_fn(a.c, fns[i])->name);
		assert_true(until > BASE + va);
		for (; va < hi && BASE + va < until; va++) {
			chain_names(&b, va, want, sizeof(want));
			if (strcmp(want, got) != 0)
				fail_msg("at %#" PRIx64 ": the run says '%s', the address '%s'", va, got, want);
			*inlined += want[0] != 0;
		}
	}
	one_close(&a);
	one_close(&b);
	return runs;
}

/* tests/progs/inline: work() holds top, mid and leaf inlined. */
static void test_runs_prog(void **state)
{
	(void)state;
	uint64_t lo, n, inlined;

	section(PROG, ".text", &lo, &n);
	uint64_t runs = check_runs(PROG, lo, lo + n, &inlined);
	assert_true(inlined > 0);
	assert_true(runs * 4 < n);	/* runs span instructions: few look-ups */
}

/* libc through its debug file (libc6-dbg, compressed sections): 256 KiB of its text,
 * C and assembler, functions with and without inlined code, gaps between CUs. */
static void test_runs_libc(void **state)
{
	(void)state;
	uint64_t lo, n, inlined;

	section(LIBC, ".text", &lo, &n);
	if (n > 0x40000)
		n = 0x40000;
	uint64_t runs = check_runs(LIBC, lo, lo + n, &inlined);
	if (!inlined)
		skip();	/* no debug file for this libc */
	assert_true(runs * 4 < n);
}

/* Chains and lines of every address of [lo, hi) of `file`, chains first (lines are
 * inflated when first asked), into out (one line per address). */
static char *answers(const char *file, uint64_t lo, uint64_t hi)
{
	struct one o;
	char *out = NULL, buf[1024];
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	assert_non_null(f);
	one_open(&o, file);
	for (uint64_t va = lo; va < hi; va++) {
		chain_names(&o, va, buf, sizeof(buf));
		fprintf(f, "%" PRIx64 " %s\n", va, buf);
	}
	for (uint64_t va = lo; va < hi; va++) {
		const char *src;
		int line;
		if (sym_srcline(o.c, o.m, BASE + va, &src, &line))
			fprintf(f, "%" PRIx64 " %s:%d\n", va, src, line);
	}
	one_close(&o);
	assert_int_equal(fclose(f), 0);
	return out;
}

static bool has_section(Elf *e, const char *name)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(e, shstrndx, sh.sh_name), name))
			return true;
	return false;
}

/* Whether sym_dwsec makes an image of the file; checks what it leaves out. */
static bool imaged(const char *file)
{
	int fd = open(file, O_RDONLY);
	assert_true(fd >= 0);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	struct sym_dwsec *d = NULL;
	Elf *img = sym_dwsec_open(e, &d);
	if (img) {
		assert_true(has_section(img, ".debug_info"));
		assert_true(has_section(img, ".debug_line"));
		assert_false(has_section(img, ".debug_loclists"));
		assert_false(has_section(img, ".text"));
	}
	sym_dwsec_free(d);
	elf_end(e);
	close(fd);
	return img != NULL;
}

/* The program with its DWARF compressed (objcopy, zlib) against the program. */
static void test_compressed_prog(void **state)
{
	(void)state;
	char z[PATH_MAX], cmd[2 * PATH_MAX];
	uint64_t lo, n;

	assert_int_equal(xp_test_path(z, sizeof(z), "inline.z"), 0);
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib '%s' '%s'", PROG, z);
	run(cmd);
	elf_version(EV_CURRENT);
	assert_false(imaged(PROG));
	assert_true(imaged(z));
	section(PROG, ".text", &lo, &n);
	char *want = answers(PROG, lo, lo + n), *got = answers(z, lo, lo + n);
	assert_non_null(strstr(want, "leaf [inline]|mid [inline]|top [inline]|"));
	assert_non_null(strstr(want, "inline.c:"));
	assert_string_equal(got, want);
	free(want);
	free(got);
}

/* libc's compressed debug file against its copy decompressed by objcopy (found
 * through XP_DEBUG_ROOT): 64 KiB of text, chains and lines. */
static void test_compressed_libc(void **state)
{
	(void)state;
	char root[PATH_MAX], cmd[4 * PATH_MAX], hex[41], dbg[PATH_MAX];
	uint8_t bid[20];
	uint64_t lo, n;
	int k = sym_file_build_id(LIBC, bid);

	assert_true(k > 0);
	sym_bid_hex(bid, k, hex);
	snprintf(dbg, sizeof(dbg), "/usr/lib/debug/.build-id/%.2s/%s.debug", hex, hex + 2);
	if (access(dbg, R_OK) != 0)
		skip();
	assert_int_equal(xp_test_path(root, sizeof(root), "debug"), 0);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/.build-id/%.2s' && objcopy --decompress-debug-sections '%s' '%s/.build-id/%.2s/%s.debug'",
		 root, hex, dbg, root, hex, hex + 2);
	run(cmd);
	elf_version(EV_CURRENT);
	assert_true(imaged(dbg));
	section(LIBC, ".text", &lo, &n);
	lo += n / 3;	/* past the start: stdio's CUs */
	unsetenv("XP_DEBUG_ROOT");
	char *got = answers(LIBC, lo, lo + 0x10000);
	setenv("XP_DEBUG_ROOT", root, 1);
	char *want = answers(LIBC, lo, lo + 0x10000);
	unsetenv("XP_DEBUG_ROOT");
	assert_non_null(strstr(want, "[inline]|"));
	assert_string_equal(got, want);
	free(want);
	free(got);
}

/* Overwrites 64 bytes inside section `name`'s compressed bytes of file. */
static void spoil(const char *file, const char *name)
{
	int fd = open(file, O_RDWR);
	assert_true(fd >= 0);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	uint64_t off = 0;

	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) && !strcmp(elf_strptr(e, shstrndx, sh.sh_name), name))
			off = sh.sh_offset;
	elf_end(e);
	assert_true(off && sh.sh_size > sizeof(Elf64_Chdr) + 80);
	uint8_t junk[64];
	memset(junk, 0xff, sizeof(junk));
	assert_int_equal(pwrite(fd, junk, sizeof(junk), (off_t)(off + sizeof(Elf64_Chdr) + 4)), sizeof(junk));
	close(fd);
}

/* Bytes that do not inflate: no image (libdw reads the file as it would have), and a
 * .debug_line that does not inflate when lines are asked: no lines, chains as ever. */
static void test_compressed_spoilt(void **state)
{
	(void)state;
	char z[PATH_MAX], cmd[2 * PATH_MAX];
	uint64_t lo, n;

	section(PROG, ".text", &lo, &n);
	char *want = answers(PROG, lo, lo + n);
	assert_int_equal(xp_test_path(z, sizeof(z), "info.z"), 0);
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib '%s' '%s'", PROG, z);
	run(cmd);
	elf_version(EV_CURRENT);
	spoil(z, ".debug_info");
	assert_false(imaged(z));
	char *got = answers(z, lo, lo + n);
	assert_null(strstr(got, "[inline]"));
	assert_null(strstr(got, "inline.c:"));
	free(got);

	assert_int_equal(xp_test_path(z, sizeof(z), "line.z"), 0);
	snprintf(cmd, sizeof(cmd), "objcopy --compress-debug-sections=zlib '%s' '%s'", PROG, z);
	run(cmd);
	spoil(z, ".debug_line");
	assert_true(imaged(z));
	got = answers(z, lo, lo + n);
	assert_null(strstr(got, "inline.c:"));
	char *lines = strstr(want, ".c:");	/* the chains: everything before the first line */
	assert_non_null(lines);
	while (lines > want && lines[-1] != '\n')
		lines--;
	assert_memory_equal(got, want, (size_t)(lines - want));
	free(got);
	free(want);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runs_prog),
		cmocka_unit_test(test_runs_libc),
		cmocka_unit_test(test_compressed_prog),
		cmocka_unit_test(test_compressed_libc),
		cmocka_unit_test(test_compressed_spoilt),
	};
	return cmocka_run_group_tests(tests, xp_test_tmp_setup, xp_test_tmp_teardown);
}
