/* A map from 64-bit keys to 64-bit values: open addressing with linear probing,
 * grows itself.  A zeroed struct xp_map is an empty map. */
#ifndef XP_MAP_H
#define XP_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct xp_map_ent {
	uint64_t key, val;
};

struct xp_map {
	struct xp_map_ent *ent;	/* key 0 marks a free slot: key 0 itself lives in zero_val */
	size_t cap, n;		/* cap: 0 or a power of two; n counts key 0 too */
	unsigned bits;		/* log2(cap) */
	bool has_zero;
	uint64_t zero_val;
};

/* true and *val (val may be NULL) when key is in the map. */
bool xp_map_get(const struct xp_map *m, uint64_t key, uint64_t *val);
/* Sets key's value, adding the key if new.  0, or -ENOMEM with the map unchanged. */
int xp_map_put(struct xp_map *m, uint64_t key, uint64_t val);
/* 0, or -ENOENT when key was not in the map. */
int xp_map_del(struct xp_map *m, uint64_t key);
size_t xp_map_count(const struct xp_map *m);
/* Walks the entries in no particular order: *it = 0 to start; false at the end.
 * The map must not change during the walk. */
bool xp_map_next(const struct xp_map *m, size_t *it, uint64_t *key, uint64_t *val);
/* dst (uninitialised) becomes a copy of src.  0, or -ENOMEM with dst empty. */
int xp_map_copy(struct xp_map *dst, const struct xp_map *src);
/* Frees the storage; the map is empty (and usable) again. */
void xp_map_free(struct xp_map *m);

#endif
