/* --calls: every call of an exact trace (PT, step, probes) in the order it was made, as
 * `uftrace replay` shows them: a leaf call on one line with its duration, a call with
 * callees as `name() {` ... `} (name)` lines, indented by depth.  jsonl has one object per
 * call (written when it returns), chrome one complete event per call.
 *
 * Streamed: per thread only the stack of open calls is kept.  A call is shown once it
 * returns; with --min-duration its caller's `{` line waits until a callee long enough
 * returns (a callee that long makes its callers at least that long), so nothing is
 * buffered but the stack.
 *
 * The clock is the trace's time (ns) or, when the trace has no timestamps, the
 * thread's instruction count, said in every format.  A return probe's hit holds the
 * return value register: text and jsonl show the value as the function's DWARF type
 * reads it (none for void, in hex without debug info).  Sample traces have no calls: in
 * chrome they become a sampled-stack track (a frame lasts while consecutive samples
 * have it); merged traces (probes and samples) add their samples as instant events.
 *
 * Code the compiler inlined (exact traces, unless --no-inline) is a call of its own,
 * `NAME [inline]`, from where control enters its range from outside to where it leaves
 * it (as the call tree's inline nodes): its frames sit above the function's own and
 * leave with it; a real call from inside nests below them. */
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_build.h"
#include "perfdata/pd_faults.h"
#include "views/tree_inline.h"
#include "analysis/bb.h"
#include "analysis/ct_sig.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct frame {
	uint32_t fn;
	uint64_t start;
	uint32_t vdepth;	/* shown callers below it */
	bool shown;		/* --sym, --time */
	bool open;		/* text: its `{` line is out */
	bool has_ret;		/* `ret` holds the return value register */
	uint64_t ret;
	uint64_t sig;		/* a signal handler's call: the signal's id (ct_sig.h) */
	bool inl;		/* code inlined into the frame below */
};

struct cth {
	int32_t pid, tid;
	struct frame *st;
	uint32_t n, cap;
	struct ct_sig sig;	/* its signal handlers */
	uint64_t tramp;		/* the signal whose handler returned into its trampoline */
	bool exact;		/* a block, call or transfer of it was seen */
	uint64_t insns;		/* instructions so far: the clock of untimed traces */
	uint64_t last;		/* the thread's latest clock */
	uint64_t time;		/* its latest timestamp (names over time) */
	bool named;		/* chrome: its metadata is out */
	uint64_t span_end;	/* sampled track: where the last sample's frames end (0: at
				 * the next sample) */
};

struct vcalls {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	struct xp_map tids, pids;
	struct cth *th;
	uint32_t nth, capth;
	bool started;
	bool insns;		/* the clock counts instructions, not ns */
	bool sample_track;	/* a sample trace in chrome: stacks become spans */
	int clock_m;		/* the metric of a software clock event (cpu-clock,
				 * task-clock: its period is the CPU time of a sample), -1 */
	uint64_t min_dur, t0, t1;
	uint32_t max_depth;	/* --depth: calls nested deeper than this are not shown */
	const char *sym;
	bool header;
	struct out_buf line;
	struct out_chrome ch;
	uint32_t *fns;
	uint32_t capfns;
	struct out_buf stack;
	uint64_t calls;
	struct xp_map rets;	/* fn -> its struct sym_ret, packed (ret_of) */
	struct pd_fault *faults;	/* threads a signal ended (view_load_faults) */
	size_t nfaults;
	/* while the calls a signal cut short are shown: the signal, and the call it hit */
	const struct pd_fault *dying;
	const struct frame *dying_top;
	struct ti *inl;		/* inline frames, NULL: --no-inline or sampled */
};

static int oom(void) { return xp_err("decode", "decode a smaller trace or time range", "out of memory"); }

/* "10", "10ns", "2.5us", "3ms", "1s" -> ns (or instructions: a plain count) */
static int parse_duration(const char *s, uint64_t *out)
{
	static const struct { const char *unit; double mul; } units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double d = strtod(s, &end);

	if (end == s || d < 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strcmp(end, units[i].unit) == 0) {
			*out = (uint64_t)(d * units[i].mul + 0.5);
			return 0;
		}
	return -EINVAL;
}

