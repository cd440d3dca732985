#include "util/xp_status.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/xp_clock.h"

static int on, shown;
static uint64_t t0, next, every = 250;

void xp_status_start(int want, unsigned delay_ms)
{
	const char *env = getenv("XPTRACE_STATUS_DELAY_MS");

	/* XPTRACE_STATUS_DELAY_MS: tests see the line on a short run, every update of it */
	if (env && *env)
		delay_ms = every = (unsigned)strtoul(env, NULL, 10);
	on = want && isatty(STDERR_FILENO);
	shown = 0;
	t0 = xp_now_ns() / 1000000;
	next = t0 + delay_ms;
}

int xp_status_due(void)
{
	return on && xp_now_ns() / 1000000 >= next;
}

double xp_status_elapsed(void)
{
	return (double)(xp_now_ns() / 1000000 - t0) / 1000.0;
}

void xp_status_show(const char *fmt, ...)
{
	char line[256];
	va_list ap;

	if (!on)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	/* \033[K: erase what a longer previous line left to the right */
	fprintf(stderr, "\rxptrace: %s\033[K", line);
	fflush(stderr);
	shown = 1;
	next = xp_now_ns() / 1000000 + every;
}

void xp_status_clear(void)
{
	if (!shown)
		return;
	fputs("\r\033[K", stderr);
	fflush(stderr);
	shown = 0;
}

void xp_status_stop(void)
{
	xp_status_clear();
	on = 0;
}
