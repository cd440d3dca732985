/* Three levels of inlining (top -> mid -> leaf, always_inline, so even the -fno-inline
 * build of tests/progs has them) in work(), and a real call (ext) from the innermost,
 * for decode --inline (tests/integration/decode_inline.sh): `inline N` runs work(N).
 * -DINLINE='static __attribute__((noinline))': the same functions called, for diff
 * --inline. */
#include <stdlib.h>

#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

static volatile int sink;

__attribute__((noinline)) int ext(int x)
{
	sink = x;
	return x + 1;
}

INLINE int leaf(int x)
{
	if (x % 7 == 0)
		return ext(x);
	return x * 3 + 1;
}

INLINE int mid(int x)
{
	int s = 0;
	for (int i = 0; i < x; i++)
		s += leaf(i);
	return s;
}

INLINE int top(int x)
{
	return mid(x) + mid(x / 2);
}

__attribute__((noinline)) int work(int n)
{
	int s = 0;
	for (int k = 0; k < n; k++)
		s += top(k);
	return s;
}

int main(int argc, char **argv)
{
	sink = work(argc > 1 ? atoi(argv[1]) : 20);
	return 0;
}
