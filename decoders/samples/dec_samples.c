/* The samples decoder: PERF_RECORD_SAMPLEs -> XEV_SAMPLE events with their callchain
 * (frame-pointer chains as recorded, or unwound from user registers + stack with
 * libdw when the sample carries them), period as weight, and per-event deltas of
 * group counter values (perf record -e '{cycles,instructions}' with
 * PERF_SAMPLE_READ).
 *
 * Hits of entry/exit probes (events named GROUP:SYM and GROUP:SYM__return with GROUP
 * probe_*, as `xptrace record --probe` and `perf probe` name them) are exact events:
 * XEV_CALL / XEV_RETURN with XEV_F_FUNC.  An entry hit's ip is the function (its
 * callchain, when it has one, comes along as the event's stack); a return
 * hit's ip is the return address in the caller, so the exit names the function by
 * the entry address its paired entry probe hit, and carries the return value when the
 * hit took the register holding it (XEV_F_RETVAL).
 *
 * context-switches samples (record --off-cpu) are where threads left their CPU: with
 * --metric off-cpu each becomes, when its thread is switched back in (the SWITCH
 * record), a sample of its callchain weighing the ns it waited; with any other
 * metric they are left out. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arch/x86_64/x86_regs.h"
#include "decode/decoder.h"
#include "decoders/samples/dsm_unwind.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct dsm {
	struct dec_ctx *c;
	const struct xev_sink *sink;
	uint64_t *stack;
	uint32_t capstack, nstack;
	uint64_t *values;	/* one per attr */
	uint32_t nattrs;
	struct xp_map last;	/* (tid, counter) -> last READ value */
	struct dsm_unwind *uw;
	uint64_t unwound, unwind_failed;
	uint64_t nsamples;
	/* the event of every sample: a struct xev cleared per sample (a `rep stos` of
	 * its ~190 bytes) cost as much as the rest of the decode of a sample */
	struct xev ev;
	/* per attr: PROBE_* and, for an exit probe, its entry probe's attr */
	uint8_t *probe;
	uint32_t *entry_of;
	uint64_t *entry_ip;	/* per entry probe attr: the function's address, 0 unknown */
	/* --metric off-cpu: the context-switches attr, and per thread the switch out waiting
	 * for its switch in (tid -> index in `away`) */
	uint32_t offcpu;	/* UINT32_MAX: none, or another metric */
	struct xp_map away_of;
	struct away { uint64_t time, ip; uint64_t *stack; uint32_t n; int32_t pid; bool on; } *away;
	uint32_t naway, capaway;
};

enum { PROBE_NONE, PROBE_ENTRY, PROBE_EXIT };

/* GROUP:SYM (entry) or GROUP:SYM__return (exit), GROUP starting with "probe". */
static int probe_kind(const struct pd_attr *a)
{
	static const char ret[] = "__return";
	const char *n = a->name, *colon;
	size_t l;

	if (!n || strncmp(n, "probe", 5) != 0 || !(colon = strchr(n, ':')) || !colon[1])
		return PROBE_NONE;
	l = strlen(n);
	return l > sizeof(ret) - 1 && strcmp(n + l - (sizeof(ret) - 1), ret) == 0 ? PROBE_EXIT : PROBE_ENTRY;
}

static bool is_dummy(const struct pd_attr *a)
{
	return a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_DUMMY;
}

static bool accepts(struct dec_ctx *c)
{
	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++) {
		const struct pd_attr *a = pd_attr_at(c->pd, i);
		if (!is_dummy(a) && a->attr.sample_type & PERF_SAMPLE_IP)
			return true;
	}
	return false;
}

/* Samples of every switch of a thread off its CPU (record --off-cpu, perf record -e cs
 * -c 1 --switch-events): the off-cpu metric's. */
static bool is_offcpu(const struct pd_attr *a)
{
	return a->attr.type == PERF_TYPE_SOFTWARE && a->attr.config == PERF_COUNT_SW_CONTEXT_SWITCHES &&
	       !a->attr.freq && a->attr.sample_period == 1 && (a->attr.sample_type & PERF_SAMPLE_TIME);
}

/* Every real event is a metric; the dummy (sideband only), probes (exact events) and
 * switches (off-cpu, a metric of its own) are not. */
static bool is_sampled(const struct pd_attr *a)
{
	return !is_dummy(a) && probe_kind(a) == PROBE_NONE && !is_offcpu(a);
}

/* With probes the tree is merged and measured in time: the span between a thread's
 * events, apportioned to sampled code by the samples. */
