/* PT in perf.data beyond the per-thread case:
 *  - JIT code: the PT runs code that exists only in a jitdump file (jit-PID.dump, perf's
 *    format, code bytes included), found through the MMAP2 record of that file;
 *  - a per-cpu AUX area running two processes in turn: the switch records decide which
 *    thread each part of the trace belongs to;
 *  - two per-cpu AUX areas with timestamps (tests/unit/pt_percpu.h): their events come
 *    out merged in time order, a thread migrating between the cpus included. */
#include "xp_test.h"

#include <sys/wait.h>
#include <unistd.h>

#include "perfdata/pd_write.h"
#include "pt_gen.h"
#include "pt_percpu.h"

#define PID 4242
#define JIT_ADDR 0x7f0000001000ULL
#define PMU 8

/* mov ecx,1000 ; dec ecx ; jnz -4 ; call +2 ; ret ; nop ; ret */
static const uint8_t code[] = { 0xb9, 0xe8, 0x03, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xfc,
				0xe8, 0x02, 0x00, 0x00, 0x00, 0xc3, 0x90, 0xc3 };
static char jitf[2048], data[2048];
/* AUXTRACE_INFO's time_shift in write_perf_data() */
static uint64_t info_time_shift;

static void put(uint8_t **p, const void *v, size_t n)
{
	memcpy(*p, v, n);
	*p += n;
}

/* One load of the loop at `load_time`; with `later`, different code at the same
 * address at time `later` (the JIT recompiled it). */
static void write_jitdump(uint64_t load_time, uint64_t later)
{
	uint8_t buf[512], *p = buf;
	uint32_t magic = 0x4A695444, version = 1, hsize = 40, mach = 62, pad = 0, pid = PID;
	/* JITDUMP_FLAGS_ARCH_TIMESTAMP: TSC times, converted like the trace's own */
	uint64_t ts = 1, flags = 1;
	put(&p, &magic, 4); put(&p, &version, 4); put(&p, &hsize, 4); put(&p, &mach, 4);
	put(&p, &pad, 4); put(&p, &pid, 4); put(&p, &ts, 8); put(&p, &flags, 8);
	static const char name[] = "jitted_loop";
	uint32_t id = 0, total = (uint32_t)(16 + 40 + sizeof(name) + sizeof(code));
	uint32_t tid = PID;
	uint64_t vma = JIT_ADDR, addr = JIT_ADDR, size = sizeof(code), index = 1;
	put(&p, &id, 4); put(&p, &total, 4); put(&p, &load_time, 8);
	put(&p, &pid, 4); put(&p, &tid, 4); put(&p, &vma, 8); put(&p, &addr, 8);
	put(&p, &size, 8); put(&p, &index, 8);
	put(&p, name, sizeof(name));
	put(&p, code, sizeof(code));
	if (later) {
		static const char name2[] = "recompiled";
		uint8_t nops[sizeof(code)];
		memset(nops, 0x90, sizeof(nops));
		total = (uint32_t)(16 + 40 + sizeof(name2) + sizeof(nops));
		index = 2;
		put(&p, &id, 4); put(&p, &total, 4); put(&p, &later, 8);
		put(&p, &pid, 4); put(&p, &tid, 4); put(&p, &vma, 8); put(&p, &addr, 8);
		put(&p, &size, 8); put(&p, &index, 8);
		put(&p, name2, sizeof(name2));
		put(&p, nops, sizeof(nops));
	}
	FILE *f = fopen(jitf, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(buf, 1, (size_t)(p - buf), f), (size_t)(p - buf));
	fclose(f);
}

static void rec_as(struct pd_writer *w, uint16_t type, uint16_t misc, const void *body, size_t n,
		   uint64_t st, uint32_t pid, uint64_t t, uint32_t cpu)
{
	struct ptgen_sid sid = { st, pid, t, 1000, cpu };
	assert_int_equal(ptgen_record(w, type, misc, body, n, &sid), 0);
}



/* `tsc`: the trace's TSC (= perf time here); 0: a timeless trace.  `split` writes the
 * trace twice, as two AUXTRACE chunks: 1 with 4096 bytes of AUX data lost between
 * them, 2 with a truncated PERF_RECORD_AUX between them. */