static int on_open(struct view_ctx *vc, void **state)
{
	struct dec_ctx *c = vc->c;
	const char *md = dec_opt(c, "min-duration"), *t = c->opts->time, *depth = dec_opt(c, "depth");
	struct vcalls *v;

	if (vc->o->percent_limit > 0)
		return xp_usage_error("decode", "--calls streams the calls as they return, before any total "
				      "is known: give --min-duration instead of --percent-limit"), -EOPNOTSUPP;
	if (c->sampled && !c->merged && vc->o->format != OUT_CHROME)
		return xp_err_code(-EOPNOTSUPP, "decode", "use --calltree or --functions, or --calls --format chrome "
				   "for a sampled-stack timeline",
				   "--calls: a sample trace holds no calls (record --mode pt, step or --probe)");
	v = calloc(1, sizeof(*v));
	if (!v)
		return oom();
	v->c = c;
	v->o = vc->o;
	v->out = vc->out;
	v->t1 = UINT64_MAX;
	v->max_depth = UINT32_MAX;
	if (depth) {
		char *end;
		errno = 0;
		unsigned long d = strtoul(depth, &end, 10);
		if (end == depth || *end || errno || d < 1 || d > UINT32_MAX || depth[0] == '-') {
			free(v);
			return xp_usage_error("decode", "--depth %s: expected a number of levels, 1 or more", depth),
			       -EOPNOTSUPP;
		}
		v->max_depth = (uint32_t)d;
	}
	v->sym = dec_opt(c, "sym");
	v->sample_track = c->sampled && !c->merged;
	v->clock_m = -1;
	for (unsigned m = 0; m < c->nmetrics && v->clock_m < 0; m++)
		if (c->metrics[m].kind == DEC_M_EVENT && (strncmp(c->metrics[m].name, "cpu-clock", 9) == 0 ||
							 strncmp(c->metrics[m].name, "task-clock", 10) == 0))
			v->clock_m = (int)m;
	/* the clock follows the metric: instruction traces (PT, step) count instructions
	 * unless --metric time asks for their timestamps (which step traces and PT without
	 * CYC/MTC packets only have at a few points) */
	v->insns = c->metrics[c->metric].kind == DEC_M_INSNS;
	uint64_t first = 0, last = 0;
	if (c->pd && !v->insns)	/* percentages and +S of the trace's ns, not of instructions */
		pd_sample_time(c->pd, &first, &last);
	if ((md && parse_duration(md, &v->min_dur) < 0) ||
	    (t && bb_parse_time_range(t, first, last, &v->t0, &v->t1) < 0)) {
		free(v);
		if (md && parse_duration(md, &(uint64_t){ 0 }) < 0)
			xp_usage_error("decode", "--min-duration %s: expected a number with ns, us, ms or s", md);
		else
			xp_usage_error("decode", "--time %s: expected A-B, A- or -B (ns or seconds.ns; +S and "
				       "percentages of a trace with sample times, on its ns clock)", t);
		return -EOPNOTSUPP;
	}
	int r = view_load_faults(c, &v->faults, &v->nfaults);
	if (r < 0) {
		free(v);
		return r;
	}
	/* no memory for it: calls without inline frames */
	v->inl = dec_inline(c) && !c->sampled ? ti_new(c) : NULL;
	out_buf_init(&v->line, NULL, 0);
	out_buf_init(&v->stack, NULL, 0);
	vc->wants = (1u << XEV_CALL) | (1u << XEV_RETURN) | (1u << XEV_BLOCK) | (1u << XEV_GAP) |
		(1u << XEV_SAMPLE) | (1u << XEV_BRANCH) | (1u << XEV_ENABLE) | (1u << XEV_DISABLE) |
		(1u << XEV_INTERRUPT) | (1u << XEV_TSX);
	*state = v;
	return 0;
}

static struct cth *thread_of(struct vcalls *v, int32_t pid, int32_t tid)
{
	uint64_t i;

	if (xp_map_get(&v->tids, (uint32_t)tid, &i))
		return &v->th[i];
	if (XP_GROW(v->th, v->capth, v->nth + 1) < 0 || xp_map_put(&v->tids, (uint32_t)tid, v->nth) < 0)
		return NULL;
	v->th[v->nth] = (struct cth){ .pid = pid, .tid = tid };
	return &v->th[v->nth++];
}

static int start_output(struct vcalls *v)
{
	const struct dec_ctx *c = v->c;
	bool timed = c->on_request && strcmp(c->on_request, "time") == 0;	/* PT: when asked */

	v->started = true;
	if (v->o->format != OUT_CHROME)
		return 0;
	for (unsigned m = 0; m < c->nmetrics; m++)
		timed |= c->metrics[m].kind == DEC_M_TIME;
	return out_chrome_begin(&v->ch, v->out, v->insns,
				v->insns && timed ? "instructions (1 us = 1 instruction; --metric time: the trace's "
				"timestamps)" :
				v->insns ? "instructions (1 us = 1 instruction: the trace has no timestamps)" :
				c->traced_time ? "perf clock (CLOCK_MONOTONIC) of the traced run (step mode stops the "
				"program at its branches), not native times" : "perf clock (CLOCK_MONOTONIC)");
}

