/* The decode engine (engine.h): the decoder and view tables and the run of one into
 * the other. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "engine/engine.h"
#include "engine/eng_par.h"
#include "analysis/bb.h"
#include "util/xp_err.h"

extern const struct dec_decoder dec_samples;
extern const struct dec_decoder dec_lbr;
extern const struct dec_decoder dec_pt;
extern const struct dec_decoder dec_pt_raw;
extern const struct dec_view view_insn;
extern const struct dec_view view_blocks;
extern const struct dec_view view_annotate;
extern const struct dec_view view_functions;
extern const struct dec_view view_calltree;
extern const struct dec_view view_ranges;
extern const struct dec_view view_lines;
extern const struct dec_view view_loops;
extern const struct dec_view view_routines;
extern const struct dec_view view_arcs;
extern const struct dec_view view_probes;
extern const struct dec_view view_calls;

/* Decoders in the order they are asked; the samples decoder takes any sample trace. */
static const struct dec_decoder *const decoders[] = {
	&dec_pt_raw,	/* claims --pt FILE */
	&dec_lbr,	/* branch stacks: also in files perf inject made from PT */
	&dec_pt,	/* before samples: a PT event has PERF_SAMPLE_IP too */
	&dec_samples,
};

static const struct dec_view *const views[] = {
	&view_functions,
	&view_calltree,
	&view_calls,
	&view_routines,
	&view_arcs,
	&view_insn,
	&view_blocks,
	&view_annotate,
	&view_lines,
	&view_loops,
	&view_ranges,
	&view_probes,
};

#define NDECODERS (sizeof(decoders) / sizeof(decoders[0]))
#define NVIEWS (sizeof(views) / sizeof(views[0]))

/* --tid, --comm, --time in front of every view: what they leave out no view sees.
 * Threads by the decode context (--comm: the name at the event's time), the time
 * window by the stream filter of analysis/bb.h. */
struct eng_filter {
	struct dec_ctx *c;
	struct xev_sink next;	/* the view */
	bool threads, timed;
	struct bb_filter window;
	uint64_t passed;	/* events let through: none means nothing matched */
};

struct engine {
	struct eng_opts o;
	struct eng_filter filt;
	struct dec_ctx c;
	struct view_ctx vc;
	const struct dec_decoder *d;
	const struct dec_view *v;
	char *data, *dir;
};

size_t eng_decoders(const struct dec_decoder *const **d)
{
	*d = decoders;
	return NDECODERS;
}

size_t eng_views(const struct dec_view *const **v)
{
	*v = views;
	return NVIEWS;
}

/* "--calltree cannot be written as chrome: --calls can": the views that can, named. */
static void format_refused(const struct dec_view *v, enum out_format f)
{
	char can[128] = "";
	size_t n = 0;

	for (size_t i = 0; i < NVIEWS; i++)
		if (views[i]->formats & (1u << f) && n + strlen(views[i]->name) + 5 < sizeof(can))
			n += (size_t)snprintf(can + n, sizeof(can) - n, "%s--%s", n ? ", " : "", views[i]->name);
	xp_usage_error("decode", "--%s cannot be written as %s%s%s%s", v->name, out_format_name(f),
		       n ? ": " : "", can, n ? " can" : "");
}

const struct dec_view *eng_find_view(const char *name)
{
	for (size_t i = 0; i < NVIEWS; i++)
		if (strcmp(views[i]->name, name) == 0)
			return views[i];
	return NULL;
}

const struct dec_option *eng_find_option(const char *name)
{
	for (size_t i = 0; i < NDECODERS + NVIEWS; i++) {
		const struct dec_option *o = i < NDECODERS ? decoders[i]->options : views[i - NDECODERS]->options;
		for (; o && o->name; o++)
			if (strcmp(o->name, name) == 0)
				return o;
	}
	return NULL;
}

