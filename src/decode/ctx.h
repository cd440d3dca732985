/* The decode context: what a decoder (decoders/) and a view (src/views/) share while
 * one trace is decoded, and the services they call on it.
 *
 *   trace --> decoder (decoders/: turns it into struct xev events, decode/xev.h)
 *         --> view    (src/views/: analyses the stream, writes through src/output/)
 *
 * The engine (src/engine/) opens the trace, fills this context, picks the decoder
 * (decode/decoder.h) and the view (views/view.h) and runs one into the other.
 * Decoders see only this context: no view, writer or command line. */
#ifndef DEC_CTX_H
#define DEC_CTX_H

#include <stdbool.h>
#include <stdint.h>

#include "perfdata/pd_read.h"
#include "perfdata/pd_probes.h"
#include "session/sb.h"
#include "session/sym.h"
#include "session/jit.h"
#include "decode/xev.h"

/* An extra option of a decoder or view: `--name` or `--name ARG`. */
struct dec_option {
	const char *name;
	const char *arg;	/* metavariable, NULL for a flag */
	const char *help;
};

#define DEC_MAX_METRICS 8	/* = CT_MAX_METRICS: views keep one value per metric */
#define DEC_MAX_EXTRA 32

/* What a metric counts; views turn an xev into a weight vector with dec_weights(). */
enum dec_metric_kind {
	DEC_M_SAMPLES,	/* XEV_SAMPLE: 1 per sample (of event `event` when `one_event`) */
	DEC_M_EVENT,	/* XEV_SAMPLE: period of samples of event `event`, plus group values */
	DEC_M_INSNS,	/* XEV_BLOCK: instructions */
	DEC_M_CYCLES,	/* XEV_BLOCK: cycles when known */
	DEC_M_TIME,	/* ns between a thread's timestamps: the view charges them (weight 0) */
};

struct dec_metric {
	enum dec_metric_kind kind;
	uint32_t event;		/* DEC_M_EVENT, DEC_M_SAMPLES with one_event: attr index */
	bool one_event;		/* DEC_M_SAMPLES: of several sampling events, one's samples */
	char name[48];		/* column / callgrind event name */
	bool ns;		/* its values are nanoseconds (time, cpu-clock, task-clock):
				 * text reports print them in a unit they name */
};

/* The options decoders may look at. */
struct dec_opts {
	const char *input;	/* -i: directory or perf.data (default xptrace.data) */
	int32_t tid;		/* --tid, -1: all */
	const char *comm;	/* --comm */
	const char *metric;	/* --metric name, NULL: decoder's default */
	const char *time;	/* --time A-B (the engine filters the stream by it) */
	struct { const char *name, *value; } extra[DEC_MAX_EXTRA];
	unsigned nextra;
};

/* What the view consumes (dec_ctx.wants): a decoder may leave out the event kinds it
 * does not name (1u << XEV_*), a speed hint only. */
#define DEC_WANT_ALL 0xffffu
/* The view shows the stream in time order event by event (--insn): decoders that
 * interleave several queues split blocks where a queue pauses. */
#define DEC_WANT_FINE_ORDER (1u << 16)
/* The view takes the threads' context switches (XEV_SWITCH), which DEC_WANT_ALL does
 * not ask for: the merged trees keep off-cpu time apart. */
#define DEC_WANT_SWITCH (1u << 17)

struct dec_fncache;
struct dec_par;

struct dec_ctx {
	const struct dec_opts *opts;
	const char *trace_dir;	/* holds .build-id/ (NULL for a bare perf.data) */
	const char *perf_data;	/* path of the perf.data */
	struct pd_file *pd;	/* NULL for raw inputs */
	struct sb_session *sb;
	struct sym_ctx *sym;
	struct jit_ctx *jit;	/* JIT code names and bytes (jit.h) */
	/* set by the decoder before the view opens */
	struct dec_metric metrics[DEC_MAX_METRICS];
	unsigned nmetrics;
	unsigned metric;	/* the one to sort, percent and fold by */
	bool sampled;		/* the stream is statistical (XEV_F_SAMPLED) */
	bool no_branches;	/* sampled instruction addresses only: no executed blocks,
				 * branches or instruction stream (no branch data) */
	const char *on_request;	/* metrics the decoder adds only when --metric names them
				 * ("time"), for the list of what the trace has */
	bool traced_time;	/* times are those of a traced run (step mode's ptrace
				 * stops): longer than the program runs natively */
	bool merged;		/* exact entry/exit events (XEV_F_FUNC) and samples: one
				 * tree of both, in time by default */
	/* set by the engine: the trace's probes feature, NULL when it has none
	 * (dec_probes_load) */
	struct pd_probes *probes;
	uint32_t *probe_of;	/* per attr: index in probes->p, UINT32_MAX: none */
	/* set by the engine: worker threads for a decoder that splits its trace into
	 * pieces (decode/dec_par.h); NULL: decode on this thread */
	struct dec_par *par;
	/* set by the view before the decoder runs */
	uint32_t wants;
	struct dec_fncache *fncache;	/* dec_fn_of's address -> function cache */
};

