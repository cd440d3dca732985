#include <stdio.h>

#include "xp_cli.h"
#include "xp_err.h"

static int run(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	xp_err("record", "this build cannot record yet", "not implemented yet");
	return XP_EXIT_RUNTIME;
}

const struct xp_cmd xp_cmd_record = {
	.name = "record",
	.summary = "record a command or process into a trace directory",
	.usage = "usage: xptrace record [OPTIONS]\n\nrecord a command or process into a trace directory.\n",
	.run = run,
};