/* -i: a directory from xptrace record (perf.data + .build-id/) or a perf.data file. */
static int resolve_input(const char *in, char **data, char **dir)
{
	struct stat st;
	char buf[PATH_MAX];

	if (strcmp(in, "-") == 0) {
		*data = strdup(in);
		*dir = NULL;
		return *data ? 0 : -ENOMEM;
	}
	if (stat(in, &st) < 0) {
		int e = errno;
		xp_err(in, strcmp(in, "xptrace.data") == 0 ?
		       "record one with `xptrace record`, or give a trace with -i" :
		       "give a trace directory or perf.data file with -i", "%s", strerror(e));
		return -e;
	}
	if (S_ISDIR(st.st_mode)) {
		snprintf(buf, sizeof(buf), "%s/perf.data", in);
		if (stat(buf, &st) < 0) {
			int e = errno;
			if (e != ENOENT)
				return xp_err_code(-e, buf, NULL, "%s", strerror(e));
			xp_err(in, "give the directory `xptrace record` wrote", "no perf.data in this directory");
			return -ENOENT;
		}
		*data = strdup(buf);
		*dir = strdup(in);
		return *data && *dir ? 0 : -ENOMEM;
	}
	*data = strdup(in);
	/* a perf.data inside a trace directory still finds its snapshots */
	snprintf(buf, sizeof(buf), "%s", in);
	char *slash = strrchr(buf, '/');
	if (slash)
		*slash = 0;
	else
		snprintf(buf, sizeof(buf), ".");
	size_t l = strlen(buf);
	snprintf(buf + l, sizeof(buf) - l, "/.build-id");
	if (stat(buf, &st) == 0 && S_ISDIR(st.st_mode)) {
		buf[l] = 0;
		*dir = strdup(buf);
		if (!*dir)
			return -ENOMEM;
	} else {
		*dir = NULL;
	}
	return *data ? 0 : -ENOMEM;
}

/* Every event of the trace timed by CLOCK_MONOTONIC (perf record -k mono, xptrace's
 * sample mode): the clock jitdumps use. */
static bool clock_monotonic(const struct pd_file *f)
{
	uint32_t n = f ? pd_nattrs(f) : 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct perf_event_attr *a = &pd_attr_at(f, i)->attr;
		if (!a->use_clockid || a->clockid != CLOCK_MONOTONIC)
			return false;
	}
	return n > 0;
}

static int choose_metric(struct engine *e)
{
	struct dec_ctx *c = &e->c;
	const char *want = e->o.dec.metric;
	char have[256] = "";
	unsigned m;

	if (!want)
		return 0;
	for (m = 0; m < c->nmetrics; m++)
		if (strcmp(c->metrics[m].name, want) == 0) {
			c->metric = m;
			dec_metric_chosen(c);
			return 0;
		}
	for (unsigned k = 0; k < c->nmetrics; k++)
		snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s", k ? ", " : "",
			 c->metrics[k].name);
	if (c->on_request)
		snprintf(have + strlen(have), sizeof(have) - strlen(have), ", %s", c->on_request);
	xp_usage_error("decode", "no metric '%s' in this trace (have: %s)", want, have);
	return ENG_EREQUEST;
}

static bool listed(const char *const *names, const char *name)
{
	for (; names && *names; names++)
		if (strcmp(*names, name) == 0)
			return true;
	return false;
}

static bool view_honours(const struct dec_view *v, const char *name)
{
	for (const struct dec_option *o = v->options; o && o->name; o++)
		if (strcmp(o->name, name) == 0)
			return true;
	return listed(v->honours, name);
}

/* An option the chosen decoder and view do nothing with is refused, naming what takes
 * it: the views, or the decoder (raw PT's --elf, --cpu, ... on a perf.data). */
