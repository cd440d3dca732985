/* Writes tests/unit/pt_percpu.h's per-cpu PT perf.data: pt_percpu_gen OUT PTSPIN */
#include <stdio.h>

#include "pt_percpu.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: pt_percpu_gen OUT.data PTSPIN\n");
		return 2;
	}
	if (ptpc_write(argv[1], argv[2], 0) < 0) {
		fprintf(stderr, "pt_percpu_gen: cannot write %s\n", argv[1]);
		return 1;
	}
	return 0;
}
