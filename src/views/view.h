/* The view interface.  A view consumes the event stream of one decode and writes a
 * report through src/output/.  Its name is its option (`--NAME [ARG]`): open() builds
 * state from the context (and says in vc->wants what it reads), event()/batch()
 * consume the stream, close() writes the report.  Views symbolize with dec_fn_of()
 * and know no decoder. */
#ifndef VIEW_H
#define VIEW_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "decode/ctx.h"
#include "output/out.h"

/* The options of the report. */
struct view_opts {
	const char *view;	/* view name */
	const char *view_arg;	/* its argument, if it takes one */
	enum out_format format;
	const char *output;	/* -o, NULL: stdout */
	double percent_limit;	/* --percent-limit, < 0: not given (the view's default) */
	bool per_thread;	/* --per-thread: one tree per thread (calltree) */
	bool per_process;	/* --per-process: rows per process (functions) */
	/* a view outside the table, which collects instead of writing (xptrace diff:
	 * views/view_collect.h), and where it collects to; NULL: the view named above */
	const struct dec_view *impl;
	void *impl_arg;
};

struct view_ctx {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	uint32_t wants;		/* DEC_WANT_*: DEC_WANT_ALL unless open() narrows it */
};

struct dec_view {
	const char *name;
	const char *arg;	/* metavariable when the view takes an argument */
	const char *help;
	unsigned formats;	/* bitmask of 1u << OUT_* it can write */
	const struct dec_option *options;
	/* the shared options it honours besides its own `options` (NULL-terminated):
	 * "tid", "comm", "time" (applied in front of every view by the engine), "sym",
	 * "srcline", "syntax", "percent-limit", "per-thread", "per-process",
	 * "no-compensate"; the engine refuses the others with a usage error */
	const char *const *honours;
	/* --time is the view's own, not a filter of the events (--calls keeps the calls
	 * that start in the window, on an instruction clock when the trace has no
	 * timestamps): the engine passes every event, c->opts->time says the window */
	bool own_time;
	int (*open)(struct view_ctx *vc, void **state);
	int (*event)(void *state, const struct xev *ev);
	/* optional: `event` over an array (xev_sink.batch), for decoders that batch */
	int (*batch)(void *state, const struct xev *evs, size_t n);
	int (*close)(void *state, int status);	/* writes the report unless status < 0 */
	/* optional: a view that reads the stream twice (--loops: the loops are known only
	 * at the end of the first).  Called after the first decode; when it returns 1 the
	 * engine decodes the trace again into the same state, on one thread (the first
	 * decode's context stays the view's: its session then knows the whole trace). */
	int (*rewind)(void *state);
	/* optional, for parallel decode (-j, engine/eng_par.h): a state for a later
	 * stretch of the stream, fed on another thread through *part, or -EOPNOTSUPP when
	 * this state does not split (the engine then feeds the view in order) */
	int (*part_open)(void *state, struct xev_sink *part);
	/* folds a part into the state (its events came after the state's) and frees it;
	 * state NULL: frees it only */
	int (*part_join)(void *state, struct xev_sink *part);
};

/* Fails (exit 1) a view that needs branch data on a trace of sampled addresses only,
 * saying which modes record one; 0 when the trace has it. */
int view_need_branches(const struct view_ctx *vc);

struct pd_fault;
/* The threads a signal ended (the trace's faults feature; --tid's only): *out a
 * malloc'd array, NULL when the trace has none.  0 or a negative error. */
int view_load_faults(struct dec_ctx *c, struct pd_fault **out, size_t *n);
/* The signal as --insn and --calls say it: "SIGSEGV (Segmentation fault), address
 * 0x10"; in jsonl its signal, signo, si_code and addr keys. */
void view_fault_text(struct out_buf *b, const struct pd_fault *f);
void view_fault_json(struct out_buf *b, const struct pd_fault *f);

#endif
