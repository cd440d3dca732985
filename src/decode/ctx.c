/* Services of the decode context (ctx.h): reading the perf.data with its sideband,
 * symbolizing addresses, weighing events, thread filters. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/ctx.h"
#include "util/xp_err.h"
#include "util/xp_status.h"
#include "util/xp_hash.h"

const char *dec_opt(const struct dec_ctx *c, const char *name)
{
	for (unsigned i = 0; i < c->opts->nextra; i++)
		if (strcmp(c->opts->extra[i].name, name) == 0)
			return c->opts->extra[i].value;
	return NULL;
}

struct rd_ctx {
	struct dec_ctx *c;
	pd_rec_fn fn;
	void *arg;
	/* the live status of a long read (util/xp_status.h: on when the command turned it
	 * on, on a terminal) */
	uint64_t nrec, start, end;
};

static void progress(struct rd_ctx *x, uint64_t offset)
{
	if (x->end > x->start && xp_status_due())
		xp_status_show("decode: %.0f%% of %s (%.1f of %.1f MB), %.1f s",
			       100.0 * (double)(offset - x->start) / (double)(x->end - x->start),
			       pd_name(x->c->pd), (double)(offset - x->start) / 1e6,
			       (double)(x->end - x->start) / 1e6, xp_status_elapsed());
}

/* The trace's TSC conversion (PT's AUXTRACE_INFO, perf's TIME_CONV) also converts the
 * times of jitdumps written with TSC timestamps. */
static void jit_clock(struct dec_ctx *c, const struct pd_rec *r)
{
	if (r->type == PD_RECORD_TIME_CONV && r->size >= 8 + 3 * 8) {
		uint64_t w[3];
		memcpy(w, (const uint8_t *)r->raw + 8, sizeof(w));
		jit_set_tsc_conv(c->jit, (uint16_t)w[0], (uint32_t)w[1], w[2]);
	} else if (r->type == PD_RECORD_AUXTRACE_INFO &&
		   r->size >= sizeof(struct pd_auxtrace_info_event) + 8 * (PD_PT_TIME_ZERO + 1) &&
		   r->u.auxtrace_info->type == PD_AUXTRACE_INTEL_PT) {
		uint64_t w[PD_PT_TIME_ZERO + 1];
		memcpy(w, (const uint8_t *)r->raw + sizeof(struct pd_auxtrace_info_event), sizeof(w));
		jit_set_tsc_conv(c->jit, (uint16_t)w[PD_PT_TIME_SHIFT], (uint32_t)w[PD_PT_TIME_MULT],
				 w[PD_PT_TIME_ZERO]);
	}
}

static int rd_rec(void *a, const struct pd_rec *r)
{
	struct rd_ctx *x = a;

	if ((x->nrec++ & 0xff) == 0)
		progress(x, r->offset);
	if (r->type == PERF_RECORD_MMAP || r->type == PERF_RECORD_MMAP2 || r->type == PERF_RECORD_COMM ||
	    r->type == PERF_RECORD_FORK || r->type == PERF_RECORD_EXIT) {
		if (sb_feed(x->c->sb, r) < 0)
			return xp_err(pd_name(x->c->pd), NULL, "out of memory");
	} else if (r->type == PD_RECORD_TIME_CONV || r->type == PD_RECORD_AUXTRACE_INFO) {
		jit_clock(x->c, r);
	}
	return x->fn(x->arg, r);
}

/* Branch-stack samples without TIME (perf inject --itrace=...l of a timeless PT trace)
 * cannot be put in time order and would all precede the sideband (records without a time
 * are delivered at once): such files are read in file order, the order their writer saw
 * the events in. */
static bool timeless_branch_samples(const struct pd_file *f)
{
	for (uint32_t i = 0; i < pd_nattrs(f); i++) {
		const struct perf_event_attr *a = &pd_attr_at(f, i)->attr;
		if ((a->sample_type & PERF_SAMPLE_BRANCH_STACK) && !(a->sample_type & PERF_SAMPLE_TIME))
			return true;
	}
	return false;
}

int dec_read(struct dec_ctx *c, pd_rec_fn fn, void *arg)
{
	struct rd_ctx x = { .c = c, .fn = fn, .arg = arg };
	const struct pd_build_id *b;
	size_t nb = pd_build_ids(c->pd, &b);
	int rc;

	sb_set_build_ids(c->sb, b, nb);
	pd_data_range(c->pd, &x.start, &x.end);
	rc = pd_read_events(c->pd, timeless_branch_samples(c->pd) ? 0 : PD_ORDERED, rd_rec, &x);
	xp_status_clear();
	pd_report_losses(c->pd);
	return rc;
}

/* Address -> function cache: stacks repeat, symbol lookups are the hot path. */
#define FNCACHE_BITS 16
struct dec_fncache {
	uint64_t addr;
	int32_t pid;
	uint32_t fn;
	uint64_t gen;
	uint64_t t0, t1;	/* the mapping's validity: decoders may look back in time */
};

uint32_t dec_fn_span(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time, uint64_t *from,
		     uint64_t *to)
{
	uint64_t gen = sb_generation(c->sb) + 1;
	/* keyed by address alone: processes mapping the same code at the same address
	 * share a slot, the entry's pid tells them apart */
	size_t h = (size_t)xp_hash_bits(ip, FNCACHE_BITS);
	struct dec_fncache *fc;

	if (!c->fncache)
		c->fncache = calloc((size_t)1 << FNCACHE_BITS, sizeof(*c->fncache));
	fc = c->fncache ? &c->fncache[h] : NULL;
	if (fc && fc->gen == gen && fc->addr == ip && fc->pid == pid &&
	    (time ? fc->t0 <= time && time < fc->t1 : fc->t1 == UINT64_MAX)) {
		*from = fc->t0;
		*to = fc->t1;
		return fc->fn;
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
	if (fc)
		*fc = (struct dec_fncache){ ip, pid, fn, gen, t0, t1 };
	*from = t0;
	*to = t1;
	return fn;
}

uint32_t dec_fn_of(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time)
{
	uint64_t from, to;

	return dec_fn_span(c, pid, ip, time, &from, &to);
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
			v = ev->kind == XEV_SAMPLE;
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
		c->nmetrics++;
	}
	return 0;
}

bool dec_thread_passes(struct dec_ctx *c, int32_t tid, uint64_t time)
{
	if (c->opts->tid >= 0 && tid != c->opts->tid)
		return false;
	if (c->opts->comm && strcmp(sb_comm_at(c->sb, tid, time), c->opts->comm) != 0)
		return false;
	return true;
}
