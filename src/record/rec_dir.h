/* What `record -f` may replace: only a directory xptrace (or perf) recognisably wrote. */
#ifndef REC_DIR_H
#define REC_DIR_H

#include <stddef.h>

/* 0 when `dir` is a trace directory: a directory (not a symlink) holding a perf.data
 * that starts with perf's magic, and at its top level no file but perf.data and
 * perf.data.* (everything else a recording writes is a directory: .build-id, jit,
 * snapshots).  Otherwise -EPERM, with why it is not one in `why`. */
int rec_dir_is_trace(const char *dir, char *why, size_t n);

/* 0 when `dir` is neither the current directory nor one holding it (renaming such a
 * directory moves the caller's own place); -EPERM when it is. */
int rec_dir_outside_cwd(const char *dir);

#endif
