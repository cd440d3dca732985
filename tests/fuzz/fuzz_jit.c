/* libFuzzer harness: jitdump and perf-map parsing (src/session/jit.c) and the lookups
 * every decoder makes on them.  The input is written as both files of process 1,
 * TRACE_DIR/jit/jit-1.dump and TRACE_DIR/jit/perf-1.map (where `xptrace record` keeps
 * them), so one input can hold a jitdump followed by perf-map lines: the jitdump
 * parser stops at the cut record at its end, the map parser skips the binary lines.
 *
 * Every 8 bytes of the input (at any offset) are looked up as an address, at time 0
 * (the final state) and at the time in the next 8 bytes: the loads' and moves'
 * addresses and times are in the input, so lookups hit them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/jit.h"
#include "session/sb.h"

#define MAX_LOOKUPS 4096

static char dir[64], dump[96], map[96];

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "we");
	if (!f)
		return -1;
	size_t n = fwrite(data, 1, size, f);
	return fclose(f) == 0 && n == size ? 0 : -1;
}

static void cleanup(void)
{
	unlink(dump);
	unlink(map);
	snprintf(map, sizeof(map), "%s/jit", dir);
	rmdir(map);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR");
	snprintf(dir, sizeof(dir), "%s/xpfuzz-jit-%d", tmp && strlen(tmp) < 32 ? tmp : "/tmp", getpid());
	snprintf(dump, sizeof(dump), "%s/jit", dir);
	if (mkdir(dir, 0700) < 0 || mkdir(dump, 0700) < 0) {
		perror(dump);
		return 1;
	}
	snprintf(dump, sizeof(dump), "%s/jit/jit-1.dump", dir);
	snprintf(map, sizeof(map), "%s/jit/perf-1.map", dir);
	atexit(cleanup);
	return 0;
}

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (write_file(dump, data, size) < 0 || write_file(map, data, size) < 0)
		return 0;
	struct sb_session *sb = sb_new();
	struct jit_ctx *j = sb ? jit_new(sb, dir) : NULL;
	/* the JIT maps its dump: the mapping names it in the sideband */
	if (!j || sb_add_map(sb, 1, 0x10000, 0x1000, 0, PROT_READ | PROT_EXEC, "/nonexistent/jit-1.dump",
			     NULL, 0, 0) < 0)
		goto out;
	jit_set_mono(j, size & 1);
	if (size >= 16 && (size & 2))
		jit_set_tsc_conv(j, data[size - 1], (uint32_t)rd64(data + size - 16), rd64(data + size - 8));
	uint64_t sum = 0;
	for (size_t i = 0; i + 8 <= size && i < MAX_LOOKUPS; i++) {
		uint64_t addr = rd64(data + i), times[2] = { 0, i + 16 <= size ? rd64(data + i + 8) : 1 };
		for (int k = 0; k < 2; k++) {
			struct jit_sym s;
			uint8_t buf[32];
			const char *file;
			int line;
			if (!jit_find(j, 1, times[k], addr, &s))
				continue;
			sum += strlen(s.name) + strlen(s.module) + s.from + s.to;
			size_t n = jit_sym_read(&s, addr, buf, sizeof(buf));
			for (size_t b = 0; b < n; b++)
				sum += buf[b];
			sum += jit_sym_read(&s, s.start + s.size - 1, buf, sizeof(buf));
			if (jit_srcline(j, 1, times[k], addr, &file, &line))
				sum += strlen(file) + (uint64_t)line;
		}
	}
	(void)sum;
out:
	jit_free(j);
	sb_free(sb);
	return 0;
}
