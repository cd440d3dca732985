/* JIT code (src/session/jit.c): jitdump loads and moves at their times, clocks, perf maps, the
 * trace directory's copies first, cut and corrupt files; then PT through the xptrace
 * binary: exact call counts to named JIT functions in the call tree, across a
 * JIT_CODE_MOVE; LBR: branch-stack ranges walked in JIT code bytes. */
#include "xp_test.h"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "session/jit.h"
#include "perfdata/pd_write.h"
#include "pt_gen.h"
#include "session/sb.h"

#define PID 4242

static char dump[2048], data[2048];

/* --- a jitdump writer --- */
struct jd {
	uint8_t buf[4096];
	size_t n;
};

static void jd_put(struct jd *d, const void *p, size_t n)
{
	assert_true(d->n + n <= sizeof(d->buf));
	memcpy(d->buf + d->n, p, n);
	d->n += n;
}

static void jd_u32(struct jd *d, uint32_t v) { jd_put(d, &v, 4); }
static void jd_u64(struct jd *d, uint64_t v) { jd_put(d, &v, 8); }

static void jd_header(struct jd *d, uint64_t flags)
{
	d->n = 0;
	jd_u32(d, 0x4A695444);
	jd_u32(d, 1);
	jd_u32(d, 40);
	jd_u32(d, 62);
	jd_u32(d, 0);
	jd_u32(d, PID);
	jd_u64(d, 1);
	jd_u64(d, flags);
}

static void jd_load(struct jd *d, uint64_t t, const char *name, uint64_t addr, const uint8_t *code,
		    uint64_t size, uint64_t index)
{
	jd_u32(d, 0);
	jd_u32(d, (uint32_t)(16 + 40 + strlen(name) + 1 + size));
	jd_u64(d, t);
	jd_u32(d, PID);
	jd_u32(d, PID);
	jd_u64(d, addr);
	jd_u64(d, addr);
	jd_u64(d, size);
	jd_u64(d, index);
	jd_put(d, name, strlen(name) + 1);
	jd_put(d, code, size);
}

static void jd_move(struct jd *d, uint64_t t, uint64_t from, uint64_t to, uint64_t size, uint64_t index)
{
	jd_u32(d, 1);
	jd_u32(d, 16 + 48);
	jd_u64(d, t);
	jd_u32(d, PID);
	jd_u32(d, PID);
	jd_u64(d, to);
	jd_u64(d, from);
	jd_u64(d, to);
	jd_u64(d, size);
	jd_u64(d, index);
}

/* JIT_CODE_DEBUG_INFO: lines[i] from code_addr + offs[i] on, in file `file` */
static void jd_lines(struct jd *d, uint64_t code_addr, const char *file, const uint64_t *offs,
		     const int *lines, int n)
{
	jd_u32(d, 2);
	jd_u32(d, (uint32_t)(16 + 16 + (size_t)n * (16 + strlen(file) + 1)));
	jd_u64(d, 3);
	jd_u64(d, code_addr);
	jd_u64(d, (uint64_t)n);
	for (int i = 0; i < n; i++) {
		jd_u64(d, code_addr + offs[i]);
		jd_u32(d, (uint32_t)lines[i]);
		jd_u32(d, 0);
		jd_put(d, file, strlen(file) + 1);
	}
}

/* a record of kind `id` with `n` bytes of junk (debug info, unwinding info, unknown) */
static void jd_junk(struct jd *d, uint32_t id, size_t n)
{
	jd_u32(d, id);
	jd_u32(d, (uint32_t)(16 + n));
	jd_u64(d, 7);
	for (size_t i = 0; i < n; i++)
		jd_put(d, "\xff", 1);
}

static void jd_write(const struct jd *d, const char *path, size_t n)
{
	FILE *f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(d->buf, 1, n, f), n);
	fclose(f);
}

/* --- the session: the process mapped the dump (as a JIT runtime does) --- */
struct fx {
	struct sb_session *sb;
	struct jit_ctx *j;
};

