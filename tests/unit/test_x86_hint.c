/* The hint-NOP and CET decoder (arch/x86_64/x86_hint.c) over every encoding it knows,
 * against binutils' objdump on the same bytes (length and text), and what x86_dis and
 * the step tracer's emulator make of them: never a branch, NOPs emulated, the CET
 * instructions left to the CPU.  capstone 4 gets several of these wrong (rdsspq: (bad),
 * incsspd: lfence), which this checks too through x86_dis_one. */
#include "xp_test.h"

#include <ctype.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_hint.h"
#include "arch/x86_64/x86_isa.h"

static const struct enc {
	const char *hex;
	int kind;
} encs[] = {
	/* hint NOPs, 0F 18-0F 1F, every ModRM form */
	{ "0f1800", X86_HINT_NOP }, { "0f1808", X86_HINT_NOP }, { "0f1810", X86_HINT_NOP },
	{ "0f1818", X86_HINT_NOP }, { "0f1820", X86_HINT_NOP }, { "0f1838", X86_HINT_NOP },
	{ "0f18c0", X86_HINT_NOP }, { "0f18e7", X86_HINT_NOP }, { "0f180c24", X86_HINT_NOP },
	{ "0f1900", X86_HINT_NOP }, { "0f19c8", X86_HINT_NOP }, { "0f1ac0", X86_HINT_NOP },
	{ "0f1bc0", X86_HINT_NOP }, { "0f1c00", X86_HINT_NOP }, { "0f1cc1", X86_HINT_NOP },
	{ "0f1c442408", X86_HINT_NOP }, { "660f1c00", X86_HINT_NOP },
	{ "f30f1c00", X86_HINT_NOP }, { "0f1d8000010000", X86_HINT_NOP },
	{ "0f1ec0", X86_HINT_NOP }, { "0f1e00", X86_HINT_NOP }, { "0f1efa", X86_HINT_NOP },
	{ "f30f1e08", X86_HINT_NOP }, { "f30f1ec0", X86_HINT_NOP }, { "f30f1efc", X86_HINT_NOP },
	{ "f30f1e4810", X86_HINT_NOP },
	{ "0f1f00", X86_HINT_NOP }, { "0f1f4000", X86_HINT_NOP }, { "0f1f440000", X86_HINT_NOP },
	{ "0f1f8000000000", X86_HINT_NOP }, { "0f1f840000000000", X86_HINT_NOP },
	{ "660f1f440000", X86_HINT_NOP }, { "660f1f840000000000", X86_HINT_NOP },
	{ "662e0f1f840000000000", X86_HINT_NOP }, { "0f1fc0", X86_HINT_NOP },
	{ "480f1fc0", X86_HINT_NOP }, { "660f1fc0", X86_HINT_NOP }, { "410f1f00", X86_HINT_NOP },
	{ "480f1f440000", X86_HINT_NOP }, { "0f1f4424f8", X86_HINT_NOP },
	{ "0f1f0420", X86_HINT_NOP }, { "0f1f042500000000", X86_HINT_NOP },
	{ "0f1f040510000000", X86_HINT_NOP }, { "0f1f0510000000", X86_HINT_NOP },
	{ "670f1f00", X86_HINT_NOP }, { "670f1f0510000000", X86_HINT_NOP },
	{ "0f1f84ff00010000", X86_HINT_NOP },
	{ "f20f1f00", X86_HINT_NOP }, { "f30f1f00", X86_HINT_NOP }, { "640f1f00", X86_HINT_NOP },
	{ "640f1fc0", X86_HINT_NOP }, { "3e0f1f00", X86_HINT_NOP },
	/* MPX: NOPs without it */
	{ "0f1a00", X86_HINT_NOP }, { "0f1b00", X86_HINT_NOP }, { "660f1ac1", X86_HINT_NOP },
	{ "660f1a00", X86_HINT_NOP }, { "660f1bc1", X86_HINT_NOP }, { "660f1b00", X86_HINT_NOP },
	{ "f30f1ac0", X86_HINT_NOP }, { "f30f1a00", X86_HINT_NOP }, { "f20f1ac0", X86_HINT_NOP },
	{ "f20f1bc0", X86_HINT_NOP }, { "f30f1b00", X86_HINT_NOP },
	/* 0F 0D */
	{ "0f0d00", X86_HINT_NOP }, { "0f0d08", X86_HINT_NOP }, { "0f0d10", X86_HINT_NOP },
	/* CET: endbr, rdssp (NOPs with CET off) */
	{ "f30f1efa", X86_HINT_NOP }, { "f30f1efb", X86_HINT_NOP }, { "2ef30f1efa", X86_HINT_NOP },
	{ "f30f1ec8", X86_HINT_SSP_READ }, { "f3480f1ec8", X86_HINT_SSP_READ },
	{ "f30f1ecf", X86_HINT_SSP_READ }, { "f3490f1ecf", X86_HINT_SSP_READ },
	{ "f3410f1ec8", X86_HINT_SSP_READ }, { "f30f1ec9", X86_HINT_SSP_READ },
	/* shadow-stack instructions proper */
	{ "f30faee8", X86_HINT_SHSTK }, { "f3480faee8", X86_HINT_SHSTK },
	{ "f3490faeef", X86_HINT_SHSTK }, { "f3480faee9", X86_HINT_SHSTK },
	{ "f30f01ea", X86_HINT_SHSTK }, { "f30f0128", X86_HINT_SHSTK }, { "f30f012f", X86_HINT_SHSTK },
	{ "0f38f607", X86_HINT_SHSTK }, { "480f38f607", X86_HINT_SHSTK },
	{ "4c0f38f63f", X86_HINT_SHSTK },
	{ "f30f01e8", X86_HINT_PRIV }, { "f30fae30", X86_HINT_PRIV }, { "67f30fae30", X86_HINT_PRIV },
	{ "660f38f507", X86_HINT_PRIV }, { "66480f38f507", X86_HINT_PRIV },
};