static int setup(struct dec_ctx *c)
{
	int rc = dec_setup_sampled(c, is_sampled);
	bool probes = false;

	c->no_branches = true;
	for (uint32_t i = 0; rc == 0 && i < pd_nattrs(c->pd) && c->nmetrics < DEC_MAX_METRICS; i++)
		if (is_offcpu(pd_attr_at(c->pd, i)))
			c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_EVENT, .event = i,
									 .name = "off-cpu", .ns = true };

	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++)
		probes |= probe_kind(pd_attr_at(c->pd, i)) != PROBE_NONE;
	if (rc < 0 || !probes || c->nmetrics == DEC_MAX_METRICS)
		return rc;
	c->metrics[c->nmetrics] = (struct dec_metric){ .kind = DEC_M_TIME, .name = "time", .ns = true };
	c->metric = c->nmetrics++;
	c->merged = true;
	c->sampled = false;
	return 0;
}

/* The sample's callchain into s->stack, leaf first (s->nstack): the recorded one
 * without perf's context markers, or its user part unwound with DWARF when registers
 * and stack came along; frames at its outer end that lie in no mapping of the process
 * are dropped (a frame-pointer walk that left the stack through code without frame
 * pointers reads junk there: 0, or bytes of text such as 0x4f4c4300382d4654). */
static int callchain(struct dsm *s, const struct pd_rec *r)
{
	const struct pd_sample *sm = &r->u.sample;
	uint64_t need = sm->nr_callchain + 1;
	if (s->uw)
		need += DSM_UNWIND_MAX;
	if (XP_GROW(s->stack, s->capstack, need) < 0)
		return -ENOMEM;
	uint32_t n = 0;
	for (uint64_t i = 0; i < sm->nr_callchain; i++) {
		uint64_t a = sm->callchain[i];
		if (a >= PERF_CONTEXT_MAX)
			continue;
		s->stack[n++] = a;
	}
	if (n == 0 && sm->ip)
		s->stack[n++] = sm->ip;
	/* DWARF unwinding replaces the user part when registers and stack came along */
	if (s->uw && sm->user_abi && sm->user_stack_size) {
		uint32_t keep;	/* the kernel part stays, the user part is unwound */
		for (keep = 0; keep < n && (s->stack[keep] >> 63); keep++)
			;
		int got = dsm_unwind(s->uw, s->c, sm, s->stack + keep, DSM_UNWIND_MAX);
		if (got > 0) {
			n = keep + (uint32_t)got;
			s->unwound++;
		} else {
			s->unwind_failed++;
		}
	}
	const struct sb_map *maps;
	if (sb_maps(s->c->sb, (int32_t)sm->pid, &maps))
		while (n > 1 && !(s->stack[n - 1] >> 63) &&
		       !sb_find_map(s->c->sb, (int32_t)sm->pid, s->stack[n - 1], sm->time))
			n--;
	s->nstack = n;
	return 0;
}

/* Pairs every exit probe with the entry probe of the same GROUP:SYM. */
static int pair_probes(struct dsm *s)
{
	const struct pd_file *f = s->c->pd;

	s->probe = calloc(s->nattrs ? s->nattrs : 1, sizeof(*s->probe));
	s->entry_of = calloc(s->nattrs ? s->nattrs : 1, sizeof(*s->entry_of));
	s->entry_ip = calloc(s->nattrs ? s->nattrs : 1, sizeof(*s->entry_ip));
	if (!s->probe || !s->entry_of || !s->entry_ip)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nattrs; i++) {
		const struct pd_attr *a = pd_attr_at(f, i);
		s->probe[i] = (uint8_t)probe_kind(a);
		s->entry_of[i] = UINT32_MAX;
		if (s->probe[i] != PROBE_EXIT)
			continue;
		size_t l = strlen(a->name) - (sizeof("__return") - 1);
		for (uint32_t j = 0; j < s->nattrs; j++) {
			const struct pd_attr *e = pd_attr_at(f, j);
			if (probe_kind(e) == PROBE_ENTRY && strlen(e->name) == l && strncmp(e->name, a->name, l) == 0)
				s->entry_of[i] = j;
		}
	}
	return 0;
}

static int probe_hit(struct dsm *s, const struct pd_rec *r)
{
	const struct pd_sample *sm = &r->u.sample;
	uint32_t i = r->attr->index;
	struct xev ev = {
		.flags = XEV_F_FUNC,
		.pid = (int32_t)sm->pid,
		.tid = (int32_t)sm->tid,
		.cpu = sm->type & PERF_SAMPLE_CPU ? (int32_t)sm->cpu : -1,
		.time = sm->time,
		.cycles = XEV_CYCLES_UNKNOWN,
		.offset = r->offset,
	};

	/* the attr says which probe hit (dec_probe_of: its window) */
	ev.event = i;
	if (s->probe[i] == PROBE_ENTRY) {
		s->entry_ip[i] = sm->ip;
		ev.kind = XEV_CALL;
		ev.addr = sm->ip;
		/* its callers, for the trees that place an outermost probe below them */
		if (sm->nr_callchain || sm->user_stack_size) {
			if (callchain(s, r) < 0)
				return xp_err("decode", NULL, "out of memory");
			ev.stack = s->stack;
			ev.nstack = s->nstack;
		}
	} else {
		ev.kind = XEV_RETURN;
		ev.ip = s->entry_of[i] != UINT32_MAX ? s->entry_ip[s->entry_of[i]] : 0;
		ev.addr = sm->ip;
		if (sm->user_abi && x86_perf_regs_retval(sm->user_regs_mask, sm->user_regs, &ev.arg0))
			ev.flags |= XEV_F_RETVAL;
	}
	return xev_emit(s->sink, &ev);
}

