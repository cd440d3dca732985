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

#endif