static int flush_line(struct vcalls *v)
{
	if (v->line.len < (64u << 10))
		return 0;
	int rc = out_buf_write(&v->line, v->out);
	v->line.len = 0;
	return rc == -ENOMEM ? oom() : 0;
}

static void put_duration(struct out_buf *b, bool insns, uint64_t d)
{
	static const struct { uint64_t div; const char *unit; } units[] = {
		{ 1, "ns" }, { 1000, "us" }, { 1000000, "ms" }, { 1000000000, " s" },
	};
	unsigned u = 1;

	if (insns) {
		out_buf_printf(b, "%12" PRIu64 " in", d);
		return;
	}
	while (u < 3 && d >= units[u + 1].div)
		u++;
	out_buf_printf(b, "%8" PRIu64 ".%03" PRIu64 " %s", d / units[u].div,
		       d % units[u].div * 1000 / units[u].div, units[u].unit);
}

static void text_header(struct vcalls *v)
{
	v->header = true;
	if (v->insns)
		fprintf(v->out, "# calls: the clock counts the thread's instructions (in; --metric time: "
			"the trace's timestamps)\n#         START        DURATION     TID  FUNCTION\n");
	else
		fprintf(v->out, "# calls: START in seconds (perf clock), DURATION of the call\n"
			"#             START        DURATION     TID  FUNCTION\n");
}

/* What fn returns (DWARF), looked up once per function. */
static struct sym_ret ret_of(struct vcalls *v, uint32_t fn)
{
	uint64_t k;

	if (xp_map_get(&v->rets, fn, &k))
		return (struct sym_ret){ (enum sym_ret_kind)(k >> 8), (unsigned)(k & 0xff) };
	struct sym_ret r = sym_fn_ret(v->c->sym, fn);
	xp_map_put(&v->rets, fn, (uint64_t)r.kind << 8 | r.size);
	return r;
}

/* The return value as its type reads the register: the low `size` bytes, signed or
 * not; false when there is none to show (void, or not returned in the register). */
static bool retval(struct vcalls *v, const struct frame *f, struct sym_ret *r, uint64_t *val)
{
	if (!f->has_ret)
		return false;
	*r = ret_of(v, f->fn);
	uint64_t x = f->ret;
	unsigned bits = r->size * 8;
	switch (r->kind) {
	case SYM_RET_VOID:
	case SYM_RET_OTHER:
		return false;
	case SYM_RET_SIGNED:
		if (bits && bits < 64) {
			x &= (1ULL << bits) - 1;
			if (x >> (bits - 1))
				x |= ~0ULL << bits;
		}
		break;
	case SYM_RET_UNSIGNED:
	case SYM_RET_BOOL:
		if (bits && bits < 64)
			x &= (1ULL << bits) - 1;
		break;
	default:
		break;
	}
	*val = x;
	return true;
}

static bool text_retval(struct vcalls *v, struct out_buf *b, const struct frame *f)
{
	struct sym_ret r;
	uint64_t x;

	if (!retval(v, f, &r, &x))
		return false;
	if (r.kind == SYM_RET_SIGNED)
		out_buf_printf(b, " = %" PRId64, (int64_t)x);
	else if (r.kind == SYM_RET_UNSIGNED || r.kind == SYM_RET_BOOL)
		out_buf_printf(b, " = %" PRIu64, x);
	else
		out_buf_printf(b, " = %#" PRIx64, x);
	return true;
}

/* A call the thread's fatal signal cut short: the call it hit says how (as --insn's last
 * line), its callers that they never returned. */
static void text_death(struct vcalls *v, const struct frame *f)
{
	struct out_buf *b = &v->line;
	char nb[16];

	if (!v->dying)
		return;
	if (f != v->dying_top) {
		out_buf_printf(b, "  not returned: %s", pd_signal_name(v->dying->signo, nb, sizeof(nb)));
		return;
	}
	out_buf_put(b, v->dying->fault ? "  faulted: " : "  killed by ", v->dying->fault ? 11 : 12);
	view_fault_text(b, v->dying);
}

static const char inline_mark[] = " [inline]";