static void write_perf_data(uint64_t tsc, int split)
{
	struct pd_writer *w;
	assert_int_equal(pd_writer_create(&w, data), 0);
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PMU;
	attr.size = PD_ATTR_SIZE;
	attr.config = 1 | 1ULL << 11 | 1ULL << 13 | (tsc ? 1ULL << 10 : 0);
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	attr.sample_id_all = attr.mmap = attr.mmap2 = attr.comm = attr.task = 1;
	int idx = pd_writer_add_attr(w, &attr, "intel_pt//u");
	pd_writer_add_id(w, idx, 1000, -1, PID);
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	priv[PD_PT_PMU_TYPE] = PMU;
	priv[PD_PT_TIME_MULT] = 1;
	priv[PD_PT_TIME_SHIFT] = info_time_shift;
	priv[PD_PT_TSC_BIT] = 1ULL << 10;
	priv[PD_PT_NORETCOMP_BIT] = 1ULL << 11;
	pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, PD_PT_INFO_WORDS);
	/* the JIT runtime maps its dump file executable so that tools find it */
	assert_int_equal(ptgen_process(w, (struct ptgen_sid){ attr.sample_type, PID, 0, 1000, 0 }, "jitter", 10, 20,
				       0x7f0000100000ULL, 4096, jitf), 0);
	pd_writer_finished_round(w);
	struct pte e;
	pte_init(&e, 4096);
	pte_loop_trace(&e, JIT_ADDR, tsc, 0, 0);
	assert_false(e.failed);
	struct pd_auxtrace_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.tid = PID;
	ev.cpu = (uint32_t)-1;
	assert_int_equal(pd_writer_auxtrace(w, &ev, e.buf, pte_len(&e)), 0);
	if (split) {
		uint64_t aux[3] = { pte_len(&e), 0, PERF_AUX_FLAG_TRUNCATED };
		if (split == 2)
			assert_int_equal(ptgen_record(w, PERF_RECORD_AUX, PERF_RECORD_MISC_USER, aux, sizeof(aux),
						      &(struct ptgen_sid){ attr.sample_type, PID, 30, 1000, 0 }), 0);
		memset(&ev, 0, sizeof(ev));
		ev.tid = PID;
		ev.cpu = (uint32_t)-1;
		/* perf's offsets count the trace without the chunk's padding to 8 */
		ev.offset = split == 1 ? ((pte_len(&e) + 7) & ~(size_t)7) + 4096 : pte_len(&e);
		assert_int_equal(pd_writer_auxtrace(w, &ev, e.buf, pte_len(&e)), 0);
	}
	pte_free(&e);
	assert_int_equal(pd_writer_close(w), 0);
}

/* the jitdump of PID and the perf.data, in the test's directory */
static int setup(void **state)
{
	return xp_test_tmp_setup(state) || xp_test_path(jitf, sizeof(jitf), "jit-" XP_TEST_STR(PID) ".dump") ||
	       xp_test_path(data, sizeof(data), "perf.data");
}


static void test_jitted_loop(void **state)
{
	(void)state;
	write_jitdump(5, 0);	/* loaded before the trace runs */
	write_perf_data(0, 0);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"start\":\"0x7f0000001005\",\"end\":\"0x7f0000001007\",\"sym\":\"jitted_loop+0x5\","
				    "\"count\":1000,\"insns\":2,\"cycles\":null,\"ipc\":null,\"taken\":999,"
				    "\"not_taken\":1,\"mainline\":\"taken\"}"));
	assert_int_equal(xp_test_engine(&out, data, "insn", NULL), 0);
	assert_non_null(strstr(out, "7f0000001005  jitted_loop+0x5                  ff c9                          decl %ecx\n"));
	assert_null(strstr(out, "gap"));
	/* no TSC (config:10), no CYC (config:1): the metrics are insns only, a usage error */
	int rc = xp_test_engine(&out, data, "calltree", "metric", "time", NULL);
	assert_int_equal(xp_test_exit_code(rc), 2);
	assert_string_equal(out, "xptrace: decode: no metric 'time' in this trace (have: insns) "
				 "(see 'xptrace help decode')\n");
}

