/* Writes tests/unit/pt_percpu.h's PT perf.data, per cpu or (with per-thread) per thread:
 * pt_percpu_gen OUT PTSPIN [per-thread] */
#include <stdio.h>
#include <string.h>

#include "pt_percpu.h"

int main(int argc, char **argv)
{
	if (argc < 3 || argc > 4 || (argc == 4 && strcmp(argv[3], "per-thread") != 0)) {
		fprintf(stderr, "usage: pt_percpu_gen OUT.data PTSPIN [per-thread]\n");
		return 2;
	}
	if (ptpc_write(argv[1], argv[2], argc == 4 ? PTPC_PER_THREAD : 0) < 0) {
		fprintf(stderr, "pt_percpu_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