static void fx_open(struct fx *x, const char *trace_dir)
{
	x->sb = sb_new();
	assert_non_null(x->sb);
	assert_int_equal(sb_add_map(x->sb, PID, 0x7f0000100000ULL, 4096, 0, 5, dump, NULL, 0, 1), 0);
	x->j = jit_new(x->sb, trace_dir);
	assert_non_null(x->j);
	jit_set_mono(x->j, true);
}

static void fx_close(struct fx *x)
{
	jit_free(x->j);
	sb_free(x->sb);
}

static const uint8_t ret1[] = { 0xc3 }, nops[16] = { 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
						     0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90 };
#define A 0x7f0000002000ULL
#define B 0x7f0000003000ULL

static const char *name_at(struct jit_ctx *j, uint64_t t, uint64_t addr)
{
	struct jit_sym s;
	return jit_find(j, PID, t, addr, &s) ? s.name : NULL;
}

/* Loads hold from their time on, a move ends the old place and starts the new one at
 * its time, and a later load over the same addresses replaces the earlier code. */
static void test_loads_and_moves_at_their_times(void **state)
{
	(void)state;
	struct jd d;
	jd_header(&d, 0);
	jd_load(&d, 100, "f", A, nops, 16, 7);
	jd_junk(&d, 2, 24);	/* JIT_CODE_DEBUG_INFO */
	jd_junk(&d, 4, 40);	/* JIT_CODE_UNWINDING_INFO */
	jd_junk(&d, 99, 8);	/* a record kind from the future */
	jd_move(&d, 300, A, B, 16, 7);
	jd_load(&d, 400, "g", A + 8, ret1, 1, 8);
	jd_write(&d, dump, d.n);
	struct fx x;
	fx_open(&x, NULL);
	struct jit_sym s;

	assert_false(jit_find(x.j, PID, 50, A + 3, &s));	/* not loaded yet */
	assert_int_equal(s.from, 0);
	assert_int_equal(s.to, 100);
	assert_true(jit_find(x.j, PID, 100, A + 3, &s));
	assert_string_equal(s.name, "f");
	assert_string_equal(s.module, "jitted-4242-7.so");	/* perf inject --jit's file */
	assert_int_equal(s.start, A);
	assert_int_equal(s.size, 16);
	assert_memory_equal(s.code, nops, 16);
	assert_int_equal(s.from, 100);
	assert_int_equal(s.to, 300);
	assert_null(name_at(x.j, 299, B));
	/* moved: the old place is empty, the new one holds the same function */
	assert_null(name_at(x.j, 300, A + 3));
	assert_true(jit_find(x.j, PID, 300, B + 15, &s));
	assert_string_equal(s.name, "f");
	assert_string_equal(s.module, "jitted-4242-7.so");
	assert_int_equal(s.start, B);
	assert_memory_equal(s.code, nops, 16);
	assert_int_equal(s.from, 300);
	assert_int_equal(s.to, UINT64_MAX);
	assert_null(name_at(x.j, 300, B + 16));
	assert_string_equal(name_at(x.j, 500, A + 8), "g");
	assert_string_equal(name_at(x.j, 0, B), "f");	/* 0: the latest state */
	assert_null(name_at(x.j, 0, A));
	assert_null(name_at(x.j, 500, A + 8 + 1));	/* beyond g, f is gone */
	assert_string_equal(name_at(x.j, 200, A + 8 + 1), "f");
	/* an address of another process is not this JIT's */
	assert_false(jit_find(x.j, PID + 1, 200, A, &s));
	fx_close(&x);

	/* the same code recompiled at the same address: the newer load wins from its time */
	jd_header(&d, 0);
	jd_load(&d, 100, "old", A, nops, 16, 1);
	jd_load(&d, 200, "new", A, nops, 8, 2);
	jd_write(&d, dump, d.n);
	fx_open(&x, NULL);
	assert_string_equal(name_at(x.j, 150, A + 4), "old");
	assert_string_equal(name_at(x.j, 200, A + 4), "new");
	assert_true(jit_find(x.j, PID, 250, A + 12, &s));	/* beyond the new code's end */
	assert_string_equal(s.name, "old");
	assert_int_equal(s.from, 100);
	fx_close(&x);
}

