/* What `xptrace record` knows of its probes and puts in the trace, for decode: when
 * each probe was armed and disarmed (its counts are exact only inside that window),
 * how many hits it had, why it was placed, and what a probe hit costs the traced
 * program (calibrated at record start, subtracted by decode).
 *
 * Stored as the string feature PD_FEAT_XPTRACE_PROBES, one line each:
 *   xptrace-probes 1
 *   calibration CALLER_NS CALLEE_NS RUNS
 *   probe NAME ARMED_NS DISARMED_NS HITS REASON...
 * NAME is the attr name of the entry probe (probe_xptrace:SYM), one line per window of
 * the probe (re-armed after a budget disarm), in order; times are the trace's clock
 * (sample TIME), DISARMED_NS 0 while armed to the end; HITS the entries in the window; CALLER_NS is what one
 * probed call (entry + return hit) adds to its caller's time, CALLEE_NS what it adds
 * inside the callee's own time; REASON is free text to the end of the line ("listed",
 * "hot 123 samples", "caller of hot"). */
#ifndef PD_PROBES_H
#define PD_PROBES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pd_probe {
	char *name;
	uint64_t armed, disarmed;	/* disarmed 0: to the end */
	uint64_t hits;
	char *reason;
};

struct pd_probes {
	bool calibrated;
	uint64_t caller_ns, callee_ns;	/* per probed call */
	uint64_t runs;			/* calibration sequences measured */
	struct pd_probe *p;
	size_t n, cap;
};

/* Adds a probe (copies the strings).  0 or -ENOMEM. */
int pd_probes_add(struct pd_probes *ps, const char *name, uint64_t armed, uint64_t disarmed,
		  uint64_t hits, const char *reason);
/* The feature's text (malloc'd), NULL on ENOMEM. */
char *pd_probes_format(const struct pd_probes *ps);
/* Parses the feature's text into *ps (empty on entry).  0, -EINVAL for text that is not
 * this format (*ps then holds what was read before the bad line), -ENOMEM. */
int pd_probes_parse(const char *text, struct pd_probes *ps);
/* The probe named `name`, NULL if none. */
const struct pd_probe *pd_probes_find(const struct pd_probes *ps, const char *name);
void pd_probes_free(struct pd_probes *ps);

#endif
