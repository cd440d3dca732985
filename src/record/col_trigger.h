/* `--trigger SYM[@PATH]` for snapshot recordings: a uprobe on SYM (perf's uprobe PMU,
 * type and retprobe field from sysfs) in the target task, counting hits and waking the
 * collector's poll() on each one (sample_period 1, wakeup_events 1), so the AUX snapshot
 * is taken right after the function ran.  Works on machines without a PMU too. */
#ifndef COL_TRIGGER_H
#define COL_TRIGGER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct col_trigger {
	int fd;
	void *base;
	size_t len;
	uint64_t seen;		/* hits already reported */
	char path[4096];
	uint64_t offset;
};

/* spec: "SYM" (in `default_path`) or "SYM@PATH".  pid: the task (0 = self).
 * -errno with the reason in err. */
int col_trigger_open(struct col_trigger *t, const char *sysfs_root, const char *spec,
		     const char *default_path, pid_t pid, char *err, size_t errlen);
/* New hits since the last call (0 when none); frees the ring for more wakeups. */
uint64_t col_trigger_hits(struct col_trigger *t);
void col_trigger_close(struct col_trigger *t);

#endif
