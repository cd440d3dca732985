/* libFuzzer harness: the record side's parsers of what a user types, each given the
 * input as one string (up to its first NUL):
 *   --probe LIST          rec_probe_parse (src/record/rec_probe_spec.c)
 *   step's --filter SPEC  col_step_filter_parse, then the perf filter string of what it
 *                         parsed and its resolution in a mapping of traces/pt-spin/ptspin
 *                         (src/record/step/col_step_filter.c)
 *   --pt-opts OPTS        x86_pt_opts_parse, then the attr x86_pt_attr builds from
 *                         them on the Skylake fixture's intel_pt PMU (src/record/hw/)
 *   pt's --filter SPEC    x86_pt_filter_parse on that PMU: paths are names in a
 *                         directory of the harness holding `ptspin` (a path with '/'
 *                         is not passed: it could name a FIFO or a terminal, whose
 *                         read would block)
 *   a /proc/PID/maps line xp_maps_parse (src/util/xp_maps.c), which the recorder,
 *                         the step tracer, probes and the vdso lookup read maps with
 *   -e LIST               the syntax xptrace checks itself (rec_events_syntax_ok)
 *                         and perf's generic names (rec_event_generic), name by name
 *                         (src/record/rec_events.c)
 * Every parser either succeeds with a result that holds together or fails with a
 * reason; anything else aborts.  The PMU and the directory are made once.
 *
 * Not here: -e's names past perf's generic ones.  They are libpfm4's to parse
 * (rec_pfm.c only passes them on), and its search of every PMU's event table costs
 * ~100 ms an input. */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "record/hw/x86_pt_attr.h"
#include "record/rec_events.h"
#include "record/rec_probe.h"
#include "record/step/col_step_filter.h"
#include "util/xp_maps.h"

#define PTSPIN_PATH XP_SRCDIR "/traces/pt-spin/ptspin"
#define PT_SYSFS XP_SRCDIR "/tests/fixtures/sysfs/intel-skylake"
#define MAX_RANGES 64

static struct pmu pt;
static char dir[64], link_path[96];

static void cleanup(void)
{
	unlink(link_path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char err[256];
	const char *tmp = getenv("TMPDIR");

	(void)argc;
	(void)argv;
	if (x86_pt_probe(PT_SYSFS, &pt, err, sizeof(err)) < 0) {
		fprintf(stderr, "fuzz_rec_parse: %s\n", err);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s/xpfuzz-rec-%d", tmp && strlen(tmp) < 32 ? tmp : "/tmp", getpid());
	snprintf(link_path, sizeof(link_path), "%s/ptspin", dir);
	if (mkdir(dir, 0700) < 0 || symlink(PTSPIN_PATH, link_path) < 0) {
		perror(link_path);
		return 1;
	}
	atexit(cleanup);
	return 0;
}

static void check_why(int rc, const char *why)
{
	if (rc < 0 && rc != -ENOMEM && !why[0])
		abort();	/* a refusal says why */
}

static void probe_spec(const char *s)
{
	struct rec_probe_item *v;
	char why[256] = "";
	int n = rec_probe_parse(s, &v, why, sizeof(why));

	check_why(n, why);
	for (int i = 0; i < n; i++)
		if (!v[i].sym || !v[i].sym[0] || (v[i].module && !v[i].module[0]))
			abort();
	if (n >= 0)
		rec_probe_items_free(v, n);
}

static void step_filter(const char *s)
{
	struct step_filter *f;
	uint64_t r[MAX_RANGES][2];
	char why[256] = "";
	int n, nr = 0, unnamed, unsayable, rc = col_step_filter_parse(s, &f, &n, why, sizeof(why));

	check_why(rc, why);
	if (rc < 0)
		return;
	free(col_step_filter_perf_string(f, n, PTSPIN_PATH, &unnamed, &unsayable));
	/* the program's text mapping, then a library's named like a filter's module */
	rc = col_step_filter_resolve(f, n, 0x555555555000ull, 0x555555556000ull, 0x1000, PTSPIN_PATH, 1, r,
				     MAX_RANGES, &nr, why, sizeof(why));
	check_why(rc, why);
	for (int i = 0; i < nr; i++)
		if (r[i][0] > r[i][1])
			abort();
	col_step_filter_free(f, n);
}

static void pt_opts(const char *s)
{
	struct x86_pt_cfg c;
	struct perf_event_attr a;
	char err[256] = "";
	int rc;

	x86_pt_cfg_init(&c);
	rc = x86_pt_opts_parse(s, &c, err, sizeof(err));
	check_why(rc, err);
	if (rc == 0) {
		err[0] = 0;
		check_why(x86_pt_attr(&pt, &c, &a, err, sizeof(err)), err);
	}
}

/* The spec with every path (after '@', to the next ',') put in the harness's
 * directory; NULL when a path holds '/'. */
static char *pt_filter_spec(const char *s)
{
	size_t n = strlen(s), at = 0, cap = 0;
	char *out;

	for (const char *p = s; *p; p++)
		at += *p == '@';
	cap = n + at * (strlen(dir) + 1) + 1;
	if (!(out = malloc(cap)))
		return NULL;
	char *o = out;
	for (const char *p = s; *p;) {
		if (*p != '@') {
			*o++ = *p++;
			continue;
		}
		size_t len = strcspn(p + 1, ",");
		if (memchr(p + 1, '/', len)) {
			free(out);
			return NULL;
		}
		*o++ = *p++;
		while (*p == ' ' || *p == '\t')
			*o++ = *p++;
		o += sprintf(o, "%s/", dir);
	}
	*o = 0;
	return out;
}

static void pt_filter(const char *s)
{
	struct x86_pt_cfg c;
	char err[256] = "", *spec = pt_filter_spec(s);

	if (!spec)
		return;
	x86_pt_cfg_init(&c);
	check_why(x86_pt_filter_parse(&pt, spec, &c, err, sizeof(err)), err);
	if (strlen(c.filter) >= sizeof(c.filter))
		abort();
	free(spec);
}

/* A mapping parsed holds together: the path is the tail of the line. */
static void maps_line(const char *s)
{
	struct xp_maps_line m;
	char *line = strdup(s);

	if (!line)
		return;
	if (xp_maps_parse(line, &m) == 0 &&
	    (m.end < m.start || strlen(m.perms) != 4 || m.path < line || m.path > line + strlen(line) ||
	     strchr(m.path, '\n') || (m.path[0] == ' ')))
		abort();
	free(line);
}

/* The list is accepted exactly when no field between commas is empty; each name is
 * generic or not, a generic one a hardware or software counter. */
static void events(const char *s)
{
	size_t n = strlen(s), field = 0;
	int empty = n == 0;
	char *copy = strdup(s), *save, *tok;

	for (size_t i = 0; i <= n; i++) {
		if (i == n || s[i] == ',') {
			empty |= field == 0;
			field = 0;
		} else {
			field++;
		}
	}
	if (rec_events_syntax_ok(s) == (bool)empty)
		abort();
	if (!copy)
		return;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct perf_event_attr a;

		if (rec_event_generic(tok, &a) == 0 &&
		    ((a.type != PERF_TYPE_HARDWARE && a.type != PERF_TYPE_SOFTWARE) || a.size || a.sample_period))
			abort();
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = strndup((const char *)data, size);

	if (!s)
		return 0;
	probe_spec(s);
	step_filter(s);
	pt_opts(s);
	pt_filter(s);
	maps_line(s);
	events(s);
	free(s);
	return 0;
}
