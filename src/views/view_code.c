/* The PT views as `xptrace decode` views (decode.h): --insn, --blocks (also as a
 * per-instruction callgrind profile) and --annotate SYM on any exact stream; --blocks
 * and --annotate also on sampled addresses (bb_samples.c).  Code
 * bytes, symbols and source lines come from the session and the symbol layer. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/bb_views.h"
#include "views/view.h"
#include "session/sb_code.h"
#include "util/xp_err.h"

struct vstate {
	struct dec_ctx *c;
	struct sb_code *mem;
	struct bb_env env;
	struct bb_view_opts vo;
	struct bb_filter filt;
	struct xev_sink view;	/* behind the filter */
	bool filtered;
	struct bb_insn_view *iv;
	struct bb_tally *tally;
	struct bb_cg *cg;
	struct bb_samples *smp;	/* traces without branch data */
	bool cgfmt;		/* --format callgrind */
	unsigned smetric;	/* what a sample weighs in the sample views */
	const char *annotate;
	struct pd_fault *faults;
};

static size_t env_read(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint8_t *buf, size_t n)
{
	struct vstate *s = ctx;
	return sb_code_read(s->mem, pid, time, ip, buf, n);
}

static void env_span(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *from, uint64_t *to)
{
	struct vstate *s = ctx;
	sb_code_span(s->mem, pid, time, ip, from, to);
}

static const char *env_symbol(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start,
			      uint64_t *size)
{
	struct vstate *s = ctx;
	const struct sym_fn *f = sym_fn(s->c->sym, dec_fn_of(s->c, pid, ip, time));
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);
	uint64_t vaddr;
	struct jit_sym js;
	if (f && f->jit) {	/* where the code lies now: it may have moved since */
		if (!jit_find(s->c->jit, pid, time, ip, &js))
			return NULL;
		*start = js.start;
		*size = js.size;
		return f->name;
	}
	if (sym_map_uprobes(m)) {	/* one name for the page, offsets from its start */
		*start = m->start;
		*size = m->end - m->start;
		return f ? f->name : NULL;
	}
	if (!f || !f->resolved || !m || !sym_map_vaddr(s->c->sym, m, ip, &vaddr) || vaddr < f->start)
		return NULL;
	*start = ip - (vaddr - f->start);
	*size = f->size;
	return f->name;
}

static const char *env_fn_name(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **module)
{
	struct vstate *s = ctx;
	const struct sym_fn *f = sym_fn(s->c->sym, dec_fn_of(s->c, pid, ip, time));
	if (!f)
		return NULL;
	*module = f->module;
	return f->name;
}

static bool env_srcline(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **file, int *line)
{
	struct vstate *s = ctx;
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);
	if (m && sym_srcline(s->c->sym, m, ip, file, line))
		return true;
	return (!m || !m->dso || m->dso->anon) && s->c->jit && jit_srcline(s->c->jit, pid, time, ip, file, line);
}

static bool env_obj(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **path, uint64_t *vaddr)
{
	struct vstate *s = ctx;
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);
	if (!m || !(*path = sb_dso_file(m->dso)) || !sym_map_vaddr(s->c->sym, m, ip, vaddr))
		return false;
	return true;
}

static const char *env_comm(void *ctx, int32_t tid, uint64_t time)
{
	struct vstate *s = ctx;
	return sb_comm_at(s->c->sb, tid, time);
}

static const char *env_dso(void *ctx, int32_t pid, uint64_t time, uint64_t ip)
{
	struct vstate *s = ctx;
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);
	return m && m->dso ? m->dso->path : NULL;
}

static bool env_inlined(void *ctx, int32_t pid, uint64_t time, uint64_t ip, char *buf, size_t n)
{
	struct vstate *s = ctx;
	uint32_t fns[16];
	size_t k = 0;
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);
	unsigned nf = sym_inline(s->c->sym, m, ip, fns, 16);
	buf[0] = 0;
	for (unsigned i = nf; i-- > 0 && k < n;) {
		const char *name = sym_fn(s->c->sym, fns[i])->name;
		int len = (int)(strlen(name) - strlen(" [inline]"));
		k += (size_t)snprintf(buf + k, n - k, "%s%.*s", k ? " > " : "", len, name);
	}
	return nf > 0;
}

