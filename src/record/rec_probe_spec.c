/* `--probe LIST` syntax; see rec_probe.h. */
#include "record/rec_probe.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int bad(char *why, size_t whylen, const char *fmt, const char *item)
{
	snprintf(why, whylen, fmt, item);
	return -EINVAL;
}

static int check_item(const char *item, char *why, size_t whylen)
{
	const char *at = strchr(item, '@');

	if (!*item)
		return bad(why, whylen, "an empty item%s (two commas, or one at an end)", "");
	/* (a module's path may hold spaces, as any file's) */
	for (const char *s = item; *s && s != at; s++)
		if (isspace((unsigned char)*s))
			return bad(why, whylen, "'%s' has a space in its symbol", item);
	if (at == item)
		return bad(why, whylen, "'%s' has no symbol before '@'", item);
	if (at && !at[1])
		return bad(why, whylen, "'%s' has no module after '@'", item);
	if (at && strchr(at + 1, '@'))
		return bad(why, whylen, "'%s' has more than one '@'", item);
	if (at && strpbrk(at + 1, "*?["))
		return bad(why, whylen, "'%s': globs are for symbols, a module is a path or a name", item);
	return 0;
}

int rec_probe_parse(const char *list, struct rec_probe_item **out, char *why, size_t whylen)
{
	struct rec_probe_item *v;
	int n = 1, k = 0, rc = 0;
	const char *s = list;

	*out = NULL;
	for (const char *c = list; *c; c++)
		n += *c == ',';
	v = calloc((size_t)n, sizeof(*v));
	if (!v)
		return -ENOMEM;
	while (k < n) {
		size_t len = strcspn(s, ",");
		char *item = strndup(s, len), *at;

		if (!item) {
			rc = -ENOMEM;
			break;
		}
		rc = check_item(item, why, whylen);
		if (rc < 0) {
			free(item);
			break;
		}
		at = strchr(item, '@');
		if (at) {
			*at = 0;
			v[k].module = strdup(at + 1);
			if (!v[k].module) {
				free(item);
				rc = -ENOMEM;
				break;
			}
		}
		v[k].sym = item;
		v[k].glob = strpbrk(item, "*?[") != NULL;
		k++;
		s += len + (s[len] == ',');
	}
	if (rc < 0) {
		rec_probe_items_free(v, k);
		return rc;
	}
	*out = v;
	return n;
}

void rec_probe_items_free(struct rec_probe_item *v, int n)
{
	for (int i = 0; v && i < n; i++) {
		free(v[i].sym);
		free(v[i].module);
	}
	free(v);
}
