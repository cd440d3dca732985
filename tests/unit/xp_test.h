/* Everything a cmocka unit test needs, in the order cmocka requires. */
#ifndef XP_TEST_H
#define XP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

/* Absolute paths baked in by the Makefile, so tests run from any directory. */
#define XP_FIXTURE(rel) XP_SRCDIR "/tests/fixtures/" rel

/* The xptrace binary of the build this test belongs to: the plain build links
 * ./xptrace at the top of the tree, the others (ASan) BUILD/xptrace. */
static inline const char *xp_test_xptrace(void)
{
	static char path[4096];
	const char *b = XP_BUILDDIR;
	size_t n = strlen(b);
	if (n >= 6 && strcmp(b + n - 6, "/build") == 0)
		snprintf(path, sizeof(path), "%s/xptrace", XP_SRCDIR);
	else
		snprintf(path, sizeof(path), "%s/xptrace", b);
	return path;
}

/* Removes a test's temporary directory; 0 or -1. */
static inline int xp_test_rmtree(const char *dir)
{
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Output (stdout and stderr) of `xptrace decode -i DATA ARGS` with this build's binary,
 * in a buffer the next call reuses. */
static inline const char *xp_test_decode(const char *data, const char *args)
{
	char cmd[8192];
	static char out[1 << 16];
	snprintf(cmd, sizeof(cmd), "%s decode -i %s %s 2>&1", xp_test_xptrace(), data, args);
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	size_t n = fread(out, 1, sizeof(out) - 1, p);
	out[n] = '\0';
	pclose(p);
	return out;
}

#endif
