/* Views that collect instead of writing: the per-function, per-line or per-block totals
 * of one decode, for commands that compare decodes (xptrace diff).  The engine runs one
 * when view_opts.impl points to it; view_opts.impl_arg is the struct vcl_table to fill. */
#ifndef VIEW_COLLECT_H
#define VIEW_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "views/view.h"

struct vcl_row {
	char *name;		/* demangled */
	char *module;		/* lines: the function the line's code lies in */
	int line;		/* lines: the line of name "file:line", 0 when unknown */
	uint64_t value;		/* Base (self) in the table's metric */
	uint64_t samples;	/* sample count behind value (sampled traces) */
	uint64_t calls;		/* exact traces: every call */
};

struct vcl_table {
	struct vcl_row *rows;	/* one per function symbol; a name may repeat */
	uint32_t n, cap;
	char metric[48];	/* the metric's name */
	bool sampled;		/* values are statistical: `samples` says how many */
	bool ns;		/* values are nanoseconds */
	bool traced;		/* ... of a traced run (step mode), not native */
	uint64_t total, total_samples;
};

/* Per function (Base), per source line ("file:line"), per basic block ("function
 * file:first-last").  Lines and blocks compare instructions of exact traces (blocks:
 * exact only) or samples; a request for another metric fails with -EOPNOTSUPP. */
extern const struct dec_view vcl_functions, vcl_lines, vcl_blocks;
/* Per loop of exact traces (views/view_loops.c): "function file:line" (the loop's first
 * line; " depth N" when nested), its iterations, its entries as calls. */
extern const struct dec_view vcl_loops;

/* Appends a row, its strings copied (name NULL: "[unknown]", module NULL: ""): 0 or
 * -ENOMEM. */
int vcl_table_add(struct vcl_table *t, const char *name, const char *module, int line, uint64_t value,
		  uint64_t samples, uint64_t calls);
void vcl_table_free(struct vcl_table *t);

#endif
