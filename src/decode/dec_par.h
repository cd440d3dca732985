/* Parallel decode (`decode -j N`): a decoder that can cut its trace into pieces that
 * decode on their own (PT: at PSB+, which restates the whole decoder state) hands them
 * to the engine, which decodes them on worker threads and joins their streams in order
 * into what one decode would have given: byte-identical reports whatever N.
 *
 * The decoder defines what a piece is and decodes one when asked (on any thread: a
 * piece touches only its own state and what nobody writes during the decode); the
 * engine owns the threads, the order and the view.  A piece's stream begins and ends
 * with XEV_STITCH events where the state it did not know meets its neighbours
 * (decode/xev.h); the engine resolves them, no view sees them. */
#ifndef DEC_PAR_H
#define DEC_PAR_H

#include <stddef.h>
#include <stdint.h>

#include "decode/xev.h"

/* Decodes piece `i` on worker `w` (0 .. jobs-1: per-worker state, e.g. a code image)
 * into `sink`.  *next is the piece the decode goes on with: i + 1, or later when this
 * piece could not stop where the next one starts and decoded on through it (those in
 * between are then dropped).  Returns 0, a sink's non-zero return, or a negative
 * errno: the decode ends after this piece's events. */
typedef int (*dec_piece_fn)(void *arg, unsigned w, size_t i, const struct xev_sink *sink, size_t *next);
/* Called on the decode's thread for each piece taken, in order, after its events went
 * to the view: the decoder adds up what the piece counted. */
typedef void (*dec_piece_done_fn)(void *arg, size_t i);

/* Streams: producers that run at once, each on a thread of its own into a bounded
 * channel, read by the decode's thread in the order the decoder chooses (PT: per-cpu
 * queues interleaved by time exactly as one thread decodes them).  Producer i writes
 * its events into `sink`; a non-zero return from the sink means the reader is gone. */
typedef int (*dec_stream_fn)(void *arg, size_t i, const struct xev_sink *sink);
struct dec_streams;

struct dec_par {
	unsigned jobs;		/* worker threads; a decoder splits only when jobs > 1 */
	/* bytes of trace per piece; 0: the decoder's choice (tests make small pieces of
	 * small traces with XPTRACE_PIECE_SIZE; the sample reader's chunks of records
	 * too, decode/ctx.c) */
	uint64_t piece_size;
	/* Decodes pieces 0 .. n-1 into `sink` as if one after the other.  Returns the
	 * first non-zero return of a piece taken, else 0. */
	int (*run)(struct dec_par *par, size_t n, dec_piece_fn fn, dec_piece_done_fn done, void *arg,
		   const struct xev_sink *sink);
	/* Pieces that read the session, symbols or code bytes (c->sb, c->sym, c->jit,
	 * sb_code: state the views use too, not made for threads) do it between lock and
	 * unlock; the engine holds the lock while views take events. */
	void (*lock)(struct dec_par *par);
	void (*unlock)(struct dec_par *par);
	/* the most threads that worked at once (1: the decode's only), for `decode -v`:
	 * set by run, and by a decoder that reads on threads of its own */
	unsigned threads;
	/* Starts producers 0 .. n-1; 0 or a negative errno (nothing started then). */
	int (*streams_open)(struct dec_par *par, size_t n, dec_stream_fn fn, void *arg,
			    struct dec_streams **out);
	/* The events of stream i ready to be read, in order: their count (*evs valid until
	 * streams_take), waiting for the producer when none is; 0 at the stream's end,
	 * *rc then what its producer returned. */
	size_t (*streams_get)(struct dec_streams *s, size_t i, const struct xev **evs, int *rc);
	/* Marks the first k events streams_get gave as read. */
	void (*streams_take)(struct dec_streams *s, size_t i, size_t k);
	/* Stops the producers still running and frees the streams. */
	void (*streams_close)(struct dec_streams *s);
	void *ctx;
};

#endif
