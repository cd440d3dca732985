/* Command table: each src/cmd_*.c defines one `struct xp_cmd`. */
#ifndef XP_CLI_H
#define XP_CLI_H

struct xp_cmd {
	const char *name;
	const char *summary;	/* one line for `xptrace help` */
	const char *usage;	/* full text for `xptrace help CMD` / `CMD --help` */
	/* argv[0] is the command name; returns an XP_EXIT_* code. */
	int (*run)(int argc, char **argv);
};

extern const struct xp_cmd xp_cmd_info;
extern const struct xp_cmd xp_cmd_record;
extern const struct xp_cmd xp_cmd_decode;
extern const struct xp_cmd xp_cmd_diff;
extern const struct xp_cmd xp_cmd_selftest;

#endif
