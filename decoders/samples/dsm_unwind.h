/* DWARF unwinding of samples that carry user registers and a copy of the user stack
 * (perf record --call-graph dwarf), with libdw's dwfl over the session's mappings. */
#ifndef SAMPLES_UNWIND_H
#define SAMPLES_UNWIND_H

#include "decode/ctx.h"

#define DSM_UNWIND_MAX 256

struct dsm_unwind;
struct dsm_unwind *dsm_unwind_new(struct dec_ctx *c);
void dsm_unwind_free(struct dsm_unwind *u);
/* Fills out[] with the user stack, leaf first; returns the count, < 0 on failure. */
int dsm_unwind(struct dsm_unwind *u, struct dec_ctx *c, const struct pd_sample *s, uint64_t *out,
	       unsigned max);

#endif
