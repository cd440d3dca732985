/* What the two PT plug-ins of `xptrace decode` (perf.data: pt_perf, raw --pt: pt_raw)
 * share, so both present the same views and metrics. */
#ifndef DPT_PLUG_H
#define DPT_PLUG_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/decoder.h"
#include "decoders/pt/dpt.h"

/* Metrics insns and cycles (when the trace has cycle counts: `cycles`), plus the span
 * between timestamps under the name `time_name` ("time": ns; "tsc": raw TSC ticks)
 * when --metric asked for it (only then: every other report, callgrind events, ...
 * stays as it was).  NULL: the trace has no timestamps. */
int dpt_setup_metrics(struct dec_ctx *c, const char *time_name, bool cycles);

/* --pt-decoder fast|libipt, which both plug-ins take (dpt_options.libipt_only). */
#define DPT_PLUG_DECODER_OPTION \
	{ "pt-decoder", "fast|libipt", "PT blocks: our packet walker, libipt for what it does not take (fast, " \
	  "the default), or libipt's block decoder alone (libipt: a cross-check); the same events" }
/* *libipt_only from --pt-decoder: 0, or -EOPNOTSUPP (reported as a usage error) for
 * another value. */
int dpt_plug_decoder(const struct dec_ctx *c, int *libipt_only);

#endif
