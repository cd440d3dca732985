/* libFuzzer harness: a perf.data through the whole decode path (reader, the decoder
 * that accepts it, the calltree view), as `xptrace decode -i FILE` runs it.  The
 * reader reads the input where libFuzzer holds it (eng_opts.input_mem): written to a
 * memfd and read back by path, its open, stat and reads were a tenth of the time. */
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* A trace without build-ids (pipe mode) takes the running kernel's /proc/kallsyms,
 * 120k lines parsed and sorted per input: 95 % of such an input's time, and a sixth
 * of the harness's at every 64th line.  In the harness's mount namespace a sample stands
 * there instead: _text (the check that the map was recorded in this boot), the
 * first line of each symbol type and every 1024th line, so the parser meets every
 * kind of line and lookups the whole address range, at ~1/1000 of the cost. */
static void thin_kallsyms(void)
{
	const char *dir = getenv("TMPDIR");
	char path[4096];
	char line[512];
	unsigned long n = 0;
	bool seen[256] = { false };
	FILE *in = fopen("/proc/kallsyms", "r");

	snprintf(path, sizeof(path), "%s/fuzz_perfdata-kallsyms-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = in ? mkstemp(path) : -1;
	FILE *out = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (out) {
		while (fgets(line, sizeof(line), in)) {
			char *t = strchr(line, ' ');
			unsigned char type = t && t[1] ? (unsigned char)t[1] : 0;
			if (n++ % 1024 == 0 || !seen[type] || strstr(line, " _text\n"))
				fputs(line, out);
			seen[type] = true;
		}
		if (fclose(out) == 0)
			mount(path, "/proc/kallsyms", NULL, MS_BIND, NULL);
	} else if (fd >= 0) {
		close(fd);
	}
	if (fd >= 0)
		unlink(path);	/* the bind mount holds the file */
	if (in)
		fclose(in);
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
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0)
		return;
	mount("/dev/null", "/sys/kernel/notes", NULL, MS_BIND, NULL);
	thin_kallsyms();
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
	struct eng_opts o = ENG_OPTS_INIT;
	o.dec.input = "fuzz.data";
	o.input_mem = data;
	o.input_size = size;
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
