/* libFuzzer harness: a perf.data through the whole decode path (reader, the decoder
 * that accepts it, the calltree view), as `xptrace decode -i FILE` runs it.  The input
 * goes to a memfd: the reader wants a path, and /proc/self/fd/N is one without disk. */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include "engine/engine.h"
#include "session/sym.h"
#include "util/xp_err.h"

static void quiet(const char *msg, void *ctx)
{
	(void)msg;
	(void)ctx;
}

/* Kernel symbols are host files, not the input, and cost 100x an input's decode
 * (100k symbols parsed and sorted per input): perf's build-id cache (~/.debug) holds
 * kallsyms, and /proc/kallsyms is read for a trace whose kernel build-id is the
 * running kernel's (the fixtures' on the machine that made them).  The harness hides
 * both: HOME elsewhere, and in a mount namespace of its own (where it may make one)
 * /dev/null over /sys/kernel/notes, so the running kernel has no build-id.  Each run
 * then does what it does on another machine. */
static void hide_host_kernel(void)
{
	setenv("HOME", "/nonexistent", 1);
	/* the distribution's debug files likewise: libc's alone is 10k symbols to parse
	 * and sort per input (the fixtures ran this libc), half of an input's time */
	setenv("XP_DEBUG_ROOT", "/nonexistent", 1);
	if (unshare(CLONE_NEWNS) < 0 && unshare(CLONE_NEWUSER | CLONE_NEWNS) < 0)
		return;
	/* private first: nothing mounted here may reach the host's namespace */
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0)
		mount("/dev/null", "/sys/kernel/notes", NULL, MS_BIND, NULL);
}

/* The modules the seeds name (this host's libc and ld.so among them: ~10k symbols to
 * sort) have their tables read once, not per input. */
static struct sym_cache *syms;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	syms = sym_cache_new();
	hide_host_kernel();
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
	/* one thread: -j's worker and reader threads per input cost more than a small
	 * input's decode, and libFuzzer needs each input's coverage to be the same
	 * every run */
	o.jobs = 1;
	o.sym_cache = syms;
	eng_decode(&o);
	return 0;
}
