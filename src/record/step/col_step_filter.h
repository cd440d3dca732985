/* --filter for --mode step: which code ranges to trace.
 *
 *   START-END@MODULE   ELF addresses (hex, as nm/objdump print them) of MODULE's file
 *   SYMBOL[@MODULE]    a function (its symbol's [value, value + size)); MODULE
 *                      defaults to the program itself
 *   filter SYMBOL @ MODULE, filter START/SIZE @ MODULE   perf's Intel PT syntax
 *
 * comma separated.  MODULE matches a mapping by full path or file name.  Ranges are
 * resolved when the module is mapped (the program at exec, libraries at dlopen). */
#ifndef COL_STEP_FILTER_H
#define COL_STEP_FILTER_H

#include <stdint.h>

struct step_filter {
	char *module;		/* NULL: the program */
	char *sym;		/* NULL: start/end given */
	uint64_t start, end;	/* ELF addresses */
	int resolved;
};

/* Parses SPEC into *out (count in *n); -EINVAL with a message in why. */
int col_step_filter_parse(const char *spec, struct step_filter **out, int *n, char *why,
			  size_t whylen);
void col_step_filter_free(struct step_filter *f, int n);

/* Before the run: modules given as paths (relative ones too) become canonical paths,
 * as mappings name them, and the filters on the program (`exe`, NULL: unknown) and on
 * modules named by path are looked up: -ENOENT with `why` for a missing file or
 * function, -ERANGE for a range outside the loaded segments.  Libraries named by file
 * name are resolved when they are mapped. */
int col_step_filter_check(struct step_filter *f, int n, const char *exe, char *why, size_t whylen);

/* A mapping [lo, hi) of `path` at file offset `off` appeared (`is_exe`: it is the
 * program).  Appends the runtime ranges of the filters it resolves to r (room for
 * max, count in *nr).  Returns the number added, or a negative error with `why` (a
 * symbol missing from the module, a range outside its file). */
int col_step_filter_resolve(struct step_filter *f, int n, uint64_t lo, uint64_t hi,
			    uint64_t off, const char *path, int is_exe, uint64_t (*r)[2],
			    int max, int *nr, char *why, size_t whylen);

/* perf's filter string for AUXTRACE_INFO ("filter 0xOFF/0xSIZE@/path,...", file
 * offsets), from what can be resolved before the run: the program (`exe`, a path) and
 * modules named by path.  perf's decoder uses it to end a trace at a direct branch
 * that leaves the ranges.  Filters on modules named without a path are left out
 * (counted in *unnamed), and so are those whose path has a space or a comma (counted
 * in *unsayable): perf's filter syntax ends a file name there, and a filter it cannot
 * parse makes it decode nothing.  Returns a malloc'ed string (maybe empty) or NULL. */
char *col_step_filter_perf_string(const struct step_filter *f, int n, const char *exe,
				  int *unnamed, int *unsayable);

#endif
