/* CLOCK_MONOTONIC in ns: the recording's clock (the events' use_clockid, the step
 * tracer's TSC packets), which record's deadlines, probe windows and printed times
 * are taken on. */
#ifndef XP_CLOCK_H
#define XP_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t xp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
