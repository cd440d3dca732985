/* Code bytes of a traced process at a given time, from the session's mappings and the
 * files the symbol layer found for them (module snapshots by build-id first). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pt_mem.h"

struct mfile {
	char *path;
	const uint8_t *map;	/* NULL: could not be read */
	size_t size;
};

/* JIT code from a jitdump file (perf's format, tools/perf/util/jitdump.h): one
 * JIT_CODE_LOAD record each, code bytes included. */
struct jitcode {
	uint64_t addr, size, time;
	const uint8_t *code;	/* inside the mapped jitdump */
	const char *name;
};

struct jitproc {
	int32_t pid;
	struct jitcode *code;	/* in load order (= time order) */
	size_t n;
};

struct dpt_mem {
	struct sb_session *sb;
	struct sym_ctx *sym;
	struct mfile *files;
	size_t n, cap;
	size_t last;		/* index of the last file used */
	struct jitproc *jit;
	size_t njit;
	uint32_t jit_scanned;	/* dsos of the session already looked at for jitdumps */
};

struct dpt_mem *dpt_mem_new(struct sb_session *sb, struct sym_ctx *sym)
{
	struct dpt_mem *m = calloc(1, sizeof(*m));
	if (m) {
		m->sb = sb;
		m->sym = sym;
	}
	return m;
}

void dpt_mem_free(struct dpt_mem *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n; i++) {
		if (m->files[i].map)
			munmap((void *)m->files[i].map, m->files[i].size);
		free(m->files[i].path);
	}
	free(m->files);
	for (size_t i = 0; i < m->njit; i++)
		free(m->jit[i].code);
	free(m->jit);
	free(m);
}

static const struct mfile *file_of(struct dpt_mem *m, const char *path)
{
	if (m->last < m->n && strcmp(m->files[m->last].path, path) == 0)
		return &m->files[m->last];
	for (size_t i = 0; i < m->n; i++)
		if (strcmp(m->files[i].path, path) == 0) {
			m->last = i;
			return &m->files[i];
		}
	if (m->n == m->cap) {
		size_t cap = m->cap ? 2 * m->cap : 16;
		struct mfile *f = realloc(m->files, cap * sizeof(*f));
		if (!f)
			return NULL;
		m->files = f;
		m->cap = cap;
	}
	struct mfile *f = &m->files[m->n];
	memset(f, 0, sizeof(*f));
	f->path = strdup(path);
	if (!f->path)
		return NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size > 0) {
		void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			f->map = p;
			f->size = (size_t)st.st_size;
		}
	}
	if (fd >= 0)
		close(fd);
	m->last = m->n++;
	return f;
}

const char *dpt_mem_path(struct dpt_mem *m, const struct sb_map *map)
{
	if (!map || !map->dso || map->dso->anon)
		return NULL;
	const char *f = sym_dso_file(m->sym, map->dso);
	/* not an ELF file the symbol layer takes (a raw image): the file itself, unless a
	 * build-id says which file it must be */
	if (!f && !map->dso->bid_size && map->dso->path && access(map->dso->path, R_OK) == 0)
		f = map->dso->path;
	return f;
}

#define JITDUMP_MAGIC 0x4A695444u
enum { JIT_CODE_LOAD = 0, JIT_CODE_CLOSE = 3 };

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

/* Indexes the code loads of one jitdump file; sizes from the file are checked. */
static int load_jitdump(struct dpt_mem *m, const char *path, int32_t pid)
{
	const struct mfile *f = file_of(m, path);
	if (!f || !f->map || f->size < 40 || rd32(f->map) != JITDUMP_MAGIC)
		return -1;
	struct jitproc *jp = realloc(m->jit, (m->njit + 1) * sizeof(*jp));
	if (!jp)
		return -1;
	m->jit = jp;
	jp = &m->jit[m->njit++];
	*jp = (struct jitproc){ pid, NULL, 0 };
	size_t cap = 0;
	uint64_t off = rd32(f->map + 8);	/* header size */
	while (off + 16 <= f->size) {
		uint32_t id = rd32(f->map + off), total = rd32(f->map + off + 4);
		uint64_t ts = rd64(f->map + off + 8);
		if (total < 16 || total > f->size - off)
			break;	/* a record cut by the end of the file (the JIT still ran) */
		if (id == JIT_CODE_CLOSE)
			break;
		/* JIT_CODE_LOAD: pid, tid, vma, code_addr, code_size, code_index, name, code */
		if (id == JIT_CODE_LOAD && total >= 16 + 40) {
			const uint8_t *r = f->map + off + 16;
			uint64_t addr = rd64(r + 16), size = rd64(r + 24);
			const char *name = (const char *)r + 40;
			size_t room = total - 16 - 40;
			size_t nl = strnlen(name, room);
			if (nl < room && size <= room - nl - 1) {
				if (jp->n == cap) {
					cap = cap ? 2 * cap : 64;
					struct jitcode *c = realloc(jp->code, cap * sizeof(*c));
					if (!c)
						return -1;
					jp->code = c;
				}
				jp->code[jp->n++] = (struct jitcode){ addr, size, ts,
								      (const uint8_t *)name + nl + 1, name };
			}
		}
		off += total;
	}
	return 0;
}

/* Finds jitdump files among the session's mappings ("jit-PID.dump", mapped by the
 * JIT runtime so that tools find them). */
static void scan_jitdumps(struct dpt_mem *m)
{
	uint32_t n = sb_ndsos(m->sb);
	for (; m->jit_scanned < n; m->jit_scanned++) {
		const struct sb_dso *d = sb_dso_at(m->sb, m->jit_scanned);
		const char *base = d && d->path ? strrchr(d->path, '/') : NULL;
		int pid;
		char tail;
		base = base ? base + 1 : d ? d->path : NULL;
		if (base && sscanf(base, "jit-%d.dump%c", &pid, &tail) == 1)
			load_jitdump(m, d->path, pid);
	}
}

/* JIT code of `pid` holding `addr`: the latest load not after `time` (0: the latest). */
static const struct jitcode *jit_at(struct dpt_mem *m, int32_t pid, uint64_t time, uint64_t addr)
{
	scan_jitdumps(m);
	for (size_t i = 0; i < m->njit; i++) {
		const struct jitproc *jp = &m->jit[i];
		if (jp->pid != pid)
			continue;
		for (size_t k = jp->n; k-- > 0;) {
			const struct jitcode *c = &jp->code[k];
			if (addr >= c->addr && addr - c->addr < c->size && (!time || c->time <= time))
				return c;
		}
	}
	return NULL;
}

const char *dpt_mem_jit_name(struct dpt_mem *m, int32_t pid, uint64_t time, uint64_t addr,
			     uint64_t *start, uint64_t *size)
{
	const struct jitcode *c = jit_at(m, pid, time, addr);
	if (!c)
		return NULL;
	*start = c->addr;
	*size = c->size;
	return c->name;
}

size_t dpt_mem_read(struct dpt_mem *m, int32_t pid, uint64_t time, uint64_t addr, uint8_t *buf,
		    size_t n)
{
	const struct sb_map *map = sb_find_map(m->sb, pid, addr, time);
	const char *path = dpt_mem_path(m, map);
	if (!path) {
		const struct jitcode *c = jit_at(m, pid, time, addr);
		if (!c)
			return 0;
		size_t k = n < c->size - (addr - c->addr) ? n : (size_t)(c->size - (addr - c->addr));
		memcpy(buf, c->code + (addr - c->addr), k);
		return k;
	}
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
