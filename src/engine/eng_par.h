/* The engine's side of parallel decode (decode/dec_par.h): worker threads decode a
 * decoder's pieces, the decode's thread joins their streams in order.
 *
 * Two ways to the view.  A view whose state splits (dec_view.part_open: block tallies)
 * gets a state of its own per piece, fed on the worker, and folded into its main state
 * in order (part_join); only the few events where pieces meet pass through the decode's
 * thread.  Any other view (or a filtered stream) gets every event in order on the
 * decode's thread: workers write them into chunks, the piece at the head of the order
 * is read while it is decoded, the others wait when their chunks are full, so memory
 * is bounded by the workers, never by the trace. */
#ifndef ENG_PAR_H
#define ENG_PAR_H

#include <pthread.h>
#include <stdbool.h>

#include "decode/dec_par.h"
#include "views/view.h"

struct eng_par_view {
	const struct dec_view *v;
	void *state;
	bool direct;		/* the decoder's sink is the view itself (no filter) */
	pthread_mutex_t lock;	/* dec_par.lock (recursive), set up by eng_par_init */
};

/* A dec_par running `jobs` workers into `view` (which must outlive it); _fini frees
 * what _init made. */
void eng_par_init(struct dec_par *par, unsigned jobs, struct eng_par_view *view);
void eng_par_fini(struct dec_par *par);

/* Sets par's streams (eng_streams.c); eng_par_init does. */
void eng_streams_init(struct dec_par *par);

/* Online cores: the default of -j. */
unsigned eng_par_default_jobs(void);

#endif