static int open_common(struct view_ctx *vc, struct vstate **out)
{
	struct dec_ctx *c = vc->c;
	struct vstate *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->c = c;
	s->mem = sb_code_new(c->sb, c->sym, c->jit);
	if (!s->mem) {
		free(s);
		return -ENOMEM;
	}
	s->env = (struct bb_env){ env_read, env_symbol, env_srcline, env_span, s, env_fn_name, env_obj,
				  env_comm, env_dso, env_inlined };
	s->vo.format = vc->o->format == OUT_JSONL ? BB_JSONL : BB_TEXT;
	s->vo.out = vc->out;
	s->vo.env = &s->env;
	s->vo.raw_time = c->pd == NULL;	/* raw inputs: TSC as is, no perf clock */
	const char *syntax = dec_opt(c, "syntax");
	if (syntax && strcmp(syntax, "intel") && strcmp(syntax, "att")) {
		xp_usage_error("decode", "--syntax %s: expected intel or att", syntax);
		goto fail;
	}
	s->vo.intel = syntax && strcmp(syntax, "intel") == 0;
	s->vo.srcline = dec_opt(c, "srcline") != NULL;
	s->vo.inlined = dec_inline(c);
	const char *fields = dec_opt(c, "fields");
	if (fields) {
		if (bb_fields_parse(fields, BB_FIELDS_DEFAULT, &s->vo.fields) < 0) {
			sb_code_free(s->mem);
			free(s);
			return -EOPNOTSUPP;	/* the engine's ENG_EREQUEST: a usage error */
		}
		if (s->vo.srcline)	/* --srcline: +srcline */
			s->vo.fields |= BB_FIELD(SRCLINE);
	}
	*out = s;
	return 0;
fail:
	sb_code_free(s->mem);
	free(s);
	return -EINVAL;	/* not ENG_EREQUEST: a bad option here has always exited 1 */
}

/* The filter in front of the view: --sym (--tid, --comm, --time: the engine's). */
static int set_filter(struct vstate *s, xev_sink_fn fn, void *ctx)
{
	const char *sym = dec_opt(s->c, "sym");
	s->view = (struct xev_sink){ fn, ctx, NULL };
	bb_filter_init(&s->filt, &s->env, s->view);
	s->filt.sym = sym;
	s->filtered = sym != NULL;
	return 0;
}

/* The metric samples are weighed by: the decode's when samples carry it (the sample
 * count, an event's period), else (time in a merged trace) the first event's period. */
static unsigned sample_metric(const struct dec_ctx *c)
{
	unsigned m = c->metric;
	if (c->metrics[m].kind == DEC_M_SAMPLES || c->metrics[m].kind == DEC_M_EVENT)
		return m;
	for (m = 0; m < c->nmetrics; m++)
		if (c->metrics[m].kind == DEC_M_EVENT)
			return m;
	for (m = 0; m < c->nmetrics; m++)
		if (c->metrics[m].kind == DEC_M_SAMPLES)
			return m;
	return c->metric;
}

/* A sample at its address, weighed by the sample views' metric. */
static int sample_event(void *state, const struct xev *ev)
{
	struct vstate *s = state;
	uint64_t w[DEC_MAX_METRICS];
	if (ev->kind != XEV_SAMPLE || !dec_weights(s->c, ev, w) || !w[s->smetric])
		return 0;
	return bb_samples_add(s->smp, ev->pid, ev->time, ev->ip, w[s->smetric]) < 0 ? -ENOMEM : 0;
}

/* The unfiltered hot path calls the consumer directly. */
static int tally_event(void *state, const struct xev *ev)
{
	struct vstate *s = state;
	if (s->filtered)
		return bb_filter_event(&s->filt, ev);
	if (s->smp)
		return sample_event(s, ev);
	return s->tally ? bb_tally_event(s->tally, ev) : bb_cg_event(s->cg, ev);
}

static int tally_batch(void *state, const struct xev *evs, size_t n)
{
	struct vstate *s = state;
	if (s->tally && !s->filtered && !s->smp)
		return bb_tally_batch(s->tally, evs, n);
	for (size_t i = 0; i < n; i++) {
		int r = tally_event(s, &evs[i]);
		if (r)
			return r;
	}
	return 0;
}

/* -j: a plain block tally splits (filtered, sampled and callgrind states do not). */
static int tally_part_open(void *state, struct xev_sink *part)
{
	struct vstate *s = state;
	if (!s->tally || s->filtered || s->smp)
		return -EOPNOTSUPP;
	struct bb_tally *t = bb_tally_new();
	if (!t)
		return -ENOMEM;
	*part = (struct xev_sink){ bb_tally_event, t, bb_tally_batch };
	return 0;
}

