/* --lines: the metric per source line (file:line and the function its code lies in),
 * sorted.  The per-instruction attribution is xptrace diff's (view_collect_code.c:
 * exact traces' instructions, samples' weights); this view sums its rows by line and
 * function and writes them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/view.h"
#include "views/view_collect.h"
#include "util/xp_err.h"

struct vl {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	struct view_opts inner_o;	/* the collecting view's: its table is ours */
	struct vcl_table t;
	void *inner;
};

static int open_lines(struct view_ctx *vc, void **state)
{
	struct vl *v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->c = vc->c;
	v->o = vc->o;
	v->out = vc->out;
	v->inner_o = *vc->o;
	v->inner_o.impl_arg = &v->t;
	struct view_ctx ivc = *vc;
	ivc.o = &v->inner_o;
	int r = vcl_lines.open(&ivc, &v->inner);
	if (r < 0) {
		free(v);
		return r;
	}
	vc->wants = ivc.wants;
	*state = v;
	return 0;
}

static int on_event(void *state, const struct xev *ev)
{
	struct vl *v = state;
	return vcl_lines.event(v->inner, ev);
}

static int by_line(const void *a, const void *b)
{
	const struct vcl_row *x = a, *y = b;
	int d = strcmp(x->name, y->name);
	return d ? d : strcmp(x->module, y->module);
}

static int by_value(const void *a, const void *b)
{
	const struct vcl_row *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return by_line(a, b);
}

/* Sums the rows of one line and function into the first of them. */
static uint32_t merge_rows(struct vcl_table *t)
{
	uint32_t n = 0;
	if (!t->n)	/* (qsort's array is declared non-null) */
		return 0;
	qsort(t->rows, t->n, sizeof(*t->rows), by_line);
	for (uint32_t i = 0; i < t->n; i++) {
		struct vcl_row *r = &t->rows[i];
		if (n && by_line(&t->rows[n - 1], r) == 0) {
			t->rows[n - 1].value += r->value;
			t->rows[n - 1].samples += r->samples;
			free(r->name);
			free(r->module);
			continue;
		}
		t->rows[n++] = *r;
	}
	t->n = n;
	qsort(t->rows, n, sizeof(*t->rows), by_value);
	return n;
}

static const struct out_col text_cols[] = {
	{ "Samples", OUT_INT, 9, 0 }, { "Base", OUT_INT, 12, 0 }, { "Base%", OUT_PCT, 7, 0 },
	{ "Line", OUT_STR, 28, 0 }, { "Function", OUT_STR, 0, 0 },
};
static const struct out_col json_cols[] = {
	{ "samples", OUT_INT, 0, 0 }, { "base", OUT_INT, 0, 0 }, { "base%", OUT_PCT, 0, 0 },
	{ "file", OUT_STR, 0, 0 }, { "line", OUT_INT, 0, 0 }, { "function", OUT_STR, 0, 0 },
};

/* text: a file by its last component (jsonl keeps the path) */
static const char *short_name(const struct vcl_row *r)
{
	const char *slash = r->line ? strrchr(r->name, '/') : NULL;
	return slash ? slash + 1 : r->name;
}

static void write_rows(struct vl *v)
{
	struct vcl_table *t = &v->t;
	const char *sym = dec_opt(v->c, "sym");
	bool text = v->o->format == OUT_TEXT, smp = t->sampled;
	struct out_table tab;
	struct out_col cols[5];	/* the table keeps pointing to them */
	uint64_t total = 0;
	int width = 0;

	for (uint32_t i = 0; i < t->n; i++)
		if (!sym || strcmp(t->rows[i].module, sym) == 0) {
			int w = (int)strlen(short_name(&t->rows[i]));
			total += t->rows[i].value;
			width = w > width ? w : width;
		}
	if (text) {
		fprintf(v->out, "# lines: %s, total %lu%s%s\n", t->metric, (unsigned long)total,
			sym ? " in " : "", sym ? sym : "");
		memcpy(cols, text_cols, sizeof(cols));
		cols[3].width = width < 60 ? width : 60;
		out_table_begin(&tab, v->out, OUT_TEXT, cols + !smp, 5 - !smp);
	} else {
		out_table_begin(&tab, v->out, v->o->format, json_cols + !smp, 6 - !smp);
	}
	for (uint32_t i = 0; i < t->n; i++) {
		const struct vcl_row *r = &t->rows[i];
		double pct = total ? 100.0 * (double)r->value / (double)total : 0;
		if (sym && strcmp(r->module, sym))
			continue;
		if (v->o->percent_limit > 0 && pct < v->o->percent_limit)
			continue;
		struct out_val vals[6];
		unsigned k = 0;
		if (smp)
			vals[k++] = (struct out_val){ .u = r->samples };
		vals[k++] = (struct out_val){ .u = r->value };
		vals[k++] = (struct out_val){ .d = pct };
		if (text) {
			vals[k++] = (struct out_val){ .s = short_name(r) };
		} else {
			/* name is "file:line", or "FUNCTION (no line)" without debug info */
			char *colon = r->line ? strrchr(r->name, ':') : NULL;
			if (colon)
				*colon = 0;
			vals[k++] = (struct out_val){ .s = r->name, .null = !colon };
			vals[k++] = (struct out_val){ .u = (uint64_t)r->line, .null = !colon };
		}
		vals[k++] = (struct out_val){ .s = r->module };
		out_row(&tab, vals, 0, NULL, 0);
	}
}

static int on_close(void *state, int status)
{
	struct vl *v = state;
	int r = vcl_lines.close(v->inner, status);
	if (status >= 0 && r >= 0) {
		merge_rows(&v->t);
		write_rows(v);
	}
	vcl_table_free(&v->t);
	free(v);
	return status < 0 ? status : r;
}

static const char *const lines_honours[] = { "tid", "comm", "time", "sym", "percent-limit", NULL };

const struct dec_view view_lines = {
	.name = "lines",
	.help = "per source line (file:line, function): instructions (exact traces) or samples, "
		"summing to --functions' total; --sym NAME: only NAME's lines",
	.formats = OUT_TABLES,
	.honours = lines_honours,
	.open = open_lines,
	.event = on_event,
	.close = on_close,
};
