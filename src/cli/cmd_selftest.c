/* xptrace selftest: records the workloads built into xptrace (selftest_work.c) in every
 * mode this machine has, decodes them, and checks the results against what the
 * workloads are known to do and against perf on the same files; modes the machine
 * lacks are skipped with info's reason.  One line per check, a report to attach to a
 * bug, exit 1 when a check fails or none ran. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <intel-pt.h>
#include <capstone/capstone.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/selftest.h"
#include "cli/xp_cli.h"
#include "output/out.h"
#include "probe/probe.h"
#include "util/xp_err.h"
#include "util/xp_map.h"

static const char usage[] =
	"usage: xptrace selftest [--mode LIST] [--format text|jsonl] [-o REPORT] [--keep DIR]\n"
	"                        [--xptrace PATH]\n"
	"\n"
	"Checks xptrace on this machine: records the workloads built into xptrace (a loop\n"
	"of known trip count, recursion of known calls, an indirect call table, a\n"
	"shared-library call, two threads; and a 3:1 split of CPU time) in every mode the\n"
	"machine has (pt, lbr, sample, step: what `xptrace info` says), decodes them and\n"
	"checks:\n"
	"  exact modes (pt, step): the instruction stream equals the one of\n"
	"    `perf script --itrace=i0ns` on the same perf.data, thread by thread; the call\n"
	"    counts equal the known ones; traces recorded by perf itself\n"
	"    (`perf record -e intel_pt//u`) give the same counts;\n"
	"  lbr: the workload's loop is among the hottest functions;\n"
	"  sample: the 3:1 split within sampling error, percentages equal to `perf report`\n"
	"    on the same file; a `perf record` trace of the workload decodes the same.\n"
	"Modes this machine lacks are SKIPped with the reason.  One line per check (PASS,\n"
	"FAIL, SKIP), then the machine facts and versions; exit 1 if any check fails\n"
	"or none ran (every check skipped: nothing tested).\n"
	"On a machine with Intel PT or LBR, please run it and send the report.\n"
	"\n"
	"options:\n"
	"  --mode LIST            only these modes (comma separated: pt, lbr, sample, step;\n"
	"                         default all)\n"
	"  --format jsonl         JSON lines: a machine line, one line per check, a summary\n"
	"  --json                 the same as --format jsonl\n"
	"  -o, --output REPORT    write the report to REPORT instead of stdout\n"
	"  --keep DIR             record the traces under DIR and keep them (default: a\n"
	"                         temporary directory, removed)\n"
	"  --xptrace PATH         the xptrace whose record and decode are checked (default:\n"
	"                         this one; the workloads are always this binary's)\n"
	"  --workload NAME        run workload NAME (exact, split) and exit: what the\n"
	"                         recordings run\n";

enum st_status { ST_PASS, ST_FAIL, ST_SKIP };
static const char *const status_name[] = { "PASS", "FAIL", "SKIP" };

struct st {
	const char *xptrace;	/* checked binary */
	char self[PATH_MAX];	/* the workloads' binary */
	char dir[1024];		/* traces */
	bool keep, json, have_perf;
	unsigned modes;		/* 1 << PROBE_MODE_*: the modes to check */
	FILE *out;
	unsigned n[3];
	struct out_buf jb;
};

