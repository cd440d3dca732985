/* Internals shared by ct_tree.c and ct_cursor.c. */
#ifndef CT_INT_H
#define CT_INT_H

#include "analysis/ct.h"
#include "util/xp_map.h"

struct ct_tree {
	unsigned nm;
	struct ct_node *nodes;
	uint32_t *last_child;
	uint64_t *base, *cum;	/* n * nm */
	uint32_t n, cap;
	struct xp_map child;	/* parent << 32 | fn -> child node */
	uint32_t max_fn1;	/* largest fn key + 1 */
	uint64_t unlinks;	/* nodes moved (ct_unlink_key): ct_path's nodes may be stale */
};

int ct_grow(struct ct_tree *t);
uint32_t ct_find_child(const struct ct_tree *t, uint32_t parent, uint32_t fn);
void ct_unlink_key(struct ct_tree *t, uint32_t parent, uint32_t fn);
int ct_merge_subtree(struct ct_tree *dst, uint32_t d, const struct ct_tree *src, uint32_t s);

#endif
