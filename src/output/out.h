/* Output writers.  Tables (one row per function or tree node) go out as aligned text,
 * JSON lines (keys: lower-cased column names, plus "path" when a row has one) or CSV;
 * call trees also as folded stacks (FlameGraph/speedscope) and callgrind
 * (KCachegrind/callgrind_annotate). */
#ifndef OUT_H
#define OUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "util/xp_grow.h"

#include "analysis/ct.h"

enum out_format { OUT_TEXT, OUT_JSONL, OUT_CSV, OUT_FOLDED, OUT_CALLGRIND, OUT_CHROME, OUT_PPROF, OUT_SVG,
		  OUT_NFORMATS };
#define OUT_TABLES ((1u << OUT_TEXT) | (1u << OUT_JSONL) | (1u << OUT_CSV))
/* reports that are no table (info, selftest): text for people, JSON lines for tools */
#define OUT_TEXT_JSONL ((1u << OUT_TEXT) | (1u << OUT_JSONL))

int out_format_parse(const char *s, enum out_format *f);
const char *out_format_name(enum out_format f);

/* OUT_SPAN: two numbers (a time window): jsonl [from, to], text and csv from..to;
 * OUT_SINT: a signed integer (a difference), text with its sign (+12, -3, 0) */
enum out_type { OUT_INT, OUT_PCT, OUT_FLOAT, OUT_STR, OUT_HEX, OUT_BOOL, OUT_SPAN, OUT_SINT };

/* Times in text reports: the unit that shows `max` ns with a few integer digits
 * (s, ms, us or ns) and how many ns it holds.  jsonl and csv keep integer ns in
 * columns named *_ns. */
struct out_unit {
	const char *name;
	double ns;
};
struct out_unit out_time_unit(uint64_t max_ns);

/* out_col.flags */
#define OUT_TREE	1u	/* text: indented by the row's level (the Name column) */
#define OUT_LEFT	2u	/* text: left-aligned (default: strings left, numbers right) */
#define OUT_RIGHT	4u	/* text: right-aligned */
#define OUT_MARK	8u	/* text: '>' before the value on marked rows, ' ' on others */
/* OUT_FLOAT with n (< 16) decimals in every format (default: 2 in text, else 4) */
#define OUT_DECIMALS	0x100u
#define OUT_DEC(n)	(OUT_DECIMALS | (unsigned)(n) << 4)

struct out_col {
	const char *name;	/* text header; lower-cased for jsonl keys */
	enum out_type type;
	int width;		/* text: minimum width */
	unsigned flags;		/* OUT_TREE, ... */
};

struct out_val {
	bool null;		/* jsonl null, text "-" */
	bool omit;		/* jsonl: no key at all; text and csv as null */
	bool approx;		/* OUT_INT, OUT_FLOAT in text: '~' before it (a count over part
				 * of a run, a time known only within a bound) */
	union {
		uint64_t u;
		int64_t i;	/* OUT_SINT */
		double d;	/* OUT_PCT: percent, OUT_FLOAT */
		const char *s;
		bool b;
		struct { uint64_t from, to; } span;
	};
};

/* Text layouts other than the default (two spaces between columns, no colour). */
struct out_style {
	const char *sep;	/* between text columns */
	bool color;		/* text: marked rows in red (output to a terminal) */
};

struct out_table {
	FILE *f;
	enum out_format fmt;
	const struct out_col *cols;
	unsigned ncols;
	uint64_t rows;
	struct out_style style;
};

void out_table_begin(struct out_table *t, FILE *f, enum out_format fmt, const struct out_col *cols,
		     unsigned ncols);
void out_table_begin_style(struct out_table *t, FILE *f, enum out_format fmt,
			   const struct out_col *cols, unsigned ncols, const struct out_style *st);
/* One row; `level` indents tree columns in text; `path` (may be NULL) adds "path". */
void out_row(struct out_table *t, const struct out_val *v, unsigned level, const char *const *path,
	     unsigned npath);
/* One row, marked (OUT_MARK columns, colour) or not. */
void out_row_marked(struct out_table *t, const struct out_val *v, bool marked);

