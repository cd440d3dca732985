/* The decoder's block caches (2^13 and 2^14 entries, 720 KB together) outlive the
 * decoder: every piece of a `-j` decode, every time slice of a queue and every input
 * of a fuzzer opens one, and zeroing fresh ones cost more than decoding a small piece.
 * A new table is zeroed; the decoder notes each entry it fills first (the slow path of
 * its lookups), and dpt_table_put() zeroes just those and keeps the table for the next
 * decoder (a few spares, then they are freed).  A table nobody notes entries of is
 * handed on as its last user left it: the decoder's batch of
 * output events (43 KB, fresh pages from ASan's allocator at every open), which the
 * decoder fills whole before use, and the events a transaction or a CYC group holds
 * back (4096 each), written before they are read.
 * Capstone handles are kept the same way: a fresh one builds its instruction-id table
 * (calloc and fill, ~10 % of a small input's decode) at its first lookup. */
#ifndef DPT_TABLE_H
#define DPT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/x86_dis.h"

struct dpt_table {
	void *ent;		/* n entries of size bytes, each zero until filled */
	size_t n, size;
	uint32_t *used;		/* indexes of filled entries, up to n / 8 of them */
	size_t nused;		/* past n / 8: the whole table is zeroed */
};

/* 0, or -ENOMEM. */
int dpt_table_get(struct dpt_table *t, size_t n, size_t size);
void dpt_table_put(struct dpt_table *t);

/* A capstone handle in AT&T syntax (x86_dis_init's), spare or new: 0, or < 0. */
int dpt_dis_get(struct x86_dis *d);
void dpt_dis_put(struct x86_dis *d);

/* Entry i, empty until now, is being filled. */
static inline void dpt_table_note(struct dpt_table *t, size_t i)
{
	if (t->nused < t->n / 8)
		t->used[t->nused] = (uint32_t)i;
	t->nused++;
}

#endif
