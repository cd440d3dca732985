/* What `record -f` may replace: only a directory xptrace record made, holding only
 * what a recording writes. */
#ifndef REC_DIR_H
#define REC_DIR_H

#include <stddef.h>

/* The file xptrace record writes first into every trace directory it makes: `-f`
 * moves or removes no directory without it (docs/trace-format.md). */
#define REC_DIR_MARK ".xptrace-trace"

/* Writes the mark into the new trace directory `dir`: 0 or -errno. */
int rec_dir_mark(const char *dir);

/* 0 when `path` (not followed) is a directory; otherwise -ENOTDIR, with what it is in
 * `what` ("a regular file", "a dangling symlink to 'x'", ...), or -errno of lstat. */
int rec_dir_what(const char *path, char *what, size_t n);

/* 0 when `dir` is a trace directory: a directory (not a symlink) holding the mark and
 * nothing but what a recording writes (docs/trace-format.md, "The trace directory").
 * Otherwise -EPERM, with why it is not one in `why`. */
int rec_dir_is_trace(const char *dir, char *why, size_t n);

/* 0 when `dir` is neither the current directory nor one holding it (renaming such a
 * directory moves the caller's own place); -EPERM when it is. */
int rec_dir_outside_cwd(const char *dir);

#endif
