/* LBR test workload: three loops of the same shape run 24000, 12000 and 6000 times, so
 * exact (PT) and sampled (LBR) block counts must rank their bodies the same. */
static volatile long sink;

__attribute__((noinline)) void loop_a(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
}

__attribute__((noinline)) void loop_b(int n)
{
	for (int i = 0; i < n; i++)
		sink -= i;
}

__attribute__((noinline)) void loop_c(int n)
{
	for (int i = 0; i < n; i++)
		sink ^= i;
}

int main(void)
{
	loop_a(24000);
	loop_b(12000);
	loop_c(6000);
	return (int)(sink & 1);
}