/* The value of an extra option (flag: "" when given), NULL when absent. */
const char *dec_opt(const struct dec_ctx *c, const char *name);
/* Inline frames (DWARF inlined subroutines) in the views that show them: on unless
 * --no-inline (--inline, the default, is accepted). */
bool dec_inline(const struct dec_ctx *c);

/* Reads the perf.data in time order: feeds the session with sideband, then calls fn
 * for every record.  Reports losses at the end. */
int dec_read(struct dec_ctx *c, pd_rec_fn fn, void *arg);
/* dec_read for a callback that takes kernel records only (SAMPLEs: the user records,
 * FINISHED_ROUND, AUXTRACE..., may be left out).  With c->par (-j > 1) and a perf.data
 * file, the file is read and put in time order on a second thread while this one
 * parses, counts and decodes: the records, the sideband and the callback's calls come
 * in the same order as dec_read's, the losses reported are the same. */
int dec_read_samples(struct dec_ctx *c, pd_rec_fn fn, void *arg);

/* The interned function of an address of thread (pid) at time. */
uint32_t dec_fn_of(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time);
/* The same, with the span it holds for: the address is this function for every time in
 * [*from, *to) (with time 0: for time 0 only when *to is UINT64_MAX), as long as
 * dec_fn_gen() stays the same. */
uint32_t dec_fn_span(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time, uint64_t *from,
		     uint64_t *to);
/* dec_fn_span of frame i of a sample's callchain `stack` (leaf first).  A caller's
 * entry is the return address of its call, looked up one byte back, in the call (as
 * gdb and libunwind do): a call to a function that never returns can be its caller's
 * last instruction, its return address the next function's first byte.  The leaf, and
 * the first user address after kernel frames (where the thread entered the kernel),
 * are exact; an address whose byte before has no symbol is looked up as it is. */
uint32_t dec_frame_fn_span(struct dec_ctx *c, int32_t pid, const uint64_t *stack, uint32_t i, uint64_t time,
			   uint64_t *from, uint64_t *to);
uint32_t dec_frame_fn(struct dec_ctx *c, int32_t pid, const uint64_t *stack, uint32_t i, uint64_t time);
/* Whether `ip` is the first instruction of a function (a symbol's start; JIT code: a
 * jitdump entry's): tracing that starts there entered the function. */
bool dec_fn_entry(struct dec_ctx *c, int32_t pid, uint64_t ip, uint64_t time);
/* Changes whenever the sideband changes what an address means. */
uint64_t dec_fn_gen(const struct dec_ctx *c);
/* Frees what dec_fn_of cached. */
void dec_ctx_release(struct dec_ctx *c);

/* The weight vector (c->nmetrics values) of one event; false if it weighs nothing. */
bool dec_weights(const struct dec_ctx *c, const struct xev *ev, uint64_t *w);

/* Metrics of a decoder of samples: the sample count, then one per event of the file
 * that `counts` accepts (its period), the first of them the default as in perf report. */
int dec_setup_sampled(struct dec_ctx *c, bool (*counts)(const struct pd_attr *a));
/* After c->metric is chosen: with several sampling events the sample count is that
 * event's (the first event's when the metric is no sampling event), as perf report
 * counts Samples per event. */
void dec_metric_chosen(struct dec_ctx *c);

/* Reads the trace's probes feature (xptrace record's probes: windows, hits, calibrated
 * cost of a hit) into c->probes, and which attr records which probe's hits (its entry
 * and its return event).  No feature: c->probes stays NULL; an unreadable one is
 * reported and ignored.  0 or -ENOMEM. */
int dec_probes_load(struct dec_ctx *c);
/* The probe whose hits attr `attr` records, NULL if none. */
const struct pd_probe *dec_probe_of(const struct dec_ctx *c, uint32_t attr);
/* The part of a trace spanning [first, last] in which probe p counted (armed before the
 * trace or disarmed 0: from its start or to its end): [*from, *to].  True when that is
 * not the whole trace: p's counts are then those of the window only. */
bool dec_probe_window(const struct pd_probe *p, uint64_t first, uint64_t last, uint64_t *from, uint64_t *to);
/* The function part of a probe's name (probe_xptrace:SYM -> SYM). */
const char *dec_probe_fn(const struct pd_probe *p);

/* Whether a thread passes the filters --tid / --comm (at `time`: its command then). */
bool dec_thread_passes(struct dec_ctx *c, int32_t tid, uint64_t time);
/* The same, inline when no filter is set: every event of every view asks. */
static inline bool dec_thread_selected(struct dec_ctx *c, int32_t tid, uint64_t time)
{
	return (c->opts->tid < 0 && !c->opts->comm) || dec_thread_passes(c, tid, time);
}

#endif
