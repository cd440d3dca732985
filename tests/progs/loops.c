/* Loops with trip counts known by construction, for decode --loops and --lines
 * (tests/integration/decode_loops.sh): `loops A B K N`
 *   nested(A, B): an outer loop of A trips, an inner one entered A times, B trips each;
 *   varying(n) for n = 1..K: one loop entered K times, n trips on its n-th entry;
 *   vadd(N): a[i] += b[i], which -O3 vectorizes (4 ints a trip with SSE2);
 *   chain(N): a recurrence no vectorizer can split, which -funroll-loops unrolls.
 * No libc call inside the loops and no string instruction: callgrind's per-line
 * counts of this file equal a step trace's. */
#include <stdlib.h>

#define MAXN 4096

static int va[MAXN], vb[MAXN];
static volatile unsigned sink;

__attribute__((noinline)) int nested(int a, int b)
{
	int s = 0;
	for (int i = 0; i < a; i++)
		for (int j = 0; j < b; j++)
			s += i ^ j;
	return s;
}

__attribute__((noinline)) int varying(int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += i * 3;
	return s;
}

__attribute__((noinline)) void vadd(int *restrict a, const int *restrict b, int n)
{
	for (int i = 0; i < n; i++)
		a[i] += b[i];
}

__attribute__((noinline)) unsigned chain(const int *a, int n)
{
	unsigned h = 7;
	for (int i = 0; i < n; i++)
		h = h * 31 + (unsigned)a[i];
	return h;
}

int main(int argc, char **argv)
{
	int a = argc > 1 ? atoi(argv[1]) : 10, b = argc > 2 ? atoi(argv[2]) : 20;
	int k = argc > 3 ? atoi(argv[3]) : 12, n = argc > 4 ? atoi(argv[4]) : 1024;
	unsigned s = 0;

	if (n > MAXN)
		n = MAXN;
	s += (unsigned)nested(a, b);
	for (int i = 1; i <= k; i++)
		s += (unsigned)varying(i);
	vadd(va, vb, n);
	s += chain(va, n);
	sink = s;
	return 0;
}
