/* A tiny JIT, for JIT symbolization tests: it writes machine code at run time into
 * anonymous executable memory and describes it the way perf's jvmti agent does, in a
 * jitdump file (DIR/jit-PID.dump: header, JIT_CODE_LOAD records with the code bytes,
 * a JIT_CODE_DEBUG_INFO, a JIT_CODE_MOVE) mapped PROT_READ|PROT_EXEC so that the
 * mapping shows in the sideband, plus /tmp/perf-PID.map for one function the dump
 * does not know.  Timestamps are CLOCK_MONOTONIC (perf record -k mono).
 *
 * Usage: jit DIR UNITS    Work, in spin-loop iterations of UNITS each:
 *   main -> jit_outer -> jit_hot 3, jit_cold 1
 *   main -> jit_moved 1 at its first address, then 1 after the move
 *   main -> map_only 1 (named by the perf map only)
 * so jit_hot 3/7, jit_cold 1/7, jit_moved 2/7, map_only 1/7 of the samples. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define ROUNDS 40

static int fd_dump = -1;

static uint64_t now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void put(const void *p, size_t n)
{
	if (write(fd_dump, p, n) != (ssize_t)n) {
		perror("jitdump");
		exit(1);
	}
}

static void rec_hdr(uint32_t id, uint32_t total)
{
	uint64_t t = now();
	put(&id, 4);
	put(&total, 4);
	put(&t, 8);
}

static void code_load(const char *name, uint64_t addr, const uint8_t *code, uint64_t size, uint64_t index)
{
	uint32_t pid = (uint32_t)getpid(), tid = pid;
	rec_hdr(0, (uint32_t)(16 + 40 + strlen(name) + 1 + size));
	put(&pid, 4);
	put(&tid, 4);
	put(&addr, 8);	/* vma */
	put(&addr, 8);	/* code_addr */
	put(&size, 8);
	put(&index, 8);
	put(name, strlen(name) + 1);
	put(code, size);
}

/* spin(count in edi): push rbp; mov rbp,rsp; 1: dec edi; jnz 1b; pop rbp; ret */
static const uint8_t spin[] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xcf, 0x75, 0xfc, 0x5d, 0xc3 };

static void rel32(uint8_t *at, const uint8_t *target)
{
	int32_t r = (int32_t)(target - (at + 4));
	memcpy(at, &r, 4);
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: jit DIR UNITS\n");
		return 2;
	}
	unsigned units = (unsigned)strtoul(argv[2], NULL, 0);
	char path[4096];
	snprintf(path, sizeof(path), "%s/jit-%d.dump", argv[1], (int)getpid());
	fd_dump = open(path, O_CREAT | O_TRUNC | O_RDWR, 0644);
	if (fd_dump < 0) {
		perror(path);
		return 1;
	}
	uint32_t hdr[6] = { 0x4A695444, 1, 40, 62 /* EM_X86_64 */, 0, (uint32_t)getpid() };
	uint64_t ts = now(), flags = 0;
	put(hdr, sizeof(hdr));
	put(&ts, 8);
	put(&flags, 8);
	/* the marker mapping perf looks for (executable, so the kernel reports it) */
	void *marker = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd_dump, 0);
	if (marker == MAP_FAILED) {
		perror("mmap jitdump");
		return 1;
	}

	uint8_t *code = mmap(NULL, 1 << 16, PROT_READ | PROT_WRITE | PROT_EXEC,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		perror("mmap code");
		return 1;
	}
	uint8_t *hot = code, *cold = code + 0x100, *outer = code + 0x200, *moved = code + 0x300,
		*maponly = code + 0x400, *moved2 = code + 0x800;
	memcpy(hot, spin, sizeof(spin));
	memcpy(cold, spin, sizeof(spin));
	memcpy(moved, spin, sizeof(spin));
	memcpy(maponly, spin, sizeof(spin));
	/* outer(hot_n in edi, cold_n in esi): push rbp; mov rbp,rsp; push rbx; mov ebx,esi;
	 * call hot; mov edi,ebx; call cold; pop rbx; pop rbp; ret */
	static const uint8_t outer_code[] = { 0x55, 0x48, 0x89, 0xe5, 0x53, 0x89, 0xf3,
					      0xe8, 0, 0, 0, 0, 0x89, 0xdf, 0xe8, 0, 0, 0, 0,
					      0x5b, 0x5d, 0xc3 };
	memcpy(outer, outer_code, sizeof(outer_code));
	rel32(outer + 8, hot);
	rel32(outer + 15, cold);

	code_load("jit_hot", (uintptr_t)hot, hot, sizeof(spin), 1);
	code_load("jit_cold", (uintptr_t)cold, cold, sizeof(spin), 2);
	code_load("jit_outer", (uintptr_t)outer, outer, sizeof(outer_code), 3);
	code_load("jit_moved", (uintptr_t)moved, moved, sizeof(spin), 4);
	/* JIT_CODE_DEBUG_INFO for jit_hot with no line entries: readers skip it */
	{
		uint64_t a = (uintptr_t)hot, nr = 0;
		rec_hdr(2, 16 + 16);
		put(&a, 8);
		put(&nr, 8);
	}
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	FILE *map = fopen(path, "w");
	if (!map) {
		perror(path);
		return 1;
	}
	fprintf(map, "%lx %zx map_only\n", (unsigned long)(uintptr_t)maponly, sizeof(spin));
	fclose(map);

	void (*f_outer)(unsigned, unsigned) = (void (*)(unsigned, unsigned))(uintptr_t)outer;
	void (*f_moved)(unsigned) = (void (*)(unsigned))(uintptr_t)moved;
	void (*f_moved2)(unsigned) = (void (*)(unsigned))(uintptr_t)moved2;
	void (*f_map)(unsigned) = (void (*)(unsigned))(uintptr_t)maponly;
	/* The work is done in rounds: whatever changes the machine's speed while the
	 * program runs (other jobs, the host) falls on every function alike, so the
	 * sample shares stay the work's.  jit_moved runs half its work before the move
	 * (at its first address), half after. */
	unsigned chunk = units / ROUNDS;
	for (int r = 0; r < ROUNDS / 2; r++) {
		f_outer(3 * chunk, chunk);
		f_moved(2 * chunk);
		f_map(chunk);
	}
	/* the JIT moves jit_moved; its old place no longer holds it */
	memcpy(moved2, moved, sizeof(spin));
	memset(moved, 0xcc, sizeof(spin));
	{
		uint32_t pid = (uint32_t)getpid(), tid = pid;
		uint64_t vma = (uintptr_t)moved2, old = (uintptr_t)moved, new = (uintptr_t)moved2,
			 size = sizeof(spin), index = 4;
		rec_hdr(1, 16 + 48);
		put(&pid, 4);
		put(&tid, 4);
		put(&vma, 8);
		put(&old, 8);
		put(&new, 8);
		put(&size, 8);
		put(&index, 8);
	}
	for (int r = ROUNDS / 2; r < ROUNDS; r++) {
		f_outer(3 * chunk, chunk);
		f_moved2(2 * chunk);
		f_map(chunk);
	}
	rec_hdr(3, 16);	/* JIT_CODE_CLOSE */
	close(fd_dump);
	return 0;
}
