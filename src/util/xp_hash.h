/* The hash of xptrace: Fibonacci hashing (one multiply by 2^64 / golden ratio, the
 * top bits are the slot) for integer keys, FNV-1a for strings. */
#ifndef XP_HASH_H
#define XP_HASH_H

#include <stdint.h>

#define XP_HASH_MUL 0x9e3779b97f4a7c15ULL

/* The slot of `x` in a table of 2^bits slots (1 <= bits <= 64). */
static inline uint64_t xp_hash_bits(uint64_t x, unsigned bits)
{
	return (x * XP_HASH_MUL) >> (64 - bits);
}

/* A map key for a triple (xp_map keys): triples may share one, so the entries' own
 * fields tell them apart and a new triple takes the next key the map does not hold. */
static inline uint64_t xp_hash_key3(uint64_t a, uint64_t b, uint64_t c)
{
	return xp_hash_bits(xp_hash_bits(a, 64) ^ b, 64) ^ c;
}

#define XP_HASH_STR_SEED 0xcbf29ce484222325ULL

/* FNV-1a of `s`, continuing from `h` (XP_HASH_STR_SEED for a fresh hash), so that
 * several strings hash as one. */
static inline uint64_t xp_hash_str(uint64_t h, const char *s)
{
	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

#endif
