#ifndef REC_PFM_H
#define REC_PFM_H

#include <stddef.h>

/* Encodes a libpfm4 event name (user level) into a zeroed perf_event_attr of
 * attr_size bytes; -EINVAL (-ENOMEM, -EIO when libpfm4 cannot start) with the reason in
 * `why` when the name is unknown. */
int rec_pfm_encode(const char *name, void *attr, size_t attr_size, char *why, size_t whylen);

/* 1 when `name` (without modifiers: "inst_retired.any", "skl::inst_retired:any") is an
 * event of any PMU libpfm4 knows, present on this machine or not: a real name this
 * machine lacks the hardware for, not a typo. */
int rec_pfm_known_anywhere(const char *name);

#endif
