#include "util/xp_status.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int on, shown;
static uint64_t t0, next, every = 250;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void xp_status_start(int want, unsigned delay_ms)
{
	const char *env = getenv("XPTRACE_STATUS_DELAY_MS");

	/* XPTRACE_STATUS_DELAY_MS: tests see the line on a short run, every update of it */
	if (env && *env)
		delay_ms = every = (unsigned)strtoul(env, NULL, 10);
	on = want && isatty(STDERR_FILENO);
	shown = 0;
	t0 = now_ms();
	next = t0 + delay_ms;
}

int xp_status_due(void)
{
	return on && now_ms() >= next;
}

double xp_status_elapsed(void)
{
	return (double)(now_ms() - t0) / 1000.0;
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
	next = now_ms() + every;
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
