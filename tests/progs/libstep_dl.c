/* Library of step_dlopen: a loop and a recursion inside a dlopen'd module. */
static int tri(int n)
{
	return n ? n + tri(n - 1) : 0;
}

int step_dl_work(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += i & 1 ? tri(i) : -i;
	return s;
}
