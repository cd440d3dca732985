/* Writes tests/unit/pt_percpu.h's PT perf.data, per cpu or (with per-thread) per thread,
 * or its long per-cpu trace:
 * pt_percpu_gen OUT PTSPIN [per-thread | long SLICES ITERS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_percpu.h"

int main(int argc, char **argv)
{
	int r;

	if (argc == 6 && strcmp(argv[3], "long") == 0) {
		r = ptpc_write_long(argv[1], argv[2], atol(argv[4]), atol(argv[5]));
	} else if (argc >= 3 && argc <= 4 && (argc == 3 || strcmp(argv[3], "per-thread") == 0)) {
		r = ptpc_write(argv[1], argv[2], argc == 4 ? PTPC_PER_THREAD : 0);
	} else {
		fprintf(stderr, "usage: pt_percpu_gen OUT.data PTSPIN [per-thread | long SLICES ITERS]\n");
		return 2;
	}
	if (r < 0) {
		fprintf(stderr, "pt_percpu_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
