/* bench/decode-speed: writes the benchmark trace (see tests/unit/pt_gen.h).
 * usage: decode-speed-gen PTSPIN_BINARY N OUT_DIR */
#include <stdio.h>
#include <stdlib.h>

#include "pt_gen.h"

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: decode-speed-gen PTSPIN_BINARY N OUT_DIR\n");
		return 2;
	}
	size_t len = ptgen_write(argv[1], atol(argv[2]), argv[3]);
	if (!len)
		return 1;
	printf("%ld instructions, %zu PT bytes\n", 6 * atol(argv[2]) + 2, len);
	return 0;
}
