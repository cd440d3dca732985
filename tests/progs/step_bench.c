/* The bundled workload of bench/step-speed: sorting through a comparison callback,
 * string hashing, a sieve; a few hundred thousand instructions, like a short tool run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static unsigned hash(const char *s)
{
	unsigned h = 5381;

	while (*s)
		h = h * 33 + (unsigned char)*s++;
	return h;
}

int main(void)
{
	static int v[150];
	static char sieve[1000];
	char word[32];
	unsigned h = 0, seed = 12345;
	int primes = 0;

	for (int i = 0; i < 150; i++) {
		seed = seed * 1103515245 + 12345;
		v[i] = (int)(seed >> 8) % 10000;
	}
	qsort(v, 150, sizeof(v[0]), cmp);
	for (int i = 0; i < 150; i++) {
		snprintf(word, sizeof(word), "w%d-%d", i, v[i % 150]);
		h ^= hash(word);
	}
	for (int i = 2; i < 1000; i++) {
		if (sieve[i])
			continue;
		primes++;
		for (int j = i * 2; j < 1000; j += i)
			sieve[j] = 1;
	}
	printf("bench %d %d %u\n", v[0], primes, h);
	return 0;
}
