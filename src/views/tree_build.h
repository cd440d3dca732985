/* The call trees of a decode, built from the event stream: one tree per thread, fed by
 * sampled stacks and exact calls/returns alike (analysis/ct.h).  Shared by the views
 * that report trees (--calltree, --functions, --routines, --arcs).
 *
 * Merged traces (dec_ctx.merged: entry/exit events of probes next to samples): each
 * sample hangs below the event node active in its thread at its time, its frames
 * below that node's function becoming sampled nodes; tb_finish then splits each event
 * node's exact time between it and those sampled nodes by their sample counts.
 *
 * Traces with xptrace's probes feature (dec_ctx.probes): before that split, tb_finish
 * subtracts the calibrated cost of every probe hit from the event nodes
 * (ct_compensate) unless --no-compensate; and a probe armed for part of the trace
 * only counted calls in that window (tb_window), which reports say. */
#ifndef TREE_BUILD_H
#define TREE_BUILD_H

#include "views/view.h"
#include "analysis/ct.h"
#include "analysis/ct_sig.h"
#include "views/tree_lines.h"
#include "util/xp_map.h"

/* A thread's previous sampled stack, root first, symbolized: its next samples share
 * their outer frames, whose functions hold while the sideband stays (gen) and the time
 * stays in [from, to) (dec_fn_span). */
struct tb_stack {
	uint64_t *addr;
	uint32_t *fn;
	uint32_t n, cap, capfn;
	int32_t pid;
	uint64_t gen, from, to;
};

/* Whole stacks met before: a sample whose callchain (the addresses, in one thread)
 * is in it lands on the same leaf node again, while the functions hold (gen, [from,
 * to)) and the tree's nodes did not move.  Fixed size: hot stacks repeat. */
#define TB_SC_BITS 10
#define TB_SC_SLOTS (1u << TB_SC_BITS)
#define TB_SC_DEPTH 24
struct tb_sc {
	uint64_t addr[TB_SC_DEPTH];	/* leaf first, as the callchain */
	uint32_t n;			/* 0: empty */
	uint32_t th, node;		/* the thread (index in tb.th) and its leaf node */
	int32_t tid, pid;
	uint64_t gen, from, to, moves;
};

struct tb_thread {
	int32_t pid, tid;
	struct ct_tree *t;
	struct ct_cursor *cur;
	struct ct_sig sig;	/* its signal handlers */
	bool exact;		/* has call/return input: samples then add cost only */
	bool off;		/* switched out (merged trees: XEV_SWITCH) */
	uint64_t last_time;	/* --metric time: the thread's latest timestamp */
	struct tb_stack prev;	/* the previous sample's frames */
	struct ct_path path;	/* and their nodes */
};

struct tb {
	struct dec_ctx *c;
	uint32_t off_fn;	/* "[off-CPU]": the time a thread was switched out */
	bool off_cpu;		/* off_fn is set (merged trees in time) */
	int time_m;		/* index of the time metric, -1: none */
	int samples_m;		/* index of the sample count, -1: none */
	bool timed;		/* some event carried a timestamp */
	struct tb_thread *th;
	uint32_t nth, capth;
	struct xp_map tids;	/* tid -> index in th */
	int32_t last_tid;	/* the thread of the previous event (index last_th) */
	uint32_t last_th;
	uint32_t *fns;
	uint32_t capfns;
	struct tb_sc *sc;	/* TB_SC_SLOTS, allocated at the first sample */
	uint64_t repairs;	/* exits without their entry, entries left without exit */
	uint64_t aborted;	/* instructions of aborted transactions (not in the trees) */
	uint64_t first_time, last_time;	/* the span of the trace's events (0: none) */
	bool compensate;	/* subtract the probes' calibrated cost (tb_finish) */
	uint64_t compensated;	/* ns subtracted, every thread */
	uint64_t caller_ns, callee_ns;	/* the costs subtracted per probed call */
	uint64_t leaf_ns;	/* the trace's own in-call cost they follow, 0: calibrated */
	struct xp_map probe_fns;	/* fn -> index of the probe that hit it */
	struct tl *lines;	/* the costs' source lines (callgrind), NULL: not kept;
				 * tb_free frees it */
	struct ti *inl;		/* --inline: blocks cut by inline chains, NULL: off */
	bool inl_samples;	/* --inline on samples: each frame's inline chain */
	uint32_t *xfns;		/* a sample's functions with their inline frames */
	uint32_t capxfns;
};

