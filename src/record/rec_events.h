/* -e's own syntax, before libpfm4: a comma-separated list of event names, perf's
 * generic names encoded here; every other name is libpfm4's (rec_pfm.c). */
#ifndef REC_EVENTS_H
#define REC_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>

/* No name is empty: not the list, none between commas, none before the first or
 * after the last. */
bool rec_events_syntax_ok(const char *list);

/* A generic name ("cycles", "cpu-clock", "cycles:u", ...) -> type and config in a
 * zeroed attr: 0, or -ENOENT for a name that is none. */
int rec_event_generic(const char *name, struct perf_event_attr *a);

/* The modifiers :u and :k on a generic name (REC_EV_U | REC_EV_K; 0: none, or not a
 * generic name's). */
enum { REC_EV_U = 1, REC_EV_K = 2 };
unsigned rec_event_mods(const char *name);

#endif
