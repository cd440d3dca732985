#include "util/xp_maps.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A hexadecimal or decimal field: digits only (no sign, no "0x", no spaces the
 * strto* functions would take), in range; *s moves past it. */
static int number(const char **s, int base, uint64_t *v)
{
	const char *p = *s;
	uint64_t x = 0;
	int d, n = 0;

	for (;; p++, n++) {
		char c = *p;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if (base == 16 && c >= 'a' && c <= 'f')
			d = c - 'a' + 10;
		else if (base == 16 && c >= 'A' && c <= 'F')
			d = c - 'A' + 10;
		else
			break;
		if (x > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return -EINVAL;
		x = x * (uint64_t)base + (uint64_t)d;
	}
	if (!n)
		return -EINVAL;
	*s = p;
	*v = x;
	return 0;
}

static int sep(const char **s, char c)
{
	if (**s != c)
		return -EINVAL;
	(*s)++;
	return 0;
}

int xp_maps_parse(char *line, struct xp_maps_line *m)
{
	const char *s = line;
	uint64_t maj, min;

	line[strcspn(line, "\n")] = 0;
	if (number(&s, 16, &m->start) || sep(&s, '-') || number(&s, 16, &m->end) || sep(&s, ' '))
		return -EINVAL;
	for (int i = 0; i < 4; i++, s++) {
		if (!*s || *s == ' ')
			return -EINVAL;
		m->perms[i] = *s;
	}
	m->perms[4] = 0;
	if (sep(&s, ' ') || number(&s, 16, &m->pgoff) || sep(&s, ' ') || number(&s, 16, &maj) ||
	    sep(&s, ':') || number(&s, 16, &min) || sep(&s, ' ') || number(&s, 10, &m->inode))
		return -EINVAL;
	if (*s && *s != ' ')
		return -EINVAL;
	if (m->end < m->start || maj > 0xfff || min > 0xfffff)
		return -EINVAL;
	m->major = (unsigned)maj;
	m->minor = (unsigned)min;
	while (*s == ' ')
		s++;
	m->path = s;
	return 0;
}

int xp_maps_open(struct xp_maps *it, pid_t pid)
{
	char path[64];

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/maps");
	it->buf = NULL;
	it->cap = 0;
	it->f = fopen(path, "re");
	return it->f ? 0 : -errno;
}

int xp_maps_next(struct xp_maps *it, struct xp_maps_line *m)
{
	while (getline(&it->buf, &it->cap, it->f) > 0)
		if (xp_maps_parse(it->buf, m) == 0)
			return 1;
	return 0;
}

void xp_maps_close(struct xp_maps *it)
{
	if (it->f)
		fclose(it->f);
	free(it->buf);
	it->f = NULL;
	it->buf = NULL;
}