static int check_option(const struct engine *e, const char *name)
{
	char who[256] = "";
	const struct dec_decoder *other = NULL;	/* a decoder that takes it (several may) */

	for (size_t i = 0; i < NDECODERS; i++)
		for (const struct dec_option *o = decoders[i]->options; o && o->name; o++) {
			if (strcmp(o->name, name) != 0)
				continue;
			if (decoders[i] == e->d)
				return 0;
			if (!other)
				other = decoders[i];
		}
	if (other) {
		xp_usage_error("decode", "--%s is an option of the %s decoder; this trace is decoded by "
			       "the %s decoder", name, other->name, e->d->name);
		return ENG_EREQUEST;
	}
	if (view_honours(e->v, name))
		return 0;
	for (size_t i = 0; i < NVIEWS; i++)
		if (view_honours(views[i], name))
			snprintf(who + strlen(who), sizeof(who) - strlen(who), "%s--%s", *who ? ", " : "",
				 views[i]->name);
	xp_usage_error("decode", "--%s does not apply to --%s (it does to %s)", name, e->v->name,
		       *who ? who : "no view");
	return ENG_EREQUEST;
}

static int check_options(struct engine *e)
{
	const struct dec_opts *d = &e->o.dec;
	const struct view_opts *v = &e->o.view;
	const char *given[] = {
		d->tid >= 0 ? "tid" : NULL, d->comm ? "comm" : NULL, d->time ? "time" : NULL,
		v->percent_limit >= 0 ? "percent-limit" : NULL, v->per_thread ? "per-thread" : NULL,
		v->per_process ? "per-process" : NULL,
	};

	for (size_t i = 0; i < sizeof(given) / sizeof(given[0]); i++)
		if (given[i] && check_option(e, given[i]) < 0)
			return ENG_EREQUEST;
	for (unsigned i = 0; i < d->nextra; i++)
		if (check_option(e, d->extra[i].name) < 0)
			return ENG_EREQUEST;
	if (v->per_thread && v->per_process) {
		xp_usage_error("decode", "give one of --per-thread and --per-process");
		return ENG_EREQUEST;
	}
	bb_filter_init(&e->filt.window, NULL, (struct xev_sink){ NULL, NULL, NULL });
	uint64_t first = 0, last = 0;
	if (e->c.pd)
		pd_sample_time(e->c.pd, &first, &last);
	int tr = d->time ? bb_parse_time_range(d->time, first, last, &e->filt.window.t0, &e->filt.window.t1) : 0;
	if (tr == -ENODATA) {
		xp_usage_error("decode", "--time %s: percentages and +seconds count from the trace's first "
			       "sample, and this trace does not say when its samples begin and end "
			       "(HEADER_SAMPLE_TIME): give times as ns or seconds.ns", d->time);
		return ENG_EREQUEST;
	}
	if (tr < 0) {
		xp_usage_error("decode", "--time %s: expected A-B, A- or -B (ns or seconds.ns; +S: S seconds "
			       "after the first sample), or perf's A%%, A%%/N, A%%-B%%", d->time);
		return ENG_EREQUEST;
	}
	e->filt.timed = d->time && !e->v->own_time;
	e->filt.threads = d->tid >= 0 || d->comm;
	return 0;
}

static int passed_event(void *ctx, const struct xev *ev)
{
	struct eng_filter *f = ctx;

	f->passed++;
	return xev_emit(&f->next, ev);
}

static int filter_event(void *ctx, const struct xev *ev)
{
	struct eng_filter *f = ctx;

	if (f->threads && !dec_thread_selected(f->c, ev->tid, ev->time))
		return 0;
	return bb_filter_event(&f->window, ev);
}

/* What the filters were, for "nothing matched". */
static void filter_says(const struct engine *e, char *buf, size_t n)
{
	const struct dec_opts *d = &e->o.dec;
	size_t l = 0;

	buf[0] = 0;
	if (d->tid >= 0)
		l += (size_t)snprintf(buf + l, n - l, " --tid %d", d->tid);
	if (d->comm && l < n)
		l += (size_t)snprintf(buf + l, n - l, " --comm %s", d->comm);
	if (d->time && l < n)
		snprintf(buf + l, n - l, " --time %s", d->time);
}

