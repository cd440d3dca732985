/* The instruction-level views built on the block analyses (analysis/bb.h): --insn,
 * --blocks, --annotate and the per-instruction callgrind profile. */
#ifndef BB_VIEWS_H
#define BB_VIEWS_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/bb.h"
#include "perfdata/pd_faults.h"

enum bb_format { BB_TEXT, BB_JSONL };

struct bb_view_opts {
	enum bb_format format;
	bool intel;		/* --syntax intel (default att, like perf and objdump) */
	bool srcline;
	bool raw_time;		/* times are raw TSC (raw PT), not perf ns */
	const struct bb_env *env;
	FILE *out;
	/* --insn: threads a signal ended (the trace's faults feature): the faulting
	 * instruction is shown last, marked; a kill gets a marker at its time */
	const struct pd_fault *faults;
	size_t nfaults;
};

/* --insn: streams one line per instruction and one per event marker. */
struct bb_insn_view;
struct bb_insn_view *bb_insn_view_new(const struct bb_view_opts *o);
int bb_insn_view_event(void *ctx, const struct xev *ev);
/* Flushes and frees; returns -1 when writing the output failed. */
int bb_insn_view_free(struct bb_insn_view *v);

/* --blocks */
int bb_blocks_report(struct bb_tally *t, const struct bb_view_opts *o);
/* --annotate SYM: returns -1 when SYM executed nothing or is unknown. */
int bb_annotate_report(struct bb_tally *t, const char *sym, const struct bb_view_opts *o);

/* --format callgrind: per-instruction Ir (+ Cycles) with exact calls=.  bb_cg_write
 * ends the profile (no events after it); `cmd` may be NULL. */
struct bb_cg;
struct bb_cg *bb_cg_new(const struct bb_env *env);
int bb_cg_event(void *ctx, const struct xev *ev);
int bb_cg_write(struct bb_cg *cg, FILE *out, const char *cmd);
void bb_cg_free(struct bb_cg *cg);

#endif