/* A dump on another clock than the trace's is applied as its final state; TSC dumps
 * (JITDUMP_FLAGS_ARCH_TIMESTAMP) are converted like the trace's TSC. */
static void test_clocks(void **state)
{
	(void)state;
	struct jd d;
	jd_header(&d, 0);
	jd_load(&d, 100, "f", A, nops, 16, 1);
	jd_move(&d, 300, A, B, 16, 1);
	jd_write(&d, dump, d.n);
	struct fx x;
	fx_open(&x, NULL);
	jit_set_mono(x.j, false);
	assert_null(name_at(x.j, 5, A));
	assert_string_equal(name_at(x.j, 5, B), "f");
	fx_close(&x);

	jd_header(&d, 1);
	jd_load(&d, 1000, "f", A, nops, 16, 1);	/* TSC 1000 = trace time 10000 + 1000 / 2 */
	jd_write(&d, dump, d.n);
	fx_open(&x, NULL);
	assert_string_equal(name_at(x.j, 5, A), "f");	/* no conversion known: timeless */
	fx_close(&x);
	fx_open(&x, NULL);
	jit_set_tsc_conv(x.j, 1, 1, 10000);
	assert_null(name_at(x.j, 10499, A));
	assert_string_equal(name_at(x.j, 10500, A), "f");
	fx_close(&x);
}

/* perf's /tmp/perf-PID.map: names for the whole process life, under the jitdump's;
 * the trace directory's copy (DIR/jit/) is used before /tmp's. */
static void test_perf_map(void **state)
{
	(void)state;
	struct jd d;
	jd_header(&d, 0);
	jd_load(&d, 100, "dumped", A, nops, 16, 1);
	jd_write(&d, dump, d.n);
	char path[PATH_MAX], jd_dir[PATH_MAX / 2];
	assert_int_equal(xp_test_path(jd_dir, sizeof(jd_dir), "jit"), 0);
	mkdir(jd_dir, 0755);
	snprintf(path, sizeof(path), "%s/perf-%d.map", jd_dir, PID);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%llx 10 LazyCompile:~run app.js:3\n"
		   "garbage line\n"
		   "%llx zz bad size\n"
		   "%llx 0 empty\n"
		   "0x%llx 20 with_0x\r\n"
		   "%llx 10 first\n"
		   "%llx 8 reused\n"
		   "%llx 8 last_line_without_newline",
		(unsigned long long)B, (unsigned long long)B + 0x100, (unsigned long long)B + 0x200,
		(unsigned long long)B + 0x300, (unsigned long long)B + 0x500, (unsigned long long)B + 0x500,
		(unsigned long long)B + 0x400);
	fclose(f);
	struct fx x;
	fx_open(&x, xp_test_tmp());
	struct jit_sym s;
	assert_true(jit_find(x.j, PID, 5, B + 0xf, &s));
	assert_string_equal(s.name, "LazyCompile:~run app.js:3");
	assert_string_equal(s.module, "[JIT] tid 4242");	/* perf report's name for it */
	assert_null(s.code);
	assert_int_equal(s.start, B);
	assert_int_equal(s.size, 0x10);
	assert_null(name_at(x.j, 5, B + 0x10));
	assert_null(name_at(x.j, 5, B + 0x100));
	assert_null(name_at(x.j, 5, B + 0x200));
	assert_string_equal(name_at(x.j, 5, B + 0x31f), "with_0x");
	assert_string_equal(name_at(x.j, 5, B + 0x407), "last_line_without_newline");
	assert_string_equal(name_at(x.j, 5, B + 0x507), "reused");	/* the later line wins */
	assert_string_equal(name_at(x.j, 5, B + 0x508), "first");
	assert_string_equal(name_at(x.j, 150, A), "dumped");
	fx_close(&x);
	/* the jitdump is also found in DIR/jit/ when its recorded path is gone */
	snprintf(path, sizeof(path), "%s/jit-%d.dump", jd_dir, PID);
	assert_int_equal(rename(dump, path), 0);
	fx_open(&x, xp_test_tmp());
	assert_string_equal(name_at(x.j, 150, A), "dumped");
	fx_close(&x);
	fx_open(&x, NULL);
	assert_null(name_at(x.j, 150, A));
	fx_close(&x);
	assert_int_equal(xp_test_rmtree(jd_dir), 0);
}