static void report(struct st *s, const char *mode, const char *check, enum st_status st,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void report(struct st *s, const char *mode, const char *check, enum st_status st,
		   const char *fmt, ...)
{
	char detail[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	s->n[st]++;
	if (!s->json) {
		fprintf(s->out, "%-4s  %-6s  %-22s  %s\n", status_name[st], mode, check, detail);
		return;
	}
	s->jb.len = 0;
	out_json_begin(&s->jb);
	out_json_string(&s->jb, "type", "check");
	out_json_string(&s->jb, "mode", mode);
	out_json_string(&s->jb, "check", check);
	out_json_string(&s->jb, "status", status_name[st]);
	out_json_string(&s->jb, "detail", detail);
	out_json_end(&s->jb);
	out_buf_write(&s->jb, s->out);
}

/* Runs argv with stdout to `out` and stderr to `err` (NULL: /dev/null); its exit
 * status, 128 + signal when killed, -errno when it could not run. */
static int run(char *const argv[], const char *out, const char *err)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		int o = open(out ? out : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		int e = open(err ? err : "/dev/null", O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
			_exit(127);
		execvp(argv[0], argv);
		_exit(127);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + WTERMSIG(ws);
}

/* The first line of a file (an error message), for reports. */
static const char *first_line(const char *path, char *buf, size_t n)
{
	FILE *f = fopen(path, "r");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, (int)n, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
	return buf;
}

static void path_in(const struct st *s, char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", s->dir, name);
}

/* The raw value of "key": in a flat JSON object line (strings without escapes, as
 * function names and addresses are), into buf; false when absent. */
static bool json_val(const char *line, const char *key, char *buf, size_t n)
{
	char pat[64];
	snprintf(pat, sizeof(pat), "\"%s\":", key);
	const char *p = strstr(line, pat);
	if (!p)
		return false;
	p += strlen(pat);
	bool str = *p == '"';
	p += str;
	size_t k = 0;
	while (*p && k + 1 < n && (str ? *p != '"' : *p != ',' && *p != '}'))
		buf[k++] = *p++;
	buf[k] = 0;
	return true;
}

/* ---- per function figures from `decode --functions --format jsonl` ---- */

struct fnrow {
	char name[128];
	uint64_t calls, samples;
	double base_pct;
};

struct fntab {
	struct fnrow *r;
	size_t n;
};

static int read_functions(const char *path, struct fntab *t)
{
	FILE *f = fopen(path, "r");
	char line[4096], v[128];

	t->r = NULL;
	t->n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		struct fnrow r = { 0 };
		if (!json_val(line, "name", r.name, sizeof(r.name)))
			continue;
		if (json_val(line, "calls", v, sizeof(v)))
			r.calls = strtoull(v, NULL, 10);
		if (json_val(line, "samples", v, sizeof(v)))
			r.samples = strtoull(v, NULL, 10);
		if (json_val(line, "base%", v, sizeof(v)))
			r.base_pct = strtod(v, NULL);
		struct fnrow *nr = realloc(t->r, (t->n + 1) * sizeof(*nr));
		if (!nr) {
			fclose(f);
			return -ENOMEM;
		}
		t->r = nr;
		t->r[t->n++] = r;
	}
	fclose(f);
	return 0;
}

/* `name`, or for a library function also its aliases as the library's symbols give
 * them (getppid is __getppid and __GI___getppid in glibc; getppid@plt is the PLT
 * entry, a caller). */
static bool name_is(const char *sym, const char *name, bool library)
{
	if (!strcmp(sym, name))
		return true;
	if (!library)
		return false;
	if (!strncmp(sym, "__GI_", 5))
		sym += 5;
	while (*sym == '_')
		sym++;
	return !strcmp(sym, name);
}

static const struct fnrow *fn_find_lib(const struct fntab *t, const char *name, bool library)
{
	for (size_t i = 0; i < t->n; i++)
		if (name_is(t->r[i].name, name, library))
			return &t->r[i];
	return NULL;
}

static const struct fnrow *fn_find(const struct fntab *t, const char *name)
{
	return fn_find_lib(t, name, false);
}

/* ---- the exact checks: instruction stream against perf script, call counts ---- */

/* Per thread: instruction count and a hash of the ip sequence. */
struct tstream {
	struct xp_map count, hash;	/* tid -> count, tid -> FNV-1a of the ips */
};

static void stream_add(struct tstream *t, uint64_t tid, uint64_t ip)
{
	uint64_t c = 0, h = 0xcbf29ce484222325ULL;
	xp_map_get(&t->count, tid, &c);
	xp_map_get(&t->hash, tid, &h);
	for (int i = 0; i < 8; i++)
		h = (h ^ ((ip >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
	xp_map_put(&t->count, tid, c + 1);
	xp_map_put(&t->hash, tid, h);
}

static void stream_free(struct tstream *t)
{
	xp_map_free(&t->count);
	xp_map_free(&t->hash);
}

static int xptrace_stream(const char *path, struct tstream *t)
{
	FILE *f = fopen(path, "r");
	char line[1024], tid[32], ip[32];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (json_val(line, "ip", ip, sizeof(ip)) && json_val(line, "tid", tid, sizeof(tid)))
			stream_add(t, strtoull(tid, NULL, 10), strtoull(ip, NULL, 16));
	fclose(f);
	return 0;
}

static int perf_stream(const char *path, struct tstream *t)
{
	FILE *f = fopen(path, "r");
	unsigned long long tid, ip;
	char line[256];

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llu %llx", &tid, &ip) == 2)
			stream_add(t, tid, ip);
	fclose(f);
	return 0;
}

/* Whether the two streams are equal thread by thread; the totals for the report. */
static bool streams_equal(const struct tstream *a, const struct tstream *b, uint64_t *insns,
			  size_t *threads)
{
	size_t it = 0;
	uint64_t tid, c, c2, h, h2;
	bool same = xp_map_count(&a->count) == xp_map_count(&b->count);

	*insns = 0;
	*threads = xp_map_count(&a->count);
	while (xp_map_next(&a->count, &it, &tid, &c)) {
		*insns += c;
		xp_map_get(&a->hash, tid, &h);
		if (!xp_map_get(&b->count, tid, &c2) || c2 != c || !xp_map_get(&b->hash, tid, &h2) || h2 != h)
			same = false;
	}
	return same;
}

/* Equal both ways, with both totals whatever the answer. */
static bool streams_same(const struct tstream *a, const struct tstream *b, uint64_t *na, size_t *ta,
			 uint64_t *nb, size_t *tb)
{
	bool ab = streams_equal(a, b, na, ta);
	bool ba = streams_equal(b, a, nb, tb);
	return ab && ba;
}

static void check_stream(struct st *s, const char *mode, const char *trace)
{
	char xp[PATH_MAX], pf[PATH_MAX], data[PATH_MAX + 16], err[PATH_MAX], msg[256];
	struct tstream a = { 0 }, b = { 0 };

	if (!s->have_perf) {
		report(s, mode, "insn-stream", ST_SKIP, "perf is not installed (Debian: linux-perf)");
		return;
	}
	path_in(s, xp, sizeof(xp), "insn.jsonl");
	path_in(s, pf, sizeof(pf), "insn.perf");
	path_in(s, err, sizeof(err), "insn.err");
	char *dec[] = { (char *)s->xptrace, "decode", "-i", (char *)trace, "--insn", "--format", "jsonl", NULL };
	int rc = run(dec, xp, err);
	if (rc) {
		report(s, mode, "insn-stream", ST_FAIL, "xptrace decode --insn exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return;
	}
	snprintf(data, sizeof(data), "%s/perf.data", trace);
	char *ps[] = { "perf", "script", "-i", data, "--itrace=i0ns", "-F", "tid,ip", NULL };
	rc = run(ps, pf, NULL);
	if (rc) {
		report(s, mode, "insn-stream", ST_FAIL, "perf script --itrace=i0ns exited %d", rc);
		return;
	}
	uint64_t na = 0, nb = 0;	/* both comparisons run: the report gives both totals */
	size_t ta = 0, tb = 0;
	if (xptrace_stream(xp, &a) < 0 || perf_stream(pf, &b) < 0) {
		report(s, mode, "insn-stream", ST_FAIL, "cannot read the decoded streams");
	} else if (streams_same(&a, &b, &na, &ta, &nb, &tb) && na) {
		report(s, mode, "insn-stream", ST_PASS,
		       "%" PRIu64 " instructions in %zu threads, identical to perf script --itrace=i0ns", na, ta);
	} else {
		report(s, mode, "insn-stream", ST_FAIL,
		       "xptrace decoded %" PRIu64 " instructions in %zu threads, perf script %" PRIu64
		       " in %zu; the sequences differ", na, ta, nb, tb);
	}
	stream_free(&a);
	stream_free(&b);
}

static void check_calls(struct st *s, const char *mode, const char *check, const char *trace)
{
	static const struct { const char *fn; bool library; uint64_t calls; } want[] = {
		{ "st_tick", false, ST_LOOP_TRIPS },
		{ "st_fib", false, ST_FIB_CALLS },
		{ "st_ind_a", false, ST_IND_CALLS },
		{ "st_ind_b", false, ST_IND_CALLS },
		{ "st_ind_c", false, ST_IND_CALLS },
		{ "getppid", true, ST_LIB_CALLS },
		{ "st_leaf", false, ST_LEAF_CALLS },
	};
	char fns[PATH_MAX], err[PATH_MAX], msg[256], bad[384] = "";
	struct fntab t;

	path_in(s, fns, sizeof(fns), "functions.jsonl");
	path_in(s, err, sizeof(err), "functions.err");
	char *dec[] = { (char *)s->xptrace, "decode", "-i", (char *)trace, "--functions", "--format", "jsonl", NULL };
	int rc = run(dec, fns, err);
	if (rc) {
		report(s, mode, check, ST_FAIL, "xptrace decode --functions exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return;
	}
	if (read_functions(fns, &t) < 0) {
		report(s, mode, check, ST_FAIL, "cannot read the decoded functions");
		return;
	}
	for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++) {
		const struct fnrow *r = fn_find_lib(&t, want[i].fn, want[i].library);
		uint64_t got = r ? r->calls : 0;
		if (got != want[i].calls)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s %" PRIu64 " (expected %" PRIu64 ")",
				 *bad ? ", " : "", want[i].fn, got, want[i].calls);
	}
	free(t.r);
	if (*bad)
		report(s, mode, check, ST_FAIL, "calls: %s", bad);
	else
		report(s, mode, check, ST_PASS, "loop %d trips, fib(%d) %d calls, 3 x %d indirect, %d getppid, "
		       "2 threads x %d: every count exact", ST_LOOP_TRIPS, ST_FIB_N, ST_FIB_CALLS, ST_IND_CALLS,
		       ST_LIB_CALLS, ST_LEAF_CALLS / 2);
}

/* Records workload `work` with `xptrace record ARGS... -o TRACE -- SELF selftest
 * --workload WORK`; false (reported) when that fails. */
static bool record(struct st *s, const char *mode, const char *check, char *const *args, int nargs,
		   const char *trace, const char *work)
{
	char err[PATH_MAX], msg[256];
	char *argv[24];
	int n = 0;

	argv[n++] = (char *)s->xptrace;
	argv[n++] = "record";
	argv[n++] = "-q";
	for (int i = 0; i < nargs; i++)
		argv[n++] = args[i];
	argv[n++] = "-o";
	argv[n++] = (char *)trace;
	argv[n++] = "--";
	argv[n++] = s->self;
	argv[n++] = "selftest";
	argv[n++] = "--workload";
	argv[n++] = (char *)work;
	argv[n] = NULL;
	path_in(s, err, sizeof(err), "record.err");
	int rc = run(argv, NULL, err);
	if (rc)
		report(s, mode, check, ST_FAIL, "xptrace record exited %d: %s", rc, first_line(err, msg, sizeof(msg)));
	return rc == 0;
}

static void exact_mode(struct st *s, const char *mode)
{
	char trace[PATH_MAX];
	char *args[] = { "--mode", (char *)mode };

	snprintf(trace, sizeof(trace), "%s/%s-exact", s->dir, mode);
	if (!record(s, mode, "record", args, 2, trace, "exact"))
		return;
	check_stream(s, mode, trace);
	check_calls(s, mode, "calls", trace);
}

/* perf's own Intel PT recording of the same workload, decoded by xptrace. */
static void perf_pt(struct st *s)
{
	char trace[PATH_MAX], data[PATH_MAX + 16], err[PATH_MAX], msg[256];

	if (!s->have_perf) {
		report(s, "pt", "perf-recorded", ST_SKIP, "perf is not installed");
		return;
	}
	snprintf(trace, sizeof(trace), "%s/perf-pt", s->dir);
	snprintf(data, sizeof(data), "%s/perf.data", trace);
	path_in(s, err, sizeof(err), "perf-record.err");
	mkdir(trace, 0755);
	char *argv[] = { "perf", "record", "-q", "-e", "intel_pt//u", "-o", data, "--", s->self,
			 "selftest", "--workload", "exact", NULL };
	int rc = run(argv, NULL, err);
	if (rc) {
		report(s, "pt", "perf-recorded", ST_FAIL, "perf record -e intel_pt//u exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return;
	}
	check_calls(s, "pt", "perf-recorded calls", data);
}

static void lbr_mode(struct st *s)
{
	char trace[PATH_MAX], fns[PATH_MAX], err[PATH_MAX], msg[256];
	char *args[] = { "--mode", "lbr" };
	struct fntab t;

	snprintf(trace, sizeof(trace), "%s/lbr-exact", s->dir);
	if (!record(s, "lbr", "record", args, 2, trace, "split"))
		return;
	path_in(s, fns, sizeof(fns), "lbr.jsonl");
	path_in(s, err, sizeof(err), "lbr.err");
	char *dec[] = { (char *)s->xptrace, "decode", "-i", trace, "--functions", "--format", "jsonl", NULL };
	int rc = run(dec, fns, err);
	if (rc || read_functions(fns, &t) < 0) {
		report(s, "lbr", "hot-loop", ST_FAIL, "xptrace decode --functions exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return;
	}
	bool first = t.n && !strcmp(t.r[0].name, "st_heavy");
	report(s, "lbr", "hot-loop", first ? ST_PASS : ST_FAIL, "hottest function %s (expected st_heavy)",
	       t.n ? t.r[0].name : "none");
	free(t.r);
}

/* ---- sampling: the 3:1 split ---- */

/* st_heavy's share of the two split functions against 3/4, within 4 sigma of the
 * binomial error of their sample count (plus 2 points for the loops' entry costs). */
static void check_split(struct st *s, const char *check, const struct fntab *t)
{
	const struct fnrow *h = fn_find(t, "st_heavy"), *l = fn_find(t, "st_light");
	uint64_t n = (h ? h->samples : 0) + (l ? l->samples : 0);

	if (n < 50) {
		report(s, "sample", check, ST_FAIL, "%" PRIu64 " samples in st_heavy and st_light (expected hundreds)", n);
		return;
	}
	double p = 100.0 * (double)h->samples / (double)n, tol = 400 * sqrt(0.75 * 0.25 / (double)n) + 2;
	report(s, "sample", check, fabs(p - 75) <= tol ? ST_PASS : ST_FAIL,
	       "st_heavy %.1f %% of the split (expected 75 +- %.1f: 4 sigma of %" PRIu64 " samples)", p, tol, n);
}

/* Base% of st_heavy and st_light against `perf report --no-children` on the same file. */
static void check_perf_report(struct st *s, const char *check, const char *data, const struct fntab *t)
{
	char rep[PATH_MAX], line[512], bad[256] = "";
	int found = 0;

	if (!s->have_perf) {
		report(s, "sample", check, ST_SKIP, "perf is not installed");
		return;
	}
	path_in(s, rep, sizeof(rep), "report.txt");
	char *argv[] = { "perf", "report", "-i", (char *)data, "--stdio", "--no-children", "--sort", "sym",
			 "-g", "none", NULL };
	int rc = run(argv, rep, NULL);
	FILE *f = rc ? NULL : fopen(rep, "r");
	if (!f) {
		report(s, "sample", check, ST_FAIL, "perf report exited %d", rc);
		return;
	}
	while (fgets(line, sizeof(line), f)) {
		double pct;
		char sym[128];
		if (sscanf(line, " %lf%% [.] %127s", &pct, sym) != 2 ||
		    (strcmp(sym, "st_heavy") && strcmp(sym, "st_light")))
			continue;
		const struct fnrow *r = fn_find(t, sym);
		found++;
		if (!r || fabs(r->base_pct - pct) > 0.006)
			snprintf(bad + strlen(bad), sizeof(bad) - strlen(bad), "%s%s xptrace %.2f %% perf %.2f %%",
				 *bad ? ", " : "", sym, r ? r->base_pct : 0, pct);
	}
	fclose(f);
	if (found != 2)
		report(s, "sample", check, ST_FAIL, "perf report does not list st_heavy and st_light");
	else if (*bad)
		report(s, "sample", check, ST_FAIL, "%s", bad);
	else
		report(s, "sample", check, ST_PASS, "st_heavy and st_light: the same percentages as perf report");
}

static bool decode_functions(struct st *s, const char *mode, const char *check, const char *trace,
			     struct fntab *t)
{
	char fns[PATH_MAX], err[PATH_MAX], msg[256];

	path_in(s, fns, sizeof(fns), "split.jsonl");
	path_in(s, err, sizeof(err), "split.err");
	char *dec[] = { (char *)s->xptrace, "decode", "-i", (char *)trace, "--functions", "--format", "jsonl", NULL };
	int rc = run(dec, fns, err);
	if (rc || read_functions(fns, t) < 0) {
		report(s, mode, check, ST_FAIL, "xptrace decode --functions exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return false;
	}
	return true;
}

static void sample_mode(struct st *s)
{
	char trace[PATH_MAX], data[PATH_MAX + 16], err[PATH_MAX], msg[256];
	char *args[] = { "--mode", "sample", "-F", "999" };
	struct fntab t;

	snprintf(trace, sizeof(trace), "%s/sample-split", s->dir);
	if (record(s, "sample", "record", args, 4, trace, "split") &&
	    decode_functions(s, "sample", "split", trace, &t)) {
		snprintf(data, sizeof(data), "%s/perf.data", trace);
		check_split(s, "split", &t);
		check_perf_report(s, "perf-report", data, &t);
		free(t.r);
	}
	if (!s->have_perf) {
		report(s, "sample", "perf-recorded", ST_SKIP, "perf is not installed");
		return;
	}
	snprintf(data, sizeof(data), "%s/perf-sample.data", s->dir);
	path_in(s, err, sizeof(err), "perf-record.err");
	char *argv[] = { "perf", "record", "-q", "-F", "999", "-o", data, "--", s->self, "selftest",
			 "--workload", "split", NULL };
	int rc = run(argv, NULL, err);
	if (rc) {
		report(s, "sample", "perf-recorded", ST_FAIL, "perf record exited %d: %s", rc,
		       first_line(err, msg, sizeof(msg)));
		return;
	}
	if (!decode_functions(s, "sample", "perf-recorded", data, &t))
		return;
	check_split(s, "perf-recorded split", &t);
	check_perf_report(s, "perf-recorded report", data, &t);
	free(t.r);
}

/* ---- the report's facts ---- */

static void perf_version(char *buf, size_t n)
{
	FILE *p = popen("perf version 2>/dev/null", "r");
	buf[0] = 0;
	if (p) {
		if (fgets(buf, (int)n, p))
			buf[strcspn(buf, "\n")] = 0;
		pclose(p);
	}
}

static void facts(struct st *s, const struct probe_conclusion *c)
{
	struct utsname u;
	char perf[128], ipt[64], cs[32];
	struct pt_version v = pt_library_version();
	int maj, min;

	uname(&u);
	perf_version(perf, sizeof(perf));
	snprintf(ipt, sizeof(ipt), "%u.%u.%u", v.major, v.minor, v.patch);
	cs_version(&maj, &min);
	snprintf(cs, sizeof(cs), "%d.%d", maj, min);
	if (s->json) {
		s->jb.len = 0;
		out_json_begin(&s->jb);
		out_json_string(&s->jb, "type", "machine");
		out_json_string(&s->jb, "xptrace", XP_VERSION);
		out_json_string(&s->jb, "kernel", u.release);
		out_json_string(&s->jb, "arch", u.machine);
		out_json_string(&s->jb, "perf", *perf ? perf : NULL);
		out_json_string(&s->jb, "libipt", ipt);
		out_json_string(&s->jb, "capstone", cs);
		for (int i = 0; i < PROBE_NMODES; i++)
			out_json_bool(&s->jb, c->mode[i].name, c->mode[i].available);
		out_json_end(&s->jb);
		out_buf_write(&s->jb, s->out);
		return;
	}
	fprintf(s->out, "\nmachine: %s, kernel %s; xptrace %s, %s, libipt %s, capstone %s\n", u.machine,
		u.release, XP_VERSION, *perf ? perf : "perf not installed", ipt, cs);
	for (int i = 0; i < PROBE_NMODES; i++)
		fprintf(s->out, "  %-6s %s%s%s\n", c->mode[i].name, c->mode[i].available ? "available" : "unavailable",
			c->mode[i].available ? "" : ": ", c->mode[i].available ? "" : c->mode[i].reason);
}

static int parse_args(int argc, char **argv, struct st *s, const char **output, const char **workload)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool takes = !strcmp(a, "-o") || !strcmp(a, "--output") || !strcmp(a, "--keep") ||
			!strcmp(a, "--xptrace") || !strcmp(a, "--workload") || !strcmp(a, "--mode") ||
			!strcmp(a, "--format");
		if (takes && i + 1 >= argc)
			return xp_usage_error("selftest", "option '%s' needs an argument", a);
		if (!strcmp(a, "--json"))
			s->json = true;
		else if (!strcmp(a, "--format")) {
			enum out_format f;
			if (out_format_parse(argv[++i], &f) < 0 || !((1u << f) & xp_cmd_selftest.formats))
				return xp_usage_error("selftest", "--format %s: expected text or jsonl", argv[i]);
			s->json = f == OUT_JSONL;
		} else if (!strcmp(a, "-o") || !strcmp(a, "--output"))
			*output = argv[++i];
		else if (!strcmp(a, "--keep")) {
			s->keep = true;
			if (strlen(argv[++i]) >= sizeof(s->dir))
				return xp_usage_error("selftest", "--keep: the directory name is too long");
			snprintf(s->dir, sizeof(s->dir), "%s", argv[i]);
		} else if (!strcmp(a, "--xptrace"))
			s->xptrace = argv[++i];
		else if (!strcmp(a, "--workload"))
			*workload = argv[++i];
		else if (!strcmp(a, "--mode")) {
			char list[64], *save = NULL;
			snprintf(list, sizeof(list), "%s", argv[++i]);
			s->modes = 0;
			for (char *m = strtok_r(list, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
				int k = !strcmp(m, "pt") ? PROBE_MODE_PT : !strcmp(m, "lbr") ? PROBE_MODE_LBR :
					!strcmp(m, "sample") ? PROBE_MODE_SAMPLE : !strcmp(m, "step") ? PROBE_MODE_STEP : -1;
				if (k < 0)
					return xp_usage_error("selftest", "--mode %s: expected pt, lbr, sample, step", m);
				s->modes |= 1u << k;
			}
			if (!s->modes)
				return xp_usage_error("selftest", "--mode: no mode given");
		}
		else
			return xp_usage_error("selftest", "unknown option or argument '%s'", a);
	}
	return 0;
}

static void remove_tree(const char *dir)
{
	char *argv[] = { "rm", "-rf", (char *)dir, NULL };
	run(argv, NULL, NULL);
}

static int selftest(int argc, char **argv)
{
	struct st s = { .out = stdout, .modes = (1u << PROBE_NMODES) - 1 };
	const char *output = NULL, *workload = NULL;
	struct probe_conclusion c;
	int rc = parse_args(argc, argv, &s, &output, &workload);

	if (rc)
		return rc;
	if (workload) {
		if (st_workload(workload) < 0)
			return xp_usage_error("selftest", "--workload %s: expected exact or split", workload);
		return XP_EXIT_OK;
	}
	ssize_t n = readlink("/proc/self/exe", s.self, sizeof(s.self) - 1);
	if (n <= 0)
		return xp_err("selftest", NULL, "cannot find this program (/proc/self/exe): %s", strerror(errno)),
		       XP_EXIT_RUNTIME;
	s.self[n] = 0;
	if (!s.xptrace)
		s.xptrace = s.self;
	if (s.keep ? mkdir(s.dir, 0755) < 0 && errno != EEXIST :
	    !mkdtemp(strcpy(s.dir, "/tmp/xptrace-selftest.XXXXXX")))
		return xp_err(s.dir, "give another --keep DIR", "cannot create: %s", strerror(errno)), XP_EXIT_RUNTIME;
	if (output && !(s.out = fopen(output, "w"))) {
		xp_err(output, NULL, "cannot write: %s", strerror(errno));
		s.out = stdout;
		rc = XP_EXIT_RUNTIME;
		goto out;
	}
	char *pv[] = { "perf", "version", NULL };
	s.have_perf = run(pv, NULL, NULL) == 0;
	out_buf_init(&s.jb, NULL, 0);
	probe_machine(NULL, NULL, NULL, &c, 0);
	for (int m = 0; m < PROBE_NMODES; m++) {
		const struct probe_mode *pm = &c.mode[m];
		if (!(s.modes & (1u << m)))
			continue;
		if (!pm->available) {
			report(&s, pm->name, "mode", ST_SKIP, "%s%s%s", pm->reason, pm->instead ? "; use " : "",
			       pm->instead ? pm->instead : "");
			continue;
		}
		if (m == PROBE_MODE_PT) {
			exact_mode(&s, "pt");
			perf_pt(&s);
		} else if (m == PROBE_MODE_LBR) {
			lbr_mode(&s);
		} else if (m == PROBE_MODE_SAMPLE) {
			sample_mode(&s);
		} else {
			exact_mode(&s, "step");
		}
	}
	facts(&s, &c);
	if (s.json) {
		s.jb.len = 0;
		out_json_begin(&s.jb);
		out_json_string(&s.jb, "type", "summary");
		out_json_u64(&s.jb, "passed", s.n[ST_PASS]);
		out_json_u64(&s.jb, "failed", s.n[ST_FAIL]);
		out_json_u64(&s.jb, "skipped", s.n[ST_SKIP]);
		out_json_end(&s.jb);
		out_buf_write(&s.jb, s.out);
	} else {
		fprintf(s.out, "\nselftest: %u passed, %u failed, %u skipped%s%s\n", s.n[ST_PASS], s.n[ST_FAIL],
			s.n[ST_SKIP], s.keep ? "; traces in " : "", s.keep ? s.dir : "");
	}
	out_buf_free(&s.jb);
	rc = s.n[ST_FAIL] ? XP_EXIT_RUNTIME : XP_EXIT_OK;
	/* every check skipped (--mode pt without PT) tested nothing: not a pass */
	if (!s.n[ST_PASS] && !s.n[ST_FAIL]) {
		xp_err("selftest", "run it where the mode exists, or without --mode",
		       "nothing was tested: every check was skipped");
		rc = XP_EXIT_RUNTIME;
	}
	if (fflush(s.out) || ferror(s.out)) {
		xp_err(output ? output : "stdout", NULL, "write failed: %s", strerror(errno));
		rc = XP_EXIT_RUNTIME;
	}
out:
	if (s.out != stdout)
		fclose(s.out);
	if (!s.keep)
		remove_tree(s.dir);
	return rc;
}

const struct xp_cmd xp_cmd_selftest = {
	.name = "selftest",
	.summary = "check xptrace on this machine's modes against perf (a report for bugs)",
	.formats = OUT_TEXT_JSONL,
	.usage = usage,
	.run = selftest,
	.modes = XP_CMD_MODES,
};
