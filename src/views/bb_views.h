/* The instruction-level views built on the block analyses (analysis/bb.h): --insn,
 * --blocks, --annotate and the per-instruction callgrind profile. */
#ifndef BB_VIEWS_H
#define BB_VIEWS_H

#include <stdbool.h>
#include <stdio.h>

#include "analysis/bb.h"
#include "perfdata/pd_faults.h"

enum bb_format { BB_TEXT, BB_JSONL };

/* --insn -F: what a line shows, by perf script's field names, in its order (insn: the
 * bytes, disasm: the disassembly).  jsonl keys: time, tid, pid, cpu, comm, ip, sym
 * (with +0xOFF when symoff), dso, insnlen, bytes (insn), insn (disasm), srcline. */
enum bb_field {
	BB_F_COMM, BB_F_TID, BB_F_PID, BB_F_TIME, BB_F_CPU, BB_F_IP, BB_F_SYM, BB_F_SYMOFF,
	BB_F_DSO, BB_F_SRCLINE, BB_F_INSNLEN, BB_F_INSN, BB_F_DISASM, BB_NFIELDS
};
#define BB_FIELD(f) (1u << BB_F_##f)
/* the fields of the line without -F (srcline: --srcline) */
#define BB_FIELDS_DEFAULT (BB_FIELD(TIME) | BB_FIELD(TID) | BB_FIELD(CPU) | BB_FIELD(IP) | \
			   BB_FIELD(SYM) | BB_FIELD(SYMOFF) | BB_FIELD(INSN) | BB_FIELD(DISASM))

/* "a,b,c": exactly those fields; "+a,-b": `dflt` with a, without b.  0, or -EINVAL
 * after a usage message (an unknown field, both forms, none left, symoff without sym). */
int bb_fields_parse(const char *spec, unsigned dflt, unsigned *out);
/* perf script's name of a field (NULL past the last) */
const char *bb_field_name(enum bb_field f);

struct bb_view_opts {
	enum bb_format format;
	bool intel;		/* --syntax intel (default att, like perf and objdump) */
	bool srcline;
	bool inlined;		/* --annotate --inline: the functions inlined at each instruction */
	bool raw_time;		/* times are raw TSC (raw PT), not perf ns */
	/* --insn: 0, the default line; else BB_FIELD bits (-F): perf script's layout of
	 * those fields in text, only their keys in jsonl */
	unsigned fields;
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

/* Traces of sampled addresses (no branch data): samples and period per address. */
struct bb_samples;
struct bb_samples *bb_samples_new(void);
void bb_samples_free(struct bb_samples *s);
int bb_samples_add(struct bb_samples *s, int32_t pid, uint64_t time, uint64_t ip, uint64_t period);
/* --annotate SYM: per instruction the samples, their period and its percent of the
 * function's (`metric` names it), source lines above their instructions; -ENOENT
 * when no sample fell in SYM. */
int bb_samples_annotate(struct bb_samples *s, const char *sym, const char *metric,
			const struct bb_view_opts *o);
/* --blocks: the basic blocks of the sampled functions (found by disassembly) with their
 * samples, period, percent of the trace's and samples per instruction, by samples.
 * Ends the tally (no adds after it). */
int bb_samples_blocks(struct bb_samples *s, const char *metric, const struct bb_view_opts *o);
/* --blocks --format callgrind: per instruction its samples and period (`metric`),
 * `positions: instr line`, grouped by function with ob=, fl=/fi=.  Ends the tally. */
int bb_samples_callgrind(struct bb_samples *s, const char *metric, FILE *out, const char *cmd,
			 const struct bb_env *env);

/* --format callgrind: per-instruction Ir (+ Cycles) with exact calls=.  bb_cg_write
 * ends the profile (no events after it); `cmd` may be NULL. */
struct bb_cg;
struct bb_cg *bb_cg_new(const struct bb_env *env);
int bb_cg_event(void *ctx, const struct xev *ev);
int bb_cg_write(struct bb_cg *cg, FILE *out, const char *cmd);
void bb_cg_free(struct bb_cg *cg);

#endif
