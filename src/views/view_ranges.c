/* `xptrace decode --ranges`: executed ranges [start, end] (the blocks of a block-level
 * source: LBR ranges between two taken branches, or exact blocks) with how often each
 * ran, its instructions and its mean cycles where the source timed it.  The natural
 * report of branch-stack samples: perf's `brstackinsn`/`-F +srcline` ranges, counted. */
#include <stdlib.h>
#include <string.h>

#include "views/view.h"
#include "util/xp_err.h"

struct rng {
	uint64_t start, end;
	uint64_t count, insns, cycles, cyc_n;
	int32_t pid;
	uint64_t time;
};

struct vr {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	struct rng *tab;	/* open addressing on (start, end) */
	size_t cap, n;
	uint64_t total;
	bool sampled;
};

static size_t slot(const struct vr *v, uint64_t start, uint64_t end)
{
	uint64_t h = (start * 0x9e3779b97f4a7c15ULL) ^ (end + (end << 17));

	h ^= h >> 29;
	return (size_t)h & (v->cap - 1);
}

static int grow(struct vr *v)
{
	size_t ncap = v->cap ? v->cap * 2 : 4096;
	struct rng *nt = calloc(ncap, sizeof(*nt)), *old = v->tab;
	size_t ocap = v->cap;

	if (!nt)
		return -1;
	v->tab = nt;
	v->cap = ncap;
	for (size_t i = 0; i < ocap; i++) {
		size_t s;

		if (!old[i].count)
			continue;
		for (s = slot(v, old[i].start, old[i].end); nt[s].count; s = (s + 1) & (ncap - 1))
			;
		nt[s] = old[i];
	}
	free(old);
	return 0;
}

static int open_view(struct view_ctx *vc, void **state)
{
	struct vr *v = calloc(1, sizeof(*v));

	if (!v || grow(v) < 0) {
		free(v);
		return xp_err("decode", NULL, "out of memory");
	}
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
	size_t s;

	if (ev->kind != XEV_BLOCK || !dec_thread_selected(v->c, ev->tid, ev->time))
		return 0;
	if ((v->n + 1) * 4 > v->cap * 3 && grow(v) < 0)
		return xp_err("decode", NULL, "out of memory");
	for (s = slot(v, ev->ip, ev->end); v->tab[s].count; s = (s + 1) & (v->cap - 1))
		if (v->tab[s].start == ev->ip && v->tab[s].end == ev->end)
			break;
	r = &v->tab[s];
	if (!r->count) {
		r->start = ev->ip;
		r->end = ev->end;
		r->pid = ev->pid;
		r->time = ev->time;
		v->n++;
	}
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
	size_t k = 0;

	if (status >= 0) {
		for (size_t i = 0; i < v->cap; i++)
			if (v->tab[i].count)
				v->tab[k++] = v->tab[i];
		qsort(v->tab, k, sizeof(*v->tab), by_count);
		if (v->o->format == OUT_TEXT)
			fprintf(v->out, "# %zu ranges, %llu executions%s\n", k,
				(unsigned long long)v->total,
				v->sampled ? " (sampled: counts are proportional, not exact)" : "");
		out_table_begin(&t, v->out, v->o->format, cols, sizeof(cols) / sizeof(cols[0]));
		for (size_t i = 0; i < k; i++) {
			const struct rng *r = &v->tab[i];
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
	free(v->tab);
	free(v);
	return status < 0 ? status : 0;
}

const struct dec_view view_ranges = {
	.name = "ranges",
	.arg = NULL,
	.help = "executed ranges [start, end] by count, with instructions and mean cycles",
	.formats = OUT_TABLES,
	.options = NULL,
	.open = open_view,
	.event = event,
	.close = close_view,
};