/* Sizes from the file are never trusted: every prefix of a dump, and a dump with any
 * word replaced, gives the records before the damage and nothing else. */
static void test_cut_and_corrupt_dumps(void **state)
{
	(void)state;
	struct jd d, c;
	jd_header(&d, 0);
	static const uint64_t offs[] = { 0, 4, 9 };
	static const int lines[] = { 1, 2, 3 };
	jd_lines(&d, A, "f.js", offs, lines, 3);
	jd_load(&d, 100, "f", A, nops, 16, 1);
	size_t first = d.n;
	jd_junk(&d, 2, 13);
	jd_move(&d, 300, A, B, 16, 1);
	jd_load(&d, 400, "g", A + 0x100, nops, 16, 2);
	for (size_t n = 0; n <= d.n; n++) {
		jd_write(&d, dump, n);
		struct fx x;
		fx_open(&x, NULL);
		const char *f = name_at(x.j, 200, A), *g = name_at(x.j, 500, A + 0x100);
		if (n < first)
			assert_null(f);
		else
			assert_string_equal(f, "f");
		if (n < d.n)
			assert_null(g);
		else
			assert_string_equal(g, "g");
		const char *file;
		int line = 0;
		/* the debug info's lines hold from their address to the next one's, and move
		 * with the code */
		if (n == d.n) {
			assert_true(jit_srcline(x.j, PID, 200, A + 5, &file, &line));
			assert_string_equal(file, "f.js");
			assert_int_equal(line, 2);
			assert_true(jit_srcline(x.j, PID, 200, A + 3, &file, &line));
			assert_int_equal(line, 1);
			assert_true(jit_srcline(x.j, PID, 500, B + 15, &file, &line));
			assert_int_equal(line, 3);
			assert_false(jit_srcline(x.j, PID, 500, A + 5, &file, &line));
			assert_false(jit_srcline(x.j, PID, 500, A + 0x100, &file, &line));	/* g has none */
		}
		fx_close(&x);
	}
	static const uint32_t bad[] = { 0, 1, 15, 16, 0x7fffffff, 0xffffffff };
	for (size_t at = 0; at + 4 <= d.n; at += 4)
		for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
			c = d;
			memcpy(c.buf + at, &bad[k], 4);
			jd_write(&c, dump, c.n);
			struct fx x;
			fx_open(&x, NULL);
			struct jit_sym s;
			unsigned sum = 0;
			for (uint64_t a = A - 1; a < A + 0x120; a += 7) {
				const char *file;
				int line;
				if (jit_srcline(x.j, PID, 1000, a, &file, &line))
					sum += (unsigned)strlen(file) + (unsigned)line;
				if (jit_find(x.j, PID, 1000, a, &s) && s.code) {
					assert_true(s.size <= c.n);
					for (uint64_t i = 0; i < s.size; i++)	/* inside the file */
						sum += s.code[i];
				}
			}
			(void)sum;
			fx_close(&x);
		}
}

/* --- PT: a JIT'ed loop calls a JIT'ed leaf through a register; the leaf moves --- */

/* outer: L: call *%rax ; dec %ecx ; jnz L ; ret */
static const uint8_t outer[] = { 0xff, 0xd0, 0xff, 0xc9, 0x75, 0xfa, 0xc3 };
#define OUTER 0x7f0000001000ULL


