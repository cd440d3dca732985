/* Demangling: C++ through the C++ runtime's __cxa_demangle (loaded at run time, so
 * the tool does not link libstdc++), Rust legacy names cleaned on top of it, Rust v0
 * names by our own decoder of the common grammar. */
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "session/sym.h"

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

static cxa_demangle_fn cxa(void)
{
	static cxa_demangle_fn fn;
	static int tried;

	if (!tried) {
		tried = 1;
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (h)
			fn = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	return fn;
}

/* Drops the parameter list (and trailing cv/ref qualifiers) of a demangled function,
 * as perf does without -v: "ns::f(int) const" -> "ns::f". */
static void strip_params(char *s)
{
	size_t n = strlen(s);
	int depth = 0;

	while (n && s[n - 1] != ')') {	/* " const", " &&", ... */
		if (s[n - 1] == '>' || s[n - 1] == ']')
			return;
		n--;
	}
	if (!n)
		return;
	for (size_t i = n; i-- > 0;) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0) {
			if (i == 0)
				return;
			/* "operator()(int)" keeps its own "()" */
			s[i] = 0;
			return;
		}
	}
}

/* Template functions demangle with their return type first ("void f<int>"): perf
 * shows "f<int>".  The cut is at the last space outside brackets that does not
 * belong to an operator name ("operator new", "operator bool"). */
static void strip_return_type(char *s)
{
	int depth = 0;
	char *cut = NULL;

	for (char *p = s; *p; p++) {
		if (*p == '<' || *p == '(' || *p == '[')
			depth++;
		else if ((*p == '>' || *p == ')' || *p == ']') && depth > 0)
			depth--;
		else if (*p == ' ' && depth == 0) {
			if (p - s >= 8 && strncmp(p - 8, "operator", 8) == 0)
				return;
			cut = p;
		}
	}
	if (cut)
		memmove(s, cut + 1, strlen(cut + 1) + 1);
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -EINVAL;	/* not a hex digit */
}

/* Rust legacy: "a::b::h0123456789abcdef" with $LT$-style escapes and ".." for "::". */
static char *rust_legacy(char *d)
{
	size_t n = strlen(d);

	if (n <= 19 || strncmp(d + n - 19, "::h", 3) != 0)
		return NULL;
	for (size_t i = n - 16; i < n; i++)
		if (hexval(d[i]) < 0)
			return NULL;
	d[n - 19] = 0;
	static const struct { const char *esc, *rep; } tab[] = {
		{ "$SP$", "@" }, { "$BP$", "*" }, { "$RF$", "&" }, { "$LT$", "<" }, { "$GT$", ">" },
		{ "$LP$", "(" }, { "$RP$", ")" }, { "$C$", "," },
	};
	char *out = malloc(strlen(d) + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = d; *p;) {
		/* a segment starting with an escape carries a '_' in front of it */
		if (p[0] == '_' && p[1] == '$' && (p == d || (p - d >= 2 && p[-1] == ':' && p[-2] == ':'))) {
			p++;
			continue;
		}
		if (p[0] == '.' && p[1] == '.') {
			*o++ = ':';
			*o++ = ':';
			p += 2;
			continue;
		}
		if (*p == '$') {
			size_t k;
			for (k = 0; k < sizeof(tab) / sizeof(tab[0]); k++)
				if (strncmp(p, tab[k].esc, strlen(tab[k].esc)) == 0)
					break;
			if (k < sizeof(tab) / sizeof(tab[0])) {
				*o++ = tab[k].rep[0];
				p += strlen(tab[k].esc);
				continue;
			}
			if (p[1] == 'u' && hexval(p[2]) >= 0 && hexval(p[3]) >= 0 && p[4] == '$') {
				*o++ = (char)(hexval(p[2]) * 16 + hexval(p[3]));
				p += 5;
				continue;
			}
		}
		*o++ = *p++;
	}
	*o = 0;
	return out;
}

char *sym_rust_v0(const char *name);

char *sym_demangle(const char *name, bool params)
{
	if (strncmp(name, "_R", 2) == 0)
		return sym_rust_v0(name);
	if (strncmp(name, "_Z", 2) != 0)
		return NULL;
	cxa_demangle_fn fn = cxa();
	if (!fn)
		return NULL;
	int status = -1;
	char *d = fn(name, NULL, NULL, &status);
	if (!d || status != 0) {
		free(d);
		return NULL;
	}
	if (strncmp(name, "_ZN", 3) == 0) {
		char *r = rust_legacy(d);
		if (r) {
			free(d);
			return r;
		}
	}
	if (!params) {
		strip_params(d);
		strip_return_type(d);
	}
	return d;
}
