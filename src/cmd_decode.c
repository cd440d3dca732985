#include <stdio.h>

#include "bb_cli.h"
#include "xp_cli.h"
#include "xp_err.h"

static int run(int argc, char **argv)
{
	if (bb_pt_raw_wanted(argc, argv))
		return bb_pt_raw_main(argc, argv);
	xp_err("decode", "this build cannot decode yet", "not implemented yet");
	return XP_EXIT_RUNTIME;
}

const struct xp_cmd xp_cmd_decode = {
	.name = "decode",
	.summary = "decode a trace offline into reports",
	.usage = "usage: xptrace decode [OPTIONS]\n\ndecode a trace offline into reports.\n\n" BB_PT_USAGE,
	.run = run,
};
