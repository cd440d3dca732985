/* -e's own syntax, before libpfm4: a comma-separated list of event names, perf's
 * generic names encoded here; every other name is libpfm4's (rec_pfm.c). */
#ifndef REC_EVENTS_H
#define REC_EVENTS_H

#include <linux/perf_event.h>
#include <stdbool.h>

/* No name is empty: not the list, none between commas, none before the first or
 * after the last. */
bool rec_events_syntax_ok(const char *list);

/* A generic name ("cycles", "cpu-clock", ...) -> type and config in a zeroed attr: 0,
 * or -ENOENT for a name that is none (modifiers included: "cycles:u" is libpfm4's). */
int rec_event_generic(const char *name, struct perf_event_attr *a);

#endif
