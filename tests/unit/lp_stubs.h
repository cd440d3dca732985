/* The code callbacks the loop analyses' unit tests (test_lp.c, test_lpe.c) give them:
 * one-byte instructions in functions A at 0x1000 and B at 0x2000, each 0x1000 bytes,
 * without source lines. */
#ifndef XP_TEST_LP_STUBS_H
#define XP_TEST_LP_STUBS_H

#include <stdbool.h>
#include <stdint.h>

static inline uint64_t fn_of(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint64_t *start)
{
	(void)ctx, (void)pid, (void)time;
	*start = ip & ~0xfffull;
	return ip >> 12;
}

static inline uint64_t ninsns(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto)
{
	(void)ctx, (void)pid, (void)time;
	return upto - from;
}

static inline bool no_line(void *ctx, int32_t pid, uint64_t time, uint64_t ip, const char **file, int *line)
{
	(void)ctx, (void)pid, (void)time, (void)ip, (void)file, (void)line;
	return false;
}

static inline int min_line(void *ctx, int32_t pid, uint64_t time, uint64_t from, uint64_t upto, uint64_t header)
{
	(void)ctx, (void)pid, (void)time, (void)from, (void)upto, (void)header;
	return 0;
}

#endif
