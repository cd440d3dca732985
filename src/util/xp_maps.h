/* /proc/PID/maps, one parser for every reader of it (the recorder's sideband, probes,
 * the step tracer, the vdso and self lookups).  A line is
 *   START-END PERMS OFFSET MAJOR:MINOR INODE [PATH]
 * with PATH the rest of the line after the padding: it may hold spaces, ends in
 * " (deleted)" for an unlinked file, is "[vdso]"-like for the kernel's mappings and
 * empty for anonymous memory. */
#ifndef XP_MAPS_H
#define XP_MAPS_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct xp_maps_line {
	uint64_t start, end, pgoff, inode;
	unsigned major, minor;
	char perms[5];		/* "r-xp": read, write, exec, p(rivate)/s(hared) */
	const char *path;	/* into the parsed line, as the kernel wrote it; "" anonymous */
};

/* Parses one line (its trailing newline, if any, is cut off in place).  0, or -EINVAL
 * for a line that is no mapping (fields missing or out of range, end before start). */
int xp_maps_parse(char *line, struct xp_maps_line *m);

struct xp_maps {
	FILE *f;
	char *buf;		/* the current line (a path may be PATH_MAX long) */
	size_t cap;
};

/* Opens /proc/PID/maps (pid 0: this process).  0 or a negative errno. */
int xp_maps_open(struct xp_maps *it, pid_t pid);
/* The next mapping: 1, or 0 at the end.  Lines that do not parse are skipped (the
 * kernel writes none); m->path lives until the next call. */
int xp_maps_next(struct xp_maps *it, struct xp_maps_line *m);
void xp_maps_close(struct xp_maps *it);

#endif
