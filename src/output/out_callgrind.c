/* The callgrind format (valgrind's docs/cl-format.html), written in one place for
 * the profiles of call trees and the per-instruction profiles of exact streams. */
#include <inttypes.h>

#include "output/out.h"

/* A name goes on one line: a newline in it would end the line early. */
static void text(FILE *f, const char *s)
{
	for (; *s; s++)
		putc(*s == '\n' ? ' ' : *s, f);
}

void out_cg_begin(struct out_cg *w, FILE *f, unsigned pos, const char *cmd, const char *desc,
		  const char *const *events, unsigned nev, const uint64_t *summary)
{
	*w = (struct out_cg){ f, pos, nev };
	fputs("# callgrind format\nversion: 1\ncreator: xptrace\n", f);
	if (cmd) {
		fputs("cmd: ", f);
		text(f, cmd);
		putc('\n', f);
	}
	if (desc)
		fprintf(f, "desc: %s\n", desc);
	fprintf(f, "positions:%s%s\nevents:", pos & OUT_CG_INSTR ? " instr" : "",
		pos & OUT_CG_LINE ? " line" : "");
	for (unsigned m = 0; m < nev; m++)
		fprintf(f, " %s", events[m]);
	putc('\n', f);
	if (summary) {
		fputs("summary:", f);
		for (unsigned m = 0; m < nev; m++)
			fprintf(f, " %" PRIu64, summary[m]);
		putc('\n', f);
	}
}

void out_cg_name(struct out_cg *w, const char *key, const struct out_cg_name *n)
{
	if (!n->id && !n->name)
		return;
	fprintf(w->f, "%s=", key);
	if (n->id)
		fprintf(w->f, "(%" PRIu32 ")%s", n->id, n->name ? " " : "");
	if (n->name)
		text(w->f, n->name);
	putc('\n', w->f);
}

static void pos(const struct out_cg *w, const struct out_cg_pos *p)
{
	if (w->pos & OUT_CG_INSTR)
		fprintf(w->f, "%#" PRIx64, p->addr);
	if (w->pos & OUT_CG_LINE)
		fprintf(w->f, "%s%" PRIu64, w->pos & OUT_CG_INSTR ? " " : "", p->line);
}

void out_cg_fn(struct out_cg *w, const struct out_cg_fn *at)
{
	putc('\n', w->f);
	out_cg_name(w, "ob", &at->ob);
	out_cg_name(w, "fl", &at->fl);
	out_cg_name(w, "fn", &at->fn);
}

void out_cg_cost(struct out_cg *w, const struct out_cg_pos *p, const uint64_t *cost)
{
	pos(w, p);
	for (unsigned m = 0; m < w->nev; m++)
		fprintf(w->f, " %" PRIu64, cost[m]);
	putc('\n', w->f);
}

void out_cg_call(struct out_cg *w, const struct out_cg_fn *callee, uint64_t calls,
		 const struct out_cg_pos *target, const struct out_cg_pos *p, const uint64_t *cost)
{
	out_cg_name(w, "cob", &callee->ob);
	out_cg_name(w, "cfi", &callee->fl);
	out_cg_name(w, "cfn", &callee->fn);
	fprintf(w->f, "calls=%" PRIu64 " ", calls);
	pos(w, target);
	putc('\n', w->f);
	out_cg_cost(w, p, cost);
}

void out_cg_end(struct out_cg *w, const uint64_t *totals)
{
	putc('\n', w->f);
	if (!totals)
		return;
	fputs("totals:", w->f);
	for (unsigned m = 0; m < w->nev; m++)
		fprintf(w->f, " %" PRIu64, totals[m]);
	putc('\n', w->f);
}
