/* The worked example of issue 12 (merged event/sample call trees), one time unit per
 * step.  Each function spins its own units in its own code (a macro, not a call), so
 * samples land in the function itself and X, a leaf, gets its own samples.
 *
 *   C: 3 units, calls A                  C·A      base 3
 *     A: 3, calls B                      C·A·B    (1st)
 *       B: 2, calls B                    C·A·B·B  base 1
 *         B: 1
 *       A calls B again: 1               C·A·B    (2nd), C·A·B base 2+1 = 3, cum 4
 *   C calls B: 2, calls A                C·B      base 2, cum 9
 *     A: 3, calls B                      C·B·A    base 3, cum 7
 *       B: 2, calls A                    C·B·A·B  base 2, cum 3
 *         A: 1                           C·B·A·B·A
 *     A calls X: 1                       C·B·A·X
 *   C: base 3, cum 19.  Calls: C 1, A 3, B 5, X 1.
 *
 * usage: merged [ITERATIONS_PER_UNIT]   (default about 4 ms per unit; step traces pass
 * a small number) */
#include <stdio.h>
#include <stdlib.h>

static long iters_per_unit = 10000000;

/* The loop counter lives in memory so -O1 keeps every iteration. */
#define SPIN(units)                                                                         \
	do {                                                                                \
		for (volatile long i_ = 0; i_ < (units) * iters_per_unit; i_++)             \
			;                                                                   \
	} while (0)

#define PROBED __attribute__((noinline, noclone, used))

enum { A_UNDER_C, A_UNDER_CB, A_UNDER_CBAB };
enum { B_UNDER_CA, B_LEAF, B_UNDER_C, B_UNDER_CBA };

PROBED void A(int how);

PROBED void X(void)
{
	SPIN(1);
}

PROBED void B(int how)
{
	switch (how) {
	case B_UNDER_CA:
		SPIN(2);
		B(B_LEAF);
		break;
	case B_LEAF:
		SPIN(1);
		break;
	case B_UNDER_C:
		SPIN(2);
		A(A_UNDER_CB);
		break;
	case B_UNDER_CBA:
		SPIN(2);
		A(A_UNDER_CBAB);
		break;
	}
}

PROBED void A(int how)
{
	switch (how) {
	case A_UNDER_C:
		SPIN(3);
		B(B_UNDER_CA);
		B(B_LEAF);
		break;
	case A_UNDER_CB:
		SPIN(3);
		B(B_UNDER_CBA);
		X();
		break;
	case A_UNDER_CBAB:
		SPIN(1);
		break;
	}
}

PROBED void C(void)
{
	SPIN(3);
	A(A_UNDER_C);
	B(B_UNDER_C);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		iters_per_unit = atol(argv[1]);
	if (iters_per_unit <= 0) {
		fprintf(stderr, "usage: merged [ITERATIONS_PER_UNIT > 0]\n");
		return 2;
	}
	C();
	return 0;
}
