#include <stdio.h>

#include "xp_cli.h"
#include "xp_err.h"

static int run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	xp_err("info", "this build cannot info yet", "not implemented yet");
	return XP_EXIT_RUNTIME;
}

const struct xp_cmd xp_cmd_info = {
	.name = "info",
	.summary = "what this machine can record, and why not where it cannot",
	.usage = "usage: xptrace info [OPTIONS]\n\nwhat this machine can record, and why not where it cannot.\n",
	.run = run,
};
