/* `record --adaptive`: probes placed while recording, where the samples say the time
 * goes, and walked up to the callers that lead there.
 *
 * Every sample of the target (its process: the command, or -p's) is symbolized live:
 * the IP through the process's executable mappings (/proc/PID/maps, reread when an IP
 * falls outside them, at most once per interval) to a function of the mapped file
 * (session/sym_find: .symtab, else .dynsym).  Every --adaptive-interval the collector
 *   1. walks up one level: for each probe armed in an earlier interval, not walked yet,
 *      fewer than --adaptive-depth levels above a hot function, and with evidence of
 *      its callers, arms its callers that hold at least 10 % of that evidence (at most
 *      K), unless a caller is probed already (the walk stops there).  The evidence is
 *      the function's return hits (exact: a return hit's IP is the return address in
 *      the caller); for a function not entered since it was armed (running since
 *      before, or no longer called), the frame above in its samples' callchains
 *      (approximate: a leaf without a frame of its own shows its caller's caller);
 *   2. arms the K functions with the most samples (self) that are not probed yet, if
 *      they hold at least 1 % of the target's samples so far (and 4 samples).
 * Functions the kernel cannot probe (no size, IFUNC resolvers, code without a file:
 * JIT, vdso) are passed over.  Probes are those of rec_probe.h, with its hit limit.
 * --max-overhead: every 10 ms the probes' calibrated cost is weighed against the
 * target's cpu time; over the budget every probe is disarmed, and once under it again
 * each is re-armed after a pause doubling with its windows (rec_probes_rearm). */
#ifndef REC_ADAPTIVE_H
#define REC_ADAPTIVE_H

#include <linux/perf_event.h>

struct rec;
struct rec_adp;

/* An empty policy; 0 or -ENOMEM. */
int rec_adp_new(struct rec_adp **out);
/* One SAMPLE record as it is written (sampling event or probe hit). */
void rec_adp_sample(struct rec_adp *a, struct rec *r, const struct perf_event_header *h);
/* Called from the collector's loop: acts once per interval.  0, or a negative errno
 * (reported) that ends the recording. */
int rec_adp_tick(struct rec_adp *a, struct rec *r);
/* Puts the policy into r's ring loop after rec_probes_hook(): every kept SAMPLE goes
 * to rec_adp_sample, every pass to rec_adp_tick.  r->adaptive is set. */
void rec_adp_hook(struct rec *r);
void rec_adp_free(struct rec_adp *a);

#endif
