/* What the probes did, for decode (the probes feature) and for the user (one line
 * each); see rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/pd_probes.h"
#include "record/rec.h"
#include "util/xp_err.h"

/* Seconds since the recording started, for people. */
static double since(const struct rec_probes *p, uint64_t t)
{
	return t > p->t0 ? (double)(t - p->t0) / 1e9 : 0.0;
}

/* One line per window: the first says why the probe was placed, each how it ended
 * (every window but the last ended over the budget). */
static void say(const struct rec_probes *p, const struct rec_probe_fn *fn, int w,
		const struct rec_probe_win *win, int budget)
{
	char until[96], what[700];

	if (win->disarmed && budget)
		snprintf(until, sizeof(until), "disarmed at %.3f s (--max-overhead %u %%)",
			 since(p, win->disarmed), p->o->max_overhead);
	else if (win->disarmed)
		snprintf(until, sizeof(until), "disarmed at %.3f s (--probe-limit %" PRIu64 ")",
			 since(p, win->disarmed), p->o->probe_limit);
	else
		snprintf(until, sizeof(until), "armed to the end");
	if (w == 0)
		snprintf(what, sizeof(what), "%s (%s)", fn->name, fn->reason);
	else
		snprintf(what, sizeof(what), "%s, window %d (re-armed)", fn->name, w + 1);
	xp_warn("probe %s: %" PRIu64 " calls, armed at %.3f s, %s", what, win->hits,
		since(p, win->armed), until);
	/* what the budget charges for the traps until then (docs/record.md, Budget) */
	if (p->o->verbose && win->disarmed && win->unpatched)
		xp_warn("probe %s: its breakpoint left the target %.3f s after the disarm", fn->name,
			win->unpatched > win->disarmed ? (double)(win->unpatched - win->disarmed) / 1e9 : 0.0);
	else if (p->o->verbose && win->disarmed && win->unpatch_err)
		xp_warn("probe %s: its breakpoint could not be taken out of the target (%s): it "
			"trapped until its events were closed", fn->name, strerror(-win->unpatch_err));
	if (p->o->verbose && win->disarmed && win->closed > win->disarmed)
		xp_warn("probe %s: its events were closed %.3f s after the disarm", fn->name,
			(double)(win->closed - win->disarmed) / 1e9);
}

/* The feature holds one cost per call for every probe: the classes' costs weighted by
 * the hits of the probes of each class, exact when all probes share one (a file
 * without hits gets the emulated class's, that of compiled functions' prologue). */
static void weighted_cost(const struct rec_probes *p, uint64_t *caller, uint64_t *callee)
{
	unsigned __int128 cr = 0, ce = 0;
	uint64_t hits = 0;

	for (int i = 0; i < p->nfn; i++) {
		const struct rec_probe_fn *fn = &p->fn[i];
		cr += (unsigned __int128)fn->hits * p->cal_caller_ns[fn->cal];
		ce += (unsigned __int128)fn->hits * p->cal_callee_ns[fn->cal];
		hits += fn->hits;
	}
	*caller = hits ? (uint64_t)(cr / hits) : p->cal_caller_ns[REC_CAL_EMULATED];
	*callee = hits ? (uint64_t)(ce / hits) : p->cal_callee_ns[REC_CAL_EMULATED];
}

int rec_probes_report(struct rec_probes *p, struct rec *r)
{
	struct pd_probes ps = { 0 };
	char *text;
	int e = 0;

	if (!p)
		return 0;
	/* record waits for them before it returns anyway: then each window says when
	 * its events were closed, the last one's too */
	rec_probes_wait_closes(p);
	rec_probes_calibrated(p, 1);
	ps.calibrated = p->cal_runs > 0;
	weighted_cost(p, &ps.caller_ns, &ps.callee_ns);
	ps.runs = p->cal_runs;
	for (int i = 0; i < p->nfn; i++)
		r->probe_hits += p->fn[i].hits + p->fn[i].rets;
	for (int i = 0; i < p->nfn && e == 0; i++) {
		const struct rec_probe_fn *fn = &p->fn[i];
		char name[600];

		if (fn->idx[0] < 0)
			continue;	/* never reached the file */
		snprintf(name, sizeof(name), PROBE_GROUP ":%s", fn->name);
		/* one feature line per window, in order, each with its hits */
		for (int w = 0; w <= fn->nwin && e == 0; w++) {
			struct rec_probe_win cur = { fn->armed, fn->disarmed, fn->hits - fn->win_hits,
						     fn->closing ? atomic_load(&fn->closing->end) : 0,
						     fn->unpatched, fn->unpatch_err };
			const struct rec_probe_win *win = w < fn->nwin ? &fn->win[w] : &cur;
			e = pd_probes_add(&ps, name, win->armed, win->disarmed, win->hits, fn->reason);
			if (e == 0 && !r->opts->quiet)
				say(p, fn, w, win, w < fn->nwin || fn->over_budget);
		}
	}
	text = e == 0 ? pd_probes_format(&ps) : NULL;
	if (text)
		e = pd_writer_feat_string(r->w, PD_FEAT_XPTRACE_PROBES, text);
	else if (e == 0)
		e = -ENOMEM;
	free(text);
	pd_probes_free(&ps);
	return e;
}
