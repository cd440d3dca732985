/* The collecting views by source line and by basic block (view_collect.h): exact
 * traces tally blocks (analysis/bb_tally) and walk their instructions at the end,
 * each instruction's executions going to its source line; sampled traces add each
 * sample's weight to the line of its ip.  A block is named by its function and the
 * source lines it spans. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "views/view_collect.h"
#include "analysis/bb.h"
#include "arch/x86_64/x86_dis.h"
#include "session/sb_code.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct vcc {
	struct dec_ctx *c;
	struct vcl_table *out;
	bool blocks;		/* by block, else by line */
	unsigned metric;
	int samples_m;
	struct bb_tally *tally;	/* exact traces */
	struct sb_code *mem;
	struct x86_dis dis;
	/* sampled traces: per (pid, ip) */
	struct smp { int32_t pid; uint64_t ip, time, value, samples; } *smp;
	uint32_t nsmp, capsmp;
	struct xp_map smp_of;	/* key of (pid, ip) -> index + 1 of the first of a chain */
	uint32_t *next;		/* chains of entries of one hash */
	uint32_t capnext;
	uint64_t total, total_samples;
};

static int open_common(struct view_ctx *vc, void **state, bool blocks)
{
	struct dec_ctx *c = vc->c;
	enum dec_metric_kind k = c->metrics[c->metric].kind;
	const char *cmd = vc->o->impl ? "diff" : "decode";
	struct vcc *v;

	if (k != DEC_M_INSNS && k != DEC_M_SAMPLES && k != DEC_M_EVENT) {
		xp_usage_error(cmd, "--%s counts instructions (exact traces) or samples, not %s",
			       blocks ? "blocks" : "lines", c->metrics[c->metric].name);
		return -EOPNOTSUPP;	/* the engine's ENG_EREQUEST: a usage error */
	}
	if (blocks && k != DEC_M_INSNS) {
		xp_usage_error("diff", "--blocks needs exact traces (step, PT) counted in insns");
		return -EOPNOTSUPP;	/* the engine's ENG_EREQUEST: a usage error */
	}
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->c = c;
	v->out = vc->o->impl_arg;
	v->blocks = blocks;
	v->metric = c->metric;
	v->samples_m = -1;
	for (unsigned m = 0; m < c->nmetrics; m++)
		if (c->metrics[m].kind == DEC_M_SAMPLES && v->samples_m < 0)
			v->samples_m = (int)m;
	v->mem = sb_code_new(c->sb, c->sym, c->jit);
	v->tally = k == DEC_M_INSNS ? bb_tally_new() : NULL;
	if (!v->mem || (k == DEC_M_INSNS && !v->tally) || x86_dis_init(&v->dis) < 0) {
		sb_code_free(v->mem);
		bb_tally_free(v->tally);
		free(v);
		return -ENOMEM;
	}
	*state = v;
	return 0;
}

static int open_lines(struct view_ctx *vc, void **state) { return open_common(vc, state, false); }
static int open_blocks(struct view_ctx *vc, void **state) { return open_common(vc, state, true); }

static int add_sample(struct vcc *v, const struct xev *ev)
{
	uint64_t w[DEC_MAX_METRICS] = { 0 };
	if (!dec_weights(v->c, ev, w))
		return 0;
	/* entries whose key collides (another pid) are chained */
	uint64_t h = ev->ip ^ ((uint64_t)(uint32_t)ev->pid << 40), first = 0;
	xp_map_get(&v->smp_of, h, &first);
	for (uint32_t i = (uint32_t)first; i; i = v->next[i - 1]) {
		struct smp *s = &v->smp[i - 1];
		if (s->pid == ev->pid && s->ip == ev->ip) {
			s->value += w[v->metric];
			s->samples += v->samples_m >= 0 ? w[v->samples_m] : 1;
			return 0;
		}
	}
	if (XP_GROW(v->smp, v->capsmp, v->nsmp + 1) < 0 || XP_GROW(v->next, v->capnext, v->nsmp + 1) < 0 ||
	    xp_map_put(&v->smp_of, h, v->nsmp + 1) < 0)
		return -ENOMEM;
	v->smp[v->nsmp] = (struct smp){ ev->pid, ev->ip, ev->time, w[v->metric],
					v->samples_m >= 0 ? w[v->samples_m] : 1 };
	v->next[v->nsmp] = (uint32_t)first;
	v->nsmp++;
	return 0;
}

static int on_event(void *state, const struct xev *ev)
{
	struct vcc *v = state;

	if (v->tally)
		return ev->kind == XEV_BLOCK && !(ev->flags & XEV_F_SAMPLED) ? bb_tally_event(v->tally, ev) : 0;
	return ev->kind == XEV_SAMPLE ? add_sample(v, ev) : 0;
}

/* "file:line" of ip, or "FUNCTION (no line)" when the debug info does not say; the
 * function holding ip. */
static const char *line_name(struct vcc *v, int32_t pid, uint64_t time, uint64_t ip, char *buf, size_t n,
			     const char **file, int *line)
{
	const struct sb_map *m = sb_find_map(v->c->sb, pid, ip, time);
	const struct sym_fn *f = sym_fn(v->c->sym, dec_fn_of(v->c, pid, ip, time));
	const char *fn = f && f->name ? f->name : "[unknown]";
	*file = NULL;
	*line = 0;
	if (m && sym_srcline(v->c->sym, m, ip, file, line))
		snprintf(buf, n, "%s:%d", *file, *line);
	else
		snprintf(buf, n, "%s (no line)", fn);
	return fn;
}

