/* Counter group of the hardware collectors; see col_hw.h. */
#include "record/col_hw.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "record/rec_pfm.h"
#include "util/xp_err.h"

int col_hw_counters_open(struct col_hw_counters *c, const char *list, const pid_t *pids,
			 int npids, int enable_on_exec)
{
	struct perf_event_attr a[COL_HW_MAX_COUNTERS];
	char *dup = strdup(list), *save = NULL, why[256];

	memset(c, 0, sizeof(*c));
	if (!dup)
		return -ENOMEM;
	for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (c->n == COL_HW_MAX_COUNTERS) {
			free(dup);
			return xp_err("-e", NULL, "at most %d counters next to a trace", COL_HW_MAX_COUNTERS);
		}
		memset(&a[c->n], 0, sizeof(a[c->n]));
		if (rec_pfm_encode(t, &a[c->n], sizeof(a[c->n]), why, sizeof(why)) < 0) {
			xp_err("-e", "see 'xptrace info' for the events of this machine", "%s: %s", t, why);
			free(dup);
			return -EINVAL;
		}
		snprintf(c->name[c->n], sizeof(c->name[0]), "%s", t);
		c->n++;
	}
	free(dup);
	if (npids > 0 && pids[0] < 0)
		return xp_err("-e", "drop -e or -a", "counters next to a trace follow a command or "
			      "process, not -a");
	c->fds = calloc((size_t)(c->n * npids), sizeof(*c->fds));
	if (!c->fds)
		return -ENOMEM;
	for (int p = 0; p < npids; p++) {
		int leader = -1;

		for (int i = 0; i < c->n; i++) {
			int fd;

			a[i].size = sizeof(a[i]);
			a[i].read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
			a[i].disabled = i == 0;
			a[i].enable_on_exec = i == 0 && enable_on_exec;
			a[i].inherit = 1;
			a[i].exclude_hv = 1;
			fd = (int)syscall(SYS_perf_event_open, &a[i], pids[p], -1, leader,
					  PERF_FLAG_FD_CLOEXEC);
			if (fd < 0)
				return xp_err("open the -e counters", "drop -e: this machine cannot count "
					      "them", "%s: %s", c->name[i], strerror(errno)),
				       -errno;
			if (leader < 0)
				leader = fd;
			c->fds[c->nfds++] = fd;
		}
		if (!enable_on_exec)
			ioctl(leader, PERF_EVENT_IOC_ENABLE, 0);
	}
	return 0;
}

void col_hw_counters_read(struct col_hw_counters *c)
{
	for (int k = 0; k < c->nfds; k++) {
		uint64_t v[3];
		int i = k % c->n;

		if (read(c->fds[k], v, sizeof(v)) != sizeof(v))
			continue;
		c->value[i] += v[2] && v[2] < v[1] ? (uint64_t)((double)v[0] * v[1] / v[2]) : v[0];
		c->enabled[i] += v[1];
		c->running[i] += v[2];
		c->have = 1;
	}
}

void col_hw_counters_report(const struct col_hw_counters *c, int quiet)
{
	if (!c->have || quiet)
		return;
	for (int i = 0; i < c->n; i++)
		fprintf(stderr, "xptrace: %-14s %20llu%s\n", c->name[i], (unsigned long long)c->value[i],
			c->running[i] < c->enabled[i] ? "  (scaled: the counters were multiplexed)" : "");
}

void col_hw_counters_close(struct col_hw_counters *c)
{
	for (int k = 0; k < c->nfds; k++)
		close(c->fds[k]);
	free(c->fds);
	c->fds = NULL;
	c->nfds = 0;
}
