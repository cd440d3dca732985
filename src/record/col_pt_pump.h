/* The data path of the Intel PT collector, apart from perf_event_open so tests drive it
 * with simulated pages: per CPU a data ring (records copied with rec_record, AUX and LOST
 * records counted) and an AUX area turned into PERF_RECORD_AUXTRACE chunks — continuously
 * in full-trace mode, on demand in snapshot mode. */
#ifndef COL_PT_PUMP_H
#define COL_PT_PUMP_H

#include <stddef.h>
#include <stdint.h>

#include "record/rec.h"
#include "record/ring.h"
#include "record/ring_aux.h"

struct col_pt_ring {
	int cpu;
	int fd;			/* the event owning the rings (-1 in tests) */
	void *base;		/* data mapping: header page + data */
	size_t len;
	void *aux;		/* AUX area */
	struct ring ring;
	struct ring_aux ra;
};

struct col_pt_pump {
	struct rec *r;
	struct col_pt_ring *rings;
	int n;
	int snapshot;
	struct ring_aux_stats st;
	uint64_t aux_written;	/* trace bytes written */
	uint64_t dumps;		/* snapshots taken */
	int write_err;
};

/* Sets up the consumers of one CPU's mapped rings (the page's aux_offset/aux_size
 * already set).  -EINVAL when the sizes do not fit. */
int col_pt_ring_init(struct col_pt_ring *pr, void *base, size_t data_bytes, void *aux,
		     uint64_t aux_bytes, int snapshot);

/* One pass over every data ring. */
int col_pt_drain_data(struct col_pt_pump *p);
/* Full trace: data rings, then the new AUX bytes of every CPU, then a round. */
int col_pt_drain(struct col_pt_pump *p);
/* Snapshot: data rings, then every AUX ring's snapshot (the caller has disabled the
 * events), then a round.  Chunks of one snapshot share `reference` = its number. */
int col_pt_snapshot(struct col_pt_pump *p);

#endif
