/* Growable arrays: the capacity doubles until it holds what is needed. */
#ifndef XP_GROW_H
#define XP_GROW_H

#include <stddef.h>

/* Makes room for `need` elements of `elem_size` bytes in *p (of capacity *cap): the
 * capacity doubles (from 16) until it holds them, never past max_cap elements nor
 * SIZE_MAX bytes.  0, or -ENOMEM with *p and *cap unchanged. */
int xp_grow(void **p, size_t *cap, size_t need, size_t elem_size, size_t max_cap);

/* The largest value of an integer lvalue's type (two's complement when signed). */
#define XP_INT_MAX(x) ((__typeof__(x))-1 > 0 ? (size_t)(__typeof__(x))-1 \
			: (size_t)((1ULL << (sizeof(x) * 8 - 1)) - 1))

/* xp_grow for an array `arr` whose capacity `cap` is an integer of any type:
 * XP_GROW(v->items, v->cap, v->n + 1).  arr and cap are evaluated more than once. */
#define XP_GROW(arr, cap, need) (__extension__({					\
	size_t xp_n_ = (need);								\
	int xp_r_ = 0;									\
	/* the room is there nearly always: no call then (per-event hot paths) */	\
	if (__builtin_expect(xp_n_ > (size_t)(cap), 0)) {				\
		void *xp_p_ = (arr);							\
		size_t xp_c_ = (size_t)(cap);						\
		xp_r_ = xp_grow(&xp_p_, &xp_c_, xp_n_, sizeof(*(arr)), XP_INT_MAX(cap));\
		(arr) = xp_p_;								\
		(cap) = (__typeof__(cap))xp_c_;						\
	}										\
	xp_r_;										\
}))

#endif