/* One pass of outer with `n` calls of the leaf at `leaf`, enabled at TSC `tsc`. */
static void pass(struct pte *e, uint64_t tsc, uint64_t leaf, int n)
{
	pte_tsc(e, tsc);
	pte_ip(e, ppt_tip_pge, pt_ipc_sext_48, OUTER);
	for (int i = 0; i < n; i++) {
		pte_ip(e, ppt_tip, pt_ipc_sext_48, leaf);	/* call *%rax */
		pte_ip(e, ppt_tip, pt_ipc_sext_48, OUTER + 2);	/* the leaf's ret */
		pte_tnt(e, i + 1 < n ? "T" : "N");
	}
	pte_ip(e, ppt_tip_pgd, pt_ipc_suppressed, 0);	/* outer's ret leaves the traced code */
}

/* Two passes: 3 calls of the leaf at A (TSC 100), 2 of the leaf at `second` (300). */
static void write_pt(uint64_t second)
{
	struct pd_writer *w;
	assert_int_equal(pd_writer_create(&w, data), 0);
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = 8;
	attr.size = PD_ATTR_SIZE;
	attr.config = 1 | 1ULL << 10 | 1ULL << 11 | 1ULL << 13;	/* TSC, no return compression */
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	attr.sample_id_all = attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
	int idx = pd_writer_add_attr(w, &attr, "intel_pt//u");
	pd_writer_add_id(w, idx, 1000, -1, PID);
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	priv[PD_PT_PMU_TYPE] = 8;
	priv[PD_PT_TIME_MULT] = 1;	/* perf time = TSC: the dump's TSC times too */
	priv[PD_PT_TSC_BIT] = 1ULL << 10;
	priv[PD_PT_NORETCOMP_BIT] = 1ULL << 11;
	pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, PD_PT_INFO_WORDS);
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ attr.sample_type, PID, 0, 1000, 0 }, "jitter", 10, 20,
				       0x7f0000100000ULL, 4096, dump), 0);
	pd_writer_finished_round(w);
	struct pte e;
	pte_init(&e, 4096);
	pte_simple(&e, ppt_psb);
	pte_simple(&e, ppt_psbend);
	pte_mode64(&e);
	pass(&e, 100, A, 3);	/* before the move (time 200) */
	pass(&e, 300, second, 2);	/* after it */
	assert_false(e.failed);
	struct pd_auxtrace_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.tid = PID;
	ev.cpu = (uint32_t)-1;
	assert_int_equal(pd_writer_auxtrace(w, &ev, e.buf, pte_len(&e)), 0);
	pte_free(&e);
	assert_int_equal(pd_writer_close(w), 0);
}


static void write_leaf_dump(bool move)
{
	struct jd d;
	jd_header(&d, 1);	/* TSC timestamps, as perf's jvmti agent writes them for PT */
	static const uint64_t offs[] = { 0, 2 };
	static const int lines[] = { 10, 11 };
	jd_lines(&d, OUTER, "loop.js", offs, lines, 2);
	jd_load(&d, 5, "outer_loop", OUTER, outer, sizeof(outer), 1);
	jd_load(&d, 5, "leaf", A, ret1, 1, 2);
	if (move)
		jd_move(&d, 200, A, B, 1, 2);
	jd_write(&d, dump, d.n);
}

