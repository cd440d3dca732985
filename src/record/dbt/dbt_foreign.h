/* --mode dbt and another tool's breakpoints: a uprobe's int3 is in valgrind's copy of
 * the program too (the kernel writes it into every private mapping of the probed file
 * that may become executable), and valgrind runs it as the program's own int3: a
 * SIGTRAP the program gets (which kills it unless it handles SIGTRAP), a hit the other
 * tool misses.  Found the same way: the file mapped privately here holds the int3s
 * the file itself does not. */
#ifndef DBT_FOREIGN_H
#define DBT_FOREIGN_H

#include <stddef.h>
#include <stdint.h>

struct dbt_foreign {
	char **paths;		/* files looked at */
	size_t n, cap;
};

/* Looks at [pgoff, pgoff + len) of path once per file, saying what it finds. */
void dbt_foreign_check(struct dbt_foreign *f, const char *path, uint64_t pgoff, uint64_t len);
void dbt_foreign_free(struct dbt_foreign *f);

#endif
