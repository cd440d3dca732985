/* libFuzzer harness: a perf.data through the whole decode path (reader, the decoder
 * that accepts it, the calltree view), as `xptrace decode -i FILE` runs it.  The input
 * goes to a memfd: the reader wants a path, and /proc/self/fd/N is one without disk. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine/engine.h"
#include "util/xp_err.h"

static void quiet(const char *msg, void *ctx)
{
	(void)msg;
	(void)ctx;
}

/* perf's build-id cache (~/.debug) would make each input load whatever this machine
 * keeps there (a kallsyms of 100k symbols): host files, not the input, and machine
 * dependent.  Without it a run does what it does on a clean CI machine. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	setenv("HOME", "/nonexistent", 1);
	xp_err_set_sink(quiet, NULL);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];

	if (fd < 0)
		fd = memfd_create("fuzz.data", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
		return 0;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	struct eng_opts o = ENG_OPTS_INIT;
	o.dec.input = path;
	o.view.view = "calltree";
	o.view.output = "/dev/null";
	eng_decode(&o);
	return 0;
}
