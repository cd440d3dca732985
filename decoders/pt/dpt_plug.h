/* What the two PT plug-ins of `xptrace decode` (perf.data: pt_perf, raw --pt: pt_raw)
 * share, so both present the same views and metrics. */
#ifndef DPT_PLUG_H
#define DPT_PLUG_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/decoder.h"

/* Metrics insns and cycles (when the trace has cycle counts: `cycles`), plus the span
 * between timestamps under the name `time_name` ("time": ns; "tsc": raw TSC ticks)
 * when --metric asked for it (only then: every other report, callgrind events, ...
 * stays as it was).  NULL: the trace has no timestamps. */
int dpt_setup_metrics(struct dec_ctx *c, const char *time_name, bool cycles);

#endif