static size_t unhex(const char *hex, uint8_t *b)
{
	size_t n = 0;

	for (; hex[0] && hex[1]; hex += 2) {
		unsigned v;

		sscanf(hex, "%2x", &v);
		b[n++] = (uint8_t)v;
	}
	return n;
}

/* Whitespace collapsed, objdump's "# address" comment dropped. */
static void norm(const char *in, char *out, size_t cap)
{
	size_t n = 0;
	int sp = 0;

	for (; *in && *in != '#' && *in != '\n' && n + 2 < cap; in++) {
		if (isspace((unsigned char)*in)) {
			sp = n > 0;
			continue;
		}
		if (sp)
			out[n++] = ' ';
		sp = 0;
		out[n++] = *in;
	}
	out[n] = 0;
}

static void test_decode(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++) {
		uint8_t b[16];
		size_t n = unhex(encs[i].hex, b);
		struct x86_hint h;

		if (x86_hint_decode(b, n, &h) != 0 || h.len != n || h.kind != encs[i].kind)
			fail_msg("%s: decoded %d, length %u, kind %u", encs[i].hex,
				 x86_hint_decode(b, n, &h), h.len, h.kind);
		/* one byte short: truncated, never another instruction */
		assert_int_equal(x86_hint_decode(b, n - 1, &h), -EINVAL);
	}
	/* not this space */
	assert_int_equal(x86_hint_decode((const uint8_t *)"\x90", 1, &(struct x86_hint){ 0 }), -ENOENT);
	assert_int_equal(x86_hint_decode((const uint8_t *)"\x0f\xae\xe8", 3, &(struct x86_hint){ 0 }),
			 -ENOENT);	/* lfence */
	assert_int_equal(x86_hint_decode((const uint8_t *)"\x66\x0f\x38\xf6\x07", 5,
					 &(struct x86_hint){ 0 }), -ENOENT);	/* adcx */
}