/* The code is looked up at the trace's time: the recompiled code at the same address,
 * loaded after the trace ran, must not be used. */
static void test_jit_code_at_the_right_time(void **state)
{
	(void)state;
	write_jitdump(5, 500);
	write_perf_data(100, 0);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"sym\":\"jitted_loop+0x5\",\"count\":1000,\"insns\":2,"));
	assert_null(strstr(out, "recompiled"));
	assert_null(strstr(out, "gaps"));
	/* a timeless trace cannot tell: the latest code is taken, and it does not fit */
	write_perf_data(0, 0);
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_null(strstr(out, "\"count\":1000,"));
}

/* build/progs/ptspin (its path in `path`) and the addresses of spin and
 * spin_after_call where the traces map it (PTGEN_BASE). */
static void spin_syms(char *path, size_t n, uint64_t *spin, uint64_t *after)
{
	snprintf(path, n, "%s/build/progs/ptspin", XP_SRCDIR);
	int fd = open(path, O_RDONLY);
	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	*spin = PTGEN_BASE + ptgen_sym(elf, "spin");
	*after = PTGEN_BASE + ptgen_sym(elf, "spin_after_call");
	elf_end(elf);
	close(fd);
}

/* A per-cpu intel_pt perf.data being written to `data`: one AUX area (cpu 0), TSC
 * with perf time = TSC, cpu-wide switch records.  *st: the sample_type of its records. */
static struct pd_writer *per_cpu_writer(uint64_t *st)
{
	struct pd_writer *w;
	assert_int_equal(pd_writer_create(&w, data), 0);
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PMU;
	attr.size = PD_ATTR_SIZE;
	attr.config = 1 | 1ULL << 10 | 1ULL << 11 | 1ULL << 13;	/* pt, tsc, noretcomp, branch */
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR |
			   PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	attr.sample_id_all = attr.mmap = attr.mmap2 = attr.comm = attr.task = attr.context_switch = 1;
	int idx = pd_writer_add_attr(w, &attr, "intel_pt//u");
	pd_writer_add_id(w, idx, 1000, 0, -1);
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	priv[PD_PT_PMU_TYPE] = PMU;
	priv[PD_PT_TIME_MULT] = 1;	/* perf time = TSC */
	priv[PD_PT_TSC_BIT] = 1ULL << 10;
	priv[PD_PT_NORETCOMP_BIT] = 1ULL << 11;
	priv[PD_PT_HAVE_SCHED_SWITCH] = 2;
	priv[PD_PT_PER_CPU_MMAPS] = 1;
	pd_writer_auxtrace_info(w, PD_AUXTRACE_INTEL_PT, priv, PD_PT_INFO_WORDS);
	*st = attr.sample_type;
	return w;
}

/* Ends per_cpu_writer's file with `e` as cpu 0's AUX data (and frees e). */
static void per_cpu_finish(struct pd_writer *w, struct pte *e)
{
	assert_false(e->failed);
	struct pd_auxtrace_event ev;
	memset(&ev, 0, sizeof(ev));
	ev.tid = (uint32_t)-1;
	ev.cpu = 0;
	assert_int_equal(pd_writer_auxtrace(w, &ev, e->buf, pte_len(e)), 0);
	pte_free(e);
	assert_int_equal(pd_writer_close(w), 0);
}

/* Processes A (pid 100) and B (pid 200) run build/progs/ptspin's spin(3) and spin(5)
 * in turn on cpu 0; one per-cpu AUX area holds both. */