/* A growing byte buffer: lines are built in one and written whole.  A write that
 * finds no memory sets oom and is dropped (out_buf_write reports it). */
struct out_buf {
	char *p;
	size_t len, cap;
	bool heap;		/* p is ours (else the caller's storage, until it is too small) */
	bool oom;
};

/* `mem` (may be NULL) serves until it is full. */
void out_buf_init(struct out_buf *b, char *mem, size_t cap);
void out_buf_free(struct out_buf *b);
/* Room for n more bytes; false (and oom set) when there is no memory.  Inline, the
 * growing too (the header's inlines then call nothing of a file above them): lines of
 * --insn are built from these a few times per instruction. */
__attribute__((noinline, unused)) static bool out_buf_grow(struct out_buf *b, size_t n)
{
	if (b->oom)
		return false;
	/* the caller's storage stays theirs: it is copied, not grown */
	void *p = b->heap ? b->p : NULL;
	size_t cap = b->heap ? b->cap : 0;
	if (xp_grow(&p, &cap, b->len + n, 1, SIZE_MAX) < 0) {
		b->oom = true;
		return false;
	}
	if (!b->heap && b->len)
		memcpy(p, b->p, b->len);
	b->p = p;
	b->cap = cap;
	b->heap = true;
	return true;
}
static inline bool out_buf_reserve(struct out_buf *b, size_t n)
{
	return b->len + n <= b->cap || out_buf_grow(b, n);
}
static inline void out_buf_put(struct out_buf *b, const char *s, size_t n)
{
	if (!out_buf_reserve(b, n))
		return;
	memcpy(b->p + b->len, s, n);
	b->len += n;
}
void out_buf_printf(struct out_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static inline void out_buf_u64(struct out_buf *b, uint64_t v)
{
	static const char d2[] = "00010203040506070809101112131415161718192021222324"
				 "25262728293031323334353637383940414243444546474849"
				 "50515253545556575859606162636465666768697071727374"
				 "75767778798081828384858687888990919293949596979899";
	char tmp[20];
	size_t i = sizeof(tmp);

	while (v >= 100) {
		unsigned r = (unsigned)(v % 100);
		v /= 100;
		tmp[--i] = d2[2 * r + 1];
		tmp[--i] = d2[2 * r];
	}
	if (v >= 10) {
		tmp[--i] = d2[2 * v + 1];
		tmp[--i] = d2[2 * v];
	} else {
		tmp[--i] = (char)('0' + v);
	}
	out_buf_put(b, tmp + i, sizeof(tmp) - i);
}
/* 0, -ENOMEM when a write was dropped, -EIO */
int out_buf_write(struct out_buf *b, FILE *f);

/* JSON objects, one a line: out_json_begin, key-value pairs, out_json_end. */
/* s as a JSON string, quotes included (NULL: null), whatever its length: `"`, `\` and
 * control characters escaped, DEL as \u007f, invalid UTF-8 as \ufffd (so the output
 * is always valid JSON), valid UTF-8 as is. */
void out_json_str(struct out_buf *b, const char *s);
/* The length of the well-formed UTF-8 sequence at s (lead byte >= 0x80), or 0 with
 * *bad the length of its maximal ill-formed prefix (Unicode's "maximal subpart"),
 * which stands for one U+FFFD. */
size_t out_utf8_len(const unsigned char *s, size_t *bad);
static inline void out_json_begin(struct out_buf *b)
{
	out_buf_put(b, "{", 1);
}
/* "key": after a ',' unless the object just began; lower-cased, '_' for ' ' (keys are
 * column names: they need no escaping). */
static inline void out_json_key(struct out_buf *b, const char *key)
{
	size_t n = strlen(key);

	if (!out_buf_reserve(b, n + 4))
		return;
	if (b->len && b->p[b->len - 1] != '{')
		b->p[b->len++] = ',';
	b->p[b->len++] = '"';
	for (size_t i = 0; i < n; i++) {	/* ASCII, not the locale's tolower */
		char c = key[i];
		b->p[b->len++] = c == ' ' ? '_' : c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
	}
	b->p[b->len++] = '"';
	b->p[b->len++] = ':';
}
static inline void out_json_u64(struct out_buf *b, const char *key, uint64_t v)
{
	out_json_key(b, key);
	out_buf_u64(b, v);
}
void out_json_hex(struct out_buf *b, const char *key, uint64_t v);	/* "0x..." */
void out_json_fixed(struct out_buf *b, const char *key, int dec, double v);
void out_json_bool(struct out_buf *b, const char *key, bool v);
void out_json_null(struct out_buf *b, const char *key);
void out_json_string(struct out_buf *b, const char *key, const char *s);	/* NULL: null */
void out_json_end(struct out_buf *b);	/* "}\n" */

/* A function's self cost on one source line (callgrind profiles of trees). */
struct out_line {
	const char *file;
	uint64_t line;
	uint64_t cost[CT_MAX_METRICS];
};

/* The module a function lives in: its file, build-id (may be NULL), a dense id per
 * module, and the function's address in it. */
struct out_fn_where {
	const char *file;
	const uint8_t *build_id;
	unsigned build_id_size;
	uint32_t module;
	uint64_t addr;
};

/* Names for the tree writers. */
struct out_names {
	const char *(*name)(void *ctx, uint32_t fn);
	const char *(*module)(void *ctx, uint32_t fn);	/* may be NULL */
	/* source file and line of the function, false if unknown (may be NULL) */
	bool (*srcline)(void *ctx, uint32_t fn, const char **file, int *line);
	void *ctx;
	/* callgrind: fn's self cost per source line (what the lines do not hold goes on
	 * the function's line), and the position of a call; both may be NULL, and take
	 * lines_ctx */
	int (*lines)(void *ctx, uint32_t fn, const struct out_line **v, size_t *n);
	bool (*site)(void *ctx, uint32_t caller, uint32_t callee, const char **file, int *line);
	void *lines_ctx;
};

/* Where a function's code comes from (ctx: the names' ctx), false if unknown. */
typedef bool (*out_where_fn)(void *ctx, uint32_t fn, struct out_fn_where *w);

/* "a;b;c N" per node with Base > 0 of `metric`, root first; `prefix` (may be NULL) is
 * a first frame before every stack (the command name, as stackcollapse-perf.pl writes). */
int out_folded(FILE *f, const struct ct_tree *t, unsigned metric, const struct out_names *n, const char *prefix);
/* callgrind profile: self cost per function, calls= and inclusive cost per call edge;
 * `events` names the tree's metrics (no spaces); `desc`, when not NULL, goes in the
 * header as a `desc:` line (what calls= counts when it is not calls). */
int out_callgrind(FILE *f, const struct ct_tree *t, const char *const *events, const char *cmd,
		  const char *desc, const struct out_names *n);

/* A metric of a tree for pprof: its sample type and unit ("samples"/"count",
 * "time"/"nanoseconds", ...). */
struct out_metric {
	const char *type, *unit;
};

/* A gzipped pprof profile.proto (out_pprof.c): one sample per node with Base > 0 (its
 * path as locations, leaf first; one value per metric), a function and location per
 * function, a mapping (file, build-id) per module that `where` (may be NULL) names;
 * `dflt` is the default sample type.  Samples are packed and compressed one node at
 * a time.  0, -ENOMEM or -EIO. */
int out_pprof(FILE *f, const struct ct_tree *t, const struct out_metric *m, unsigned nm, unsigned dflt,
	      uint64_t duration_ns, const struct out_names *n, out_where_fn where);

/* An interactive flame graph (out_svg.c): widths by Cum of `metric`, colours by
 * module, titles with Base/Cum (`ns`: the metric is in ns, shown as times in a unit
 * named) and the node's count, called `count` ("Calls", or "Samples" in a sample
 * tree); sampled nodes of merged trees dashed and marked `+`; click zooms, a search
 * box highlights.  0 or -ENOMEM / -EIO. */
int out_svg(FILE *f, const struct ct_tree *t, unsigned metric, const char *title, const char *metric_name,
	    bool ns, const char *count, const struct out_names *n);

/* The callgrind writer (out_callgrind.c): out_cg_begin, per function out_cg_fn then
 * its cost lines and calls, out_cg_end.  Positions are instruction addresses, source
 * lines, or both (`positions: instr line`: KCachegrind shows source and disassembly,
 * callgrind_annotate the source); costs have one value per event. */
enum { OUT_CG_INSTR = 1, OUT_CG_LINE = 2 };

struct out_cg {
	FILE *f;
	unsigned pos;		/* OUT_CG_INSTR | OUT_CG_LINE */
	unsigned nev;
};

/* A position: the columns the profile's `positions:` name are written. */
struct out_cg_pos {
	uint64_t addr, line;
};

/* A name: id 0 writes it out; an id defines it (name given) or refers to it
 * (name NULL) with callgrind's name compression; neither leaves the line out. */
struct out_cg_name {
	uint32_t id;
	const char *name;
};

/* Where cost lines go: object (ob=), file (fl=), function (fn=). */
struct out_cg_fn {
	struct out_cg_name ob, fl, fn;
};

/* The header; `cmd`, `desc` (a `desc:` line, before the events as callgrind_annotate
 * wants it) and `summary` may be NULL. */
void out_cg_begin(struct out_cg *w, FILE *f, unsigned pos, const char *cmd, const char *desc,
		  const char *const *events, unsigned nev, const uint64_t *summary);
/* key=name (a definition ahead of its uses, in the header; fi=/fe= for the file of the
 * cost lines after it: inlined code, other files) */
void out_cg_name(struct out_cg *w, const char *key, const struct out_cg_name *n);
void out_cg_fn(struct out_cg *w, const struct out_cg_fn *at);
void out_cg_cost(struct out_cg *w, const struct out_cg_pos *pos, const uint64_t *cost);
/* `calls` calls of `callee` (entered at `target`) from `pos`, inclusive `cost` */
void out_cg_call(struct out_cg *w, const struct out_cg_fn *callee, uint64_t calls,
		 const struct out_cg_pos *target, const struct out_cg_pos *pos, const uint64_t *cost);
/* `totals` may be NULL */
void out_cg_end(struct out_cg *w, const uint64_t *totals);

/* Chrome Trace Event JSON (out_chrome.c: Perfetto UI, chrome://tracing, speedscope),
 * streamed: each event is written when it is given, in any order (viewers sort).
 * Times are in the clock's unit: ns (written as microseconds) or, for traces without
 * timestamps, instructions (written as 1 instruction = 1 us, and said in otherData). */
struct out_chrome {
	FILE *f;
	struct out_buf b;
	bool insns;		/* the clock counts instructions */
	uint64_t events;
};

/* `clock`: what the timestamps count, said in otherData.clock */
int out_chrome_begin(struct out_chrome *w, FILE *f, bool insns, const char *clock);
/* process_name / thread_name metadata */
void out_chrome_process(struct out_chrome *w, int32_t pid, const char *name);
void out_chrome_thread(struct out_chrome *w, int32_t pid, int32_t tid, const char *name);
/* A complete ("X") event: `name` ran from ts for dur; `cat` (the module, may be NULL);
 * `sampled`: a span of consecutive samples with this frame, not one exact call;
 * `inlined`: code the compiler inlined (args "inlined": true). */
void out_chrome_complete(struct out_chrome *w, int32_t pid, int32_t tid, const char *name,
			 const char *cat, uint64_t ts, uint64_t dur, bool sampled, bool inlined);
/* An instant ("i", thread scope) event: a sample whose leaf is `name`; `stack` (may be
 * NULL) its frames root first, ';'-separated. */
void out_chrome_instant(struct out_chrome *w, int32_t pid, int32_t tid, const char *name,
			const char *stack, uint64_t ts);
/* Closes the JSON; 0, -ENOMEM or -EIO. */
int out_chrome_end(struct out_chrome *w);

#endif
