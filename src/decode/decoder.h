/* The decoder interface.  A decoder turns one kind of trace into the common event
 * stream (decode/xev.h).  The engine asks each decoder in its table's order whether it
 * claims the command line (raw inputs such as `--pt FILE`, checked before any file is
 * opened) or accepts the opened perf.data, and runs the first that does. */
#ifndef DEC_DECODER_H
#define DEC_DECODER_H

#include <stdbool.h>

#include "decode/ctx.h"

struct dec_decoder {
	const char *name;
	const char *default_view;
	const struct dec_option *options;	/* NULL-name terminated, may be NULL */
	/* raw inputs: true when the command line is for this decoder (no perf.data) */
	bool (*claims)(const struct dec_opts *o);
	/* perf.data inputs: true when the trace holds what this decoder decodes */
	bool (*accepts)(struct dec_ctx *c);
	/* fills c->metrics; called before the view opens */
	int (*setup)(struct dec_ctx *c);
	/* emits the stream; c->wants says what the view reads */
	int (*run)(struct dec_ctx *c, const struct xev_sink *sink);
};

#endif
