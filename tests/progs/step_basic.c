/* Step-mode ground-truth workload: loops, recursion, calls through function pointers,
 * a switch compiled to a jump table, setjmp/longjmp. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;

static int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static int add(int a, int b) { return a + b; }
static int sub(int a, int b) { return a - b; }
static int mul(int a, int b) { return a * b; }

static int (*const ops[])(int, int) = { add, sub, mul };

static int classify(int v)
{
	switch (v % 8) {	/* dense cases: a jump table */
	case 0: return 11;
	case 1: return 23;
	case 2: return 37;
	case 3: return 41;
	case 4: return 59;
	case 5: return 67;
	case 6: return 73;
	default: return 89;
	}
}

static void deep(int n)
{
	if (n == 0)
		longjmp(env, 7);
	deep(n - 1);
}

int main(int argc, char **argv)
{
	volatile int acc = argc;
	int i, j;

	(void)argv;
	for (i = 0; i < 20; i++)
		for (j = 0; j < i; j++)
			acc += (i ^ j) & 1 ? j : -j;
	acc += fib(8);
	for (i = 0; i < 9; i++)
		acc = ops[i % 3](acc, i + 1);
	for (i = 0; i < 16; i++)
		acc += classify(i * 3 + acc);
	if (setjmp(env) == 0)
		deep(5);
	else
		acc += 1000;
	printf("basic %d\n", acc);
	return 0;
}
