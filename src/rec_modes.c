/* The record modes, in --mode auto's order of preference: add a collector's
 * struct rec_mode here (best first) and `--mode NAME` and auto pick it up. */
#include <stdio.h>
#include <string.h>

#include "rec.h"
#include "xp_err.h"

extern const struct rec_mode rec_mode_sample;
extern const struct rec_mode rec_mode_pt;
extern const struct rec_mode rec_mode_lbr;
extern const struct rec_mode rec_mode_step;

const struct rec_mode *const rec_modes[] = {
	&rec_mode_pt,
	&rec_mode_lbr,
	&rec_mode_sample,
	&rec_mode_step,
	NULL,
};

const struct rec_mode *rec_mode_find(const char *name)
{
	for (int i = 0; rec_modes[i]; i++)
		if (strcmp(rec_modes[i]->name, name) == 0)
			return rec_modes[i];
	return NULL;
}

const struct rec_mode *rec_mode_resolve(const struct rec_opts *o)
{
	char why[256];

	if (strcmp(o->mode, "auto") != 0) {
		const struct rec_mode *m = rec_mode_find(o->mode);
		char names[256] = "auto";
		size_t n = 4;
		if (m && m->probe && m->probe(o, why, sizeof(why)) != 0) {
			/* Asked for by name and impossible here: the reason, and what works. */
			char hint[96] = "use --mode auto";
			for (int i = 0; rec_modes[i]; i++) {
				const struct rec_mode *alt = rec_modes[i];
				char alt_why[256];
				if (alt == m || (alt->probe && alt->probe(o, alt_why, sizeof(alt_why))))
					continue;
				snprintf(hint, sizeof(hint), "use --mode %s instead", alt->name);
				break;
			}
			xp_err("record --mode", hint, "%s: %s", m->name, why);
			return NULL;
		}
		if (m)
			return m;
		for (int i = 0; rec_modes[i]; i++)
			n += (size_t)snprintf(names + n, sizeof(names) - n, ", %s", rec_modes[i]->name);
		xp_err("record", NULL, "unknown mode '%s' (modes: %s)", o->mode, names);
		return NULL;
	}
	for (int i = 0; rec_modes[i]; i++) {
		const struct rec_mode *m = rec_modes[i];
		why[0] = 0;
		if (!m->probe || m->probe(o, why, sizeof(why)) == 0) {
			if (!o->quiet)
				xp_warn("mode auto: recording in %s mode", m->name);
			return m;
		}
		if (!o->quiet)
			xp_warn("mode auto: %s mode is not available: %s", m->name, why);
	}
	xp_err("record", "see 'xptrace info'", "no record mode works on this machine");
	return NULL;
}
