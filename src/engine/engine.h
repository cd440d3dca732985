/* The decode engine: opens a trace, picks the decoder that understands it and the
 * view asked for, runs the decoder's event stream through the view, closes.  An
 * in-process API: `xptrace decode` is a command line around it, tests call it directly.
 *
 *   struct eng_opts o = ENG_OPTS_INIT;
 *   o.dec.input = "xptrace.data";
 *   o.view.view = "calltree";
 *   int rc = eng_decode(&o);          // or eng_open / eng_run / eng_close
 *
 * Errors are reported (util/xp_err.h) where they happen; the functions return 0 or a
 * negative errno: ENG_EREQUEST when the request does not fit the trace (a format the
 * view cannot write, a metric the trace lacks), which a command line reports as a
 * usage error. */
#ifndef ENGINE_H
#define ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "decode/decoder.h"
#include "views/view.h"

#include <errno.h>

#define ENG_EREQUEST (-EOPNOTSUPP)

struct eng_opts {
	struct dec_opts dec;
	struct view_opts view;
	/* -j: worker threads of a decoder that splits its trace (decode/dec_par.h); 0:
	 * the online cores, 1: decode on the calling thread.  The reports are the same. */
	unsigned jobs;
	/* -v: say on stderr how many threads the decode ran on */
	bool verbose;
	/* symbol tables kept from decode to decode (session/sym.h); NULL: none */
	struct sym_cache *sym_cache;
	/* a perf.data in memory, decoded instead of reading dec.input (which then only
	 * names it in messages; no trace directory): kept by the caller until eng_close */
	const void *input_mem;
	size_t input_size;
};

#define ENG_OPTS_INIT { .dec = { .tid = -1 }, .view = { .format = OUT_TEXT, .percent_limit = -1 } }

struct engine;

int eng_open(const struct eng_opts *o, struct engine **out);
/* The decoder and view eng_open chose. */
const struct dec_decoder *eng_decoder(const struct engine *e);
const struct dec_view *eng_view(const struct engine *e);
int eng_run(struct engine *e);
void eng_close(struct engine *e);
/* eng_open, eng_run, eng_close. */
int eng_decode(const struct eng_opts *o);

/* The tables, for command lines and help texts. */
size_t eng_decoders(const struct dec_decoder *const **d);
size_t eng_views(const struct dec_view *const **v);
const struct dec_view *eng_find_view(const char *name);
/* An extra option of any decoder or view. */
const struct dec_option *eng_find_option(const char *name);

#endif
