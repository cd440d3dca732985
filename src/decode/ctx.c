/* Services of the decode context (ctx.h): options, symbolizing addresses, weighing
 * events, thread filters (reading the perf.data: dec_read.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/ctx.h"
#include "util/xp_hash.h"

const char *dec_opt(const struct dec_ctx *c, const char *name)
{
	for (unsigned i = 0; i < c->opts->nextra; i++)
		if (strcmp(c->opts->extra[i].name, name) == 0)
			return c->opts->extra[i].value;
	return NULL;
}

bool dec_inline(const struct dec_ctx *c)
{
	return !dec_opt(c, "no-inline");
}

/* Address -> function cache: stacks repeat, symbol lookups are the hot path.  It
 * starts small and grows with its misses: a short decode (a test's, a fuzzer's
 * input) does not pay for clearing 2.5 MB it never uses. */
#define FNCACHE_MIN_BITS 10
#define FNCACHE_MAX_BITS 16
struct fnc_entry {
	uint64_t addr;
	int32_t pid;
	uint32_t fn;
	uint64_t gen;
	uint64_t t0, t1;	/* the mapping's validity: decoders may look back in time */
};
struct dec_fncache {
	unsigned bits;
	size_t misses;
	struct fnc_entry e[];
};

/* The cache to use, a bigger empty one once the misses reach twice its size (NULL
 * without memory: lookups go uncached). */
static struct dec_fncache *fncache(struct dec_ctx *c)
{
	struct dec_fncache *fc = c->fncache;
	unsigned bits;

	if (fc && (fc->bits >= FNCACHE_MAX_BITS || fc->misses < (size_t)2 << fc->bits))
		return fc;
	bits = fc ? fc->bits + 2 : FNCACHE_MIN_BITS;
	struct dec_fncache *n = calloc(1, sizeof(*n) + (sizeof(n->e[0]) << bits));
	if (!n)
		return fc;
	n->bits = bits;
	free(fc);
	c->fncache = n;
	return n;
}

uint32_t dec_fn_span(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time, uint64_t *from,
		     uint64_t *to)
{
	uint64_t gen = sb_generation(c->sb) + 1;
	struct dec_fncache *fc = fncache(c);
	/* keyed by address alone: processes mapping the same code at the same address
	 * share a slot, the entry's pid tells them apart */
	struct fnc_entry *fe = fc ? &fc->e[xp_hash_bits(ip, fc->bits)] : NULL;

	if (fe && fe->gen == gen && fe->addr == ip && fe->pid == pid &&
	    (time ? fe->t0 <= time && time < fe->t1 : fe->t1 == UINT64_MAX)) {
		*from = fe->t0;
		*to = fe->t1;
		return fe->fn;
	}
	const struct sb_map *m = sb_find_map(c->sb, pid, ip, time);
	uint32_t fn = sym_fn_of(c->sym, m, ip);
	uint64_t t0 = m ? m->time_from : 0, t1 = m ? m->time_to : UINT64_MAX;
	struct jit_sym js;
	/* no ELF symbol: JIT code (anonymous memory) is named by the process's jitdumps
	 * and perf map, valid for a while only (loads and moves happen at a time) */
	if (!sym_fn(c->sym, fn)->resolved && c->jit) {
		if (jit_find(c->jit, pid, time, ip, &js))
			fn = sym_fn_jit(c->sym, js.name, js.module, js.start, js.size);
		t0 = js.from > t0 ? js.from : t0;
		t1 = js.to < t1 ? js.to : t1;
	}
	if (fe) {
		*fe = (struct fnc_entry){ ip, pid, fn, gen, t0, t1 };
		fc->misses++;
	}
	*from = t0;
	*to = t1;
	return fn;
}

uint32_t dec_frame_fn_span(struct dec_ctx *c, int32_t pid, const uint64_t *stack, uint32_t i, uint64_t time,
			   uint64_t *from, uint64_t *to)
{
	uint64_t a = stack[i];

	if (i && a > 1 && !((stack[i - 1] >> 63) && !(a >> 63))) {
		uint32_t fn = dec_fn_span(c, pid, a - 1, time, from, to);
		if (sym_fn(c->sym, fn)->resolved)
			return fn;
	}
	return dec_fn_span(c, pid, a, time, from, to);
}

uint32_t dec_frame_fn(struct dec_ctx *c, int32_t pid, const uint64_t *stack, uint32_t i, uint64_t time)
{
	uint64_t from, to;

	return dec_frame_fn_span(c, pid, stack, i, time, &from, &to);
}