/* The options of the tree views (one of them declares them: --help lists them once). */
extern const struct dec_option tb_options[];

/* -EOPNOTSUPP (a usage error, said) for --no-compensate on a trace without probes. */
int tb_init(struct tb *b, struct view_ctx *vc);
/* An xev sink function (ctx = the builder). */
int tb_event(void *ctx, const struct xev *ev);
/* After the stream: merged traces get their time apportioned (per thread). */
int tb_finish(struct tb *b);
/* After the stream, for a view reporting the time metric: 0 when it can, else reported
 * (events, none timed).  `cmd` names the command in the message. */
int tb_check_timed(const struct tb *b, const char *cmd);
/* One tree of every thread (not finished: ct_finish it); NULL on ENOMEM. */
struct ct_tree *tb_merge_all(struct tb *b);
void tb_free(struct tb *b);

/* The probe counting fn's calls when it counted in part of the trace only, with that
 * window [*from, *to]; NULL when fn's counts cover the whole trace. */
const struct pd_probe *tb_window(const struct tb *b, uint32_t fn, uint64_t *from, uint64_t *to);
/* Text header lines of trees with probes: the compensation (of a report in time,
 * `metric`), the partial windows. */
void tb_header(const struct tb *b, FILE *f, unsigned metric);

/* Costs of a report's metric.  Metrics in ns (time, cpu-clock) are printed in text
 * in one unit per report (out_time_unit of its total), named in the column headers
 * ("Base(ms)") and the total line; jsonl and csv keep integer ns under "Base_ns"
 * ("Base_traced_ns": times of a traced run, dec_ctx.traced_time). */
struct tb_units {
	bool ns, text, traced;
	struct out_unit unit;
	char names[3][24];
};

void tb_units_init(struct tb_units *u, const struct dec_ctx *c, unsigned metric, enum out_format f,
		   uint64_t total);
/* Cost column `k` (< 3) of the report, named `name` ("Base", "Cum", "CumRec"). */
struct out_col tb_cost_col(struct tb_units *u, unsigned k, const char *name);
struct out_val tb_cost(const struct tb_units *u, uint64_t x);
/* The text header's "# WHAT: METRIC, total N [unit]", a line saying what the count and
 * cost columns mean (`rec`: with CumRec) and what traced times are. */
void tb_total_line(const struct tb_units *u, FILE *f, const char *what, const struct dec_ctx *c,
		   unsigned metric, uint64_t total, bool rec);

/* Names for reports and writers (ctx = the symbol context). */
const char *tb_fn_name(void *ctx, uint32_t fn);
const char *tb_fn_module(void *ctx, uint32_t fn);
/* callgrind's ob=: the function's file by its absolute path (KCachegrind runs objdump
 * on it; --blocks writes the same), else its module's name. */
const char *tb_fn_object(void *ctx, uint32_t fn);
bool tb_fn_srcline(void *ctx, uint32_t fn, const char **file, int *line);
bool tb_fn_where(void *ctx, uint32_t fn, struct out_fn_where *w);
/* Names of a tree's metrics for pprof: type and unit of metric m. */
struct out_metric tb_metric(const struct dec_ctx *c, unsigned m);

/* Whether thread tid took a new name (exec) in (from, to]: tracing resumes in a new
 * program then, not in a signal handler (analysis/ct_sig.h). */
bool tb_exec_between(struct dec_ctx *c, int32_t tid, uint64_t from, uint64_t to);

#endif
