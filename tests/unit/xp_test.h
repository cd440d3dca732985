/* Everything a cmocka unit test needs, in the order cmocka requires, and the helpers
 * tests share: a temporary directory per test binary, and decoding through the engine
 * in this process (so that the ASan build checks the decoders and views too). */
#ifndef XP_TEST_H
#define XP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/xp_err.h"

/* Absolute paths baked in by the Makefile, so tests run from any directory. */
#define XP_FIXTURE(rel) XP_SRCDIR "/tests/fixtures/" rel

/* A macro's value as a string literal. */
#define XP_TEST_STR_(x) #x
#define XP_TEST_STR(x) XP_TEST_STR_(x)

/* The xptrace binary of the build this test belongs to: the plain build links
 * ./xptrace at the top of the tree, the others (ASan) BUILD/xptrace.  For tests of the
 * command line itself (xptrace record, exit codes); decoding goes through
 * xp_test_engine(). */
static inline const char *xp_test_xptrace(void)
{
	static char path[4096];
	const char *b = XP_BUILDDIR;
	size_t n = strlen(b);
	if (n >= 6 && strcmp(b + n - 6, "/build") == 0)
		snprintf(path, sizeof(path), "%s/xptrace", XP_SRCDIR);
	else
		snprintf(path, sizeof(path), "%s/xptrace", b);
	return path;
}

/* --- the test's temporary directory --- */

/* (a short path: test files' paths made from it fit in a kilobyte) */
#define XP_TEST_TMP_MAX 512

static inline char *xp_test_tmp_buf(void)
{
	static char dir[XP_TEST_TMP_MAX];
	return dir;
}

/* The directory xp_test_tmp_setup() made: $TMPDIR (default /tmp)/xptrace-NAME.XXXXXX,
 * NAME the test's source file (test_jit for tests/unit/test_jit.c). */
static inline const char *xp_test_tmp(void)
{
	return xp_test_tmp_buf();
}

/* cmocka setup: makes xp_test_tmp().  0 or -1. */
static inline int xp_test_tmp_setup(void **state)
{
	const char *t = getenv("TMPDIR"), *src = __BASE_FILE__, *base = strrchr(src, '/');
	char *dir = xp_test_tmp_buf();

	(void)state;
	base = base ? base + 1 : src;
	int n = snprintf(dir, XP_TEST_TMP_MAX, "%s/xptrace-%.*s.XXXXXX", t && *t ? t : "/tmp",
			 (int)strcspn(base, "."), base);
	if (n < 0 || n >= XP_TEST_TMP_MAX || !mkdtemp(dir)) {
		fprintf(stderr, "%s: cannot make a temporary directory %s: %s\n", base, dir, strerror(errno));
		dir[0] = 0;
		return -1;
	}
	return 0;
}

static inline int xp_test_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 || errno == ENOENT ? 0 : -1;
}

/* Removes dir and all it holds (symlinks are removed, not followed).  0 or -1. */
static inline int xp_test_rmtree(const char *dir)
{
	return nftw(dir, xp_test_rm_one, 16, FTW_DEPTH | FTW_PHYS) == 0 ? 0 : -1;
}

/* cmocka teardown: removes xp_test_tmp() with all it holds.  0 or -1. */
static inline int xp_test_tmp_teardown(void **state)
{
	char *dir = xp_test_tmp_buf();
	int rc = dir[0] ? xp_test_rmtree(dir) : 0;

	(void)state;
	dir[0] = 0;
	return rc;
}

/* buf (size n): the path of NAME inside xp_test_tmp().  0, -1 when it does not fit. */
static inline int xp_test_path(char *buf, size_t n, const char *name)
{
	int l = snprintf(buf, n, "%s/%s", xp_test_tmp(), name);
	return l > 0 && (size_t)l < n ? 0 : -1;
}

/* --- decoding in this process --- */

struct xp_test_buf {
	char *p;
	size_t len, cap;
};

