/* Command table: each src/cmd_*.c defines one `struct xp_cmd`. */
#ifndef XP_CLI_H
#define XP_CLI_H

/* What a command's --mode takes: nothing, the recording modes, or those and auto. */
enum xp_cmd_modes { XP_CMD_NO_MODE, XP_CMD_MODES, XP_CMD_MODES_AUTO };

struct xp_cmd {
	const char *name;
	const char *summary;	/* one line for `xptrace help` */
	const char *usage;	/* full text for `xptrace help CMD` / `CMD --help` */
	/* argv[0] is the command name; returns an XP_EXIT_* code. */
	int (*run)(int argc, char **argv);
	/* the values of its --format (a bit per enum out_format) and --mode, listed by
	 * `xptrace help --list formats|modes CMD` for the completion's generator */
	unsigned formats;
	enum xp_cmd_modes modes;
};

extern const struct xp_cmd xp_cmd_info;
extern const struct xp_cmd xp_cmd_record;
extern const struct xp_cmd xp_cmd_decode;
extern const struct xp_cmd xp_cmd_diff;
extern const struct xp_cmd xp_cmd_selftest;

#endif
