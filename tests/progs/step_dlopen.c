/* Step-mode ground-truth workload: code in a library loaded with dlopen. */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char path[4096], *slash;
	void *h;
	int (*f)(int);

	(void)argc;
	/* the library sits next to the program */
	snprintf(path, sizeof(path), "%s", argv[0]);
	slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof(path) - (size_t)(slash ? slash + 1 - path : 0),
		 "libstep_dl.so");
	h = dlopen(path, RTLD_NOW);
	if (!h)
		return 1;
	f = (int (*)(int))dlsym(h, "step_dl_work");
	if (!f)
		return 1;
	printf("dlopen %d\n", f(12));
	dlclose(h);
	return 0;
}
