/* --probes: the probes xptrace record placed (the trace's probes feature, decode/ctx.h):
 * per probe its function, hits, when it was armed and disarmed, how long of the trace
 * its counts cover and why it was placed; and the calibrated cost of a probed call,
 * which the tree views subtract.  The stream is read for the trace's span only. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "views/view.h"
#include "util/xp_err.h"

struct vp {
	struct dec_ctx *c;
	const struct view_opts *o;
	FILE *out;
	uint64_t first, last;	/* the trace's span */
};

static int on_open(struct view_ctx *vc, void **state)
{
	struct vp *v;

	if (!vc->c->probes)
		return xp_err_code(-ENODATA, vc->c->perf_data ? vc->c->perf_data : "decode",
				   "record with `xptrace record --probe LIST` or `--adaptive`",
				   "no probes in this trace (it has no xptrace probes feature)");
	v = calloc(1, sizeof(*v));
	if (!v)
		return xp_err_code(-ENOMEM, "decode", NULL, "out of memory");
	v->c = vc->c;
	v->o = vc->o;
	v->out = vc->out;
	*state = v;
	return 0;
}

static int on_event(void *state, const struct xev *ev)
{
	struct vp *v = state;

	if (ev->time && (!v->first || ev->time < v->first))
		v->first = ev->time;
	if (ev->time > v->last)
		v->last = ev->time;
	return 0;
}

static void calibration(struct vp *v)
{
	const struct pd_probes *ps = v->c->probes;

	if (v->o->format == OUT_TEXT) {
		/* times as perf script prints them: seconds.ns */
		fprintf(v->out, "# probes: %zu, trace %" PRIu64 ".%09" PRIu64 "..%" PRIu64 ".%09" PRIu64 " s\n",
			ps->n, v->first / 1000000000, v->first % 1000000000, v->last / 1000000000,
			v->last % 1000000000);
		if (ps->calibrated)
			fprintf(v->out, "# calibration: a probed call costs %" PRIu64 " ns in its caller, %" PRIu64
				" ns in itself (medians over %" PRIu64 " runs)\n", ps->caller_ns, ps->callee_ns,
				ps->runs);
		else
			fprintf(v->out, "# calibration: none (probe overhead is not compensated)\n");
		return;
	}
	/* jsonl: the first line, then one per probe */
	if (ps->calibrated)
		fprintf(v->out, "{\"calibration\":{\"caller_ns\":%" PRIu64 ",\"callee_ns\":%" PRIu64
			",\"runs\":%" PRIu64 "}}\n", ps->caller_ns, ps->callee_ns, ps->runs);
	else
		fprintf(v->out, "{\"calibration\":null}\n");
}

/* Text: the times in seconds as perf script prints them, the windows in a unit named
 * in the header; jsonl and csv: integer ns, the keys say so. */
static int on_close(void *state, int status)
{
	struct vp *v = state;
	const struct pd_probes *ps = v->c->probes;
	bool text = v->o->format == OUT_TEXT;
	struct out_table tab;
	uint64_t longest = 0;
	char wname[24];

	for (size_t i = 0; status >= 0 && i < ps->n; i++) {
		uint64_t from, to;
		dec_probe_window(&ps->p[i], v->first, v->last, &from, &to);
		longest = to - from > longest ? to - from : longest;
	}
	struct out_unit u = out_time_unit(longest);
	snprintf(wname, sizeof(wname), "Window(%s)", u.name);
	struct out_col cols[] = {
		{ "Function", OUT_STR, 12, 0 }, { "Hits", OUT_INT, 9, 0 },
		text ? (struct out_col){ "Armed(s)", OUT_FLOAT, 14, OUT_DEC(9) } :
		       (struct out_col){ "Armed_ns", OUT_INT, 0, 0 },
		text ? (struct out_col){ "Disarmed(s)", OUT_FLOAT, 14, OUT_DEC(9) } :
		       (struct out_col){ "Disarmed_ns", OUT_INT, 0, 0 },
		text ? (struct out_col){ wname, OUT_FLOAT, 12, OUT_DEC(u.ns > 1 ? 3 : 0) } :
		       (struct out_col){ "Window_len_ns", OUT_INT, 0, 0 },
		{ "Reason", OUT_STR, 0, 0 },
	};

	if (status >= 0) {
		calibration(v);
		out_table_begin(&tab, v->out, v->o->format, cols, 6);
		for (size_t i = 0; i < ps->n; i++) {
			const struct pd_probe *p = &ps->p[i];
			uint64_t from, to;
			dec_probe_window(p, v->first, v->last, &from, &to);
			struct out_val vals[6] = {
				{ .s = dec_probe_fn(p) }, { .u = p->hits }, { .u = p->armed },
				{ .u = p->disarmed, .null = !p->disarmed }, { .u = to - from }, { .s = p->reason },
			};
			if (text) {
				vals[2] = (struct out_val){ .d = (double)p->armed / 1e9 };
				vals[3] = (struct out_val){ .d = (double)p->disarmed / 1e9, .null = !p->disarmed };
				vals[4] = (struct out_val){ .d = (double)(to - from) / u.ns };
			}
			out_row(&tab, vals, 0, NULL, 0);
		}
	}
	free(v);
	return 0;
}

const struct dec_view view_probes = {
	.name = "probes",
	.help = "the probes record placed (hits, window, reason), a hit's calibrated cost",
	.formats = (1u << OUT_TEXT) | (1u << OUT_JSONL),
	.open = on_open,
	.event = on_event,
	.close = on_close,
};
