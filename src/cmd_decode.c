/* xptrace decode: opens the trace, picks a decoder and a view (see decode.h for how
 * they plug in) and runs the decoder's event stream through the view. */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "decode.h"
#include "xp_cli.h"
#include "xp_err.h"

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
	&view_insn,
	&view_blocks,
	&view_annotate,
	&view_ranges,
};

#define NDECODERS (sizeof(decoders) / sizeof(decoders[0]))
#define NVIEWS (sizeof(views) / sizeof(views[0]))

static const char usage_head[] =
	"usage: xptrace decode [-i TRACE] [VIEW] [OPTIONS]\n"
	"\n"
	"Decodes a trace offline into reports.  TRACE is a directory written by\n"
	"`xptrace record` (default: xptrace.data) or any perf.data file (perf's own too).\n"
	"\n"
	"views:\n";

static const char usage_common[] =
	"\n"
	"options:\n"
	"  -i, --input TRACE      trace directory or perf.data file (default xptrace.data)\n"
	"  --format FMT           text (default), jsonl, csv, folded, callgrind\n"
	"  -o, --output FILE      write the report to FILE instead of stdout\n"
	"  --tid TID              only this thread\n"
	"  --comm NAME            only threads with this name\n"
	"  --metric M             what to sort and percent by: samples or an event name;\n"
	"                         PT: insns, cycles, time (ns)\n"
	"                         (default: the first event's period, as perf report)\n"
	"  --percent-limit P      hide rows under P percent (of Cum in trees, Base in lists)\n"
	"  --per-thread           one call tree per thread instead of one merged tree\n";

static char usage_buf[8192];

/* The usage text is built from the tables, once, before main. */
__attribute__((constructor)) static void usage_text(void)
{
	size_t n = 0;

#define ADD(...) n += (size_t)snprintf(usage_buf + n, n < sizeof(usage_buf) ? sizeof(usage_buf) - n : 0, __VA_ARGS__)
	ADD("%s", usage_head);
	for (size_t i = 0; i < NVIEWS; i++) {
		char opt[64];
		snprintf(opt, sizeof(opt), "--%s%s%s", views[i]->name, views[i]->arg ? " " : "",
			 views[i]->arg ? views[i]->arg : "");
		ADD("  %-22s %s\n", opt, views[i]->help);
	}
	ADD("%s", usage_common);
	for (size_t i = 0; i < NDECODERS + NVIEWS; i++) {
		const struct dec_option *o = i < NDECODERS ? decoders[i]->options : views[i - NDECODERS]->options;
		for (; o && o->name; o++) {
			char opt[64];
			snprintf(opt, sizeof(opt), "--%s%s%s", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
			ADD("  %-22s %s\n", opt, o->help);
		}
	}
	ADD("\nExamples:\n"
	    "  xptrace decode                          hot functions of ./xptrace.data\n"
	    "  xptrace decode -i perf.data --calltree  call tree (Lvl RL Calls Base Cum Name)\n"
	    "  xptrace decode --calltree --format folded | flamegraph.pl > fg.svg\n"
	    "  xptrace decode --calltree --format callgrind -o callgrind.out\n");
#undef ADD
}

const char *dec_opt(const struct dec_ctx *c, const char *name)
{
	for (unsigned i = 0; i < c->opts->nextra; i++)
		if (strcmp(c->opts->extra[i].name, name) == 0)
			return c->opts->extra[i].value;
	return NULL;
}

static const struct dec_option *find_extra(const char *name)
{
	for (size_t i = 0; i < NDECODERS + NVIEWS; i++) {
		const struct dec_option *o = i < NDECODERS ? decoders[i]->options : views[i - NDECODERS]->options;
		for (; o && o->name; o++)
			if (strcmp(o->name, name) == 0)
				return o;
	}
	return NULL;
}

static const struct dec_view *find_view(const char *name)
{
	for (size_t i = 0; i < NVIEWS; i++)
		if (strcmp(views[i]->name, name) == 0)
			return views[i];
	return NULL;
}

static int parse_args(int argc, char **argv, struct dec_opts *o)
{
	o->tid = -1;
	o->format = OUT_TEXT;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = NULL;
		char name[64];

		if (a[0] != '-' || a[1] == 0)
			return xp_usage_error("decode", "unexpected argument '%s'", a);
		if (a[1] != '-') {
			if (strcmp(a, "-i") && strcmp(a, "-o"))
				return xp_usage_error("decode", "unknown option '%s'", a);
			snprintf(name, sizeof(name), "%s", a[1] == 'i' ? "input" : "output");
		} else {
			const char *eq = strchr(a + 2, '=');
			size_t l = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
			if (l >= sizeof(name))
				return xp_usage_error("decode", "unknown option '%s'", a);
			memcpy(name, a + 2, l);
			name[l] = 0;
			if (eq)
				val = eq + 1;
		}
		const struct dec_view *v = find_view(name);
		const struct dec_option *x = v ? NULL : find_extra(name);
		bool takes = v ? v->arg != NULL : x ? x->arg != NULL :
			strcmp(name, "per-thread") != 0;
		if (!v && !x && strcmp(name, "input") && strcmp(name, "output") && strcmp(name, "format") &&
		    strcmp(name, "tid") && strcmp(name, "comm") && strcmp(name, "metric") &&
		    strcmp(name, "percent-limit") && strcmp(name, "per-thread"))
			return xp_usage_error("decode", "unknown option '%s'", a);
		if (takes && !val) {
			if (i + 1 >= argc)
				return xp_usage_error("decode", "option '%s' needs an argument", a);
			val = argv[++i];
		} else if (!takes && val) {
			return xp_usage_error("decode", "option '--%s' takes no argument", name);
		}
		if (v) {
			if (o->view && strcmp(o->view, v->name))
				return xp_usage_error("decode", "give one view (--%s and --%s)", o->view, v->name);
			o->view = v->name;
			o->view_arg = val;
		} else if (x) {
			if (o->nextra == DEC_MAX_EXTRA)
				return xp_usage_error("decode", "too many options");
			o->extra[o->nextra].name = x->name;
			o->extra[o->nextra++].value = val ? val : "";
		} else if (!strcmp(name, "input")) {
			o->input = val;
		} else if (!strcmp(name, "output")) {
			o->output = val;
		} else if (!strcmp(name, "format")) {
			if (out_format_parse(val, &o->format) < 0)
				return xp_usage_error("decode", "unknown format '%s' (text, jsonl, csv, folded, "
						      "callgrind)", val);
		} else if (!strcmp(name, "tid")) {
			char *end;
			long t = strtol(val, &end, 10);
			if (*end || end == val || t < 0 || t > INT32_MAX)
				return xp_usage_error("decode", "bad thread id '%s'", val);
			o->tid = (int32_t)t;
		} else if (!strcmp(name, "comm")) {
			o->comm = val;
		} else if (!strcmp(name, "metric")) {
			o->metric = val;
		} else if (!strcmp(name, "percent-limit")) {
			char *end;
			o->percent_limit = strtod(val, &end);
			if (*end || end == val || o->percent_limit < 0 || o->percent_limit > 100)
				return xp_usage_error("decode", "bad percentage '%s'", val);
		} else if (!strcmp(name, "per-thread")) {
			o->per_thread = true;
		}
	}
	return 0;
}

