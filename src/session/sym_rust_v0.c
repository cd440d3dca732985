/* Rust v0 symbol names ("_R…", RFC 2603) in rustc-demangle's short form: paths,
 * impls, generic arguments, basic and compound types, back-references.  Anything
 * outside the grammar makes the whole name undecodable (NULL): a wrong name is worse
 * than a mangled one. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/xp_grow.h"

struct dm {
	const char *s;	/* after "_R" */
	size_t n, pos;
	char *out;
	size_t len, cap;
	bool bad;
	bool open;	/* the P_OPEN path just printed left its generic arguments open */
	int depth;
	uint64_t bound;	/* lifetimes bound by the enclosing for<...> binders */
};

static void put(struct dm *d, const char *p, size_t n)
{
	if (d->bad)
		return;
	if (XP_GROW(d->out, d->cap, d->len + n + 1) < 0) {
		d->bad = true;
		return;
	}
	memcpy(d->out + d->len, p, n);
	d->len += n;
	d->out[d->len] = 0;
}

static void puts_(struct dm *d, const char *p) { put(d, p, strlen(p)); }

static char peek(struct dm *d) { return d->pos < d->n ? d->s[d->pos] : 0; }

static bool eat(struct dm *d, char c)
{
	if (peek(d) == c) {
		d->pos++;
		return true;
	}
	return false;
}

static uint64_t base62(struct dm *d)
{
	uint64_t v = 0;

	if (eat(d, '_'))
		return 0;
	for (;;) {
		char c = peek(d);
		int x;
		if (c >= '0' && c <= '9')
			x = c - '0';
		else if (c >= 'a' && c <= 'z')
			x = c - 'a' + 10;
		else if (c >= 'A' && c <= 'Z')
			x = c - 'A' + 36;
		else if (c == '_' && v < UINT64_MAX) {
			d->pos++;
			return v + 1;
		} else {
			d->bad = true;
			return 0;
		}
		d->pos++;
		if (v > (UINT64_MAX - (uint64_t)x) / 62) {
			d->bad = true;
			return 0;
		}
		v = v * 62 + (uint64_t)x;
	}
}

static uint64_t decimal(struct dm *d)
{
	uint64_t v = 0;

	if (peek(d) < '0' || peek(d) > '9') {
		d->bad = true;
		return 0;
	}
	/* "0" is a whole number: it has no leading zeros, so in "00" (the empty names of
	 * two nested closures) each 0 is one identifier's length */
	if (eat(d, '0'))
		return 0;
	while (peek(d) >= '0' && peek(d) <= '9') {
		v = v * 10 + (uint64_t)(peek(d) - '0');
		d->pos++;
		if (v > (1u << 20)) {
			d->bad = true;
			return 0;
		}
	}
	return v;
}

static uint64_t disamb(struct dm *d)
{
	return eat(d, 's') ? base62(d) + 1 : 0;
}

static void ident(struct dm *d, bool print)
{
	bool puny = eat(d, 'u');
	uint64_t n = decimal(d);

	eat(d, '_');
	if (d->bad || n > d->n - d->pos) {
		d->bad = true;
		return;
	}
	(void)puny;	/* punycode names are shown encoded */
	/* identifiers are ASCII letters, digits and '_' (anything else is punycode), so a
	 * length that runs into a '.' suffix is a broken name */
	for (uint64_t i = 0; i < n; i++) {
		char c = d->s[d->pos + i];
		if (!(c >= '0' && c <= '9') && !(c >= 'a' && c <= 'z') && !(c >= 'A' && c <= 'Z') && c != '_') {
			d->bad = true;
			return;
		}
	}
	if (print)
		put(d, d->s + d->pos, n);
	d->pos += n;
}

/* How a path is printed: P_PRINT off skips it (an impl's own path, the instantiating
 * crate); P_VALUE marks a value path, whose generic arguments take the turbofish
 * (foo::<u8>), where a type path's do not (Vec<u8>); P_OPEN leaves a dyn trait's
 * generic arguments open for its associated types (Foo<u32, Item = u8>). */
enum { P_PRINT = 1, P_VALUE = 2, P_OPEN = 4 };

static void path(struct dm *d, int how);
static void type(struct dm *d);

static void backref(struct dm *d, void (*fn)(struct dm *, int), int how)
{
	uint64_t at = base62(d);

	if (d->bad || at >= d->pos || ++d->depth > 64) {
		d->bad = true;
		return;
	}
	size_t save = d->pos;
	d->pos = at;
	fn(d, how);
	d->pos = save;
	d->depth--;
}

