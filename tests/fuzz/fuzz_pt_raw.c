/* libFuzzer harness: raw Intel PT through the PT decoder (decoders/pt), what
 * `xptrace decode --pt FILE --elf traces/pt-spin/ptspin:0x555555554000` decodes.
 * The code image is loaded once (the shipped ptspin binary, at the address its
 * trace.pt ran at), so each input costs only its decode.
 *
 * Input: one byte of decoder settings, then the PT bytes.  The settings pick what
 * the command line and the perf.data glue pick: block or instruction decoder, stop
 * at the first error (ptxed's default) or resynchronize, TSC -> ns conversion,
 * a CPU's errata, MTC/CYC configuration, calls and returns skipped, and the
 * resumable decode (dpt_run in time slices, as perf.data queues are decoded). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_ptspin.h"

static struct dpt_image *img;

/* Reads what a view would: the instruction bytes and the callchain. */
static int sink_fn(void *ctx, const struct xev *ev)
{
	uint64_t *sum = ctx;
	*sum += ev->ip ^ ev->end ^ ev->insns;
	for (uint32_t i = 0; ev->bytes && i < ev->nbytes; i++)
		*sum += ev->bytes[i];
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	img = fuzz_ptspin_image("fuzz_pt_raw");
	return img ? 0 : 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dpt_options opt;
	struct dpt_stats stats;
	uint64_t sum = 0;
	struct xev_sink sink = { sink_fn, &sum, NULL };

	if (size < 1 || !img)
		return 0;
	uint8_t s = data[0];
	data++;
	size--;
	dpt_options_init(&opt);
	opt.pid = opt.tid = 1;
	opt.mode = s & 1 ? DPT_INSNS : DPT_BLOCKS;
	opt.strict = !(s & 2);
	if (s & 4) {	/* --tsc-hz 2.4e9 */
		opt.have_time_conv = 1;
		opt.time_shift = 31;
		opt.time_mult = 894784853;
		opt.time_zero = 1000;
	}
	if (s & 8) {	/* --cpu 6/142/10, --nom-freq, --mtc-freq, CPUID 0x15 */
		dpt_parse_cpu("6/142/10", &opt.cpu);
		opt.nom_freq = 24;
		opt.mtc_freq = 3;
		opt.cpuid_0x15_eax = 2;
		opt.cpuid_0x15_ebx = 200;
	}
	if (s & 16)
		opt.ignore = (1u << XEV_CALL) | (1u << XEV_RETURN);
	if (!(s & 32)) {
		dpt_decode(data, size, img, &opt, &sink, &stats);
		return 0;
	}
	/* resumable: slices of 2^(s>>6 * 4 + 4) time units */
	struct dpt_dec *d;
	opt.split_at_pause = 1;
	if (dpt_open(&d, data, size, img, &opt) < 0)
		return 0;
	uint64_t step = 1ull << ((s >> 6) * 4 + 4), limit = step;
	for (int i = 0; i < 100000 && dpt_time(d) != UINT64_MAX; i++) {
		if (dpt_run(d, &sink, limit) != 0)
			break;
		uint64_t t = dpt_time(d);
		limit = (t > limit ? t : limit) + step;
		if (limit < step)
			limit = UINT64_MAX;
	}
	dpt_close(d);
	return 0;
}
