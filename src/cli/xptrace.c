/* xptrace command-line entry point: dispatches to one src/cmd_*.c per command. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/xp_cli.h"
#include "engine/engine.h"
#include "output/out.h"
#include "record/rec.h"
#include "views/bb_views.h"
#include "util/xp_err.h"

static const struct xp_cmd *const commands[] = {
	&xp_cmd_info,
	&xp_cmd_record,
	&xp_cmd_decode,
	&xp_cmd_diff,
	&xp_cmd_selftest,
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static void print_overview(FILE *out)
{
	fprintf(out,
		"usage: xptrace [--version] [--help] COMMAND [ARGS...]\n"
		"\n"
		"Hardware-assisted tracer: records instruction and branch addresses (Intel PT,\n"
		"LBR, sampling, or a ptrace branch tracer) into perf.data with module snapshots,\n"
		"and decodes them offline.\n"
		"\n"
		"commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(out, "  %-8s %s\n", commands[i]->name, commands[i]->summary);
	fprintf(out, "\nSee 'xptrace help COMMAND' for the options of one command.\n");
}

static const struct xp_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

/* `xptrace help --list KIND [COMMAND]`: the words of the tables, one a line, for the
 * build's generators (mk/man.sh, mk/completion.sh): a command, mode, view, field
 * (decode --insn -F) or format
 * added to its table gets its man page and completion without another edit.  With a
 * COMMAND, the formats and modes that command's --format and --mode take. */
static int list(const char *kind, const char *cmdname)
{
	const struct xp_cmd *cmd = NULL;
	unsigned formats = (1u << OUT_NFORMATS) - 1;
	enum xp_cmd_modes modes = XP_CMD_MODES_AUTO;

	if (cmdname) {
		cmd = find_command(cmdname);
		if (!cmd)
			return xp_usage_error("help", "--list %s: unknown command '%s'", kind, cmdname);
		formats = cmd->formats;
		modes = cmd->modes;
	}
	if (strcmp(kind, "commands") == 0 && !cmd) {
		for (size_t i = 0; i < NCOMMANDS; i++)
			printf("%s\t%s\n", commands[i]->name, commands[i]->summary);
	} else if (strcmp(kind, "modes") == 0) {
		if (modes == XP_CMD_MODES_AUTO)
			printf("auto\n");
		/* selftest checks the modes the machine probe knows: not dbt, which
		 * only record runs (by name) */
		for (int i = 0; modes != XP_CMD_NO_MODE && rec_modes[i]; i++)
			if (modes == XP_CMD_MODES_AUTO || !rec_modes[i]->no_auto)
				printf("%s\n", rec_modes[i]->name);
	} else if (strcmp(kind, "views") == 0 && (!cmd || cmd == &xp_cmd_decode)) {
		const struct dec_view *const *views;
		size_t n = eng_views(&views);
		for (size_t i = 0; i < n; i++)
			printf("--%s\n", views[i]->name);
	} else if (strcmp(kind, "fields") == 0 && (!cmd || cmd == &xp_cmd_decode)) {
		for (int i = 0; i < BB_NFIELDS; i++)	/* decode --insn -F */
			printf("%s\n", bb_field_name((enum bb_field)i));
	} else if (strcmp(kind, "formats") == 0) {
		for (int i = 0; i < OUT_NFORMATS; i++)
			if (formats & (1u << i))
				printf("%s\n", out_format_name((enum out_format)i));
	} else if (strcmp(kind, "views") != 0 && strcmp(kind, "fields") != 0) {
		return xp_usage_error("help", "--list takes commands, modes, views, fields or formats%s, not '%s'",
				      cmd ? " (modes, views, fields or formats with a command)" : "", kind);
	}
	return XP_EXIT_OK;
}

static int help(const char *name)
{
	const struct xp_cmd *cmd;

	if (!name) {
		print_overview(stdout);
		return XP_EXIT_OK;
	}
	cmd = find_command(name);
	if (!cmd)
		return xp_usage_error(NULL, "unknown command '%s'", name);
	fputs(cmd->usage, stdout);
	return XP_EXIT_OK;
}

/* `--help`/`-h` anywhere before `--` asks for the command's help. */
static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0)
			return 0;
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const struct xp_cmd *cmd;

	if (argc < 2) {
		print_overview(stderr);
		fputc('\n', stderr);
		return xp_usage_error(NULL, "no command given");
	}
	if (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0) {
		printf("xptrace %s\n", XP_VERSION);
		return XP_EXIT_OK;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return help(NULL);
	if (strcmp(argv[1], "help") == 0) {
		if ((argc == 4 || argc == 5) && strcmp(argv[2], "--list") == 0)
			return list(argv[3], argc == 5 ? argv[4] : NULL);
		if (argc > 3)
			return xp_usage_error("help", "too many arguments");
		return help(argc == 3 ? argv[2] : NULL);
	}
	cmd = find_command(argv[1]);
	if (!cmd && argv[1][0] == '-')
		return xp_usage_error(NULL, "unknown option '%s'", argv[1]);
	if (!cmd)
		return xp_usage_error(NULL, "unknown command '%s'", argv[1]);
	if (wants_help(argc - 1, argv + 1)) {
		fputs(cmd->usage, stdout);
		return XP_EXIT_OK;
	}
	return cmd->run(argc - 1, argv + 1);
}
