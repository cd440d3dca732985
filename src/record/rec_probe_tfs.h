/* Probes defined in tracefs (uprobe_events), opened as PERF_TYPE_TRACEPOINT events.
 *
 * Why not the uprobe PMU alone: a uprobe-PMU event carries a pointer to the path
 * (config1) that the kernel reads again when it copies an inherited event into a new
 * task, in the cloning target's memory, where it means nothing (clone() fails with
 * EFAULT); so such events can only be cpu-wide, and a cpu-wide uprobe traps in every
 * process that maps the file.  A tracepoint event has no pointer: it is inherited, and
 * per task the kernel's uprobe filter puts the int3 only into the target's address
 * spaces.  A tracefs event also unregisters its uprobe (the ~80 ms RCU wait) only at
 * the close of its last perf event, not at every close.
 *
 * Each recording defines its probes in its own group, xptrace_<pid>; a recorder killed
 * with SIGKILL leaves its definitions (they hold no int3 once no event is open), so the
 * next recording removes the groups of dead pids. */
#ifndef REC_PROBE_TFS_H
#define REC_PROBE_TFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The tracefs directory with a uprobe_events this user may write: $XPTRACE_TRACEFS when
 * set (tests), else /sys/kernel/tracing, else /sys/kernel/debug/tracing.  0, or why not
 * in `why` and -ENOENT (none there: tracefs not mounted) or -EACCES (one not writable). */
int rec_tfs_root(char *root, size_t len, char *why, size_t whylen);
/* The group of this recording's probes: xptrace_<pid>. */
void rec_tfs_group(char *group, size_t len, pid_t pid);
/* A valid tracefs event name (a C identifier of at most 63 chars, unique through
 * `index`) for probe `index` on sym: e<index>_<sym> or r<index>_<sym>. */
void rec_tfs_event_name(char *name, size_t len, const char *sym, int index, int ret);
/* Defines an entry (ret 0) or return (ret 1) uprobe GROUP/NAME at path:offset and reads
 * its tracepoint id.  0, or a negative errno (the kernel's refusal). */
int rec_tfs_define(const char *root, const char *group, const char *name, int ret,
		   const char *path, uint64_t offset, uint64_t *id);
/* Deletes GROUP/NAME (fails with -EBUSY while one of its perf events is open). */
int rec_tfs_undefine(const char *root, const char *group, const char *name);
/* Deletes the probes of every xptrace_<pid> group whose pid is not running (or is ours:
 * a dead recorder's pid reused); returns how many were deleted. */
int rec_tfs_clean_stale(const char *root);

#endif
