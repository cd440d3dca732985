/* `xptrace decode --ranges`: executed ranges [start, end] (the blocks of a block-level
 * source: LBR ranges between two taken branches, or exact blocks) with how often each
 * ran, its instructions and its mean cycles where the source timed it.  The natural
 * report of branch-stack samples: perf's `brstackinsn`/`-F +srcline` ranges, counted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/view.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct rng {
	uint64_t start, end;
	uint64_t count, insns, cycles, cyc_n;
	int32_t pid;
	uint64_t time;
	size_t same;		/* index + 1 of the next range with this start, 0: none */
};

struct vr {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	struct rng *r;		/* in order of appearance */
	size_t cap, n;
	struct xp_map by_start;	/* start -> index in r of its first range */
	uint64_t total;
	bool sampled;
};

/* The range [start, end], added if new; NULL when out of memory.  Ranges of one
 * start are few (its block left early or late), a list finds them. */
static struct rng *range_of(struct vr *v, const struct xev *ev)
{
	uint64_t i;
	bool seen = xp_map_get(&v->by_start, ev->ip, &i);

	for (; seen; i = v->r[i].same - 1) {
		if (v->r[i].end == ev->end)
			return &v->r[i];
		if (!v->r[i].same)
			break;
	}
	if (XP_GROW(v->r, v->cap, v->n + 1) < 0 ||
	    (!seen && xp_map_put(&v->by_start, ev->ip, v->n) < 0))
		return NULL;
	if (seen)
		v->r[i].same = v->n + 1;	/* i is the list's tail */
	v->r[v->n] = (struct rng){ .start = ev->ip, .end = ev->end, .pid = ev->pid, .time = ev->time };
	return &v->r[v->n++];
}

static int open_view(struct view_ctx *vc, void **state)
{
	if (view_need_branches(vc) < 0)
		return -EINVAL;
	struct vr *v = calloc(1, sizeof(*v));

	if (!v)
		return xp_err("decode", NULL, "out of memory");
	v->c = vc->c;
	v->o = vc->o;
	v->out = vc->out;
	*state = v;
	return 0;
}

static int event(void *state, const struct xev *ev)
{
	struct vr *v = state;
	struct rng *r;

	if (ev->kind != XEV_BLOCK || !dec_thread_selected(v->c, ev->tid, ev->time))
		return 0;
	if (!(r = range_of(v, ev)))
		return xp_err("decode", NULL, "out of memory");
	r->count++;
	if (ev->insns)
		r->insns = ev->insns;
	if (ev->cycles != XEV_CYCLES_UNKNOWN) {
		r->cycles += ev->cycles;
		r->cyc_n++;
	}
	v->total++;
	v->sampled |= (ev->flags & XEV_F_SAMPLED) != 0;
	return 0;
}

static int by_count(const void *a, const void *b)
{
	const struct rng *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

static int close_view(void *state, int status)
{
	static const struct out_col cols[] = {
		{ "Count", OUT_INT, 9, false }, { "Count%", OUT_PCT, 7, false },
		{ "Insns", OUT_INT, 6, false }, { "Cycles", OUT_FLOAT, 8, false },
		{ "Start", OUT_HEX, 18, false }, { "End", OUT_HEX, 18, false },
		{ "Module", OUT_STR, 20, false }, { "Function", OUT_STR, 0, false },
	};
	struct vr *v = state;
	struct dec_ctx *c = v->c;
	struct out_table t;
	size_t k = v->n;

	if (status >= 0) {
		if (k)
			qsort(v->r, k, sizeof(*v->r), by_count);
		if (v->o->format == OUT_TEXT)
			fprintf(v->out, "# %zu ranges, %llu executions%s\n", k,
				(unsigned long long)v->total,
				v->sampled ? " (sampled: counts are proportional, not exact)" : "");
		out_table_begin(&t, v->out, v->o->format, cols, sizeof(cols) / sizeof(cols[0]));
		for (size_t i = 0; i < k; i++) {
			const struct rng *r = &v->r[i];
			double pct = v->total ? 100.0 * (double)r->count / (double)v->total : 0;
			const struct sym_fn *fn = sym_fn(c->sym, dec_fn_of(c, r->pid, r->start, r->time));
			struct out_val row[8];

			if (pct < v->o->percent_limit)
				break;
			memset(row, 0, sizeof(row));
			row[0].u = r->count;
			row[1].d = pct;
			row[2].u = r->insns;
			row[2].null = !r->insns;
			row[3].d = r->cyc_n ? (double)r->cycles / (double)r->cyc_n : 0;
			row[3].null = !r->cyc_n;
			row[4].u = r->start;
			row[5].u = r->end;
			row[6].s = fn && fn->module ? fn->module : "[unknown]";
			row[7].s = fn && fn->name ? fn->name : "[unknown]";
			out_row(&t, row, 0, NULL, 0);
		}
	}
	free(v->r);
	xp_map_free(&v->by_start);
	free(v);
	return status < 0 ? status : 0;
}

static const char *const ranges_honours[] = { "tid", "comm", "time", "percent-limit", NULL };

const struct dec_view view_ranges = {
	.name = "ranges",
	.arg = NULL,
	.help = "executed ranges [start, end] by count, with instructions and mean cycles",
	.formats = OUT_TABLES,
	.honours = ranges_honours,
	.open = open_view,
	.event = event,
	.close = close_view,
};
