/* --filter workload: mutual recursion (is_even(20): 11 calls of is_even, 10 of is_odd)
 * and a leaf called 100 times from a loop. */
#include <stdio.h>

static int is_odd(int n);

static int is_even(int n)
{
	return n == 0 ? 1 : is_odd(n - 1);
}

static int is_odd(int n)
{
	return n == 0 ? 0 : is_even(n - 1);
}

static int leaf(int v)
{
	return v * 3 + 1;
}

int main(void)
{
	volatile int acc = 0;

	acc += is_even(20);
	for (int i = 0; i < 100; i++)
		acc += leaf(i + acc);
	printf("mutual %d\n", acc);
	return 0;
}