/* The length of a function's name without an inline function's mark. */
static int bare_len(const char *name, bool inl)
{
	size_t n = strlen(name), k = sizeof(inline_mark) - 1;
	return (int)(inl && n >= k && !strcmp(name + n - k, inline_mark) ? n - k : n);
}

/* kind: '{' a call with callees begins, ';' a call without, '}' the first one ends;
 * inlined code: `name() [inline] {`, `name() [inline];` */
static int text_line(struct vcalls *v, const struct cth *th, const struct frame *f, char kind, uint64_t dur)
{
	struct out_buf *b = &v->line;
	const char *name = tb_fn_name(v->c->sym, f->fn), *mark = f->inl ? inline_mark : "";
	int len = bare_len(name, f->inl);

	if (!v->header)
		text_header(v);
	if (kind == '}')
		out_buf_printf(b, "%*s", v->insns ? 15 : 19, "");
	else if (v->insns)
		out_buf_printf(b, "%15" PRIu64, f->start);
	else
		out_buf_printf(b, "%9" PRIu64 ".%09" PRIu64, f->start / 1000000000, f->start % 1000000000);
	out_buf_put(b, " ", 1);
	if (kind == '{')
		out_buf_printf(b, "%15s", "");	/* put_duration's width, either clock */
	else
		put_duration(b, v->insns, dur);
	out_buf_printf(b, " %7d  %*s", th->tid, (int)(2 * f->vdepth), "");
	/* return values as uftrace shows them: "f() = 3;", "} = 3;" before the closing name */
	if (kind == '}') {
		out_buf_put(b, "}", 1);
		bool value = text_retval(v, b, f);
		out_buf_printf(b, "%s /* %s */", value ? ";" : "", name);
		text_death(v, f);
		out_buf_put(b, "\n", 1);
	} else if (kind == '{') {
		out_buf_printf(b, "%.*s()%s {\n", len, name, mark);
	} else {
		out_buf_printf(b, "%.*s()%s", len, name, mark);
		text_retval(v, b, f);
		out_buf_put(b, ";", 1);
		text_death(v, f);
		out_buf_put(b, "\n", 1);
	}
	return flush_line(v);
}

static int json_line(struct vcalls *v, const struct cth *th, const struct frame *f, uint64_t dur)
{
	struct out_buf *b = &v->line;

	out_json_begin(b);
	out_json_u64(b, "tid", (uint64_t)th->tid);
	out_json_u64(b, "pid", (uint64_t)th->pid);
	out_json_u64(b, v->insns ? "start_insns" : "start_ns", f->start);
	out_json_u64(b, v->insns ? "dur_insns" : "dur_ns", dur);
	out_json_u64(b, "depth", f->vdepth);
	out_json_string(b, "name", tb_fn_name(v->c->sym, f->fn));
	out_json_string(b, "module", tb_fn_module(v->c->sym, f->fn));
	if (f->inl)
		out_json_bool(b, "inlined", true);
	struct sym_ret r;
	uint64_t x;
	if (retval(v, f, &r, &x)) {
		out_json_key(b, "retval");
		if (r.kind == SYM_RET_SIGNED)
			out_buf_printf(b, "%" PRId64, (int64_t)x);
		else
			out_buf_u64(b, x);
	}
	if (v->dying) {
		out_json_bool(b, "returned", false);
		if (f == v->dying_top)
			out_json_bool(b, v->dying->fault ? "faulted" : "killed", true);
		view_fault_json(b, v->dying);
	}
	out_json_end(b);
	return flush_line(v);
}

static void chrome_names(struct vcalls *v, struct cth *th)
{
	struct dec_ctx *c = v->c;
	uint64_t dummy;

	if (th->named)
		return;
	th->named = true;
	if (!xp_map_get(&v->pids, (uint32_t)th->pid, &dummy)) {
		if (xp_map_put(&v->pids, (uint32_t)th->pid, 1) == 0) {
			char name[64];
			snprintf(name, sizeof(name), "%s %d", sb_comm_at(c->sb, th->pid, th->time), th->pid);
			out_chrome_process(&v->ch, th->pid, name);
		}
	}
	char name[64];
	snprintf(name, sizeof(name), "%s %d%s", sb_comm_at(c->sb, th->tid, th->time), th->tid,
		 v->sample_track ? " (sampled)" : "");
	out_chrome_thread(&v->ch, th->pid, th->tid, name);
}