static inline void xp_test_buf_add(struct xp_test_buf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (b->len + n + 1 > cap)
			cap *= 2;
		char *p = realloc(b->p, cap);
		assert_non_null(p);
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

static inline struct xp_test_buf *xp_test_msgs_buf(void)
{
	static struct xp_test_buf msgs;
	return &msgs;
}

static inline void xp_test_msg_sink(const char *line, void *ctx)
{
	struct xp_test_buf *b = ctx;
	xp_test_buf_add(b, line, strlen(line));
	xp_test_buf_add(b, "\n", 1);
}

/* The messages (xp_err/xp_warn lines, each ending in "\n") of the last
 * xp_test_engine() call: what `xptrace decode` writes to stderr. */
static inline const char *xp_test_msgs(void)
{
	struct xp_test_buf *b = xp_test_msgs_buf();
	return b->p ? b->p : "";
}

/* The exit code `xptrace decode` gives for an engine's return code (src/cli/cmd_decode.c). */
static inline int xp_test_exit_code(int rc)
{
	return rc == 0 ? 0 : rc == ENG_EREQUEST ? 2 : 1;
}

/* Decodes INPUT (a trace directory or perf.data; NULL for raw inputs such as "pt")
 * through the decode engine in this process, as `xptrace decode -i INPUT --VIEW OPTS`
 * would: VIEW is a view name, "NAME=ARG" for a view with an argument ("annotate=leaf"),
 * or NULL for the decoder's default; then option name/value pairs, NULL-terminated:
 * "format", "tid", "comm", "time", "metric", "percent-limit", "per-thread", "per-process"
 * (flags: value ""), "jobs" (-j; default: the engine's, the online cores) or any
 * decoder or view option (a flag's value ""; an unknown name fails the test).
 * *out: the report, then the messages (as `2>&1` gave them, stderr after stdout),
 * valid until the next call.  Returns the engine's return code (0 or -errno). */
static inline int xp_test_engine(const char **out, const char *input, const char *view, ...)
{
	static struct xp_test_buf res;
	struct eng_opts o = ENG_OPTS_INIT;
	char viewname[64], outf[PATH_MAX];
	const char *t = getenv("TMPDIR");
	va_list ap;

	o.dec.input = input;
	if (view) {
		const char *eq = strchr(view, '=');
		size_t l = eq ? (size_t)(eq - view) : strlen(view);
		assert_true(l < sizeof(viewname));
		memcpy(viewname, view, l);
		viewname[l] = 0;
		assert_non_null(eng_find_view(viewname));
		o.view.view = viewname;
		o.view.view_arg = eq ? eq + 1 : NULL;
	}
	va_start(ap, view);
	for (const char *name; (name = va_arg(ap, const char *));) {
		const char *val = va_arg(ap, const char *);
		char *end;
		assert_non_null(val);
		if (!strcmp(name, "format")) {
			assert_int_equal(out_format_parse(val, &o.view.format), 0);
		} else if (!strcmp(name, "tid")) {
			o.dec.tid = (int32_t)strtol(val, &end, 10);
			assert_true(*val && !*end);
		} else if (!strcmp(name, "comm")) {
			o.dec.comm = val;
		} else if (!strcmp(name, "metric")) {
			o.dec.metric = val;
		} else if (!strcmp(name, "percent-limit")) {
			o.view.percent_limit = strtod(val, &end);
			assert_true(*val && !*end);
		} else if (!strcmp(name, "per-thread")) {
			o.view.per_thread = true;
		} else if (!strcmp(name, "per-process")) {
			o.view.per_process = true;
		} else if (!strcmp(name, "time")) {
			o.dec.time = val;
		} else if (!strcmp(name, "jobs")) {
			o.jobs = (unsigned)strtoul(val, &end, 10);
			assert_true(*val && !*end);
		} else {
			if (!eng_find_option(name))
				fail_msg("xp_test_engine: no decoder or view option '%s'", name);
			assert_true(o.dec.nextra < DEC_MAX_EXTRA);
			o.dec.extra[o.dec.nextra].name = name;
			o.dec.extra[o.dec.nextra++].value = val;
		}
	}
	va_end(ap);

	/* the report goes to a file of its own, read back */
	snprintf(outf, sizeof(outf), "%s/xptrace-report.XXXXXX", t && *t ? t : "/tmp");
	int fd = mkstemp(outf);
	assert_true(fd >= 0);
	close(fd);
	o.view.output = outf;
	struct xp_test_buf *msgs = xp_test_msgs_buf();
	msgs->len = 0;
	if (msgs->p)
		msgs->p[0] = 0;
	xp_err_set_sink(xp_test_msg_sink, msgs);
	int rc = eng_decode(&o);
	xp_err_set_sink(NULL, NULL);

	res.len = 0;
	xp_test_buf_add(&res, "", 0);
	FILE *f = fopen(outf, "r");
	assert_non_null(f);
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		xp_test_buf_add(&res, chunk, n);
	fclose(f);
	unlink(outf);
	xp_test_buf_add(&res, xp_test_msgs(), strlen(xp_test_msgs()));
	*out = res.p;
	return rc;
}

#endif
