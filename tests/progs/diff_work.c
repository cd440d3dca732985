/* xptrace diff's test program: built -O0 and -O2, and with another trip count of hot's
 * loop (-DTRIPS=N), by tests/integration/diff.sh.  Static, so the two builds' traces
 * hold the same start-up code and differ only where the program does. */
#ifndef TRIPS
#define TRIPS 1000
#endif

__attribute__((noinline)) long hot(long x)
{
	long s = 0;
	for (long i = 0; i < TRIPS; i++)
		s += (x ^ i) * 3;
	return s;
}

__attribute__((noinline)) long other(long x)
{
	return x * 7 + 1;
}

int main(void)
{
	long s = 0;
	for (int i = 0; i < 10; i++)
		s += hot(i) + other(i);
	return (int)(s & 1);
}
