/* The collecting view (view_collect.h): builds the call trees as --functions does
 * (tree_build: exact calls and samples alike) and keeps each function's Base, samples
 * and calls in the caller's table. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/view_collect.h"
#include "views/tree_build.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

struct vcl {
	struct dec_ctx *c;
	struct vcl_table *out;
	unsigned metric;
	struct tb b;
};

static int open_fn(struct view_ctx *vc, void **state)
{
	struct vcl *v = calloc(1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	v->c = vc->c;
	v->out = vc->o->impl_arg;
	v->metric = vc->c->metric;
	if (tb_init(&v->b, vc) < 0) {
		free(v);
		return -EOPNOTSUPP;
	}
	*state = v;
	return 0;
}

static int on_event(void *state, const struct xev *ev)
{
	struct vcl *v = state;
	return tb_event(&v->b, ev);
}

int vcl_table_add(struct vcl_table *t, const char *name, const char *module, int line, uint64_t value,
		  uint64_t samples, uint64_t calls)
{
	if (XP_GROW(t->rows, t->cap, t->n + 1) < 0)
		return -ENOMEM;
	struct vcl_row *r = &t->rows[t->n];
	*r = (struct vcl_row){ strdup(name ? name : "[unknown]"), strdup(module ? module : ""), line, value,
			       samples, calls };
	if (!r->name || !r->module) {
		free(r->name);
		free(r->module);
		return -ENOMEM;
	}
	t->n++;
	return 0;
}

static int collect(struct vcl *v, struct ct_tree *t)
{
	struct dec_ctx *c = v->c;
	struct vcl_table *out = v->out;
	unsigned m = v->metric;
	int sm = v->b.samples_m;

	if (ct_finish(t) < 0)
		return -ENOMEM;
	uint32_t nfn = ct_max_fn(t) + 1;
	struct ct_fn_total *tot = calloc(nfn, sizeof(*tot));
	if (!tot)
		return -ENOMEM;
	ct_fn_totals(t, tot, nfn);
	snprintf(out->metric, sizeof(out->metric), "%s", c->metrics[m].name);
	out->sampled = c->sampled && !c->merged;
	out->ns = c->metrics[m].ns;
	out->traced = c->metrics[m].kind == DEC_M_TIME && c->traced_time;
	out->total = ct_total(t, m);
	out->total_samples = sm >= 0 ? ct_total(t, (unsigned)sm) : 0;
	int rc = 0;
	for (uint32_t f = 0; f < nfn && rc == 0; f++)
		if (tot[f].seen && (tot[f].base[m] || tot[f].cum[m]))
			rc = vcl_table_add(out, tb_fn_name(c->sym, f), tb_fn_module(c->sym, f), 0, tot[f].base[m],
				     sm >= 0 ? tot[f].base[sm] : 0, tot[f].calls);
	free(tot);
	return rc;
}

static int on_close(void *state, int status)
{
	struct vcl *v = state;
	int rc = 0;

	if (status >= 0)
		rc = tb_check_timed(&v->b, "diff");
	if (status >= 0 && rc == 0)
		rc = tb_finish(&v->b);
	if (status >= 0 && rc == 0) {
		struct ct_tree *all = tb_merge_all(&v->b);
		rc = all ? collect(v, all) : -ENOMEM;
		ct_free(all);
		if (rc == -ENOMEM)
			xp_err("diff", "compare smaller traces or time ranges", "out of memory");
	}
	tb_free(&v->b);
	free(v);
	return rc;
}

/* xptrace diff --tid/--comm: the engine filters the stream */
static const char *const vcl_honours[] = { "tid", "comm", "inline", "no-inline", NULL };

const struct dec_view vcl_functions = {
	.name = "functions",
	.help = "per-function totals, collected for xptrace diff",
	.formats = OUT_TABLES,
	.honours = vcl_honours,
	.open = open_fn,
	.event = on_event,
	.close = on_close,
};

void vcl_table_free(struct vcl_table *t)
{
	for (uint32_t i = 0; i < t->n; i++) {
		free(t->rows[i].name);
		free(t->rows[i].module);
	}
	free(t->rows);
	*t = (struct vcl_table){ 0 };
}
