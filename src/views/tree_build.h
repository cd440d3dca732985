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
#include "util/xp_map.h"

struct tb_thread {
	int32_t pid, tid;
	struct ct_tree *t;
	struct ct_cursor *cur;
	bool exact;		/* has call/return input: samples then add cost only */
	uint64_t last_time;	/* --metric time: the thread's latest timestamp */
};

struct tb {
	struct dec_ctx *c;
	int time_m;		/* index of the time metric, -1: none */
	int samples_m;		/* index of the sample count, -1: none */
	bool timed;		/* some event carried a timestamp */
	struct tb_thread *th;
	uint32_t nth, capth;
	struct xp_map tids;	/* tid -> index in th */
	uint32_t *fns;
	uint32_t capfns;
	uint64_t repairs;	/* exits without their entry, entries left without exit */
	uint64_t aborted;	/* instructions of aborted transactions (not in the trees) */
	uint64_t first_time, last_time;	/* the span of the trace's events (0: none) */
	bool compensate;	/* subtract the probes' calibrated cost (tb_finish) */
	uint64_t compensated;	/* ns subtracted, every thread */
	uint64_t caller_ns, callee_ns;	/* the costs subtracted per probed call */
	uint64_t leaf_ns;	/* the trace's own in-call cost they follow, 0: calibrated */
	struct xp_map probe_fns;	/* fn -> index of the probe that hit it */
};

/* The options of the tree views (one of them declares them: --help lists them once). */
extern const struct dec_option tb_options[];

void tb_init(struct tb *b, struct dec_ctx *c);
/* An xev sink function (ctx = the builder). */
int tb_event(void *ctx, const struct xev *ev);
/* After the stream: merged traces get their time apportioned (per thread). */
int tb_finish(struct tb *b);
/* One tree of every thread (not finished: ct_finish it); NULL on ENOMEM. */
struct ct_tree *tb_merge_all(struct tb *b);
void tb_free(struct tb *b);

/* The probe counting fn's calls when it counted in part of the trace only, with that
 * window [*from, *to]; NULL when fn's counts cover the whole trace. */
const struct pd_probe *tb_window(const struct tb *b, uint32_t fn, uint64_t *from, uint64_t *to);
/* Text header lines of trees with probes: the compensation, the partial windows. */
void tb_header(const struct tb *b, FILE *f);

/* Names for reports and writers (ctx = the symbol context). */
const char *tb_fn_name(void *ctx, uint32_t fn);
const char *tb_fn_module(void *ctx, uint32_t fn);
bool tb_fn_srcline(void *ctx, uint32_t fn, const char **file, int *line);

#endif