uint32_t dec_fn_of(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time)
{
	uint64_t from, to;

	return dec_fn_span(c, pid, ip, time, &from, &to);
}

bool dec_fn_entry(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time)
{
	const struct sym_fn *f = sym_fn(c->sym, dec_fn_of(c, pid, ip, time));
	const struct sb_map *m;
	struct jit_sym js;
	uint64_t vaddr;

	if (!f)
		return false;
	if (f->jit)	/* where the code lies now: it may have moved since */
		return jit_find(c->jit, pid, time, ip, &js) && js.start == ip;
	m = sb_find_map(c->sb, pid, ip, time);
	return f->resolved && m && sym_map_vaddr(c->sym, m, ip, &vaddr) && vaddr == f->start;
}

uint64_t dec_fn_gen(const struct dec_ctx *c)
{
	return sb_generation(c->sb);
}

void dec_ctx_release(struct dec_ctx *c)
{
	free(c->fncache);
	c->fncache = NULL;
	if (c->probes)
		pd_probes_free(c->probes);
	free(c->probes);
	free(c->probe_of);
	c->probes = NULL;
	c->probe_of = NULL;
}

bool dec_weights(const struct dec_ctx *c, const struct xev *ev, uint64_t *w)
{
	bool any = false;

	for (unsigned m = 0; m < c->nmetrics; m++) {
		const struct dec_metric *dm = &c->metrics[m];
		uint64_t v = 0;

		switch (dm->kind) {
		case DEC_M_SAMPLES:
			v = ev->kind == XEV_SAMPLE && (!dm->one_event || ev->event == dm->event);
			break;
		case DEC_M_EVENT:
			if (ev->kind != XEV_SAMPLE)
				break;
			if (ev->event == dm->event)
				v = ev->weight;
			else if (ev->values && dm->event < ev->nvalues)
				v = ev->values[dm->event];
			break;
		case DEC_M_INSNS:
			if (ev->kind == XEV_BLOCK)
				v = ev->insns;
			break;
		case DEC_M_CYCLES:
			if (ev->kind == XEV_BLOCK && ev->cycles != XEV_CYCLES_UNKNOWN)
				v = ev->cycles;
			break;
		case DEC_M_TIME:	/* a span between events: the view charges it */
			break;
		}
		w[m] = v;
		any |= v != 0;
	}
	return any;
}

/* An event that samples by itself, not a member of a group its leader samples (whose
 * period is 0: its values come with the leader's samples). */
static bool sampling_attr(const struct pd_attr *a)
{
	return a && a->attr.sample_period != 0;
}

int dec_setup_sampled(struct dec_ctx *c, bool (*counts)(const struct pd_attr *a))
{
	c->nmetrics = 0;
	c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_SAMPLES, .name = "samples" };
	c->metric = 0;
	c->sampled = true;
	for (uint32_t i = 0; i < pd_nattrs(c->pd) && c->nmetrics < DEC_MAX_METRICS; i++) {
		const struct pd_attr *a = pd_attr_at(c->pd, i);
		struct dec_metric *m;

		if (!counts(a))
			continue;
		m = &c->metrics[c->nmetrics];
		m->kind = DEC_M_EVENT;
		m->event = i;
		snprintf(m->name, sizeof(m->name), "%s", a->name ? a->name : "event");
		/* the software clocks' period is in ns */
		m->ns = a->attr.type == PERF_TYPE_SOFTWARE && (a->attr.config == PERF_COUNT_SW_CPU_CLOCK ||
							      a->attr.config == PERF_COUNT_SW_TASK_CLOCK);
		/* perf report's Overhead is by period of the first event */
		if (c->metric == 0)
			c->metric = c->nmetrics;
		else if (sampling_attr(a))
			c->metrics[0].one_event = true;	/* a second sampling event */
		c->nmetrics++;
	}
	if (c->metrics[0].one_event)
		c->metrics[0].event = c->metrics[c->metric].event;
	return 0;
}

void dec_metric_chosen(struct dec_ctx *c)
{
	const struct dec_metric *m = &c->metrics[c->metric];

	if (c->nmetrics && c->metrics[0].kind == DEC_M_SAMPLES && c->metrics[0].one_event &&
	    m->kind == DEC_M_EVENT && sampling_attr(pd_attr_at(c->pd, m->event)))
		c->metrics[0].event = m->event;
}

bool dec_thread_passes(struct dec_ctx *c, int32_t tid, uint64_t time)
{
	if (c->opts->tid >= 0 && tid != c->opts->tid)
		return false;
	if (c->opts->comm && strcmp(sb_comm_at(c->sb, tid, time), c->opts->comm) != 0)
		return false;
	return true;
}