/* Calls: 3 to the leaf at its first place, 2 after the JIT moved it; one function. */
static void test_pt_calls_to_jit_functions(void **state)
{
	(void)state;
	write_leaf_dump(true);
	write_pt(B);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", NULL), 0);
	/* instructions: outer_loop 3 per call (call, dec, jnz) + its ret, per pass */
	assert_string_equal(out, "outer_loop 17\nouter_loop;leaf 5\n");
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"lvl\":2,\"rl\":1,\"calls\":5,\"base\":5,\"cum\":5,\"module\":\"jitted-4242-2.so\",\"name\":\"leaf\","));
	/* outer_loop: entered twice, each pass's TIP.PGE at its first instruction */
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	assert_string_equal(out, "calls,base,cum,base%,cum%,module,name\n"
				 "2,17,22,77.2727,100.0000,jitted-4242-1.so,outer_loop\n"
				 "5,5,5,22.7273,22.7273,jitted-4242-2.so,leaf\n");
	/* the leaf's two places are one function: its 3 + 2 executions on one line */
	assert_int_equal(xp_test_engine(&out, data, "annotate=leaf", NULL), 0);
	assert_non_null(strstr(out, "# leaf at 0x7f0000002000: 5 instructions executed"));
	assert_non_null(strstr(out, "       5          - >0x7f0000002000     retq"));
	assert_int_equal(xp_test_engine(&out, data, "annotate=outer_loop", NULL), 0);
	assert_non_null(strstr(out, "       5          - >0x7f0000001004     jne 0x7f0000001000                 60.0%\n"
				    "       2          -  0x7f0000001006     retq"));
	/* source lines from the JIT_CODE_DEBUG_INFO before outer_loop's load */
	assert_int_equal(xp_test_engine(&out, data, "insn", "srcline", "", NULL), 0);
	assert_non_null(strstr(out, "callq *%rax  loop.js:10\n"));
	assert_non_null(strstr(out, "decl %ecx  loop.js:11\n"));
	assert_non_null(strstr(out, "jne 0x7f0000001000  loop.js:11\n"));
	assert_non_null(strstr(out, "retq  loop.js:11\n"));
	assert_int_equal(xp_test_engine(&out, data, "insn", NULL), 0);
	assert_non_null(strstr(out, "7f0000003000  leaf+0x0"));
	assert_non_null(strstr(out, "7f0000002000  leaf+0x0"));
	assert_null(strstr(out, "gap"));

	/* without the move record the code at the new place is unknown: a decode error
	 * there, the 3 calls before it intact */
	write_leaf_dump(false);
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", NULL), 0);
	assert_non_null(strstr(out, "outer_loop;leaf 3\n"));
	assert_null(strstr(out, "outer_loop;leaf 5\n"));
}

/* The JIT compiles another leaf at the same address (time 200): same place, same
 * block shape (one ret: `c3`, then `f3 c3`), another name and other bytes.  Lines
 * and blocks formatted for the first must not be reused for the second. */
static void test_pt_code_replaced_at_same_address(void **state)
{
	(void)state;
	static const uint8_t rep_ret[] = { 0xf3, 0xc3 };
	struct jd d;
	jd_header(&d, 1);
	jd_load(&d, 5, "outer_loop", OUTER, outer, sizeof(outer), 1);
	jd_load(&d, 5, "leaf_v1", A, ret1, 1, 2);
	jd_load(&d, 200, "leaf_v2", A, rep_ret, sizeof(rep_ret), 3);
	jd_write(&d, dump, d.n);
	write_pt(A);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "format", "folded", NULL), 0);
	assert_string_equal(out, "outer_loop 17\nouter_loop;leaf_v1 3\nouter_loop;leaf_v2 2\n");
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	int v1 = 0, v2 = 0;
	for (const char *p = out; (p = strstr(p, "\"sym\":\"leaf_v1+0x0\",\"bytes\":\"c3\",\"insn\":\"retq\"")); p++)
		v1++;
	for (const char *p = out; (p = strstr(p, "\"sym\":\"leaf_v2+0x0\",\"bytes\":\"f3 c3\",\"insn\":\"retq\"")); p++)
		v2++;
	assert_int_equal(v1, 3);
	assert_int_equal(v2, 2);
	assert_int_equal(xp_test_engine(&out, data, "insn", NULL), 0);
	assert_non_null(strstr(out, "7f0000002000  leaf_v1+0x0                      c3                             retq\n"));
	assert_non_null(strstr(out, "7f0000002000  leaf_v2+0x0                      f3 c3                          retq\n"));
}

/* --- LBR: branch stacks through JIT code, the leaf after its move (perf record -k
 * mono -b of a JIT: one sample, four entries) --- */

