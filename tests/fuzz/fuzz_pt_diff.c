/* libFuzzer harness, differential: raw Intel PT decoded into blocks by the packet
 * walker (decoders/pt/dpt_fast.c, libipt's block decoder for what it leaves) and by
 * libipt's block decoder alone (--pt-decoder libipt) must make the same events, field
 * by field (tests/unit/pt_diff.h), and return the same; any difference aborts.  The
 * code image is traces/pt-spin/ptspin at the address its trace.pt ran at.
 *
 * Input: one byte of decoder settings, then the PT bytes.  Bit 0: stop at the first
 * error; 1: TSC -> ns conversion; 2: calls and returns skipped; 3: in time slices of
 * 2^(4 x bits 6-7) units (dpt_run, as perf.data queues) with split_at_pause; 4: the
 * pieces of a parallel decode (dpt_split, 64 bytes each) instead; 5: MTC settings
 * (MTCFreq 3 and CPUID 0x15's ratio: libipt makes time from MTC and tick events, the
 * walker as it). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_ptspin.h"
#include "tests/unit/pt_diff.h"

static struct dpt_image *img;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	img = fuzz_ptspin_image("fuzz_pt_diff");
	return img ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpt_options opt;

	if (size < 1 || !img)
		return 0;
	uint8_t s = data[0];
	data++;
	size--;
	dpt_options_init(&opt);
	opt.pid = opt.tid = 1;
	opt.strict = s & 1;
	if (s & 2) {	/* --tsc-hz 2.4e9 */
		opt.have_time_conv = 1;
		opt.time_shift = 31;
		opt.time_mult = 894784853;
		opt.time_zero = 1000;
	}
	if (s & 4)
		opt.ignore = (1u << XEV_CALL) | (1u << XEV_RETURN);
	if (s & 32) {
		opt.mtc_freq = 3;
		opt.cpuid_0x15_eax = 2;
		opt.cpuid_0x15_ebx = 200;
	}
	long d;
	if (s & 16) {
		d = ptd_pieces(data, size, img, &opt, 64, NULL);
	} else {
		opt.split_at_pause = (s & 8) != 0;
		d = ptd_both(data, size, img, &opt, s & 8 ? 1ull << ((s >> 6) * 4) : 0, NULL);
	}
	if (d >= 0) {
		fprintf(stderr, "fuzz_pt_diff: the walker and libipt differ at event %ld\n", d);
		abort();
	}
	return 0;
}