static int chrome_span(struct vcalls *v, struct cth *th, uint32_t fn, uint64_t start, uint64_t dur, bool inl)
{
	chrome_names(v, th);
	out_chrome_complete(&v->ch, th->pid, th->tid, tb_fn_name(v->c->sym, fn), tb_fn_module(v->c->sym, fn),
			    start, dur, v->sample_track, inl);
	return v->ch.b.oom ? oom() : 0;
}

/* Text: the `{` lines of shown callers not out yet, outermost first. */
static int open_callers(struct vcalls *v, struct cth *th, uint32_t upto)
{
	for (uint32_t i = 0; i < upto; i++) {
		struct frame *f = &th->st[i];
		if (f->shown && !f->open) {
			f->open = true;
			int rc = text_line(v, th, f, '{', 0);
			if (rc)
				return rc;
		}
	}
	return 0;
}

/* Call i of th's stack returns at `end` (every call above it returns then too). */
static int pop(struct vcalls *v, struct cth *th, uint32_t i, uint64_t end)
{
	struct frame *f = &th->st[i];
	uint64_t dur = end > f->start ? end - f->start : 0;

	if (!f->shown || dur < v->min_dur)
		return 0;
	v->calls++;
	switch (v->o->format) {
	case OUT_CHROME:
		return chrome_span(v, th, f->fn, f->start, dur, f->inl);
	case OUT_JSONL:
		return json_line(v, th, f, dur);
	default:
		if (f->open)
			return text_line(v, th, f, '}', dur);
		int rc = open_callers(v, th, i);
		return rc ? rc : text_line(v, th, f, ';', dur);
	}
}

/* The calls above the first n return at `end`: in text innermost first, as the lines
 * close; in chrome outermost first, so that a caller and a callee of the same span
 * come in that order (viewers nest equal spans in the order they read them). */
static int pop_to(struct vcalls *v, struct cth *th, uint32_t n, uint64_t end)
{
	int rc = 0;

	if (v->o->format == OUT_CHROME)
		for (uint32_t i = n; i < th->n && rc == 0; i++)
			rc = pop(v, th, i, end);
	else
		for (uint32_t i = th->n; i-- > n && rc == 0;)
			rc = pop(v, th, i, end);
	if (th->n > n)
		th->n = n;
	return rc;
}

/* inl: a call of inlined code (--sym matches its name without the mark) */
static int push(struct vcalls *v, struct cth *th, uint32_t fn, uint64_t now, bool inl)
{
	if (XP_GROW(th->st, th->cap, th->n + 1) < 0)
		return oom();
	const struct frame *up = th->n ? &th->st[th->n - 1] : NULL;
	bool in_time = now >= v->t0 && now <= v->t1, sym = !v->sym || (up && up->shown);
	if (!sym) {
		char name[512];
		const char *n = tb_fn_name(v->c->sym, fn);
		snprintf(name, sizeof(name), "%.*s", bare_len(n, inl), n);
		sym = fnmatch(v->sym, name, 0) == 0;
	}
	uint32_t vdepth = up ? up->vdepth + up->shown : 0;
	th->st[th->n++] = (struct frame){
		.fn = fn, .start = now, .shown = in_time && sym && vdepth < v->max_depth,
		.vdepth = vdepth, .inl = inl,
	};
	return 0;
}

/* The innermost open call of fn, or UINT32_MAX. */
static uint32_t find(const struct cth *th, uint32_t fn)
{
	for (uint32_t i = th->n; i-- > 0;)
		if (th->st[i].fn == fn)
			return i;
	return UINT32_MAX;
}

/* Where th's inline frames on top of its stack begin (th->n: none). */
static uint32_t inl_base(const struct cth *th)
{
	uint32_t i = th->n;

	while (i > 0 && th->st[i - 1].inl)
		i--;
	return i;
}

/* A block of exact code by runs of one inline chain (outermost first): the inline
 * frames a run shares with the frames open go on, the others end where it begins,
 * its own begin there; above the frame of the block's function only (another one
 * below: control left it without a return, the inline frames end). */