static void type_p(struct dm *d, int how)
{
	(void)how;
	type(d);
}

/* A lifetime is 0 (erased, '_) or counts back through the bound ones, the innermost
 * first: 'a is the outermost binder's first. */
static void lifetime(struct dm *d, uint64_t i)
{
	char buf[32];

	if (!i) {
		puts_(d, "'_");
		return;
	}
	if (i > d->bound) {
		d->bad = true;	/* bound by no binder */
		return;
	}
	uint64_t n = d->bound - i;
	if (n < 26)
		snprintf(buf, sizeof(buf), "'%c", (char)('a' + n));
	else
		snprintf(buf, sizeof(buf), "'_%llu", (unsigned long long)n);
	puts_(d, buf);
}

static void const_(struct dm *d);

static void const_p(struct dm *d, int how)
{
	(void)how;
	const_(d);
}

/* A char const as Rust writes it: printable ASCII as is, the usual escapes, any other
 * scalar value as \u{hex}; a value that is no char (a surrogate, past U+10FFFF)
 * cannot come from rustc. */
static void const_char(struct dm *d, uint64_t v)
{
	char buf[16];

	if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
		d->bad = true;
		return;
	}
	if (v == '\t' || v == '\r' || v == '\n' || v == '\'' || v == '\\')
		snprintf(buf, sizeof(buf), "'\\%c'", v == '\t' ? 't' : v == '\r' ? 'r' : v == '\n' ? 'n' : (char)v);
	else if (v >= 0x20 && v < 0x7f)
		snprintf(buf, sizeof(buf), "'%c'", (char)v);
	else
		snprintf(buf, sizeof(buf), "'\\u{%llx}'", (unsigned long long)v);
	puts_(d, buf);
}

/* The const generics of the v0 grammar: an integer (n before a negative signed one),
 * a bool or a char.  The value's type is not shown; the newer encodings of str,
 * reference, array, tuple and ADT consts are refused, as c++filt does. */
static void const_(struct dm *d)
{
	if (eat(d, 'B')) {
		backref(d, const_p, P_PRINT);
		return;
	}
	if (eat(d, 'p')) {
		puts_(d, "_");
		return;
	}
	char t = peek(d);
	bool sign = t == 'a' || t == 's' || t == 'l' || t == 'x' || t == 'n' || t == 'i';
	bool uns = t == 'h' || t == 't' || t == 'm' || t == 'y' || t == 'o' || t == 'j';
	if (!sign && !uns && t != 'b' && t != 'c') {
		d->bad = true;
		return;
	}
	d->pos++;
	bool neg = sign && eat(d, 'n');
	size_t hex = d->pos, digits = 0;
	uint64_t v = 0;
	bool lead = true;
	while (peek(d) != '_') {
		char c = peek(d);
		int x = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (x < 0) {
			d->bad = true;
			return;
		}
		lead = lead && !x;
		if (!lead)	/* leading zeros do not count against the 16 digits of a u64 */
			digits++;
		v = v << 4 | (uint64_t)x;
		d->pos++;
	}
	size_t nhex = d->pos - hex;
	if (!nhex) {
		d->bad = true;	/* rustc writes 0 as "0_"; c++filt refuses "_" */
		return;
	}
	d->pos++;
	if (t == 'b') {
		if (v > 1 || digits > 16)
			d->bad = true;
		else
			puts_(d, v ? "true" : "false");
		return;
	}
	if (t == 'c') {
		if (digits > 16)
			d->bad = true;
		else
			const_char(d, v);
		return;
	}
	if (neg)
		puts_(d, "-");
	if (digits > 16) {
		/* past 64 bits (i128, u128): the digits as they are, as rustc-demangle */
		puts_(d, "0x");
		put(d, d->s + hex, nhex);
		return;
	}
	char buf[24];
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	puts_(d, buf);
}

static void generic_args(struct dm *d, bool close)
{
	bool first = true;

	puts_(d, "<");
	while (!d->bad && !eat(d, 'E')) {
		if (!peek(d)) {
			d->bad = true;
			return;
		}
		if (!first)
			puts_(d, ", ");
		first = false;
		if (eat(d, 'L'))
			lifetime(d, base62(d));
		else if (eat(d, 'K'))
			const_(d);
		else
			type(d);
	}
	if (close)
		puts_(d, ">");
}

