/* Source lines of a call tree's costs, for its callgrind profile: where in each
 * function its self cost fell (the addresses of its samples, the instructions of its
 * blocks) summed per source line, and the line of each caller -> callee call site.
 * Fed by the tree builder (tree_build.c) alongside the tree; memory grows with
 * distinct addresses, blocks and call edges, not with the trace. */
#ifndef TREE_LINES_H
#define TREE_LINES_H

#include "decode/ctx.h"
#include "output/out.h"

struct tl;

struct tl *tl_new(struct dec_ctx *c);
void tl_free(struct tl *t);
/* Self cost `w` (one value per metric) of function fn at the sampled address ip. */
int tl_sample(struct tl *t, uint32_t fn, int32_t pid, uint64_t time, uint64_t ip, const uint64_t *w);
/* Self cost `w` of fn's block [ip, end] (first and last instruction), shared by its
 * instructions. */
int tl_block(struct tl *t, uint32_t fn, int32_t pid, uint64_t time, uint64_t ip, uint64_t end,
	     const uint64_t *w);
/* A call from caller to callee at address site (the first one seen is kept). */
int tl_site(struct tl *t, uint32_t caller, uint32_t callee, int32_t pid, uint64_t time, uint64_t site);

/* For out_names.lines / .site (ctx = the tl): fn's self cost per line, in order;
 * the position of a call.  tl_lines sums the lines on its first call. */
int tl_lines(void *ctx, uint32_t fn, const struct out_line **v, size_t *n);
bool tl_site_line(void *ctx, uint32_t caller, uint32_t callee, const char **file, int *line);

#endif