static int inline_block(struct vcalls *v, struct cth *th, const struct xev *ev)
{
	const struct ti_seg *s;
	const uint32_t *chains;
	uint32_t n, base = inl_base(th);
	uint64_t at = th->insns;
	int rc = 0;

	if (ti_block(v->inl, ev->pid, ev->time, ev->ip, ev->end, ev->insns, &s, &n, &chains) < 0)
		return oom();
	bool owner = !base || th->st[base - 1].fn == dec_fn_of(v->c, ev->pid, ev->ip, ev->time);
	for (uint32_t i = 0; i < (n ? n : 1) && rc == 0; i++) {
		uint64_t now = v->insns ? at : ev->time ? ev->time : th->last;
		const uint32_t *chain = n ? chains + s[i].chain : NULL;
		uint32_t nc = n && owner ? s[i].nchain : 0, k = 0;
		while (k < nc && base + k < th->n && th->st[base + k].fn == chain[k])
			k++;
		rc = pop_to(v, th, base + k, now);
		for (; k < nc && rc == 0; k++)
			rc = push(v, th, chain[k], now, true);
		at += n ? s[i].insns : 0;
	}
	return rc;
}

/* A sample of a sample trace: frames its stack shares with the previous sample's go
 * on; the others end, and its own new frames begin, at its time.  A sample of a
 * software clock stands for its period of CPU time: its frames end there when the
 * next sample comes later (the thread was off the CPU), as they end at the last. */
static int sample_span(struct vcalls *v, struct cth *th, const struct xev *ev, const uint32_t *fns, uint32_t n,
		       uint64_t now)
{
	uint32_t same = 0;
	int rc = 0;

	if (th->span_end && th->span_end < now)
		rc = pop_to(v, th, 0, th->span_end);
	while (same < n && same < th->n && th->st[same].fn == fns[same])
		same++;
	if (rc == 0)
		rc = pop_to(v, th, same, now);
	for (uint32_t i = same; i < n && rc == 0; i++)
		rc = push(v, th, fns[i], now, false);
	th->span_end = 0;
	if (v->clock_m >= 0) {
		uint64_t w[DEC_MAX_METRICS];
		dec_weights(v->c, ev, w);
		th->span_end = w[v->clock_m] ? now + w[v->clock_m] : 0;
	}
	return rc;
}

/* A sample of a merged trace: an instant event with its stack. */
static int sample_instant(struct vcalls *v, struct cth *th, const uint32_t *fns, uint32_t n, uint64_t now)
{
	v->stack.len = 0;
	for (uint32_t i = 0; i < n; i++) {
		const char *nm = tb_fn_name(v->c->sym, fns[i]);
		if (i)
			out_buf_put(&v->stack, ";", 1);
		out_buf_put(&v->stack, nm, strlen(nm));
	}
	out_buf_put(&v->stack, "", 1);
	if (v->stack.oom)
		return oom();
	chrome_names(v, th);
	out_chrome_instant(&v->ch, th->pid, th->tid, tb_fn_name(v->c->sym, fns[n - 1]), v->stack.p, now);
	return v->ch.b.oom ? oom() : 0;
}

static int on_sample(struct vcalls *v, struct cth *th, const struct xev *ev, uint64_t now)
{
	struct dec_ctx *c = v->c;
	uint32_t n = ev->nstack ? ev->nstack : 1;

	if (v->o->format != OUT_CHROME || now < v->t0 || now > v->t1)
		return 0;
	if (XP_GROW(v->fns, v->capfns, n) < 0)
		return oom();
	if (!ev->nstack)
		v->fns[0] = dec_fn_of(c, ev->pid, ev->ip, ev->time);
	for (uint32_t i = 0; i < ev->nstack; i++)
		v->fns[n - 1 - i] = dec_frame_fn(c, ev->pid, ev->stack, i, ev->time);
	return v->sample_track ? sample_span(v, th, ev, v->fns, n, now) : sample_instant(v, th, v->fns, n, now);
}

