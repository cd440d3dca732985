/* Fixed-work CPU-bound workload for bench/record-overhead (wall time is the measure,
 * so the work, not the time, is fixed): a call tree a few frames deep so callchains
 * have something to walk.  Usage: busy [ROUNDS]  (default 400, ~1 s). */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

void leaf_mix(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15UL + i;
	sink = x;
}

void leaf_sum(unsigned long n)
{
	unsigned long x = sink;
	for (unsigned long i = 0; i < n; i++)
		x += (x << 3) + i;
	sink = x;
}

void middle(int k)
{
	leaf_mix(200000 + 1000UL * (unsigned long)(k % 7));
	leaf_sum(100000);
}

void outer(int k)
{
	for (int i = 0; i < 4; i++)
		middle(k + i);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 400;

	for (int k = 0; k < rounds; k++)
		outer(k);
	printf("%lu\n", sink & 0xff);
	return 0;
}