static void test_per_cpu_switches(void **state)
{
	(void)state;
	char spin_path[512];
	uint64_t spin, after;
	spin_syms(spin_path, sizeof(spin_path), &spin, &after);

	uint64_t st;
	struct pd_writer *w = per_cpu_writer(&st);
	for (uint32_t pid = 100; pid <= 200; pid += 100) {
		assert_int_equal(ptgen_process(w, (struct ptgen_sid){ st, pid, 0, 1000, 0 }, "spinner",
					       10, 20, PTGEN_BASE, 0x10000, spin_path), 0);
	}
	/* A runs from 900, B from 1500 (cpu-wide switch records) */
	uint32_t next[2] = { 0, 0 };
	rec_as(w, PERF_RECORD_SWITCH_CPU_WIDE, 0, next, sizeof(next), st, 100, 900, 0);
	next[0] = next[1] = 200;
	rec_as(w, PERF_RECORD_SWITCH_CPU_WIDE, PERF_RECORD_MISC_SWITCH_OUT, next, sizeof(next),
	       st, 100, 1500, 0);
	next[0] = next[1] = 100;
	rec_as(w, PERF_RECORD_SWITCH_CPU_WIDE, 0, next, sizeof(next), st, 200, 1500, 0);
	pd_writer_finished_round(w);

	struct pte e;
	pte_init(&e, 4096);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 1000);
	pte_simple(&e, ppt_psbend);
	for (int run = 0; run < 2; run++)
		ptpc_spin(&e, spin, 0, after, run ? 2000 : 1000, run ? 5 : 3, 0, 0);
	per_cpu_finish(w, &e);

	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	int a = 0, b = 0;
	for (const char *q = out; (q = strstr(q, "\"ip\":\"")); q++) {
		const char *line = q;
		while (line > out && line[-1] != '\n')
			line--;
		static const char pa[] = "{\"time\":1000,\"tid\":100,", pb[] = "{\"time\":2000,\"tid\":200,";
		a += strncmp(line, pa, sizeof(pa) - 1) == 0;
		b += strncmp(line, pb, sizeof(pb) - 1) == 0;
	}
	assert_int_equal(a, 6 * 3 + 2);
	assert_int_equal(b, 6 * 5 + 2);
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"calls\":3"));
	assert_non_null(strstr(out, "\"calls\":5"));
	assert_int_equal(xp_test_engine(&out, data, "blocks", "tid", "200", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"sym\":\"leaf+0x0\",\"count\":5,"));
}

/* Lost AUX data (a jump in the chunks' offsets) and a truncated AUX area are gaps
 * with what was lost; the parts around them decode completely. */
static void test_aux_loss_is_a_gap(void **state)
{
	(void)state;
	write_jitdump(5, 0);
	write_perf_data(0, 1);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"sym\":\"jitted_loop+0x5\",\"count\":2000,\"insns\":2,"));
	assert_non_null(strstr(out, "1 gaps in the PT trace, 4096 bytes of trace lost"));
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);	/* the markers */
	assert_non_null(strstr(out, "\"event\":\"gap\",\"reason\":\"AUX data lost\","));
	assert_non_null(strstr(out, "\"lost\":4096}"));
	write_perf_data(0, 2);
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"event\":\"gap\",\"reason\":\"AUX area truncated\","));
	assert_int_equal(xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"count\":2000,"));
}

/* A time conversion the C shift cannot do (UBSan: shift exponent 64) is refused as
 * damage, with the field named; 63 still decodes. */
static void test_time_shift_out_of_range(void **state)
{
	(void)state;
	write_jitdump(5, 0);
	info_time_shift = 64;
	write_perf_data(1000, 0);
	const char *out;
	int rc = xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL);
	assert_int_equal(xp_test_exit_code(rc), 1);
	char want[4096];
	snprintf(want, sizeof(want), "xptrace: %s: AUXTRACE_INFO time_shift 64 is out of range (at most 63) "
		 "(the file is damaged)\n", data);
	assert_string_equal(out, want);
	info_time_shift = 63;
	write_perf_data(1000, 0);
	rc = xp_test_engine(&out, data, "blocks", "format", "jsonl", NULL);
	info_time_shift = 0;
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, "\"sym\":\"jitted_loop+0x5\",\"count\":1000,"));
}

/* The runs of (cpu, tid) of the instructions in `out` (--insn jsonl), as "cpu tid count"
 * lines (cpu -1: not known), and the time of each run's first instruction. */
