/* Branch stacks -> execution events; see lbr.h. */
#include "decoders/lbr/dlbr.h"

#include <errno.h>
#include <string.h>

void dlbr_init(struct dlbr *d, const struct dlbr_opts *o, const struct dlbr_code *code)
{
	memset(d, 0, sizeof(*d));
	if (o)
		d->o = *o;
	if (!d->o.max_range)
		d->o.max_range = DLBR_MAX_RANGE;
	if (code)
		d->code = *code;
}

static int is_kernel(uint64_t a)
{
	return (int64_t)a < 0;
}

/* perf_branch_entry.type -> event kind and flags; 0 when the entry does not say. */
static int entry_kind(const struct perf_branch_entry *e, enum xev_kind *kind, uint32_t *flags)
{
	switch (e->type) {
	case PERF_BR_COND:
		*kind = XEV_BRANCH, *flags = XEV_F_COND;
		return 1;
	case PERF_BR_UNCOND:
		*kind = XEV_BRANCH, *flags = 0;
		return 1;
	case PERF_BR_IND:
		*kind = XEV_BRANCH, *flags = XEV_F_INDIRECT;
		return 1;
	case PERF_BR_CALL:
		*kind = XEV_CALL, *flags = 0;
		return 1;
	case PERF_BR_IND_CALL:
		*kind = XEV_CALL, *flags = XEV_F_INDIRECT;
		return 1;
	case PERF_BR_COND_CALL:
		*kind = XEV_CALL, *flags = XEV_F_COND;
		return 1;
	case PERF_BR_RET:
		*kind = XEV_RETURN, *flags = XEV_F_INDIRECT;
		return 1;
	case PERF_BR_COND_RET:
		*kind = XEV_RETURN, *flags = XEV_F_INDIRECT | XEV_F_COND;
		return 1;
	case PERF_BR_SYSCALL:
	case PERF_BR_SYSRET:
	case PERF_BR_ERET:
		*kind = XEV_BRANCH, *flags = XEV_F_SYSCALL;
		return 1;
	case PERF_BR_IRQ:
	case PERF_BR_SERROR:
		*kind = XEV_INTERRUPT, *flags = 0;
		return 1;
	default:
		return 0;
	}
}

static void base_event(struct xev *ev, const struct dlbr_sample *s, enum xev_kind kind)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->flags = XEV_F_SAMPLED;
	ev->pid = s->pid;
	ev->tid = s->tid;
	ev->cpu = s->cpu;
	ev->time = s->time;
	ev->cycles = XEV_CYCLES_UNKNOWN;
}

static int emit_range(struct dlbr *d, const struct dlbr_sample *s, uint64_t start, uint64_t end,
		      unsigned cycles, const struct xev_sink *sink)
{
	struct xev ev;
	int have_code = 0;
	int rc;

	/* A range out of or into a trace-off marker is no execution. */
	if (!start || !end)
		return 0;
	if (end < start || end - start >= d->o.max_range || is_kernel(start) != is_kernel(end)) {
		d->st.bad_ranges++;
		return 0;
	}
	d->st.ranges++;
	if (d->code.range) {
		d->ri.insns = 0;
		d->ri.ncond = 0;
		have_code = d->code.range(d->code.ctx, s->pid, s->time, start, end, &d->ri) == 0;
		if (!have_code)
			d->st.no_code++;
	}
	base_event(&ev, s, XEV_BLOCK);
	ev.ip = start;
	ev.end = end;
	ev.insns = have_code ? d->ri.insns : 0;
	ev.weight = 1;
	if (cycles) {
		ev.cycles = cycles;
		d->st.cycles_known++;
	}
	rc = xev_emit(sink, &ev);
	if (rc || !have_code)
		return rc;
	for (uint32_t i = 0; i < d->ri.ncond && i < X86_RANGE_MAX_COND; i++) {
		base_event(&ev, s, XEV_BRANCH);
		ev.flags |= XEV_F_COND;
		ev.ip = d->ri.cond_ip[i];
		ev.addr = d->ri.cond_next[i];
		ev.weight = 1;
		rc = xev_emit(sink, &ev);
		if (rc)
			return rc;
	}
	return 0;
}