int eng_open(const struct eng_opts *o, struct engine **out)
{
	struct engine *e = calloc(1, sizeof(*e));
	struct dec_ctx *c;
	int rc = -ENOMEM;

	*out = NULL;
	if (!e)
		return xp_err("decode", NULL, "out of memory"), -ENOMEM;
	e->o = *o;
	c = &e->c;
	c->opts = &e->o.dec;
	c->wants = DEC_WANT_ALL;
	/* raw inputs (decode --pt FILE ...) have their own command line */
	for (size_t i = 0; i < NDECODERS; i++)
		if (decoders[i]->claims && decoders[i]->claims(c->opts)) {
			e->d = decoders[i];
			break;
		}
	c->sb = sb_new();
	if (!c->sb)
		goto fail;
	if (!e->d) {
		const char *in = c->opts->input ? c->opts->input : "xptrace.data";
		if (o->input_mem)
			rc = (e->data = strdup(in)) ? 0 : -ENOMEM;
		else
			rc = resolve_input(in, &e->data, &e->dir);
		if (rc < 0)
			goto fail;
		c->perf_data = e->data;
		c->trace_dir = e->dir;
		if (o->input_mem)
			rc = pd_open_mem(o->input_mem, o->input_size, e->data, &c->pd);
		else
			rc = pd_open(e->data, &c->pd);
		if (rc < 0)
			goto fail;
		rc = dec_probes_load(c);
		if (rc < 0)
			goto fail;
	}
	rc = -ENOMEM;
	c->sym = sym_new(e->dir, NULL);
	c->jit = jit_new(c->sb, e->dir);
	if (!c->sym || !c->jit)
		goto fail;
	if (o->sym_cache)
		sym_use_cache(c->sym, o->sym_cache);
	jit_set_mono(c->jit, clock_monotonic(c->pd));
	for (size_t i = 0; !e->d && i < NDECODERS; i++)
		if (decoders[i]->accepts && decoders[i]->accepts(c))
			e->d = decoders[i];
	rc = -ENODATA;
	if (!e->d) {
		xp_err(c->perf_data, "record samples, PT or LBR with xptrace record",
		       "no decoder understands this trace");
		goto fail;
	}
	const char *vname = e->o.view.view ? e->o.view.view : e->d->default_view;
	e->v = e->o.view.impl ? e->o.view.impl : eng_find_view(vname);
	rc = -ENOENT;
	if (!e->v) {
		xp_err("decode", NULL, "the %s decoder has no view '%s'", e->d->name, vname);
		goto fail;
	}
	e->o.view.view = e->v->name;
	rc = check_options(e);
	if (rc < 0)
		goto fail;
	rc = ENG_EREQUEST;
	if (!(e->v->formats & (1u << e->o.view.format))) {
		format_refused(e->v, e->o.view.format);
		goto fail;
	}
	rc = e->d->setup ? e->d->setup(c) : 0;
	if (rc < 0)
		goto fail;
	rc = choose_metric(e);
	if (rc < 0)
		goto fail;
	*out = e;
	return 0;
fail:
	eng_close(e);
	return rc < 0 ? rc : -EIO;
}

const struct dec_decoder *eng_decoder(const struct engine *e)
{
	return e->d;
}

const struct dec_view *eng_view(const struct engine *e)
{
	return e->v;
}

/* The second decode of a view that reads the stream twice (dec_view.rewind): a new
 * engine on the same options, its events into the same sink. */
static int second_pass(struct engine *e, void *state, const struct xev_sink *sink)
{
	struct engine *e2;
	int rc = e->v->rewind(state);

	if (rc <= 0)
		return rc;
	rc = eng_open(&e->o, &e2);
	if (rc < 0)
		return rc;
	e2->c.wants = e->c.wants;
	rc = e2->d->run(&e2->c, sink);
	eng_close(e2);
	return rc;
}

