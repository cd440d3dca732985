/* Output writers.  Tables (one row per function or tree node) go out as aligned text,
 * JSON lines (keys: lower-cased column names, plus "path" when a row has one) or CSV;
 * call trees also as folded stacks (FlameGraph/speedscope) and callgrind
 * (KCachegrind/callgrind_annotate). */
#ifndef OUT_H
#define OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "analysis/ct.h"

enum out_format { OUT_TEXT, OUT_JSONL, OUT_CSV, OUT_FOLDED, OUT_CALLGRIND, OUT_NFORMATS };
#define OUT_TABLES ((1u << OUT_TEXT) | (1u << OUT_JSONL) | (1u << OUT_CSV))

int out_format_parse(const char *s, enum out_format *f);
const char *out_format_name(enum out_format f);

enum out_type { OUT_INT, OUT_PCT, OUT_FLOAT, OUT_STR, OUT_HEX };

struct out_col {
	const char *name;	/* text header; lower-cased for jsonl keys */
	enum out_type type;
	int width;		/* text: minimum width */
	bool tree;		/* text: indented by the row's level (the Name column) */
};

struct out_val {
	bool null;		/* jsonl null, text "-" */
	union {
		uint64_t u;
		double d;	/* OUT_PCT: percent, OUT_FLOAT */
		const char *s;
	};
};

struct out_table {
	FILE *f;
	enum out_format fmt;
	const struct out_col *cols;
	unsigned ncols;
	uint64_t rows;
};

void out_table_begin(struct out_table *t, FILE *f, enum out_format fmt, const struct out_col *cols,
		     unsigned ncols);
/* One row; `level` indents tree columns in text; `path` (may be NULL) adds "path". */
void out_row(struct out_table *t, const struct out_val *v, unsigned level, const char *const *path,
	     unsigned npath);
/* Writes s as a JSON string (quotes included). */
void out_json_str(FILE *f, const char *s);

/* Names for the tree writers. */
struct out_names {
	const char *(*name)(void *ctx, uint32_t fn);
	const char *(*module)(void *ctx, uint32_t fn);	/* may be NULL */
	/* source file and line of the function, false if unknown (may be NULL) */
	bool (*srcline)(void *ctx, uint32_t fn, const char **file, int *line);
	void *ctx;
};

/* "a;b;c N" per node with Base > 0 of `metric`, root first. */
int out_folded(FILE *f, const struct ct_tree *t, unsigned metric, const struct out_names *n);
/* callgrind profile: self cost per function, calls= and inclusive cost per call edge;
 * `events` names the tree's metrics (no spaces). */
int out_callgrind(FILE *f, const struct ct_tree *t, const char *const *events, const char *cmd,
		  const struct out_names *n);

#endif