/* for<'a, ...>: the lifetimes it binds stay in d->bound until the caller restores it
 * at the end of the fn or dyn type. */
static void binder(struct dm *d)
{
	if (!eat(d, 'G'))
		return;
	uint64_t n = base62(d) + 1;
	if (d->bad || n > 256 - d->bound) {	/* a bound no real signature comes near */
		d->bad = true;
		return;
	}
	puts_(d, "for<");
	for (uint64_t i = 0; i < n; i++) {
		if (i)
			puts_(d, ", ");
		d->bound++;
		lifetime(d, 1);
	}
	puts_(d, "> ");
}

static void type(struct dm *d)
{
	static const char *const basic[26] = {
		['a' - 'a'] = "i8", ['b' - 'a'] = "bool", ['c' - 'a'] = "char", ['d' - 'a'] = "f64",
		['e' - 'a'] = "str", ['f' - 'a'] = "f32", ['h' - 'a'] = "u8", ['i' - 'a'] = "isize",
		['j' - 'a'] = "usize", ['l' - 'a'] = "i32", ['m' - 'a'] = "u32", ['n' - 'a'] = "i128",
		['o' - 'a'] = "u128", ['s' - 'a'] = "i16", ['t' - 'a'] = "u16", ['u' - 'a'] = "()",
		['v' - 'a'] = "...", ['x' - 'a'] = "i64", ['y' - 'a'] = "u64", ['z' - 'a'] = "!",
		['p' - 'a'] = "_",
	};
	char c = peek(d);

	if (d->bad || ++d->depth > 64) {
		d->bad = true;
		return;
	}
	if (c >= 'a' && c <= 'z' && basic[c - 'a']) {
		d->pos++;
		puts_(d, basic[c - 'a']);
	} else if (eat(d, 'A') || eat(d, 'S')) {
		bool arr = d->s[d->pos - 1] == 'A';
		puts_(d, "[");
		type(d);
		if (arr) {
			puts_(d, "; ");
			const_(d);
		}
		puts_(d, "]");
	} else if (eat(d, 'R') || eat(d, 'Q')) {
		bool mut = d->s[d->pos - 1] == 'Q';
		puts_(d, "&");
		if (eat(d, 'L')) {
			uint64_t lt = base62(d);
			if (lt) {
				lifetime(d, lt);
				puts_(d, " ");
			}
		}
		if (mut)
			puts_(d, "mut ");
		type(d);
	} else if (eat(d, 'P') || eat(d, 'O')) {
		puts_(d, d->s[d->pos - 1] == 'P' ? "*const " : "*mut ");
		type(d);
	} else if (eat(d, 'T')) {
		int n = 0;
		puts_(d, "(");
		while (!d->bad && !eat(d, 'E')) {
			if (!peek(d)) {
				d->bad = true;
				break;
			}
			if (n++)
				puts_(d, ", ");
			type(d);
		}
		puts_(d, n == 1 ? ",)" : ")");	/* (T,): (T) is not a tuple */
	} else if (eat(d, 'F')) {
		uint64_t bound = d->bound;
		binder(d);
		if (eat(d, 'U'))
			puts_(d, "unsafe ");
		if (eat(d, 'K')) {
			puts_(d, "extern \"");
			if (eat(d, 'C')) {
				puts_(d, "C");
			} else if (peek(d) == 'u') {
				d->bad = true;	/* ABI names are ASCII */
			} else {
				/* the name's '-' are mangled as '_' (rust-call, rust_call) */
				size_t l0 = d->len;
				ident(d, true);
				for (size_t i = l0; !d->bad && i < d->len; i++)
					if (d->out[i] == '_')
						d->out[i] = '-';
			}
			puts_(d, "\" ");
		}
		puts_(d, "fn(");
		bool first = true;
		while (!d->bad && !eat(d, 'E')) {
			if (!peek(d)) {
				d->bad = true;
				break;
			}
			if (!first)
				puts_(d, ", ");
			first = false;
			type(d);
		}
		puts_(d, ")");
		if (peek(d) == 'u')
			d->pos++;
		else {
			puts_(d, " -> ");
			type(d);
		}
		d->bound = bound;
	} else if (eat(d, 'D')) {
		uint64_t bound = d->bound;
		puts_(d, "dyn ");
		binder(d);
		bool first = true;
		while (!d->bad && !eat(d, 'E')) {
			if (!peek(d)) {
				d->bad = true;
				break;
			}
			if (!first)
				puts_(d, " + ");
			first = false;
			path(d, P_PRINT | P_OPEN);
			bool open = d->open;
			while (!d->bad && eat(d, 'p')) {
				puts_(d, open ? ", " : "<");
				open = true;
				ident(d, true);
				puts_(d, " = ");
				type(d);
			}
			if (open)
				puts_(d, ">");
		}
		d->bound = bound;
		if (!eat(d, 'L')) {
			d->bad = true;
		} else {
			uint64_t lt = base62(d);
			if (lt) {
				puts_(d, " + ");
				lifetime(d, lt);
			}
		}
	} else if (eat(d, 'B')) {
		backref(d, type_p, P_PRINT);
	} else {
		path(d, P_PRINT);
	}
	d->depth--;
}

