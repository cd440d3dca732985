/* setjmp/longjmp under the step tracer: main calls jumper() 10 times through a few
 * frames; every other call longjmps back to main, three frames up, so the returns of
 * those frames never happen. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static int jumper(int i)
{
	sink += i;
	if (i % 2)
		longjmp(env, 1);
	return i;
}

__attribute__((noinline)) static int middle(int i)
{
	int r = jumper(i);

	sink += r;
	return r + 1;
}

__attribute__((noinline)) static int outer(int i)
{
	int r = middle(i);

	sink += r;
	return r + 1;
}

int main(void)
{
	volatile int jumped = 0, sum = 0;

	for (volatile int i = 0; i < 10; i++) {
		if (setjmp(env)) {
			jumped++;
			continue;
		}
		sum += outer(i);
	}
	printf("jumped %d sum %d\n", jumped, sum);
	return 0;
}
