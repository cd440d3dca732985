/* --tid, --time, --sym: a sink in front of the views that drops what is not asked for. */
#include <errno.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/bb.h"

void bb_filter_init(struct bb_filter *f, const struct bb_env *env, struct xev_sink next)
{
	memset(f, 0, sizeof(*f));
	f->tid = -1;
	f->t1 = UINT64_MAX;
	f->env = env;
	f->next = next;
}

static int parse_time(const char *s, size_t len, uint64_t *out)
{
	char buf[64], *end;
	if (len == 0 || len >= sizeof(buf))
		return -EINVAL;
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	if (strchr(buf, '.')) {
		/* seconds, as perf prints them: keep nanosecond precision */
		char *dot = strchr(buf, '.');
		*dot = '\0';
		uint64_t sec = strtoull(buf, &end, 10);
		if (end == buf || *end || errno)
			return -EINVAL;
		uint64_t ns = 0;
		int digits = 0;
		for (const char *p = dot + 1; *p; p++, digits++) {
			if (*p < '0' || *p > '9' || digits >= 9)
				return -EINVAL;
			ns = ns * 10 + (uint64_t)(*p - '0');
		}
		for (; digits < 9; digits++)
			ns *= 10;
		*out = sec * 1000000000ULL + ns;
		return 0;
	}
	*out = strtoull(buf, &end, 0);
	return end == buf || *end || errno ? -EINVAL : 0;
}

int bb_parse_time_range(const char *s, uint64_t *t0, uint64_t *t1)
{
	const char *dash = strchr(s, '-');
	if (!dash)
		return -EINVAL;
	*t0 = 0;
	*t1 = UINT64_MAX;
	if (dash > s && parse_time(s, (size_t)(dash - s), t0) < 0)
		return -EINVAL;
	if (dash[1] && parse_time(dash + 1, strlen(dash + 1), t1) < 0)
		return -EINVAL;
	if (dash == s && !dash[1])
		return -EINVAL;
	return *t0 <= *t1 ? 0 : -EINVAL;
}

static bool in_sym(struct bb_filter *f, const struct xev *ev)
{
	if (f->fn_valid && ev->ip >= f->fn_start && ev->ip < f->fn_end)
		return f->fn_match;
	uint64_t start = 0, size = 0;
	const char *name = f->env->symbol(f->env->ctx, ev->pid, ev->time, ev->ip, &start, &size);
	/* a glob as --calls takes it; the name itself too, for names like "[unknown]" */
	f->fn_match = name && (strcmp(name, f->sym) == 0 || fnmatch(f->sym, name, 0) == 0);
	f->fn_valid = name && size;
	f->fn_start = start;
	f->fn_end = start + size;
	return f->fn_match;
}

int bb_filter_event(void *ctx, const struct xev *ev)
{
	struct bb_filter *f = ctx;

	if (f->tid >= 0 && ev->tid != f->tid)
		return 0;
	if ((f->t0 || f->t1 != UINT64_MAX) && (!ev->time || ev->time < f->t0 || ev->time > f->t1))
		return 0;
	if (f->sym) {
		switch (ev->kind) {
		case XEV_BLOCK: case XEV_BRANCH: case XEV_CALL: case XEV_RETURN: case XEV_SAMPLE:
			f->last_in = in_sym(f, ev);
			if (!f->last_in)
				return 0;
			f->matched++;
			break;
		case XEV_ENABLE: case XEV_DISABLE: case XEV_INTERRUPT:
			/* markers of other code are noise in the function's listing: kept where
			 * the trace starts, stops or is interrupted in the function */
			if (ev->ip ? !in_sym(f, ev) : !f->last_in)
				return 0;
			break;
		default:
			break;
		}
	}
	return xev_emit(&f->next, ev);
}
