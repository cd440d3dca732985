#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/xp_hash.h"
#include "util/xp_map.h"

#define MIN_BITS 4

static inline size_t home(const struct xp_map *m, uint64_t key)
{
	return (size_t)xp_hash_bits(key, m->bits);
}

/* The slot holding key, or the free slot where it would go (key != 0, cap != 0). */
static size_t find(const struct xp_map *m, uint64_t key)
{
	size_t i = home(m, key);

	while (m->ent[i].key && m->ent[i].key != key)
		i = (i + 1) & (m->cap - 1);
	return i;
}

bool xp_map_get(const struct xp_map *m, uint64_t key, uint64_t *val)
{
	if (!key) {
		if (m->has_zero && val)
			*val = m->zero_val;
		return m->has_zero;
	}
	if (!m->cap)
		return false;
	const struct xp_map_ent *e = &m->ent[find(m, key)];
	if (!e->key)
		return false;
	if (val)
		*val = e->val;
	return true;
}

static int grow(struct xp_map *m)
{
	struct xp_map nm = { .bits = m->cap ? m->bits + 1 : MIN_BITS, .n = m->n,
			     .has_zero = m->has_zero, .zero_val = m->zero_val };

	if (nm.bits >= sizeof(size_t) * 8 - 5)
		return -ENOMEM;
	nm.cap = (size_t)1 << nm.bits;
	nm.ent = calloc(nm.cap, sizeof(*nm.ent));
	if (!nm.ent)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->ent[i].key)
			nm.ent[find(&nm, m->ent[i].key)] = m->ent[i];
	free(m->ent);
	*m = nm;
	return 0;
}

int xp_map_put(struct xp_map *m, uint64_t key, uint64_t val)
{
	if (!key) {
		m->n += !m->has_zero;
		m->has_zero = true;
		m->zero_val = val;
		return 0;
	}
	size_t i = m->cap ? find(m, key) : 0;
	if (m->cap && m->ent[i].key) {
		m->ent[i].val = val;
		return 0;
	}
	/* at most half full: probe runs stay short */
	if ((m->n + 1) * 2 > m->cap) {
		int rc = grow(m);
		if (rc < 0)
			return rc;
		i = find(m, key);
	}
	m->ent[i] = (struct xp_map_ent){ key, val };
	m->n++;
	return 0;
}

/* Backward-shift deletion: entries after the hole that may sit in it move up, so
 * that no probe run is broken and no tombstones pile up. */
int xp_map_del(struct xp_map *m, uint64_t key)
{
	if (!key) {
		if (!m->has_zero)
			return -ENOENT;
		m->has_zero = false;
		m->n--;
		return 0;
	}
	if (!m->cap)
		return -ENOENT;
	size_t mask = m->cap - 1, i = find(m, key);
	if (!m->ent[i].key)
		return -ENOENT;
	for (size_t j = (i + 1) & mask; m->ent[j].key; j = (j + 1) & mask) {
		size_t h = home(m, m->ent[j].key);
		/* j's entry may move to i unless its home lies in (i, j] (cyclically) */
		if (((j - h) & mask) >= ((j - i) & mask)) {
			m->ent[i] = m->ent[j];
			i = j;
		}
	}
	m->ent[i].key = 0;
	m->n--;
	return 0;
}

size_t xp_map_count(const struct xp_map *m)
{
	return m->n;
}

bool xp_map_next(const struct xp_map *m, size_t *it, uint64_t *key, uint64_t *val)
{
	/* *it: 0 before key 0, then slot + 1 */
	if (*it == 0) {
		*it = 1;
		if (m->has_zero) {
			*key = 0;
			*val = m->zero_val;
			return true;
		}
	}
	for (; *it <= m->cap; ++*it) {
		const struct xp_map_ent *e = &m->ent[*it - 1];
		if (e->key) {
			++*it;
			*key = e->key;
			*val = e->val;
			return true;
		}
	}
	return false;
}

void xp_map_free(struct xp_map *m)
{
	free(m->ent);
	*m = (struct xp_map){ 0 };
}

int xp_map_copy(struct xp_map *dst, const struct xp_map *src)
{
	*dst = *src;
	dst->ent = NULL;
	if (!src->cap)
		return 0;
	dst->ent = malloc(src->cap * sizeof(*dst->ent));
	if (!dst->ent) {
		*dst = (struct xp_map){ 0 };
		return -ENOMEM;
	}
	memcpy(dst->ent, src->ent, src->cap * sizeof(*dst->ent));
	return 0;
}