static int tally_part_join(void *state, struct xev_sink *part)
{
	struct vstate *s = state;
	int r = s ? bb_tally_merge(s->tally, part->ctx) : 0;
	bb_tally_free(part->ctx);
	part->ctx = NULL;
	return r;
}

static int insn_event(void *state, const struct xev *ev)
{
	struct vstate *s = state;
	return s->filtered ? bb_filter_event(&s->filt, ev) : bb_insn_view_event(s->iv, ev);
}

/* --insn: the threads a signal ended */
static int load_faults(struct vstate *s)
{
	size_t n;
	int r = view_load_faults(s->c, &s->faults, &n);

	s->vo.faults = s->faults;
	s->vo.nfaults = n;
	return r;
}

static void free_state(struct vstate *s)
{
	free(s->faults);
	bb_tally_free(s->tally);
	bb_cg_free(s->cg);
	bb_samples_free(s->smp);
	sb_code_free(s->mem);
	free(s);
}

int view_need_branches(const struct view_ctx *vc)
{
	if (!vc->c->no_branches)
		return 0;
	char what[48];
	snprintf(what, sizeof(what), "--%s", vc->o->view);
	return xp_err_code(-EINVAL, what, "record with --mode step, pt or lbr for an instruction "
			   "stream; --annotate SYM and --blocks show this trace's samples per instruction",
			   "this trace has no branch data (its samples give addresses, not what ran between "
			   "them)");
}

static int insn_open(struct view_ctx *vc, void **state)
{
	if (view_need_branches(vc) < 0)
		return -EINVAL;
	struct vstate *s;
	int r = open_common(vc, &s);
	if (r < 0)
		return r;
	vc->wants = (DEC_WANT_ALL & ~(1u << XEV_BRANCH | 1u << XEV_CALL | 1u << XEV_RETURN)) |
		    DEC_WANT_FINE_ORDER;
	if ((r = load_faults(s)) < 0) {
		free_state(s);
		return r;
	}
	s->iv = bb_insn_view_new(&s->vo);
	r = s->iv ? set_filter(s, bb_insn_view_event, s->iv) : -ENOMEM;
	if (r < 0) {
		bb_insn_view_free(s->iv);
		free_state(s);
		return r;
	}
	*state = s;
	return 0;
}

/* --sym that matched no code: said, exit 1, as every filter (README) */
static int sym_matched(const struct vstate *s, int status)
{
	if (status < 0 || !s->filt.sym || s->filt.matched)
		return status;
	return xp_err_code(-ENOENT, "decode", "check the name with --functions",
			   "no code of a function named '%s' in the trace%s", s->filt.sym,
			   s->c->opts->tid >= 0 || s->c->opts->comm || s->c->opts->time ?
			   " with these filters" : "");
}

static int insn_close(void *state, int status)
{
	struct vstate *s = state;
	int w = bb_insn_view_free(s->iv);
	status = sym_matched(s, status);
	free_state(s);
	if (w < 0 && status >= 0)
		return xp_err("decode", NULL, "writing the output failed");
	return status < 0 ? status : 0;
}

static int tally_open(struct view_ctx *vc, void **state)
{
	struct vstate *s;
	int r = open_common(vc, &s);
	if (r < 0)
		return r;
	if (vc->c->no_branches) {
		/* --annotate and --blocks on sampled addresses: their samples per
		 * instruction, per block */
		s->smp = bb_samples_new();
		s->smetric = sample_metric(vc->c);
		r = s->smp ? set_filter(s, sample_event, s) : -ENOMEM;
	} else if (vc->o->format == OUT_CALLGRIND) {
		s->cg = bb_cg_new(&s->env);
		r = s->cg ? set_filter(s, bb_cg_event, s->cg) : -ENOMEM;
	} else {
		/* block tallies need no call structure */
		vc->wants = DEC_WANT_ALL & ~(1u << XEV_CALL | 1u << XEV_RETURN);
		s->tally = bb_tally_new();
		r = s->tally ? set_filter(s, bb_tally_event, s->tally) : -ENOMEM;
	}
	if (r < 0) {
		free_state(s);
		return r;
	}
	s->annotate = vc->o->view_arg;
	s->cgfmt = vc->o->format == OUT_CALLGRIND;
	*state = s;
	return 0;
}

