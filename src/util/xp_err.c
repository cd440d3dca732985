#include "util/xp_err.h"
#include "util/xp_status.h"

#include <errno.h>
#include <stdio.h>

static xp_err_sink_fn sink;
static void *sink_ctx;

void xp_err_set_sink(xp_err_sink_fn fn, void *ctx)
{
	sink = fn;
	sink_ctx = ctx;
}

static void emit(const char *line)
{
	xp_status_clear();
	if (sink)
		sink(line, sink_ctx);
	else
		fprintf(stderr, "%s\n", line);
}

int xp_verr(const char *what, const char *hint, const char *why_fmt, va_list ap)
{
	char why[1024], line[2048];

	vsnprintf(why, sizeof(why), why_fmt, ap);
	if (hint && *hint)
		snprintf(line, sizeof(line), "xptrace: %s: %s (%s)", what, why, hint);
	else
		snprintf(line, sizeof(line), "xptrace: %s: %s", what, why);
	emit(line);
	return -EIO;
}

int xp_err(const char *what, const char *hint, const char *why_fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, why_fmt);
	rc = xp_verr(what, hint, why_fmt, ap);
	va_end(ap);
	return rc;
}

int xp_err_code(int code, const char *what, const char *hint, const char *why_fmt, ...)
{
	va_list ap;

	va_start(ap, why_fmt);
	xp_verr(what, hint, why_fmt, ap);
	va_end(ap);
	return code < 0 ? code : -EIO;
}

void xp_warn(const char *fmt, ...)
{
	char msg[1024], line[1100];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(line, sizeof(line), "xptrace: %s", msg);
	emit(line);
}

int xp_usage_error(const char *cmd, const char *fmt, ...)
{
	char hint[128];
	char what[64];
	va_list ap;

	snprintf(what, sizeof(what), "%s", cmd ? cmd : "usage");
	snprintf(hint, sizeof(hint), "see 'xptrace help%s%s'", cmd ? " " : "", cmd ? cmd : "");
	va_start(ap, fmt);
	xp_verr(what, hint, fmt, ap);
	va_end(ap);
	return XP_EXIT_USAGE;
}
