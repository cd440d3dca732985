/* One way to tell the user what went wrong:
 *   xptrace: <what failed>: <why> (<what to do>)
 * Functions elsewhere return 0 or a negative errno-style code and report through here
 * at the point where the context (file name, option) is known. */
#ifndef XP_ERR_H
#define XP_ERR_H

#include <stdarg.h>

/* Exit codes of the CLI. */
enum { XP_EXIT_OK = 0, XP_EXIT_RUNTIME = 1, XP_EXIT_USAGE = 2 };

/* Prints the message; `hint` may be NULL.  Returns -EIO ("failed, reported") so callers
 * can `return xp_err(...)`; a caller that knows the cause (an allocation, a syscall's
 * errno, malformed input) says so with xp_err_code. */
int xp_err(const char *what, const char *hint, const char *why_fmt, ...)
	__attribute__((format(printf, 3, 4)));
int xp_verr(const char *what, const char *hint, const char *why_fmt, va_list ap);

/* Like xp_err, but returns `code`, a negative errno (-ENOMEM, -EINVAL, -errno saved
 * after a failed call); a code that is not negative is returned as -EIO. */
int xp_err_code(int code, const char *what, const char *hint, const char *why_fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Reports a bad command line for `cmd` ("see 'xptrace help CMD'") and returns
 * XP_EXIT_USAGE. */
int xp_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Warnings and notes that are not failures: "xptrace: <msg>". */
void xp_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Tests capture messages instead of reading stderr. */
typedef void (*xp_err_sink_fn)(const char *line, void *ctx);
void xp_err_set_sink(xp_err_sink_fn fn, void *ctx);

#endif