/* -i: a directory from xptrace record (perf.data + .build-id/) or a perf.data file. */
static int resolve_input(const char *in, char **data, char **dir)
{
	struct stat st;
	char buf[PATH_MAX];

	if (strcmp(in, "-") == 0) {
		*data = strdup(in);
		*dir = NULL;
		return 0;
	}
	if (stat(in, &st) < 0)
		return xp_err(in, strcmp(in, "xptrace.data") == 0 ?
			      "record one with `xptrace record`, or give a trace with -i" :
			      "give a trace directory or perf.data file with -i", "%s", strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		snprintf(buf, sizeof(buf), "%s/perf.data", in);
		if (stat(buf, &st) < 0)
			return xp_err(in, "give the directory `xptrace record` wrote",
				      "no perf.data in this directory");
		*data = strdup(buf);
		*dir = strdup(in);
		return 0;
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
	} else {
		*dir = NULL;
	}
	return 0;
}

int dec_read(struct dec_ctx *c, pd_rec_fn fn, void *arg);

struct rd_ctx {
	struct dec_ctx *c;
	pd_rec_fn fn;
	void *arg;
	/* progress on a terminal for long reads */
	bool progress;
	uint64_t nrec, start, end;
	struct timespec t0, last;
	bool shown;
};

static double since(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static void progress(struct rd_ctx *x, uint64_t offset)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (since(&x->t0, &now) < 1.0 || since(&x->last, &now) < 0.25)
		return;
	x->last = now;
	x->shown = true;
	fprintf(stderr, "\rxptrace: decoding %s: %3.0f%%", pd_name(x->c->pd),
		100.0 * (double)(offset - x->start) / (double)(x->end - x->start));
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

	if (x->progress && (++x->nrec & 0xffff) == 0)
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
	x.progress = x.end > x.start && isatty(2);
	clock_gettime(CLOCK_MONOTONIC, &x.t0);
	rc = pd_read_events(c->pd, timeless_branch_samples(c->pd) ? 0 : PD_ORDERED, rd_rec, &x);
	if (x.shown)
		fprintf(stderr, "\r\033[K");
	pd_report_losses(c->pd);
	return rc;
}

/* Address -> function cache: stacks repeat, symbol lookups are the hot path. */
#define FNCACHE_BITS 16
struct fncache_ent {
	uint64_t addr;
	int32_t pid;
	uint32_t fn;
	uint64_t gen;
	uint64_t t0, t1;	/* the mapping's validity: decoders may look back in time */
};
static struct fncache_ent *fncache;

