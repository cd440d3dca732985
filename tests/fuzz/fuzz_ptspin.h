/* What the PT fuzz harnesses share: xptrace's messages kept quiet, and the code image
 * loaded once: the shipped traces/pt-spin/ptspin at the address its trace.pt ran at. */
#ifndef FUZZ_PTSPIN_H
#define FUZZ_PTSPIN_H

#include <stdio.h>

#include "decoders/pt/dpt.h"
#include "util/xp_err.h"

#define PTSPIN_BASE 0x555555554000ull
#define PTSPIN_PATH XP_SRCDIR "/traces/pt-spin/ptspin"

static void fuzz_quiet(const char *msg, void *ctx)
{
	(void)msg;
	(void)ctx;
}

/* The image, NULL (said on stderr, naming harness `who`) when it cannot be loaded. */
static struct dpt_image *fuzz_ptspin_image(const char *who)
{
	struct dpt_image *img;

	xp_err_set_sink(fuzz_quiet, NULL);
	img = dpt_image_new("fuzz");
	if (!img || dpt_image_add_elf(img, PTSPIN_PATH, 1, PTSPIN_BASE, NULL, NULL) < 0) {
		fprintf(stderr, "%s: cannot load %s\n", who, PTSPIN_PATH);
		dpt_image_free(img);
		return NULL;
	}
	return img;
}

#endif
