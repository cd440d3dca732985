/* A call-heavy workload for probes: N calls to probe_empty (an almost empty function,
 * what bench/probe-overhead divides by) and K calls to libc's getsid (a libc function
 * glibc itself does not call, so a probe on it counts exactly K; not getppid, which
 * selftest's workload calls: a cpu-wide probe traps in every process mapping libc, and
 * a step trace of a program running into another tool's uprobe goes wrong).
 *
 * usage: probe_calls N K [wait|hop]
 *   wait: print "ready", then read one byte from stdin before calling (for -p attach)
 *   hop:  N calls to probe_hop instead, each entered on one cpu and returning on the
 *         other (the first enters on cpu 1): its entry and its return land in different
 *         rings of a per-cpu recording
 *
 * probe_label is a function symbol without a size (no body as far as ELF tells), which
 * --probe must refuse by name and a glob must skip. */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile long sink;

__asm__(".text\n.globl probe_label\n.type probe_label, @function\nprobe_label:\n\tret\n");

__attribute__((noinline, noclone, used)) void probe_empty(long i)
{
	sink += i;
}

static int pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof(set), &set);
}

__attribute__((noinline, noclone, used)) void probe_hop(long i)
{
	if (pin((int)(i & 1)) < 0)
		sink = -1;
}

int main(int argc, char **argv)
{
	long n, k;
	char c;

	if (argc < 3 || (n = atol(argv[1])) < 0 || (k = atol(argv[2])) < 0) {
		fprintf(stderr, "usage: probe_calls N K [wait]\n");
		return 2;
	}
	if (argc > 3 && strcmp(argv[3], "wait") == 0) {
		printf("ready\n");
		fflush(stdout);
		if (read(0, &c, 1) != 1)
			return 1;
	}
	if (argc > 3 && strcmp(argv[3], "hop") == 0) {
		if (pin(1) < 0) {
			perror("probe_calls: sched_setaffinity (hop needs 2 cpus)");
			return 1;
		}
		for (long i = 0; i < n; i++)
			probe_hop(i);
		if (sink < 0) {
			fprintf(stderr, "probe_calls: a hop failed\n");
			return 1;
		}
	} else {
		for (long i = 0; i < n; i++)
			probe_empty(i);
	}
	for (long i = 0; i < k; i++)
		sink += getsid(0);
	return 0;
}