uint32_t dec_fn_of(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time)
{
	uint64_t gen = sb_generation(c->sb) + 1;
	size_t h = (size_t)((ip * 0x9e3779b97f4a7c15ULL ^ (uint64_t)(uint32_t)pid) >> (64 - FNCACHE_BITS));

	if (!fncache)
		fncache = calloc((size_t)1 << FNCACHE_BITS, sizeof(*fncache));
	if (fncache && fncache[h].gen == gen && fncache[h].addr == ip && fncache[h].pid == pid &&
	    (time ? fncache[h].t0 <= time && time < fncache[h].t1 : fncache[h].t1 == UINT64_MAX))
		return fncache[h].fn;
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
	if (fncache)
		fncache[h] = (struct fncache_ent){ ip, pid, fn, gen, t0, t1 };
	return fn;
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
		/* perf report's Overhead is by period of the first event */
		if (c->metric == 0)
			c->metric = c->nmetrics;
		c->nmetrics++;
	}
	return 0;
}

bool dec_thread_selected(struct dec_ctx *c, int32_t tid, uint64_t time)
{
	if (c->opts->tid >= 0 && tid != c->opts->tid)
		return false;
	if (c->opts->comm && strcmp(sb_comm_at(c->sb, tid, time), c->opts->comm) != 0)
		return false;
	return true;
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

static int run(int argc, char **argv)
{
	struct dec_opts o = {0};
	struct dec_ctx c = {0};
	const struct dec_decoder *d = NULL;
	const struct dec_view *v;
	char *data = NULL, *dir = NULL;
	int rc, status = XP_EXIT_RUNTIME;

	/* PT raw mode (decode --pt FILE ...) has its own command line */
	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	c.opts = &o;
	for (size_t i = 0; i < NDECODERS; i++)
		if (decoders[i]->claims && decoders[i]->claims(&o)) {
			d = decoders[i];
			break;
		}
	c.sb = sb_new();
	if (!c.sb)
		goto out;
	if (!d) {
		if (resolve_input(o.input ? o.input : "xptrace.data", &data, &dir) < 0)
			goto out;
		c.perf_data = data;
		c.trace_dir = dir;
		if (pd_open(data, &c.pd) < 0)
			goto out;
	}
	c.sym = sym_new(dir, NULL);
	c.jit = jit_new(c.sb, dir);
	if (!c.sym || !c.jit)
		goto out;
	jit_set_mono(c.jit, clock_monotonic(c.pd));
	for (size_t i = 0; !d && i < NDECODERS; i++)
		if (decoders[i]->accepts && decoders[i]->accepts(&c))
			d = decoders[i];
	if (!d) {
		xp_err(c.perf_data, "record samples, PT or LBR with xptrace record",
		       "no decoder understands this trace");
		goto out;
	}
	v = find_view(o.view ? o.view : d->default_view);
	if (!v) {
		xp_err("decode", NULL, "the %s decoder has no view '%s'", d->name, o.view ? o.view : d->default_view);
		goto out;
	}
	if (!(v->formats & (1u << o.format))) {
		status = xp_usage_error("decode", "--%s cannot be written as %s", v->name,
					out_format_name(o.format));
		goto out;
	}
	if (d->setup && d->setup(&c) < 0)
		goto out;
	if (o.metric) {
		unsigned m;
		for (m = 0; m < c.nmetrics; m++)
			if (strcmp(c.metrics[m].name, o.metric) == 0)
				break;
		if (m == c.nmetrics) {
			char have[256] = "";
			for (unsigned k = 0; k < c.nmetrics; k++)
				snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s", k ? ", " : "",
					 c.metrics[k].name);
			status = xp_usage_error("decode", "no metric '%s' in this trace (have: %s)", o.metric, have);
			goto out;
		}
		c.metric = m;
	}
	c.out = stdout;
	if (o.output) {
		c.out = fopen(o.output, "w");
		if (!c.out) {
			xp_err(o.output, NULL, "cannot write: %s", strerror(errno));
			c.out = NULL;
			goto out;
		}
	}
	void *state;
	if (v->open(&c, &state) < 0)
		goto out;
	struct xev_sink sink = { v->event, state, v->batch };
	rc = d->run(&c, &sink);
	if (v->close(state, rc < 0 ? -1 : 0) < 0 || rc < 0)
		goto out;
	if (fflush(c.out) != 0 || ferror(c.out)) {
		xp_err(o.output ? o.output : "stdout", NULL, "write failed: %s", strerror(errno));
		goto out;
	}
	status = XP_EXIT_OK;
out:
	if (c.out && c.out != stdout)
		fclose(c.out);
	sym_free(c.sym);
	jit_free(c.jit);
	sb_free(c.sb);
	pd_close(c.pd);
	free(fncache);
	fncache = NULL;
	free(data);
	free(dir);
	return status;
}

const struct xp_cmd xp_cmd_decode = {
	.name = "decode",
	.summary = "decode a trace offline into reports",
	.usage = usage_buf,
	.run = run,
};