/* Counter value delta since the thread's previous sample of the same counter. */
static uint64_t delta(struct dsm *s, uint64_t key, uint64_t value)
{
	uint64_t prev = 0;

	xp_map_get(&s->last, key, &prev);
	if (xp_map_put(&s->last, key, value) < 0)
		return value;
	return value >= prev ? value - prev : value;
}

static void group_values(struct dsm *s, const struct pd_rec *r, struct xev *ev)
{
	const struct pd_sample *sm = &r->u.sample;
	const struct pd_attr *a = r->attr;

	memset(s->values, 0, s->nattrs * sizeof(*s->values));
	for (uint32_t i = 0; i < sm->nr_values; i++) {
		const struct pd_attr *ma = sm->values[i].id ? pd_attr_by_id(s->c->pd, sm->values[i].id) : NULL;
		uint32_t idx = ma ? ma->index : a->index + i;
		if (idx >= s->nattrs)
			continue;
		uint64_t key = ((uint64_t)sm->tid << 32) ^ (sm->values[i].id ? sm->values[i].id : (uint64_t)idx << 1);
		s->values[idx] = delta(s, key, sm->values[i].value);
		/* as perf: with sample-read, every member's weight (the sampling event's
		 * too) is its counter's delta, not the period */
		if (idx == a->index)
			ev->weight = s->values[idx];
	}
	ev->values = s->values;
	ev->nvalues = s->nattrs;
}

/* A thread leaves its CPU: its user callchain (leaf first) waits for its return. */
static int switch_out(struct dsm *s, const struct pd_rec *r)
{
	const struct pd_sample *sm = &r->u.sample;
	uint64_t i;

	if (!xp_map_get(&s->away_of, sm->tid, &i)) {
		if (XP_GROW(s->away, s->capaway, s->naway + 1) < 0 || xp_map_put(&s->away_of, sm->tid, s->naway) < 0)
			return xp_err("decode", NULL, "out of memory");
		s->away[s->naway] = (struct away){ 0 };
		i = s->naway++;
	}
	struct away *a = &s->away[i];
	uint32_t n = 0;
	free(a->stack);
	a->stack = malloc((sm->nr_callchain ? sm->nr_callchain : 1) * sizeof(*a->stack));
	if (!a->stack)
		return xp_err("decode", NULL, "out of memory");
	for (uint64_t k = 0; k < sm->nr_callchain; k++)
		if (sm->callchain[k] < PERF_CONTEXT_MAX)
			a->stack[n++] = sm->callchain[k];
	*a = (struct away){ sm->time, n ? a->stack[0] : sm->ip, a->stack, n, (int32_t)sm->pid, true };
	return 0;
}

/* It is back: a sample of where it waited, weighing the time it was away. */
static int switch_in(struct dsm *s, const struct pd_rec *r)
{
	uint64_t i;

	if (r->u.sw.out || !r->sid.has_tid || !xp_map_get(&s->away_of, r->sid.tid, &i))
		return 0;
	struct away *a = &s->away[i];
	if (!a->on || r->time < a->time)
		return 0;
	a->on = false;
	struct xev ev = { .kind = XEV_SAMPLE, .flags = XEV_F_SAMPLED, .time = r->time, .ip = a->ip,
			  .cycles = XEV_CYCLES_UNKNOWN, .pid = a->pid, .tid = (int32_t)r->sid.tid,
			  .cpu = r->sid.has_cpu ? (int32_t)r->sid.cpu : -1, .weight = r->time - a->time,
			  .stack = a->stack, .nstack = a->n, .event = s->offcpu, .offset = r->offset };
	s->nsamples++;
	return xev_emit(s->sink, &ev);
}

