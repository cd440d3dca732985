/* The record modes, in --mode auto's order of preference: add a collector's
 * struct rec_mode here (best first) and `--mode NAME` and auto pick it up.
 *
 * Whether a mode is possible here is decided by the conclusions `xptrace info` prints
 * (probe_machine): the same reasons, word for word.  A mode they call available is
 * then opened for real with the user's options; a refusal from the kernel becomes a
 * probe fact and the conclusion words it. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "probe/probe.h"
#include "record/rec.h"
#include "util/xp_err.h"

extern const struct rec_mode rec_mode_sample;
extern const struct rec_mode rec_mode_pt;
extern const struct rec_mode rec_mode_lbr;
extern const struct rec_mode rec_mode_step;
extern const struct rec_mode rec_mode_dbt;

const struct rec_mode *const rec_modes[] = {
	&rec_mode_pt,
	&rec_mode_lbr,
	&rec_mode_sample,
	&rec_mode_step,
	&rec_mode_dbt,
	NULL,
};

const struct rec_mode *rec_mode_find(const char *name)
{
	for (int i = 0; rec_modes[i]; i++)
		if (strcmp(rec_modes[i]->name, name) == 0)
			return rec_modes[i];
	return NULL;
}

struct machine {
	const struct rec_opts *o;
	struct pmu_list pmus;
	struct probe_facts facts;
	struct probe_conclusion c;
};

static int machine_probe(struct machine *x, const struct rec_opts *o)
{
	char label[512];
	int ret;

	x->o = o;
	ret = probe_machine(o->sysfs_root, &x->pmus, &x->facts, &x->c, 0);
	if (ret == 0)
		return 0;
	probe_sysfs_label(o->sysfs_root, label, sizeof(label));
	if (o->sysfs_root) {	/* as info does */
		xp_err("record", "check --sysfs-root", "cannot read PMUs in %s: %s", label,
		       strerror(-ret));
		pmu_list_free(&x->pmus);
		return ret < 0 ? ret : -EIO;
	}
	xp_warn("record: cannot read PMUs in %s: %s (is sysfs mounted?)", label, strerror(-ret));
	return 0;
}

/* 0 when mode m records here; else a negative errno (the probe's open error, or
 * -ENODEV) with info's reason in why. */
static int usable(struct machine *x, const struct rec_mode *m, char *why, size_t whylen)
{
	int id = -1, err = 0;

	for (int i = 0; i < PROBE_NMODES; i++)
		if (strcmp(x->c.mode[i].name, m->name) == 0)
			id = i;
	if (id >= 0 && !x->c.mode[id].available) {
		snprintf(why, whylen, "%s", x->c.mode[id].reason);
		return -ENODEV;
	}
	why[0] = 0;
	if (!m->probe || m->probe(x->o, &err, why, whylen) == 0)
		return 0;
	if (err && id >= 0) {
		probe_refute(x->o->sysfs_root, &x->pmus, &x->facts, id, err, &x->c);
		snprintf(why, whylen, "%s", x->c.mode[id].reason);
	}
	return err > 0 ? -err : -ENODEV;
}

/* Appends one "xptrace: ..." note line to the choice (printed once the trace directory
 * exists, so a usage error about it is the only line). */
static void note(struct rec_choice *ch, int verbose_only, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void note(struct rec_choice *ch, int verbose_only, const char *fmt, ...)
{
	va_list ap;
	size_t n = strlen(ch->notes);

	if (verbose_only && !ch->verbose)
		return;
	if (n + 1 >= sizeof(ch->notes))
		return;
	va_start(ap, fmt);
	vsnprintf(ch->notes + n, sizeof(ch->notes) - n - 1, fmt, ap);
	va_end(ap);
	n = strlen(ch->notes);
	ch->notes[n] = '\n';
	ch->notes[n + 1] = 0;
}

static const struct rec_mode *resolve(struct machine *x, struct rec_choice *ch)
{
	const struct rec_opts *o = x->o;
	char why[sizeof(x->c.mode[0].reason)], skipped[128] = "";
	size_t ns = 0;

	if (strcmp(o->mode, "auto") != 0) {
		const struct rec_mode *m = rec_mode_find(o->mode);

		if (m && usable(x, m, why, sizeof(why)) != 0) {
			/* Asked for by name and impossible here: the reason, and what works. */
			char hint[96] = "use --mode auto";
			for (int i = 0; rec_modes[i]; i++) {
				char alt_why[sizeof(why)];
				if (rec_modes[i] == m || usable(x, rec_modes[i], alt_why, sizeof(alt_why)))
					continue;
				snprintf(hint, sizeof(hint), "use --mode %s instead", rec_modes[i]->name);
				break;
			}
			xp_err("record --mode", hint, "%s: %s", m->name, why);
			return NULL;
		}
		note(ch, 0, "recording in %s mode (--mode %s)", m->name, m->name);
		return m;
	}
	for (int i = 0; rec_modes[i] && !rec_modes[i]->no_auto; i++) {
		const struct rec_mode *m = rec_modes[i];
		if (usable(x, m, why, sizeof(why)) == 0) {
			/* -v: each skipped mode's reason first, in info's words */
			if (ch->verbose)
				note(ch, 1, "mode auto: recording in %s mode", m->name);
			else if (ns)
				note(ch, 0, "mode auto: recording in %s mode (%s: unavailable here; "
				     "-v says why)", m->name, skipped);
			else
				note(ch, 0, "mode auto: recording in %s mode (the best mode)", m->name);
			return m;
		}
		note(ch, 1, "mode auto: %s mode is not available: %s", m->name, why);
		ns += (size_t)snprintf(skipped + ns, ns < sizeof(skipped) ? sizeof(skipped) - ns : 0,
				       "%s%s", ns ? ", " : "", m->name);
	}
	xp_err("record", "see 'xptrace info'", "no record mode works on this machine");
	return NULL;
}

int rec_mode_known(const char *name, char *names, size_t len)
{
	size_t n = (size_t)snprintf(names, len, "auto");

	for (int i = 0; rec_modes[i]; i++)
		n += (size_t)snprintf(names + n, n < len ? len - n : 0, ", %s", rec_modes[i]->name);
	return strcmp(name, "auto") == 0 || rec_mode_find(name);
}

const struct rec_mode *rec_mode_resolve(const struct rec_opts *o, struct rec_choice *ch)
{
	struct machine x;
	const struct rec_mode *m;

	ch->notes[0] = 0;
	if (machine_probe(&x, o) != 0)
		return NULL;
	m = resolve(&x, ch);
	pmu_list_free(&x.pmus);
	return m;
}
