/* C++ exceptions under the step tracer: main calls thrower() 10 times through a few
 * frames; every other call throws, caught in main, several frames above the throw.
 * libgcc's unwinder runs CET instructions (rdsspq, incsspq) that are NOPs without CET
 * and returns into main's handler from deep inside _Unwind_RaiseException. */
#include <cstdio>
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) int thrower(int i)
{
	sink += i;
	if (i % 2)
		throw std::runtime_error("odd");
	return i;
}

__attribute__((noinline)) int middle(int i)
{
	int r = thrower(i);

	sink += r;
	return r + 1;
}

__attribute__((noinline)) int outer(int i)
{
	int r = middle(i);

	sink += r;
	return r + 1;
}

int main()
{
	int caught = 0, sum = 0;

	for (int i = 0; i < 10; i++) {
		try {
			sum += outer(i);
		} catch (const std::exception &) {
			caught++;
		}
	}
	std::printf("caught %d sum %d\n", caught, sum);
	return 0;
}