static size_t insn_len(struct vcc *v, const struct bb_block *b, uint64_t ip)
{
	uint8_t buf[X86_MAX_INSN];
	size_t n = sb_code_read(v->mem, b->pid, b->time, ip, buf, sizeof(buf));
	return n ? x86_dis_len(&v->dis, buf, n, ip) : 0;
}

static size_t basic_len(void *ctx, const struct bb_block *b, uint64_t ip)
{
	return insn_len(ctx, b, ip);
}

/* One block: its instructions to their lines, or the block as one row. */
static int block_rows(struct vcc *v, const struct bb_block *b)
{
	char name[1024], first[512] = "";
	int lo = 0, hi = 0, rc = 0;
	uint64_t ip = b->start;

	for (uint64_t i = 0; i < b->insns && rc == 0; i++) {
		const char *file;
		int line;
		const char *fn = line_name(v, b->pid, b->time, ip, name, sizeof(name), &file, &line);
		if (!v->blocks) {
			rc = vcl_table_add(v->out, name, fn, line, b->count, 0, 0);
		} else if (file) {
			if (!*first)
				snprintf(first, sizeof(first), "%s", file);
			if (!strcmp(first, file)) {
				lo = !lo || line < lo ? line : lo;
				hi = line > hi ? line : hi;
			}
		}
		size_t len = insn_len(v, b, ip);
		if (!len)
			break;	/* unreadable code: the rest of the block is not attributed */
		ip += len;
	}
	if (!v->blocks || rc)
		return rc;
	const struct sym_fn *f = sym_fn(v->c->sym, dec_fn_of(v->c, b->pid, b->start, b->time));
	const char *fn = f && f->name ? f->name : "[unknown]";
	/* by ELF address, not runtime: two runs of one binary load it at two addresses */
	const struct sb_map *m = sb_find_map(v->c->sb, b->pid, b->start, b->time);
	uint64_t va = 0;
	bool placed = m && sym_map_vaddr(v->c->sym, m, b->start, &va);
	if (*first)
		snprintf(name, sizeof(name), "%s %s:%d-%d", fn, first, lo, hi);
	else if (f && f->jit)	/* a JIT symbol's start is a runtime address */
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, fn, b->start - f->start);
	else if (placed && f && f->resolved && va >= f->start)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, fn, va - f->start);
	else if (placed)
		snprintf(name, sizeof(name), "%s+0x%" PRIx64, f && f->module ? f->module : fn, va);
	else
		snprintf(name, sizeof(name), "%s 0x%" PRIx64, fn, b->start);
	return vcl_table_add(v->out, name, fn, 0, b->count * b->insns, 0, 0);
}

static int collect(struct vcc *v)
{
	struct vcl_table *out = v->out;
	int rc = 0;

	snprintf(out->metric, sizeof(out->metric), "%s", v->c->metrics[v->metric].name);
	out->sampled = !v->tally;
	if (v->tally) {
		struct bb_tally *basic = bb_tally_basic(v->tally, basic_len, v);
		if (!basic)
			return -ENOMEM;
		size_t n;
		struct bb_block **bl = bb_tally_sorted(basic, &n);
		for (size_t i = 0; i < n && rc == 0; i++) {
			out->total += bl[i]->count * bl[i]->insns;
			rc = block_rows(v, bl[i]);
		}
		bb_tally_free(basic);
		return rc;
	}
	for (uint32_t i = 0; i < v->nsmp && rc == 0; i++) {
		const struct smp *s = &v->smp[i];
		char name[1024];
		const char *file;
		int line;
		const char *fn = line_name(v, s->pid, s->time, s->ip, name, sizeof(name), &file, &line);
		out->total += s->value;
		out->total_samples += s->samples;
		rc = vcl_table_add(out, name, fn, line, s->value, s->samples, 0);
	}
	return rc;
}

static int on_close(void *state, int status)
{
	struct vcc *v = state;
	int rc = status >= 0 ? collect(v) : 0;

	if (rc == -ENOMEM)
		xp_err("diff", "compare smaller traces or time ranges", "out of memory");
	bb_tally_free(v->tally);
	sb_code_free(v->mem);
	x86_dis_fini(&v->dis);
	free(v->smp);
	free(v->next);
	xp_map_free(&v->smp_of);
	free(v);
	return rc;
}

/* xptrace diff --tid/--comm: the engine filters the stream */
static const char *const vcl_honours[] = { "tid", "comm", NULL };

const struct dec_view vcl_lines = {
	.name = "lines",
	.help = "per source line, collected for xptrace diff",
	.formats = OUT_TABLES,
	.honours = vcl_honours,
	.open = open_lines,
	.event = on_event,
	.close = on_close,
};

const struct dec_view vcl_blocks = {
	.name = "blocks",
	.help = "per basic block (function and line range), collected for xptrace diff",
	.formats = OUT_TABLES,
	.honours = vcl_honours,
	.open = open_blocks,
	.event = on_event,
	.close = on_close,
};