int eng_run(struct engine *e)
{
	struct view_ctx *vc = &e->vc;
	const char *output = e->o.view.output;
	void *state;
	int rc;

	*vc = (struct view_ctx){ .c = &e->c, .o = &e->o.view, .out = stdout, .wants = DEC_WANT_ALL };
	if (output) {
		vc->out = fopen(output, "w");
		if (!vc->out) {
			int err = errno;
			xp_err(output, NULL, "cannot write: %s", strerror(err));
			return -err;
		}
	}
	rc = e->v->open(vc, &state);
	if (rc < 0)
		goto out;
	e->c.wants = vc->wants;
	struct xev_sink sink = { e->v->event, state, e->v->batch };
	struct eng_filter *f = &e->filt;
	/* a window cuts blocks where their instructions' time does: a block of one thread
	 * that another's runs in the middle of is two blocks at two times, as --insn
	 * lists them, so every view of one window counts the same instructions */
	if (f->timed)
		e->c.wants |= DEC_WANT_FINE_ORDER;
	if (f->timed || f->threads) {
		f->c = &e->c;
		f->next = sink;
		f->window.next = (struct xev_sink){ passed_event, f, NULL };
		f->passed = 0;
		sink = (struct xev_sink){ filter_event, f, NULL };
	}
	struct eng_par_view pv = { .v = e->v, .state = state, .direct = !(f->timed || f->threads) };
	struct dec_par par;
	unsigned jobs = e->o.jobs ? e->o.jobs : eng_par_default_jobs();
	if (jobs > 1) {
		eng_par_init(&par, jobs, &pv);
		e->c.par = &par;
	}
	rc = e->d->run(&e->c, &sink);
	if (e->o.verbose && rc >= 0) {
		/* -jN bounds the workers; the thread that feeds the view works beside them */
		unsigned n = e->c.par ? e->c.par->threads : 1;
		if (n == 1)
			xp_warn("decoded on 1 thread (-j%u)", jobs);
		else
			xp_warn("decoded on %u threads (-j%u: %u worker%s and the thread building the report)",
				n, jobs, n - 1, n == 2 ? "" : "s");
	}
	if (e->c.par)
		eng_par_fini(e->c.par);
	e->c.par = NULL;
	if (rc >= 0 && e->v->rewind)
		rc = second_pass(e, state, &sink);
	if (rc >= 0 && (f->timed || f->threads) && !f->passed) {
		char what[160];
		filter_says(e, what, sizeof(what));
		rc = xp_err_code(-ENOENT, "decode", "see the threads with --calltree --per-thread, the times "
				 "with --insn", "nothing in the trace matched%s", what);
	}
	int crc = e->v->close(state, rc < 0 ? rc : 0);
	if (rc >= 0 && crc < 0)
		rc = crc;
	if (rc < 0)
		goto out;
	if (fflush(vc->out) != 0 || ferror(vc->out)) {
		rc = -(errno ? errno : EIO);
		xp_err(output ? output : "stdout", NULL, "write failed: %s", strerror(-rc));
	}
out:
	if (vc->out != stdout)
		fclose(vc->out);
	vc->out = NULL;
	return rc < 0 ? rc : 0;
}

void eng_close(struct engine *e)
{
	if (!e)
		return;
	sym_free(e->c.sym);
	jit_free(e->c.jit);
	sb_free(e->c.sb);
	pd_close(e->c.pd);
	dec_ctx_release(&e->c);
	free(e->data);
	free(e->dir);
	free(e);
}

int eng_decode(const struct eng_opts *o)
{
	struct engine *e;
	int rc = eng_open(o, &e);

	if (rc < 0)
		return rc;
	rc = eng_run(e);
	eng_close(e);
	return rc;
}
