/* What the hardware collectors (pt, lbr) share: the counter group read at the end
 * (`-e cycles,instructions` next to a PT trace, to check the decoded instruction count
 * against the hardware's). */
#ifndef COL_HW_H
#define COL_HW_H

#include <stdint.h>
#include <sys/types.h>

#define COL_HW_MAX_COUNTERS 4

struct col_hw_counters {
	int n;
	char name[COL_HW_MAX_COUNTERS][64];
	int *fds;		/* n per target, leader first */
	int nfds;
	uint64_t value[COL_HW_MAX_COUNTERS];
	uint64_t enabled[COL_HW_MAX_COUNTERS], running[COL_HW_MAX_COUNTERS];
	int have;
};

/* Opens `list` (libpfm4 names) as one counting group per target; pid -1 (-a) is not
 * supported.  Reports errors; returns 0 or negative. */
int col_hw_counters_open(struct col_hw_counters *c, const char *list, const pid_t *pids,
			 int npids, int enable_on_exec);
/* Sums every target's values (scaled when the group was multiplexed). */
void col_hw_counters_read(struct col_hw_counters *c);
void col_hw_counters_report(const struct col_hw_counters *c, int quiet);
void col_hw_counters_close(struct col_hw_counters *c);

#endif