static int on_rec(void *arg, const struct pd_rec *r)
{
	struct dsm *s = arg;
	const struct pd_sample *sm;
	struct xev *ev = &s->ev;

	if (r->type == PERF_RECORD_SWITCH || r->type == PERF_RECORD_SWITCH_CPU_WIDE) {
		int e = s->offcpu != UINT32_MAX ? switch_in(s, r) : 0;

		if (e < 0 || !(s->c->wants & DEC_WANT_SWITCH) || !r->sid.has_tid || !r->sid.has_time)
			return e;
		/* the sample id is the thread's that leaves (out) or comes (in), in a
		 * cpu-wide record too */
		struct xev sw = { .kind = XEV_SWITCH, .sub = r->u.sw.out ? XEV_SWITCH_OUT : XEV_SWITCH_IN,
				  .pid = (int32_t)r->sid.pid, .tid = (int32_t)r->sid.tid,
				  .cpu = r->sid.has_cpu ? (int32_t)r->sid.cpu : -1, .time = r->sid.time,
				  .cycles = XEV_CYCLES_UNKNOWN, .offset = r->offset };
		return xev_emit(s->sink, &sw);
	}
	if (r->type != PERF_RECORD_SAMPLE || !r->attr || is_dummy(r->attr))
		return 0;
	if (s->probe[r->attr->index] != PROBE_NONE)
		return probe_hit(s, r);
	if (is_offcpu(r->attr))
		return s->offcpu == UINT32_MAX ? 0 : switch_out(s, r);
	if (s->offcpu != UINT32_MAX)	/* the time on the CPU is another metric's */
		return 0;
	sm = &r->u.sample;
	/* every field a sample has is set here; the others stay as run() cleared them */
	ev->pid = (int32_t)sm->pid;
	ev->tid = (int32_t)sm->tid;
	ev->cpu = sm->type & PERF_SAMPLE_CPU ? (int32_t)sm->cpu : -1;
	ev->time = sm->time;
	ev->ip = sm->ip;
	ev->event = r->attr->index;
	ev->weight = sm->type & PERF_SAMPLE_PERIOD ? sm->period :
		(r->attr->attr.freq ? 1 : r->attr->attr.sample_period);
	ev->offset = r->offset;
	ev->values = NULL;
	ev->nvalues = 0;
	if (sm->type & PERF_SAMPLE_READ)
		group_values(s, r, ev);
	if (callchain(s, r) < 0)
		return xp_err("decode", NULL, "out of memory");
	ev->stack = s->stack;
	ev->nstack = s->nstack;
	s->nsamples++;
	return xev_emit(s->sink, ev);
}

static int run(struct dec_ctx *c, const struct xev_sink *sink)
{
	struct dsm s = { .c = c, .sink = sink, .nattrs = pd_nattrs(c->pd),
			 .ev = { .kind = XEV_SAMPLE, .flags = XEV_F_SAMPLED, .cycles = XEV_CYCLES_UNKNOWN } };
	int rc;

	s.values = calloc(s.nattrs ? s.nattrs : 1, sizeof(*s.values));
	s.offcpu = UINT32_MAX;
	if (c->metrics[c->metric].kind == DEC_M_EVENT && strcmp(c->metrics[c->metric].name, "off-cpu") == 0)
		s.offcpu = c->metrics[c->metric].event;
	if (!s.values || pair_probes(&s) < 0) {
		rc = xp_err("decode", NULL, "out of memory");
		goto out;
	}
	for (uint32_t i = 0; i < s.nattrs; i++) {
		const struct pd_attr *a = pd_attr_at(c->pd, i);
		if (a->attr.sample_type & PERF_SAMPLE_REGS_USER && a->attr.sample_type & PERF_SAMPLE_STACK_USER) {
			s.uw = dsm_unwind_new(c);
			break;
		}
	}
	rc = dec_read_samples(c, on_rec, &s);
	/* AUX-area data no decoder took (not Intel PT, or PT without a recognisable
	 * event) is a trace nothing here can decode: a failure, unlike a sampling run
	 * that caught no sample */
	if (rc == 0 && !s.nsamples && pd_stats(c->pd)->by_type[PD_RECORD_AUXTRACE])
		rc = xp_err(pd_name(c->pd), "xptrace decodes Intel PT AUX data whose event is named "
			    "intel_pt or whose AUXTRACE_INFO record says Intel PT",
			    "no samples, and AUX-area trace data of a kind xptrace does not decode");
	else if (rc == 0 && !s.nsamples)
		xp_warn("%s: no samples in this trace", pd_name(c->pd));
	if (s.unwind_failed)
		xp_warn("%llu of %llu samples could not be unwound with DWARF (their stacks are the "
			"recorded ones)", (unsigned long long)s.unwind_failed,
			(unsigned long long)(s.unwind_failed + s.unwound));
out:
	dsm_unwind_free(s.uw);
	free(s.probe);
	free(s.entry_of);
	free(s.entry_ip);
	free(s.values);
	free(s.stack);
	xp_map_free(&s.last);
	for (uint32_t i = 0; i < s.naway; i++)
		free(s.away[i].stack);
	free(s.away);
	xp_map_free(&s.away_of);
	return rc;
}

const struct dec_decoder dec_samples = {
	.name = "samples",
	.default_view = "functions",
	.accepts = accepts,
	.setup = setup,
	.run = run,
};