/* Every encoding followed by a nop, so objdump's second line says where ours ends. */
static void test_vs_objdump(void **state)
{
	char dir[] = "/tmp/xp_hintXXXXXX", path[64], cmd[256], line[512];
	(void)state;

	if (system("objdump --version >/dev/null 2>&1") != 0)
		skip();
	assert_non_null(mkdtemp(dir));
	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++) {
		uint8_t b[17];
		size_t n = unhex(encs[i].hex, b);
		struct x86_hint h;
		char ours[160], theirs[160] = "", next[32] = "";
		unsigned off, end = 0;
		FILE *f;

		b[n] = 0x90;
		snprintf(path, sizeof(path), "%s/b", dir);
		f = fopen(path, "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(b, 1, n + 1, f), n + 1);
		fclose(f);
		snprintf(cmd, sizeof(cmd), "objdump -D -b binary -mi386:x86-64 %s", path);
		f = popen(cmd, "r");
		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			char *t = strrchr(line, '\t');

			/* address, bytes, text; a long instruction's bytes go on over lines
			 * of address and bytes only */
			if (sscanf(line, " %x:", &off) != 1 || !t || strchr(line, '\t') == t)
				continue;
			if (off == 0)
				norm(t + 1, theirs, sizeof(theirs));
			else if (!end)
				end = off, norm(t + 1, next, sizeof(next));
		}
		pclose(f);
		assert_int_equal(x86_hint_decode(b, n, &h), 0);
		snprintf(line, sizeof(line), "%s %s", h.mnemonic, h.op_str);
		norm(line, ours, sizeof(ours));
		if (strcmp(ours, theirs) || end != h.len || strcmp(next, "nop"))
			fail_msg("%s: ours \"%s\" (%u bytes), objdump \"%s\" (%u bytes, then \"%s\")",
				 encs[i].hex, ours, h.len, theirs, end, next);
	}
	snprintf(path, sizeof(path), "%s/b", dir);
	unlink(path);
	rmdir(dir);
}

/* What the block decoder and the emulator make of them, whatever capstone says. */
static void test_dis_and_emu(void **state)
{
	struct x86_dis d;
	(void)state;

	assert_int_equal(x86_dis_init(&d), 0);
	for (size_t i = 0; i < sizeof(encs) / sizeof(encs[0]); i++) {
		uint8_t b[16];
		size_t n = unhex(encs[i].hex, b);
		struct x86_instr in;
		struct x86_uop u;
		int rc;

		assert_int_equal(x86_dis_one(&d, b, n, 0x1000, &in), 0);
		if (in.size != n || in.br.cls != X86_BR_NONE || in.br.next != 0x1000 + n)
			fail_msg("%s: x86_dis_one: %u bytes, class %d", encs[i].hex, in.size, in.br.cls);
		rc = x86_isa_translate(&d, &u);
		if (encs[i].kind == X86_HINT_NOP && d.hint >= 0 && (rc != 0 || u.kind != U_NOP || u.len != n))
			fail_msg("%s: not emulated as a NOP (%d)", encs[i].hex, rc);
		if (encs[i].kind != X86_HINT_NOP && rc == 0)
			fail_msg("%s: a CET instruction emulated (as %s %s)", encs[i].hex, in.mnemonic,
				 in.op_str);
	}
	/* libgcc's unwinder: rdsspq %rax, capstone 4's (bad) */
	struct x86_instr in;
	assert_int_equal(x86_dis_one(&d, (const uint8_t *)"\xf3\x48\x0f\x1e\xc8", 5, 0, &in), 0);
	assert_string_equal(in.mnemonic, "rdsspq");
	assert_string_equal(in.op_str, "%rax");
	assert_string_equal(x86_dis_id_name(&d, x86_dis_last_id(&d)), "rdsspq");
	/* incsspd: capstone 4 says lfence */
	assert_int_equal(x86_dis_one(&d, (const uint8_t *)"\xf3\x0f\xae\xe8", 4, 0, &in), 0);
	assert_string_equal(in.mnemonic, "incsspd");
	/* a hint NOP capstone knows keeps capstone's text */
	assert_int_equal(x86_dis_one(&d, (const uint8_t *)"\x0f\x1f\x44\x00\x00", 5, 0, &in), 0);
	assert_string_equal(in.mnemonic, "nopl");
	assert_int_equal(d.hint, -1);
	x86_dis_fini(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_vs_objdump),
		cmocka_unit_test(test_dis_and_emu),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
