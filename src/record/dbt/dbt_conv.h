/* --mode dbt's second half: the branch streams the valgrind tool wrote (one file per
 * process, src/record/dbt/tool/xd_stream.h) become the step collector's events
 * (record/step/col_step_out.h), hence Intel PT and sideband in perf.data.  The files
 * are merged in time order (the tool's callbacks carry CLOCK_MONOTONIC times; branch
 * outcomes between two of them take the earlier one's), read in fixed-size pieces:
 * memory does not grow with the trace. */
#ifndef DBT_CONV_H
#define DBT_CONV_H

#include <stddef.h>
#include <stdint.h>

#include "record/rec.h"

struct dbt_stats {
	uint64_t cond, tip, syscalls, signals, threads, processes, maps;
	uint64_t orphans;	/* branch records of no started thread: a broken stream */
	uint64_t lost_signals;	/* handlers the tool did not see installed */
	uint64_t raw_bytes;
	char caps[512];		/* VEX's capabilities: what the program saw of the CPU */
};

/* Converts every file `dir`/p.* into r's perf.data; 0 or a negative errno (reported). */
int dbt_convert(struct rec *r, const char *dir, struct dbt_stats *st);

#endif