static void runs_of(const char *out, char *runs, size_t n, uint64_t *times, size_t ntimes)
{
	long cpu = -2, tid = -2, count = 0;
	size_t len = 0, k = 0;
	runs[0] = '\0';
	for (const char *l = out; *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : l + strlen(l)) {
		unsigned long long t;
		long c = -1, d;
		int at = 0, at2 = 0;
		if (sscanf(l, "{\"time\":%llu,\"tid\":%ld,%n", &t, &d, &at) != 2 || !at)
			continue;
		if (sscanf(l + at, "\"cpu\":%ld,%n", &c, &at2) == 1 && at2)
			at += at2;
		if (strncmp(l + at, "\"ip\":", 5) != 0)
			continue;
		if (c != cpu || d != tid) {
			if (count)
				len += (size_t)snprintf(runs + len, n - len, "%ld %ld %ld\n", cpu, tid, count);
			if (k < ntimes)
				times[k++] = t;
			cpu = c;
			tid = d;
			count = 0;
		}
		count++;
	}
	if (count)
		snprintf(runs + len, n - len, "%ld %ld %ld\n", cpu, tid, count);
}

static void test_per_cpu_time_order(void **state)
{
	(void)state;
	char spin_path[512], runs[256];
	uint64_t times[8] = { 0 };
	snprintf(spin_path, sizeof(spin_path), "%s/build/progs/ptspin", XP_SRCDIR);
	assert_int_equal(ptpc_write(data, spin_path, 0), 0);

	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	runs_of(out, runs, sizeof(runs), times, 8);
	/* cpu 0's queue first, then cpu 1's, would give 0 100 18, 0 100 8, 0 200 8, ... */
	assert_string_equal(runs, PTPC_RUNS);
	static const uint64_t tsc[] = { 1000, 1100, 1200, 1300, 1650, 1700 };
	for (size_t i = 0; i < 6; i++)
		assert_int_equal(times[i], ptpc_time(tsc[i]));
	assert_int_equal(times[6], 0);
	/* the markers too: each thread enabled on its cpu at its time */
	assert_non_null(strstr(out, "{\"time\":1001500,\"tid\":100,\"cpu\":0,\"event\":\"enabled\","));
	assert_non_null(strstr(out, "{\"time\":1002550,\"tid\":100,\"cpu\":1,\"event\":\"enabled\","));

	/* the text listing names the cpu as perf script does */
	assert_int_equal(xp_test_engine(&out, data, "insn", NULL), 0);
	assert_non_null(strstr(out, "\n0.001002550 100 [001]     555555555139  spin+0x0 "));
	/* each thread's calls, on both cpus, reach its call tree */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"tid\":100,\"lvl\":2,\"rl\":1,\"calls\":6,\"base\":18,\"cum\":18,\"module\":\"ptspin\",\"name\":\"leaf\""));
	assert_non_null(strstr(out, "{\"tid\":200,\"lvl\":2,\"rl\":1,\"calls\":4,\"base\":12,\"cum\":12,\"module\":\"ptspin\",\"name\":\"leaf\""));
	/* wall time per thread: B ran from 1100 (cpu 1) to 1650 (cpu 0), 825 ns in perf
	 * time; B's cpu 0 events first would make its time go backwards (0) */
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "metric", "time", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"tid\":100,\"lvl\":1,\"rl\":1,\"calls\":2,\"base_ns\":1050,\"cum_ns\":1050,"));
	assert_non_null(strstr(out, "{\"tid\":200,\"lvl\":1,\"rl\":1,\"calls\":2,\"base_ns\":825,\"cum_ns\":825,"));
	assert_int_equal(xp_test_engine(&out, data, "blocks", "tid", "100", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"sym\":\"spin+0x7\",\"count\":6,\"insns\":2,\"cycles\":null,\"ipc\":null,"
				    "\"taken\":4,\"not_taken\":2,"));
	/* --tid keeps the order of what it keeps */
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", "tid", "200", NULL), 0);
	runs_of(out, runs, sizeof(runs), times, 8);
	assert_string_equal(runs, "1 200 20\n0 200 8\n");
}

/* AUX data lost on cpu 1 between B's and A's runs: the gap comes out where cpu 1's
 * queue reaches it in time, after B's last instruction there, before cpu 0 goes on. */
