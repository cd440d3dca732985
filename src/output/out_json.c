/* JSON lines, built in a growing buffer and written whole: the one place that knows
 * how a JSON string is escaped and how an object's keys and values are written. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "util/xp_grow.h"

void out_buf_init(struct out_buf *b, char *mem, size_t cap)
{
	*b = (struct out_buf){ mem, 0, mem ? cap : 0, false, false };
}

void out_buf_free(struct out_buf *b)
{
	if (b->heap)
		free(b->p);
	out_buf_init(b, NULL, 0);
}

void out_buf_printf(struct out_buf *b, const char *fmt, ...)
{
	va_list ap;
	char tmp[1];

	va_start(ap, fmt);
	int n = vsnprintf(tmp, 0, fmt, ap);
	va_end(ap);
	/* vsnprintf writes a terminating NUL: one byte more than the text */
	if (n < 0 || !out_buf_reserve(b, (size_t)n + 1))
		return;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

/* Two digits a division: numbers are most of what JSON lines of --insn hold. */

int out_buf_write(struct out_buf *b, FILE *f)
{
	if (b->oom)
		return -ENOMEM;
	return fwrite(b->p, 1, b->len, f) == b->len ? 0 : -EIO;
}

size_t out_utf8_len(const unsigned char *s, size_t *bad)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need;

	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else {
		*bad = 1;	/* a continuation byte, an overlong lead (c0, c1) or f5..ff */
		return 0;
	}
	/* the second byte's range excludes overlong forms, surrogates and > U+10FFFF */
	for (size_t i = 1; i <= need; i++, lo = 0x80, hi = 0xbf)
		if (s[i] < lo || s[i] > hi) {	/* the string's NUL stops here too */
			*bad = i;
			return 0;
		}
	return need + 1;
}

void out_json_str(struct out_buf *b, const char *str)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *s = (const unsigned char *)str, *run;

	if (!str) {
		out_buf_put(b, "null", 4);
		return;
	}
	out_buf_put(b, "\"", 1);
	for (run = s; *s;) {
		unsigned char c = *s;
		size_t n, bad = 0;
		char esc[6];

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			s++;
			continue;
		}
		if (c >= 0x80 && (n = out_utf8_len(s, &bad))) {
			s += n;
			continue;
		}
		/* an ordinary run ends here: out in one piece before the escape */
		out_buf_put(b, (const char *)run, (size_t)(s - run));
		switch (c) {
		case '"': out_buf_put(b, "\\\"", 2); break;
		case '\\': out_buf_put(b, "\\\\", 2); break;
		case '\n': out_buf_put(b, "\\n", 2); break;
		case '\t': out_buf_put(b, "\\t", 2); break;
		case '\r': out_buf_put(b, "\\r", 2); break;
		case '\b': out_buf_put(b, "\\b", 2); break;
		case '\f': out_buf_put(b, "\\f", 2); break;
		default:
			if (bad) {	/* invalid UTF-8: the output stays valid JSON */
				out_buf_put(b, "\\ufffd", 6);
				s += bad;
				run = s;
				continue;
			}
			/* the other control characters, and DEL, which terminals act on */
			memcpy(esc, "\\u00", 4);
			esc[4] = hex[c >> 4];
			esc[5] = hex[c & 15];
			out_buf_put(b, esc, 6);
			break;
		}
		run = ++s;
	}
	out_buf_put(b, (const char *)run, (size_t)(s - run));
	out_buf_put(b, "\"", 1);
}


void out_json_end(struct out_buf *b)
{
	out_buf_put(b, "}\n", 2);
}



void out_json_hex(struct out_buf *b, const char *key, uint64_t v)
{
	out_json_key(b, key);
	out_buf_printf(b, "\"0x%" PRIx64 "\"", v);
}

void out_json_fixed(struct out_buf *b, const char *key, int dec, double v)
{
	out_json_key(b, key);
	out_buf_printf(b, "%.*f", dec, v);
}

void out_json_bool(struct out_buf *b, const char *key, bool v)
{
	out_json_key(b, key);
	out_buf_put(b, v ? "true" : "false", v ? 4 : 5);
}

void out_json_null(struct out_buf *b, const char *key)
{
	out_json_key(b, key);
	out_buf_put(b, "null", 4);
}

void out_json_string(struct out_buf *b, const char *key, const char *s)
{
	out_json_key(b, key);
	out_json_str(b, s);
}
