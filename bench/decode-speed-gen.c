/* bench/decode-speed: writes the benchmark trace (see tests/unit/pt_gen.h).
 * usage: decode-speed-gen PTSPIN_BINARY N OUT_DIR [timed|cyc [PSB_PERIOD]]
 * timed: TSC, TMA, CBR in each PSB+ and MTCs, as perf's default intel_pt config
 * records on hardware (struct ptgen_opts); cyc: timed, with CYC packets (cyc=1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pt_gen.h"

int main(int argc, char **argv)
{
	struct ptgen_opts o = { 0 };
	if (argc < 4 || argc > 6 || (argc > 4 && strcmp(argv[4], "timed") && strcmp(argv[4], "cyc"))) {
		fprintf(stderr, "usage: decode-speed-gen PTSPIN_BINARY N OUT_DIR [timed|cyc [PSB_PERIOD]]\n");
		return 2;
	}
	o.timed = argc > 4;
	o.cyc = argc > 4 && !strcmp(argv[4], "cyc");
	if (argc > 5)
		o.psb_period = (size_t)atol(argv[5]);
	size_t len = ptgen_write_opts(argv[1], atol(argv[2]), argv[3], &o);
	if (!len)
		return 1;
	printf("%ld instructions, %zu PT bytes\n", 6 * atol(argv[2]) + 2, len);
	return 0;
}
