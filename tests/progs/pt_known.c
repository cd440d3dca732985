/* PT decode workload with known behaviour: a loop body run exactly 1000 times, a
 * recursion 11 levels deep, a leaf called 37 times, a tail call. */
#include <stdio.h>

volatile long sink;

__attribute__((noinline)) void loop1000(void)
{
	for (int i = 0; i < 1000; i++)
		sink += i;
}

__attribute__((noinline)) long rec(int n)
{
	long r = n ? rec(n - 1) + 1 : 0;
	sink += r;	/* keeps the calls from becoming jumps */
	return r;
}

__attribute__((noinline)) void leaf(void)
{
	sink++;
}

int main(void)
{
	loop1000();
	rec(10);
	for (int i = 0; i < 37; i++)
		leaf();
	printf("known %ld\n", (long)sink);
	return 0;
}
