/* `xptrace decode`: how decoders and views plug in.
 *
 *   trace (DIR/perf.data, a perf.data file, or a raw input a decoder claims)
 *     --> decoder  (decoders/: samples, pt, lbr, ...)  turns it into struct xev events
 *     --> view     (--functions, --calltree, --insn, --blocks, --annotate SYM, ...)
 *     --> writer   (src/out_*: text, jsonl, csv, folded, callgrind)
 *
 * Adding a decoder: define a `const struct dec_decoder` and add it to `decoders[]` in
 * src/cmd_decode.c.  cmd_decode asks each decoder in table order whether it claims the
 * command line (raw inputs such as `--pt FILE`, checked before any file is opened) or
 * accepts the opened perf.data (`accepts`), and runs the first that does.  A decoder
 * reads the trace with dec_read() (records in time order, sideband already applied to
 * the session) and emits xev events to the sink it is given.
 *
 * Adding a view: define a `const struct dec_view` and add it to `views[]`.  Its name
 * is its option (`--NAME [ARG]`).  open() builds state from the context, event()
 * consumes the stream, close() writes the report.  Views symbolize with
 * dec_fn_of() and format with out_*.
 *
 * Options a decoder or view needs beyond the common ones are declared in its `options`
 * list and read back with dec_opt(); cmd_decode parses them, prints them in --help and
 * rejects unknown ones. */
#ifndef DECODE_H
#define DECODE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "ct.h"
#include "out.h"
#include "pd_read.h"
#include "sb.h"
#include "sym.h"
#include "jit.h"
#include "xev.h"

/* An extra option of a decoder or view: `--name` or `--name ARG`. */
struct dec_option {
	const char *name;
	const char *arg;	/* metavariable, NULL for a flag */
	const char *help;
};

#define DEC_MAX_METRICS CT_MAX_METRICS
#define DEC_MAX_EXTRA 32

/* What a metric counts; views turn an xev into a weight vector with dec_weights(). */
enum dec_metric_kind {
	DEC_M_SAMPLES,	/* XEV_SAMPLE: 1 per sample */
	DEC_M_EVENT,	/* XEV_SAMPLE: period of samples of event `event`, plus group values */
	DEC_M_INSNS,	/* XEV_BLOCK: instructions */
	DEC_M_CYCLES,	/* XEV_BLOCK: cycles when known */
	DEC_M_TIME,	/* ns between a thread's timestamps: the view charges them (weight 0) */
};

struct dec_metric {
	enum dec_metric_kind kind;
	uint32_t event;		/* DEC_M_EVENT: attr index */
	char name[48];		/* column / callgrind event name */
};

struct dec_opts {
	const char *input;	/* -i: directory or perf.data (default xptrace.data) */
	const char *view;	/* view name */
	const char *view_arg;	/* its argument, if it takes one */
	enum out_format format;
	const char *output;	/* -o, NULL: stdout */
	int32_t tid;		/* --tid, -1: all */
	const char *comm;	/* --comm */
	const char *metric;	/* --metric name, NULL: decoder's default */
	double percent_limit;	/* --percent-limit */
	bool per_thread;	/* --per-thread: one tree per thread (calltree) */
	struct { const char *name, *value; } extra[DEC_MAX_EXTRA];
	unsigned nextra;
};

struct dec_ctx {
	const struct dec_opts *opts;
	const char *trace_dir;	/* holds .build-id/ (NULL for a bare perf.data) */
	const char *perf_data;	/* path of the perf.data */
	struct pd_file *pd;	/* NULL for raw inputs */
	struct sb_session *sb;
	struct sym_ctx *sym;
	struct jit_ctx *jit;	/* JIT code names and bytes (jit.h) */
	FILE *out;
	/* set by the decoder before the view opens */
	struct dec_metric metrics[DEC_MAX_METRICS];
	unsigned nmetrics;
	unsigned metric;	/* the one to sort, percent and fold by */
	bool sampled;		/* the stream is statistical (XEV_F_SAMPLED) */
};

struct dec_decoder {
	const char *name;
	const char *default_view;
	const struct dec_option *options;	/* NULL-name terminated, may be NULL */
	/* raw inputs: true when the command line is for this decoder (no perf.data) */
	bool (*claims)(const struct dec_opts *o);
	/* perf.data inputs: true when the trace holds what this decoder decodes */
	bool (*accepts)(struct dec_ctx *c);
	/* fills c->metrics; called before the view opens */
	int (*setup)(struct dec_ctx *c);
	int (*run)(struct dec_ctx *c, const struct xev_sink *sink);
};

struct dec_view {
	const char *name;
	const char *arg;	/* metavariable when the view takes an argument */
	const char *help;
	unsigned formats;	/* bitmask of 1u << OUT_* it can write */
	const struct dec_option *options;
	int (*open)(struct dec_ctx *c, void **state);
	int (*event)(void *state, const struct xev *ev);
	/* optional: `event` over an array (xev_sink.batch), for decoders that batch */
	int (*batch)(void *state, const struct xev *evs, size_t n);
	int (*close)(void *state, int status);	/* writes the report unless status < 0 */
};

/* The value of an extra option (flag: "" when given), NULL when absent. */
const char *dec_opt(const struct dec_ctx *c, const char *name);

/* Reads the perf.data in time order: feeds the session with sideband, then calls fn
 * for every record.  Reports losses at the end. */
int dec_read(struct dec_ctx *c, pd_rec_fn fn, void *arg);

/* The interned function of an address of thread (pid) at time. */
uint32_t dec_fn_of(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time);

/* The weight vector (c->nmetrics values) of one event; false if it weighs nothing. */
bool dec_weights(const struct dec_ctx *c, const struct xev *ev, uint64_t *w);

/* Metrics of a decoder of samples: the sample count, then one per event of the file
 * that `counts` accepts (its period), the first of them the default as in perf report. */
int dec_setup_sampled(struct dec_ctx *c, bool (*counts)(const struct pd_attr *a));

/* Thread filters from --tid / --comm. */
bool dec_thread_selected(struct dec_ctx *c, int32_t tid, uint64_t time);

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

#endif