static void write_lbr(void)
{
	struct pd_writer *w;
	assert_int_equal(pd_writer_create(&w, data), 0);
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.size = PD_ATTR_SIZE;
	attr.sample_period = 1000;
	attr.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_BRANCH_STACK;
	attr.branch_sample_type = PERF_SAMPLE_BRANCH_USER | PERF_SAMPLE_BRANCH_ANY;
	attr.sample_id_all = attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
	attr.use_clockid = 1;	/* perf record -k mono -b: the dump's clock */
	attr.clockid = CLOCK_MONOTONIC;
	int idx = pd_writer_add_attr(w, &attr, "cpu-clock");
	pd_writer_add_id(w, idx, 1000, -1, PID);
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ attr.sample_type, PID, 0, 1000, 0 }, "jitter", 10, 20,
				       0x7f0000100000ULL, 4096, dump), 0);
	/* at time 300, after the move: in the leaf at B, called twice by the loop */
	struct {
		struct perf_event_header h;
		uint64_t id, ip;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t period, nr;
		struct perf_branch_entry br[4];
	} smp;
	memset(&smp, 0, sizeof(smp));
	smp.h.type = PERF_RECORD_SAMPLE;
	smp.h.misc = PERF_RECORD_MISC_USER;
	smp.h.size = sizeof(smp);
	smp.id = 1000;
	smp.ip = B;
	smp.pid = smp.tid = PID;
	smp.time = 300;
	smp.period = 1000;
	smp.nr = 4;
	smp.br[0] = (struct perf_branch_entry){ .from = OUTER, .to = B };		/* call *%rax */
	smp.br[1] = (struct perf_branch_entry){ .from = OUTER + 4, .to = OUTER };	/* jnz */
	smp.br[2] = (struct perf_branch_entry){ .from = B, .to = OUTER + 2 };		/* ret */
	smp.br[3] = (struct perf_branch_entry){ .from = OUTER, .to = B };
	assert_int_equal(pd_writer_record(w, &smp.h), 0);
	assert_int_equal(pd_writer_close(w), 0);
}

static void test_lbr_through_jit_code(void **state)
{
	(void)state;
	write_leaf_dump(true);
	write_lbr();
	/* the ranges between the entries, walked in the JIT code bytes: the call (1
	 * instruction), dec + jnz taken (2), the leaf's ret (1), at the leaf's new place */
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_string_equal(out,
		"{\"start\":\"0x7f0000001000\",\"end\":\"0x7f0000001000\",\"sym\":\"outer_loop+0x0\",\"count\":1,"
		"\"insns\":1,\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n"
		"{\"start\":\"0x7f0000001002\",\"end\":\"0x7f0000001004\",\"sym\":\"outer_loop+0x2\",\"count\":1,"
		"\"insns\":2,\"cycles\":null,\"ipc\":null,\"taken\":1,\"not_taken\":0,\"mainline\":\"taken\"}\n"
		"{\"start\":\"0x7f0000003000\",\"end\":\"0x7f0000003000\",\"sym\":\"leaf+0x0\",\"count\":1,"
		"\"insns\":1,\"cycles\":null,\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null}\n");
	assert_int_equal(xp_test_engine(&out, data, "functions", "format", "csv", NULL), 0);
	assert_string_equal(out, "samples,base_ns,cum_ns,base%,cum%,module,name\n"
		"1,1000,1000,100.0000,100.0000,jitted-4242-2.so,leaf\n");
}

/* the jitdump of PID and the perf.data, in the test's directory */
static int setup(void **state)
{
	return xp_test_tmp_setup(state) || xp_test_path(dump, sizeof(dump), "jit-" XP_TEST_STR(PID) ".dump") ||
	       xp_test_path(data, sizeof(data), "perf.data");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads_and_moves_at_their_times),
		cmocka_unit_test(test_clocks),
		cmocka_unit_test(test_perf_map),
		cmocka_unit_test(test_cut_and_corrupt_dumps),
		cmocka_unit_test(test_pt_calls_to_jit_functions),
		cmocka_unit_test(test_pt_code_replaced_at_same_address),
		cmocka_unit_test(test_lbr_through_jit_code),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