static void path(struct dm *d, int how)
{
	size_t l0 = d->len;
	bool print = how & P_PRINT, open = false;
	int inner = how & ~P_OPEN;	/* only the path's own generic arguments stay open */

	if (d->bad || ++d->depth > 64) {
		d->bad = true;
		return;
	}
	if (eat(d, 'C')) {
		disamb(d);
		ident(d, print);
	} else if (eat(d, 'M')) {
		disamb(d);
		path(d, 0);
		puts_(d, "<");
		type(d);
		puts_(d, ">");
	} else if (eat(d, 'X')) {
		disamb(d);
		path(d, 0);
		puts_(d, "<");
		type(d);
		puts_(d, " as ");
		path(d, P_PRINT);
		puts_(d, ">");
	} else if (eat(d, 'Y')) {
		puts_(d, "<");
		type(d);
		puts_(d, " as ");
		path(d, P_PRINT);
		puts_(d, ">");
	} else if (eat(d, 'N')) {
		char ns = peek(d);
		if (!(ns >= 'A' && ns <= 'Z') && !(ns >= 'a' && ns <= 'z')) {
			d->bad = true;
			return;
		}
		d->pos++;
		path(d, inner);
		uint64_t dis = disamb(d);
		size_t before = d->pos;
		ident(d, false);
		if (d->bad)
			return;
		/* re-read the identifier's bytes */
		size_t save = d->pos;
		d->pos = before;
		eat(d, 'u');
		uint64_t n = decimal(d);
		eat(d, '_');
		const char *id = d->s + d->pos;
		d->pos = save;
		if (ns >= 'A' && ns <= 'Z') {
			char buf[48];
			puts_(d, "::{");
			if (ns == 'C' || ns == 'S')
				puts_(d, ns == 'C' ? "closure" : "shim");
			else
				put(d, &ns, 1);	/* a namespace with no name yet */
			if (n) {
				puts_(d, ":");
				put(d, id, n);
			}
			snprintf(buf, sizeof(buf), "#%llu}", (unsigned long long)dis);
			puts_(d, buf);
		} else if (n) {
			puts_(d, "::");
			put(d, id, n);
		}
	} else if (eat(d, 'I')) {
		path(d, inner);
		if (how & P_VALUE)
			puts_(d, "::");
		open = how & P_OPEN;
		generic_args(d, !open);
	} else if (eat(d, 'B')) {
		backref(d, path, how);
		open = d->open;
	} else {
		d->bad = true;
	}
	if (!print && !d->bad) {
		d->len = l0;
		if (d->out)
			d->out[l0] = 0;
	}
	d->open = open;
	d->depth--;
}

char *sym_rust_v0(const char *name)
{
	struct dm d = { .s = name + 2, .n = strlen(name + 2) };

	/* _R [version] path [instantiating crate] [vendor suffix].  The current encoding
	 * has no version number: one is a format we do not know. */
	if (peek(&d) >= '0' && peek(&d) <= '9')
		return NULL;
	path(&d, P_PRINT | P_VALUE);
	if (peek(&d) >= 'A' && peek(&d) <= 'Z')
		path(&d, 0);	/* the crate that instantiated a generic: not shown */
	/* the grammar's only trailer: a suffix from the compiler or the linker after a '.'
	 * or a '$' (LLVM's .llvm.NNN), not shown */
	if (d.pos < d.n && d.s[d.pos] != '.' && d.s[d.pos] != '$')
		d.bad = true;
	if (d.bad || !d.out) {
		free(d.out);
		return NULL;
	}
	return d.out;
}