static int emit_branch(struct dlbr *d, const struct dlbr_sample *s,
		       const struct perf_branch_entry *e, const struct xev_sink *sink)
{
	enum xev_kind kind = XEV_BRANCH;
	uint32_t flags = 0;
	struct xev ev;

	/* Address 0 marks tracing going on or off (PT-derived stacks: TIP.PGE/PGD). */
	if (!e->from || !e->to) {
		if (!e->from && !e->to)
			return 0;
		base_event(&ev, s, e->from ? XEV_DISABLE : XEV_ENABLE);
		ev.ip = e->from ? e->from : e->to;
		ev.weight = 1;
		return xev_emit(sink, &ev);
	}
	if (!entry_kind(e, &kind, &flags) && d->code.classify &&
	    d->code.classify(d->code.ctx, s->pid, s->time, e->from, &kind, &flags) < 0) {
		kind = XEV_BRANCH;
		flags = 0;
	}
	base_event(&ev, s, kind);
	/* Branch stacks hold taken branches only. */
	ev.flags |= flags | XEV_F_TAKEN;
	ev.ip = e->from;
	ev.addr = e->to;
	ev.weight = 1;
	if (kind == XEV_CALL)
		d->st.calls++;
	else if (kind == XEV_RETURN)
		d->st.returns++;
	else
		d->st.branches++;
	return xev_emit(sink, &ev);
}

static int emit_sample(struct dlbr *d, const struct dlbr_sample *s, const uint64_t *chain,
		       uint32_t nchain, const struct xev_sink *sink)
{
	struct xev ev;

	base_event(&ev, s, XEV_SAMPLE);
	ev.ip = s->ip;
	ev.weight = s->period ? s->period : 1;
	ev.event = s->event;
	ev.stack = chain;
	ev.nstack = nchain;
	(void)d;
	return xev_emit(sink, &ev);
}

/* `-g lbr`: the stack holds the active calls, innermost first; their sources are the
 * return addresses' call sites, so the callchain is ip, e[0].from, e[1].from, ... */
static int call_stack_sample(struct dlbr *d, const struct dlbr_sample *s,
			     const struct xev_sink *sink)
{
	uint32_t n = 0;

	d->chain[n++] = s->ip;
	for (uint32_t i = 0; i < s->nr && n < sizeof(d->chain) / sizeof(d->chain[0]); i++) {
		if (!s->br[i].from)
			break;
		d->chain[n++] = s->br[i].from;
	}
	d->st.calls += n - 1;
	return emit_sample(d, s, d->chain, n, sink);
}

int dlbr_sample(struct dlbr *d, const struct dlbr_sample *s, const struct xev_sink *sink)
{
	int rc;

	d->st.samples++;
	d->st.entries += s->nr;
	if (d->o.call_stack)
		return call_stack_sample(d, s, sink);
	for (uint32_t k = s->nr; k-- > 0;) {
		if (k + 1 < s->nr) {
			rc = emit_range(d, s, s->br[k + 1].to, s->br[k].from, s->br[k].cycles, sink);
			if (rc)
				return rc;
		}
		rc = emit_branch(d, s, &s->br[k], sink);
		if (rc)
			return rc;
	}
	if (d->o.emit_sample)
		return emit_sample(d, s, NULL, 0, sink);
	return 0;
}

long dlbr_parse_stack(const void *p, size_t len, int has_hw_idx,
		      const struct perf_branch_entry **br, uint32_t *nr, uint64_t *hw_idx)
{
	const uint8_t *b = p;
	uint64_t n;
	size_t used = sizeof(uint64_t);

	*hw_idx = UINT64_MAX;
	if (len < used)
		return -EINVAL;
	memcpy(&n, b, sizeof(n));
	if (has_hw_idx) {
		if (len < used + sizeof(uint64_t))
			return -EINVAL;
		memcpy(hw_idx, b + used, sizeof(*hw_idx));
		used += sizeof(uint64_t);
	}
	if (n > (len - used) / sizeof(struct perf_branch_entry))
		return -EINVAL;
	*br = (const struct perf_branch_entry *)(b + used);
	*nr = (uint32_t)n;
	return (long)(used + n * sizeof(struct perf_branch_entry));
}