static int blocks_close(void *state, int status)
{
	struct vstate *s = state;
	int r = 0;
	status = sym_matched(s, status);
	if (status >= 0) {
		const char *metric = s->c->metrics[s->smetric].name;
		if (s->smp && s->cgfmt)
			r = bb_samples_callgrind(s->smp, metric, s->vo.out, s->c->perf_data, &s->env);
		else if (s->smp)
			r = bb_samples_blocks(s->smp, metric, &s->vo);
		else if (s->cg)
			r = bb_cg_write(s->cg, s->vo.out, s->c->perf_data);
		else
			r = bb_blocks_report(s->tally, &s->vo);
	}
	free_state(s);
	return status < 0 ? status : r;
}

static int annotate_close(void *state, int status)
{
	struct vstate *s = state;
	int r = 0;
	if (status >= 0 && s->smp) {
		r = bb_samples_annotate(s->smp, s->annotate, s->c->metrics[s->smetric].name, &s->vo);
		if (r == -ENOENT)
			r = xp_err_code(r, s->annotate, "check the name with --functions",
					"no sample of this function in the trace");
		else if (r < 0)
			r = xp_err_code(r, s->annotate, NULL, "the annotation failed");
	} else if (status >= 0 && bb_annotate_report(s->tally, s->annotate, &s->vo) < 0)
		r = xp_err_code(-ENOENT, s->annotate, "check the name with --blocks or --functions",
				"no executed code of this function in the trace");
	free_state(s);
	return status < 0 ? status : r;
}

static const struct dec_option insn_options[] = {
	{ "syntax", "att|intel", "disassembly syntax of --insn/--annotate (default att)" },
	{ "srcline", NULL, "--insn: source file:line of each instruction; --functions: of each function; "
	  "--annotate: source lines above their instructions (on samples always)" },
	{ "fields", "LIST", "--insn: what a line shows, by perf script's field names, laid out as perf script "
	  "lays them out (jsonl: only their keys): comm, tid, pid, time, cpu, ip, sym, symoff, dso, srcline, "
	  "insnlen, insn (the bytes), disasm; +field,-field: add to / take from the default (time, tid, cpu, ip, "
	  "sym, symoff, insn, disasm); e.g. -F ip as perf script --itrace=i0ns -F ip" },
	{ NULL, NULL, NULL },
};

static const struct dec_option filter_options[] = {
	{ "sym", "NAME", "--insn, --blocks, --annotate: only code of function NAME (a glob: 'is_*'; no match: exit 1); --calls: its calls and callees" },
	{ NULL, NULL, NULL },
};

static const char *const insn_honours[] = { "tid", "comm", "time", "sym", NULL };
static const char *const blocks_honours[] = { "tid", "comm", "time", NULL };
static const char *const annotate_honours[] = { "tid", "comm", "time", "sym", "syntax", "srcline", "inline", "no-inline", NULL };

const struct dec_view view_insn = {
	.name = "insn",
	.help = "instruction stream: time, tid, ip, symbol+offset, bytes, disassembly",
	.formats = 1u << OUT_TEXT | 1u << OUT_JSONL,
	.options = insn_options,
	.honours = insn_honours,
	.open = insn_open,
	.event = insn_event,
	.close = insn_close,
};

const struct dec_view view_blocks = {
	.name = "blocks",
	.help = "basic blocks: count, insns, cycles, IPC, taken/not-taken (callgrind: per insn); "
		"on samples: samples per block",
	.formats = 1u << OUT_TEXT | 1u << OUT_JSONL | 1u << OUT_CALLGRIND,
	.options = filter_options,
	.honours = blocks_honours,
	.open = tally_open,
	.event = tally_event,
	.batch = tally_batch,
	.close = blocks_close,
	.part_open = tally_part_open,
	.part_join = tally_part_join,
};

const struct dec_view view_annotate = {
	.name = "annotate",
	.arg = "SYM",
	.help = "disassembly of SYM with per-instruction counts, cycles, branch taken %; on samples: "
		"samples and percent per instruction with source lines (like perf annotate)",
	.formats = 1u << OUT_TEXT | 1u << OUT_JSONL,
	.honours = annotate_honours,
	.open = tally_open,
	.event = tally_event,
	.batch = tally_batch,
	.close = annotate_close,
	.part_open = tally_part_open,
	.part_join = tally_part_join,
};
