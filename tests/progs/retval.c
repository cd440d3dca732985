/* Functions returning known values, for the return values of probes (--calls):
 *   fib(n)     int, recursive: fib(5) = 5 with 15 calls, every value known
 *   neg(x)     int -x: -3 (eax holds 0xfffffffd, rax's upper half is zero)
 *   small(x)   unsigned char 200 + x, computed in a register holding more above it
 *   ptr()      a pointer: &marker (printed by the program)
 *   none()     void: no value to show
 * usage: retval   (prints ptr's value) */
#include <stdio.h>

#define PROBED __attribute__((noinline, noclone, used))

static volatile int sink;
static int marker;

PROBED int fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

PROBED int neg(int x)
{
	return -x;
}

PROBED unsigned char small(long x)
{
	/* the low byte of x + 0x7700 + 200: rax holds bits above the value */
	long r = x + 0x7700 + 200;
	__asm__ volatile("" : "+r"(r));
	return (unsigned char)r;
}

PROBED int *ptr(void)
{
	return &marker;
}

PROBED void none(void)
{
	sink++;
}

int main(void)
{
	int f = fib(5), n = neg(3);
	unsigned s = small(0);
	int *p = ptr();

	none();
	printf("%d %d %u %p\n", f, n, s, (void *)p);
	return 0;
}
