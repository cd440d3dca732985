/* Code bytes of a traced process at a given time, from the session's mappings and the
 * files the symbol layer found for them (module snapshots by build-id first), JIT code
 * from jit.h. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/sb_code.h"
#include "util/xp_fmap.h"
#include "util/xp_grow.h"

struct mfile {
	char *path;
	const uint8_t *map;	/* NULL: could not be read */
	size_t size;
};

/* Which file holds a dso's code, decided once per dso: the answer, found or not, is
 * asked for every instruction, and a miss must not cost a file look-up each time. */
struct dso_file {
	const char *path;	/* NULL: none */
	bool decided;
};

struct sb_code {
	struct sb_session *sb;
	struct sym_ctx *sym;
	struct mfile *files;
	size_t n, cap;
	size_t last;		/* index of the last file used */
	struct dso_file *by_dso;	/* indexed by sb_dso.id */
	size_t cap_dso;
	struct jit_ctx *jit;
};

struct sb_code *sb_code_new(struct sb_session *sb, struct sym_ctx *sym, struct jit_ctx *jit)
{
	struct sb_code *m = calloc(1, sizeof(*m));
	if (m) {
		m->sb = sb;
		m->sym = sym;
		m->jit = jit;
	}
	return m;
}

void sb_code_free(struct sb_code *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		if (m->files[i].map)
			xp_funmap(m->files[i].map, m->files[i].size);
		free(m->files[i].path);
	}
	free(m->files);
	free(m->by_dso);
	free(m);
}

static const struct mfile *file_of(struct sb_code *m, const char *path)
{
	if (m->last < m->n && strcmp(m->files[m->last].path, path) == 0)
		return &m->files[m->last];
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->files[i].path, path) == 0) {
			m->last = i;
			return &m->files[i];
		}
	if (XP_GROW(m->files, m->cap, m->n + 1) < 0)
		return NULL;
	struct mfile *f = &m->files[m->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		const void *p = xp_fmap(fd, (size_t)st.st_size);
		if (p) {
			f->map = p;
			f->size = (size_t)st.st_size;
		}
	}
	if (fd >= 0)
		close(fd);
	m->last = m->n++;
	return f;
}

const char *sb_code_file(struct sb_code *m, struct sb_dso *d)
{
	if (!d || d->anon)
		return NULL;
	size_t old = m->cap_dso;
	if (XP_GROW(m->by_dso, m->cap_dso, (size_t)d->id + 1) < 0)
		return NULL;
	memset(m->by_dso + old, 0, (m->cap_dso - old) * sizeof(*m->by_dso));
	struct dso_file *df = &m->by_dso[d->id];
	if (df->decided)
		return df->path;
	df->decided = true;
	df->path = sym_dso_file(m->sym, d);
	/* not an ELF file the symbol layer takes (a raw image): the file itself, unless a
	 * build-id says which file it must be */
	if (!df->path && !d->bid_size && d->path && access(d->path, R_OK) == 0)
		df->path = d->path;
	return df->path;
}

const char *sb_code_path(struct sb_code *m, const struct sb_map *map)
{
	return map ? sb_code_file(m, map->dso) : NULL;
}

size_t sb_code_read(struct sb_code *m, int32_t pid, uint64_t time, uint64_t addr, uint8_t *buf,
		    size_t n)
{
	const struct sb_map *map = sb_find_map(m->sb, pid, addr, time);
	if (!sb_code_path(m, map)) {
		struct jit_sym c;
		return m->jit && jit_find(m->jit, pid, time, addr, &c) ? jit_sym_read(&c, addr, buf, n) : 0;
	}
	return sb_code_read_map(m, map, addr, buf, n);
}

size_t sb_code_read_map(struct sb_code *m, const struct sb_map *map, uint64_t addr, uint8_t *buf, size_t n)
{
	const char *path = sb_code_path(m, map);
	if (!path || addr < map->start || addr >= map->end)
		return 0;
	const struct mfile *f = file_of(m, path);
	if (!f || !f->map)
		return 0;
	uint64_t off = map->pgoff + (addr - map->start);
	if (off >= f->size)
		return 0;
	size_t k = n;
	if (k > map->end - addr)
		k = (size_t)(map->end - addr);
	if (k > f->size - off)
		k = (size_t)(f->size - off);
	memcpy(buf, f->map + off, k);
	return k;
}

void sb_code_span(struct sb_code *m, int32_t pid, uint64_t time, uint64_t addr, uint64_t *from,
		  uint64_t *to)
{
	const struct sb_map *map = sb_find_map(m->sb, pid, addr, time);
	*from = map ? map->time_from : 0;
	*to = map ? map->time_to : UINT64_MAX;
	struct jit_sym c;
	if (!sb_code_path(m, map) && m->jit) {
		jit_find(m->jit, pid, time, addr, &c);	/* sets from and to, found or not */
		if (c.from > *from)
			*from = c.from;
		if (c.to < *to)
			*to = c.to;
	}
	if (*from > time || *to <= time) {	/* time 0 (the latest state) and the like */
		*from = time;
		*to = time + 1;
	}
}