static void test_per_cpu_gap_in_order(void **state)
{
	(void)state;
	char spin_path[512], runs[256];
	uint64_t times[8] = { 0 };
	snprintf(spin_path, sizeof(spin_path), "%s/build/progs/ptspin", XP_SRCDIR);
	assert_int_equal(ptpc_write(data, spin_path, PTPC_LOSE), 0);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	runs_of(out, runs, sizeof(runs), times, 8);
	assert_string_equal(runs, PTPC_RUNS);
	const char *gap = strstr(out, "{\"time\":1001950,\"tid\":200,\"cpu\":1,\"event\":\"gap\","
				      "\"reason\":\"AUX data lost\",");
	assert_non_null(gap);
	assert_non_null(strstr(gap, "\"lost\":4096}"));
	const char *last_b = strstr(out, "{\"time\":1001950,\"tid\":200,\"cpu\":1,\"ip\":\"0x555555555145\"");
	const char *next = strstr(out, "{\"time\":1002475,\"tid\":200,\"cpu\":0,\"ip\":");
	assert_non_null(last_b);
	assert_non_null(next);
	assert_true(last_b < gap);
	assert_true(gap < next);
	assert_null(strstr(strchr(gap, '\n'), "\"event\":\"gap\""));
}

/* The same threads recorded per thread: one queue each, merged by time too. */
static void test_per_thread_time_order(void **state)
{
	(void)state;
	char spin_path[512], runs[256];
	uint64_t times[8] = { 0 };
	snprintf(spin_path, sizeof(spin_path), "%s/build/progs/ptspin", XP_SRCDIR);
	assert_int_equal(ptpc_write(data, spin_path, PTPC_PER_THREAD), 0);
	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "insn", "format", "jsonl", NULL), 0);
	runs_of(out, runs, sizeof(runs), times, 8);
	/* B's runs at 1300 and 1650 are adjacent in time */
	assert_string_equal(runs, "-1 100 18\n-1 200 7\n-1 100 8\n-1 200 21\n-1 100 14\n");
	static const uint64_t tsc[] = { 1000, 1100, 1200, 1300, 1700 };
	for (size_t i = 0; i < 5; i++)
		assert_int_equal(times[i], ptpc_time(tsc[i]));
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"tid\":100,\"lvl\":2,\"rl\":1,\"calls\":6,"));
	assert_non_null(strstr(out, "{\"tid\":200,\"lvl\":2,\"rl\":1,\"calls\":4,"));
}

/* One cpu runs process A, then B, each with different code at the same address (raw
 * code files mapped at X, as non-PIE executables share their addresses):
 *   A: mov ecx,3 ; dec ecx ; jnz X+5 (2 bytes) ; ret
 *   B: mov ecx,1 ; dec ecx ; jnz X+5 (6 bytes) ; ret
 * B's jnz falls through once: not taken.  Anything the decoder learnt about A's
 * instruction at X+7 (its length, hence its fall-through) must not be taken for B's. */
