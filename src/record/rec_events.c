#include "record/rec_events.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

bool rec_events_syntax_ok(const char *list)
{
	size_t n = strlen(list);

	return n && list[0] != ',' && list[n - 1] != ',' && !strstr(list, ",,");
}

/* perf's generic names, encoded without libpfm4 (whose initialization costs several
 * milliseconds of every recording). */
static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} generic[] = {
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
};

/* The length of NAME's generic part, its modifiers (perf's :u, :k, :p, :P, :H, :G after a
 * generic name) in *mods; strlen(name) when what follows the colon is not modifiers
 * (libpfm4 reads its own). */
static size_t generic_len(const char *name, unsigned *mods)
{
	const char *colon = strchr(name, ':');
	size_t l = colon ? (size_t)(colon - name) : strlen(name);

	*mods = 0;
	if (!colon)
		return l;
	for (const char *p = colon + 1; *p; p++) {
		if (*p == 'u')
			*mods |= REC_EV_U;
		else if (*p == 'k')
			*mods |= REC_EV_K;
		else if (*p != 'p' && *p != 'P' && *p != 'H' && *p != 'G')	/* precise, host, guest */
			return *mods = 0, strlen(name);
	}
	return l;
}

unsigned rec_event_mods(const char *name)
{
	unsigned mods;

	generic_len(name, &mods);
	return mods;
}

int rec_event_generic(const char *name, struct perf_event_attr *a)
{
	unsigned mods;
	size_t l = generic_len(name, &mods);

	for (size_t i = 0; i < sizeof(generic) / sizeof(generic[0]); i++) {
		if (strlen(generic[i].name) == l && strncmp(name, generic[i].name, l) == 0) {
			memset(a, 0, sizeof(*a));
			a->type = generic[i].type;
			a->config = generic[i].config;
			return 0;
		}
	}
	return -ENOENT;
}