static int on_event(void *state, const struct xev *ev)
{
	struct vcalls *v = state;
	struct dec_ctx *c = v->c;
	bool sample = ev->kind == XEV_SAMPLE;

	/* sampled blocks, calls and returns (branch stacks) are windows, not a history */
	if (!sample && (ev->flags & XEV_F_SAMPLED))
		return 0;
	if (ev->kind != XEV_CALL && ev->kind != XEV_RETURN && ev->kind != XEV_BLOCK && ev->kind != XEV_GAP &&
	    ev->kind != XEV_ENABLE && ev->kind != XEV_DISABLE && ev->kind != XEV_INTERRUPT &&
	    ev->kind != XEV_TSX && !sample &&
	    (ev->kind != XEV_BRANCH || !(ev->flags & XEV_F_INDIRECT) || (ev->flags & (XEV_F_COND | XEV_F_SYSCALL))))
		return 0;
	if (!dec_thread_selected(c, ev->tid, ev->time))
		return 0;
	struct cth *th = thread_of(v, ev->pid, ev->tid);
	if (!th)
		return oom();
	if (ev->time)
		th->time = ev->time;
	uint64_t at = 0, sig = 0;
	if (ev->kind == XEV_ENABLE && th->sig.lo && tb_exec_between(c, ev->tid, th->sig.stop_time, ev->time))
		ct_sig_exec(&th->sig);
	enum ct_sig_what what = ev->flags & XEV_F_FUNC ? CT_SIG_NONE : ct_sig_event(&th->sig, ev, &at, &sig);
	/* a thread's trace that starts at a function's first instruction (a PSB+ whose
	 * FUP is the first entry into an address filter) entered it, as in the call tree */
	bool entry = ev->kind == XEV_BLOCK && !th->exact && dec_fn_entry(c, ev->pid, ev->ip, ev->time);
	if (ev->kind == XEV_BLOCK && !entry) {
		th->exact = true;
		int rc = v->inl && !v->started ? start_output(v) : 0;
		if (rc == 0 && v->inl)
			rc = inline_block(v, th, ev);
		if (rc)
			return rc;
		th->insns += ev->insns;
		if (v->insns)
			th->last = th->insns;
		return 0;
	}
	if (!v->started) {
		int rc = start_output(v);
		if (rc)
			return rc;
	}
	uint64_t now = v->insns ? th->insns : ev->time ? ev->time : th->last;
	if (now > th->last)
		th->last = now;
	if (entry) {
		th->exact = true;
		int rc = push(v, th, dec_fn_of(c, ev->pid, ev->ip, ev->time), now, false);
		if (rc == 0 && v->inl)
			rc = inline_block(v, th, ev);
		th->insns += ev->insns;
		if (v->insns)
			th->last = th->insns;
		return rc;
	}
	if (ev->kind == XEV_CALL || ev->kind == XEV_RETURN || what == CT_SIG_ENTER)
		th->exact = true;
	if (what == CT_SIG_ENTER) {
		if (th->tramp && ev->kind == XEV_ENABLE)	/* delivered as its sigreturn ended */
			ct_sig_chain(&th->sig, th->tramp, sig);
		th->tramp = 0;
		int rc = push(v, th, dec_fn_of(c, ev->pid, at, ev->time), now, false);
		if (rc == 0)
			th->st[th->n - 1].sig = sig;
		return rc;
	}
	if (what == CT_SIG_BACK) {
		th->tramp = 0;
		/* sigreturn: whatever of the handler is still open ends here */
		for (uint32_t i = th->n; i-- > 0;)
			if (th->st[i].sig == sig)
				return pop_to(v, th, i, now);
		return 0;
	}
	switch (ev->kind) {
	case XEV_SAMPLE:
		return on_sample(v, th, ev, now);
	case XEV_CALL:
		th->tramp = 0;
		return push(v, th, dec_fn_of(c, ev->pid, ev->addr, ev->time), now, false);
	case XEV_RETURN: {
		if (ev->flags & XEV_F_FUNC) {
			/* an exit names the function left: its innermost call and any above it */
			uint32_t i = ev->ip ? find(th, dec_fn_of(c, ev->pid, ev->ip, ev->time)) : UINT32_MAX;
			if (i == UINT32_MAX)
				return 0;
			th->st[i].has_ret = ev->flags & XEV_F_RETVAL;
			th->st[i].ret = ev->arg0;
			return pop_to(v, th, i, now);
		}
		if (!th->n)
			return 0;	/* returns past where the trace began */
		/* the function returning is the frame below its inline frames, which
		 * leave with it (only inline frames: their function began before the trace) */
		uint32_t top = inl_base(th) ? inl_base(th) - 1 : 0;
		th->tramp = th->st[top].sig;
		int rc = pop_to(v, th, top, now);
		/* a return that skips frames (exceptions) lands in a caller further down
		 * (the function below the caller's inline frames) */
		uint32_t to = dec_fn_of(c, ev->pid, ev->addr, ev->time), b = inl_base(th);
		if (rc == 0 && b && th->st[b - 1].fn != to) {
			uint32_t i = find(th, to);
			if (i != UINT32_MAX)
				rc = pop_to(v, th, i + 1, now);
		}
		return rc;
	}
	case XEV_BRANCH: {
		/* longjmp and the C++ unwinder land with an indirect jump in the middle of a
		 * live frame: the calls above it end there (as in the call tree) */
		uint32_t to = dec_fn_of(c, ev->pid, ev->addr, ev->time), i;
		if (!th->n || to == dec_fn_of(c, ev->pid, ev->ip, ev->time) ||
		    to != dec_fn_of(c, ev->pid, ev->addr - 1, ev->time))
			return 0;
		i = find(th, to);
		return i != UINT32_MAX && i + 1 < th->n ? pop_to(v, th, i + 1, now) : 0;
	}
	case XEV_ENABLE: {
		/* tracing resumes where a call or return out of the traced code (an address
		 * filter) came back, as in the call tree: at a function's first instruction,
		 * a call from untraced code (one of it still open on top ended out of sight,
		 * a return out of the ranges whose target the trace does not give); in a
		 * function deeper on the stack, the return to it */
		uint32_t fn = dec_fn_of(c, ev->pid, ev->ip, ev->time), i;
		th->exact = true;
		if (dec_fn_entry(c, ev->pid, ev->ip, ev->time)) {
			int rc = th->n && th->st[th->n - 1].fn == fn ? pop_to(v, th, th->n - 1, now) : 0;
			return rc ? rc : push(v, th, fn, now, false);
		}
		i = find(th, fn);
		return i != UINT32_MAX && i + 1 < th->n ? pop_to(v, th, i + 1, now) : 0;
	}
	case XEV_GAP:	/* what was on the stack is unknown afterwards */
		return pop_to(v, th, 0, now);
	default:
		return 0;
	}
}