static void test_per_cpu_code_per_process(void **state)
{
	(void)state;
	static const uint8_t a[] = { 0xb9, 0x03, 0, 0, 0, 0xff, 0xc9, 0x75, 0xfc, 0xc3 };
	static const uint8_t b[] = { 0xb9, 0x01, 0, 0, 0, 0xff, 0xc9, 0x0f, 0x85, 0xf8, 0xff, 0xff, 0xff, 0xc3 };
	const uint64_t X = 0x7f0000200000ULL;
	char path[2][2048];
	for (int i = 0; i < 2; i++) {
		assert_int_equal(xp_test_path(path[i], sizeof(path[i]), i ? "code-b.bin" : "code-a.bin"), 0);
		FILE *f = fopen(path[i], "wb");
		assert_non_null(f);
		assert_int_equal(fwrite(i ? b : a, 1, i ? sizeof(b) : sizeof(a), f), i ? sizeof(b) : sizeof(a));
		fclose(f);
	}
	uint64_t st;
	struct pd_writer *w = per_cpu_writer(&st);
	for (uint32_t i = 0; i < 2; i++) {
		uint32_t pid = 100 + 100 * i;
		assert_int_equal(ptgen_process(w, (struct ptgen_sid){ st, pid, 0, 1000, 0 }, "code",
					       10, 20, X, 4096, path[i]), 0);
		uint32_t next[2] = { 0, 0 };
		rec_as(w, PERF_RECORD_SWITCH_CPU_WIDE, 0, next, sizeof(next), st, pid,
		       i ? 1500 : 900, 0);
	}
	pd_writer_finished_round(w);
	struct pte e;
	pte_init(&e, 512);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 1000);
	pte_simple(&e, ppt_psbend);
	for (int i = 0; i < 2; i++) {
		if (i)
			pte_tsc(&e, 2000);
		pte_mode64(&e);
		pte_ip(&e, ppt_tip_pge, pt_ipc_sext_48, X);
		pte_tnt(&e, i ? "N" : "TTN");
		pte_ip(&e, ppt_tip_pgd, pt_ipc_suppressed, 0);	/* the ret leaves the trace */
	}
	per_cpu_finish(w, &e);

	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "blocks", "tid", "200", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "{\"start\":\"0x7f0000200000\",\"end\":\"0x7f0000200007\",\"sym\":"));
	assert_non_null(strstr(out, "\"count\":1,\"insns\":3,\"cycles\":null,\"ipc\":null,\"taken\":0,\"not_taken\":1,"));
	assert_int_equal(xp_test_engine(&out, data, "blocks", "tid", "100", "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out, "\"count\":3,\"insns\":2,\"cycles\":null,\"ipc\":null,\"taken\":2,\"not_taken\":1,"));
}

/* Ten processes take turns on one cpu, twice (more than the images a per-cpu queue
 * keeps, so they are dropped and made again): process k runs spin(k) each turn. */
static void test_per_cpu_many_processes(void **state)
{
	(void)state;
	char spin_path[512];
	uint64_t spin, after;
	spin_syms(spin_path, sizeof(spin_path), &spin, &after);

	uint64_t st;
	struct pd_writer *w = per_cpu_writer(&st);
	for (uint32_t k = 1; k <= 10; k++) {
		uint32_t pid = 100 * k;
		assert_int_equal(ptgen_process(w, (struct ptgen_sid){ st, pid, 0, 1000, 0 }, "spinner",
					       10, 20, PTGEN_BASE, 0x10000, spin_path), 0);
	}
	uint32_t next[2] = { 0, 0 };
	for (uint32_t turn = 0; turn < 20; turn++)
		rec_as(w, PERF_RECORD_SWITCH_CPU_WIDE, 0, next, sizeof(next), st,
		       100 * (turn % 10 + 1), 1000 * turn + 900, 0);
	pd_writer_finished_round(w);
	struct pte e;
	pte_init(&e, 8192);
	pte_simple(&e, ppt_psb);
	pte_tsc(&e, 950);
	pte_simple(&e, ppt_psbend);
	for (uint32_t turn = 0; turn < 20; turn++)
		ptpc_spin(&e, spin, 0, after, 1000 * turn + 1000, (long)(turn % 10) + 1, 0, 0);
	per_cpu_finish(w, &e);

	const char *out;
	assert_int_equal(xp_test_engine(&out, data, "calltree", "per-thread", "", "format", "jsonl", NULL), 0);
	for (int k = 1; k <= 10; k++) {
		char want[96];
		snprintf(want, sizeof(want), "{\"tid\":%d,\"lvl\":2,\"rl\":1,\"calls\":%d,\"base\":%d,", 100 * k,
			 2 * k, 6 * k);
		assert_non_null(strstr(out, want));
	}
	assert_null(strstr(out, "gap"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jitted_loop),
		cmocka_unit_test(test_jit_code_at_the_right_time),
		cmocka_unit_test(test_per_cpu_switches),
		cmocka_unit_test(test_aux_loss_is_a_gap),
		cmocka_unit_test(test_time_shift_out_of_range),
		cmocka_unit_test(test_per_cpu_time_order),
		cmocka_unit_test(test_per_cpu_gap_in_order),
		cmocka_unit_test(test_per_thread_time_order),
		cmocka_unit_test(test_per_cpu_code_per_process),
		cmocka_unit_test(test_per_cpu_many_processes),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
