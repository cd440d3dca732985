/* Source lines above the instructions they became (--annotate, as perf annotate
 * prints them): one file's lines read once, a line printed when the source position
 * changes. */
#ifndef BB_SRC_H
#define BB_SRC_H

#include <stdio.h>

struct bb_src {
	char *path;
	char **lines;
	size_t n;
	const char *last_file;	/* the position printed last (the env's string) */
	int last_line;
};

/* Prints ": FILE:LINE  TEXT" indented by `indent` when file:line differs from the
 * last one printed; the text is empty when the file cannot be read. */
void bb_src_print(struct bb_src *s, FILE *out, int indent, const char *file, int line);
void bb_src_free(struct bb_src *s);

#endif
