/* The perf.data side of --mode step (rec_mode_step.c) for another producer of the step
 * tracer's events (struct stp_event): --mode dbt converts valgrind's branch streams
 * into them after the run.  The trace is the one step mode writes (per-thread Intel PT
 * in AUXTRACE records, sideband, module snapshots), but nothing is read from /proc
 * (mappings come as STP_MMAP) and a PSB+ goes only where the next IP is known (right
 * after a TIP): such a producer knows the outcomes of branches, not their addresses. */
#ifndef COL_STEP_OUT_H
#define COL_STEP_OUT_H

#include <stdint.h>

#include "record/rec.h"
#include "record/step/stp.h"

struct step_col;

/* Writes the PT attr, AUXTRACE_INFO and TIME_CONV; NULL with *err on failure. */
struct step_col *col_step_open(struct rec *r, uint64_t psb_period, int *err);
/* One event; *ev->user is the thread's slot (NULL before its STP_THREAD). */
int col_step_event(struct step_col *c, const struct stp_event *ev);
/* n conditional branches of the thread whose slot is `user`, outcomes bits[i] (0/1). */
int col_step_tnt_run(struct step_col *c, void *user, const uint8_t *bits, size_t n,
		     uint64_t time);
uint64_t col_step_pt_bytes(const struct step_col *c);
/* Ends the threads still open, frees c; returns the first write error or 0. */
int col_step_close(struct step_col *c);

#endif