static int on_close(void *state, int status)
{
	struct vcalls *v = state;
	int rc = 0;

	/* calls still open when the trace ends last until the thread's last event (the
	 * last sample's frames, its period) */
	for (uint32_t i = 0; i < v->nth && status >= 0 && rc == 0; i++) {
		struct cth *th = &v->th[i];
		uint64_t end = th->span_end ? th->span_end : th->last;
		v->dying = NULL;
		for (size_t k = 0; k < v->nfaults && !v->dying && th->n; k++)
			if (v->faults[k].tid == th->tid)
				v->dying = &v->faults[k];
		if (v->dying) {
			v->dying_top = &th->st[th->n - 1];
			if (!v->insns && v->dying->time > end)	/* the calls lasted until it */
				end = v->dying->time;
		}
		rc = pop_to(v, th, 0, end);
	}
	v->dying = NULL;
	if (status >= 0 && rc == 0) {
		if (v->o->format == OUT_CHROME) {
			if (!v->started)
				start_output(v);
			rc = out_chrome_end(&v->ch);
		} else {
			rc = out_buf_write(&v->line, v->out);
		}
		if (rc == -ENOMEM)
			rc = oom();
		else if (rc < 0)
			rc = xp_err("decode", NULL, "cannot write the report: %s", strerror(-rc));
		else if (!v->calls)
			rc = xp_err_code(-ENOENT, "decode --calls",
					 v->insns && (v->t0 || v->t1 != UINT64_MAX) ?
					 "--time counts instructions on this clock; with --metric time it takes "
					 "the trace's ns" : NULL,
					 "no calls%s", v->sym || v->t0 ||
					 v->t1 != UINT64_MAX || v->min_dur ? " matched the filters" : " in this trace");
	} else if (v->o->format == OUT_CHROME && v->started) {
		out_buf_free(&v->ch.b);
	}
	for (uint32_t i = 0; i < v->nth; i++)
		free(v->th[i].st);
	free(v->th);
	xp_map_free(&v->tids);
	xp_map_free(&v->pids);
	xp_map_free(&v->rets);
	free(v->faults);
	out_buf_free(&v->line);
	out_buf_free(&v->stack);
	ti_free(v->inl);
	free(v->fns);
	free(v);
	return rc;
}

static const struct dec_option calls_options[] = {
	{ "depth", "N", "--calls: only calls nested at most N deep (1: the outermost; with --sym, "
	  "counted from the matched call), as uftrace replay -D" },
	{ "min-duration", "D", "--calls: only calls lasting D or more (ns, us, ms, s; "
	  "instructions on an instruction clock)" },
	{ NULL, NULL, NULL },
};

static const char *const calls_honours[] = { "tid", "comm", "time", "sym", "inline", "no-inline", NULL };

const struct dec_view view_calls = {
	.name = "calls",
	.help = "every call in order: start, duration, tid, depth, probes' return values (uftrace replay)",
	.formats = (1u << OUT_TEXT) | (1u << OUT_JSONL) | (1u << OUT_CHROME),
	.options = calls_options,
	.honours = calls_honours,
	.own_time = true,
	.open = on_open,
	.event = on_event,
	.close = on_close,
};
