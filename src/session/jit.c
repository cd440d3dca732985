/* JIT code from jitdump files and perf maps (see jit.h). */
#include "session/jit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/xp_grow.h"
#include "util/xp_map.h"

#define JITDUMP_MAGIC 0x4A695444u
#define JITDUMP_FLAGS_ARCH_TIMESTAMP 1ull
#define JIT_HDR_SIZE 40u
#define JIT_REC_HDR 16u
enum { JIT_CODE_LOAD = 0, JIT_CODE_MOVE = 1, JIT_CODE_DEBUG_INFO = 2, JIT_CODE_CLOSE = 3,
       JIT_CODE_UNWINDING_INFO = 4 };
#define LOAD_FIXED 40u	/* pid, tid, vma, code_addr, code_size, code_index */
#define MOVE_FIXED 48u	/* pid, tid, vma, old_code_addr, new_code_addr, code_size, code_index */

/* Where one function lies from `from` to `to` (raw times of its dump's clock; 0 and
 * UINT64_MAX are open ends). */
struct place {
	uint64_t start, size, from, to, index;
	const uint8_t *code;	/* NULL: perf map entry */
	const char *name;
	const uint8_t *lines;	/* its JIT_CODE_DEBUG_INFO body (code_addr, nr_entry, entries) */
	uint32_t nlines;	/* bytes of it */
	uint32_t seq;		/* file order: breaks ties between equal times */
	bool arch;		/* times are TSC */
};

struct plist {
	struct place *p;
	size_t n, cap;
	uint64_t maxsize;
};

struct jproc {
	int32_t pid;
	struct plist dump, map;	/* sorted by start once built */
	bool map_tried;
	char *maptext;		/* the perf map's lines, names point into it */
};

struct jfile {
	void *map;
	size_t size;
};

struct jit_ctx {
	struct sb_session *sb;
	char *trace_dir;
	struct jproc *procs;
	size_t nprocs;
	struct jfile *files;
	size_t nfiles;
	uint32_t scanned;	/* dsos of the session already looked at */
	uint32_t seq;
	bool mono, tsc;
	uint16_t shift;
	uint32_t mult;
	uint64_t zero;
	char module[64];
};

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

struct jit_ctx *jit_new(struct sb_session *sb, const char *trace_dir)
{
	struct jit_ctx *j = calloc(1, sizeof(*j));
	if (!j)
		return NULL;
	j->sb = sb;
	if (trace_dir && !(j->trace_dir = strdup(trace_dir))) {
		free(j);
		return NULL;
	}
	return j;
}

void jit_free(struct jit_ctx *j)
{
	if (!j)
		return;
	for (size_t i = 0; i < j->nprocs; i++) {
		free(j->procs[i].dump.p);
		free(j->procs[i].map.p);
		free(j->procs[i].maptext);
	}
	free(j->procs);
	for (size_t i = 0; i < j->nfiles; i++)
		munmap(j->files[i].map, j->files[i].size);
	free(j->files);
	free(j->trace_dir);
	free(j);
}

void jit_set_mono(struct jit_ctx *j, bool mono) { j->mono = mono; }

void jit_set_tsc_conv(struct jit_ctx *j, uint16_t shift, uint32_t mult, uint64_t zero)
{
	if (shift >= 64 || !mult)
		return;
	j->tsc = true;
	j->shift = shift;
	j->mult = mult;
	j->zero = zero;
}

bool jit_dump_name(const char *base, int32_t *pid)
{
	int p, n = 0;

	if (strncmp(base, "jit-", 4) == 0 && sscanf(base, "jit-%d.dump%n", &p, &n) == 1 && n > 0 &&
	    base[n] == '\0' && p > 0) {
		*pid = p;
		return true;
	}
	return false;
}

static struct jproc *proc_of(struct jit_ctx *j, int32_t pid, bool create)
{
	for (size_t i = 0; i < j->nprocs; i++)
		if (j->procs[i].pid == pid)
			return &j->procs[i];
	if (!create)
		return NULL;
	struct jproc *p = realloc(j->procs, (j->nprocs + 1) * sizeof(*p));
	if (!p)
		return NULL;
	j->procs = p;
	p = &j->procs[j->nprocs++];
	memset(p, 0, sizeof(*p));
	p->pid = pid;
	return p;
}

static struct place *add_place(struct plist *l)
{
	return XP_GROW(l->p, l->cap, l->n + 1) < 0 ? NULL : &l->p[l->n++];
}

static int by_start(const void *a, const void *b)
{
	const struct place *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort_list(struct plist *l)
{
	if (l->n)
		qsort(l->p, l->n, sizeof(*l->p), by_start);
	l->maxsize = 0;
	for (size_t i = 0; i < l->n; i++)
		if (l->p[i].size > l->maxsize)
			l->maxsize = l->p[i].size;
}

/* Maps a whole file read-only; the mapping lives as long as the context. */
static const uint8_t *map_file(struct jit_ctx *j, const char *path, size_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *p = MAP_FAILED;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return NULL;
	struct jfile *f = realloc(j->files, (j->nfiles + 1) * sizeof(*f));
	if (!f) {
		munmap(p, (size_t)st.st_size);
		return NULL;
	}
	j->files = f;
	j->files[j->nfiles++] = (struct jfile){ p, (size_t)st.st_size };
	*size = (size_t)st.st_size;
	return p;
}

static struct place *live_get(const struct xp_map *lv, struct plist *l, uint64_t index)
{
	uint64_t at;

	return xp_map_get(lv, index, &at) ? &l->p[at] : NULL;
}

/* Indexes the loads and moves of one jitdump file for process `pid`. */
static int load_dump(struct jit_ctx *j, const char *path, int32_t pid)
{
	size_t size;
	const uint8_t *f = map_file(j, path, &size);
	struct jproc *pr;

	if (!f)
		return -EIO;	/* cannot open or map it (no errno survives map_file) */
	if (size < JIT_HDR_SIZE || rd32(f) != JITDUMP_MAGIC || rd32(f + 8) < JIT_HDR_SIZE ||
	    rd32(f + 8) > size)
		return -EINVAL;
	if (!(pr = proc_of(j, pid, true)))
		return -ENOMEM;
	bool arch = rd64(f + 32) & JITDUMP_FLAGS_ARCH_TIMESTAMP;
	/* code_index -> the placement holding it now: a move's source (JITs that move
	 * code, move much of it) */
	struct xp_map lv = { 0 };
	int rc = 0;
	uint64_t off = rd32(f + 8);
	const uint8_t *lines = NULL;	/* debug info for the next load (perf's order) */
	uint32_t nlines = 0;
	while (off + JIT_REC_HDR <= size) {
		uint32_t id = rd32(f + off), total = rd32(f + off + 4);
		uint64_t ts = rd64(f + off + 8);
		const uint8_t *r = f + off + JIT_REC_HDR;
		/* a record cut by the end of the file (the JIT still ran) or a corrupt size */
		if (total < JIT_REC_HDR || total > size - off || id == JIT_CODE_CLOSE)
			break;
		size_t body = total - JIT_REC_HDR;
		if (id == JIT_CODE_LOAD && body > LOAD_FIXED) {
			const char *name = (const char *)r + LOAD_FIXED;
			size_t room = body - LOAD_FIXED, nl = strnlen(name, room);
			uint64_t addr = rd64(r + 16), csize = rd64(r + 24);
			if (nl < room && csize <= room - nl - 1 && csize && addr + csize > addr) {
				struct place *p;
				if (xp_map_put(&lv, rd64(r + 32), pr->dump.n) < 0 || !(p = add_place(&pr->dump))) {
					rc = -ENOMEM;
					break;
				}
				*p = (struct place){ addr, csize, ts, UINT64_MAX, rd64(r + 32),
						     (const uint8_t *)name + nl + 1, name, NULL, 0, j->seq++, arch };
				if (lines && rd64(lines) == addr) {
					p->lines = lines;
					p->nlines = nlines;
				}
			}
			lines = NULL;
		} else if (id == JIT_CODE_DEBUG_INFO && body >= 16) {
			lines = r;
			nlines = (uint32_t)body;
		} else if (id == JIT_CODE_MOVE && body >= MOVE_FIXED) {
			uint64_t to = rd64(r + 24), index = rd64(r + 40);
			struct place *old = live_get(&lv, &pr->dump, index);
			if (old && to + old->size > to) {
				struct place moved = *old;
				old->to = ts;
				moved.start = to;
				moved.from = ts;
				moved.seq = j->seq++;
				struct place *p;
				if (xp_map_put(&lv, index, pr->dump.n) < 0 || !(p = add_place(&pr->dump))) {
					rc = -ENOMEM;
					break;
				}
				*p = moved;
			}
		}
		/* JIT_CODE_UNWINDING_INFO and unknown records: skipped */
		off += total;
	}
	xp_map_free(&lv);
	sort_list(&pr->dump);
	return rc;
}

/* A file the process wrote: the copy kept in the trace directory first. */
static bool find_file(struct jit_ctx *j, const char *path, char *buf, size_t n)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	if (j->trace_dir) {
		snprintf(buf, n, "%s/jit/%s", j->trace_dir, base);
		if (access(buf, R_OK) == 0)
			return true;
	}
	snprintf(buf, n, "%s", path);
	return access(buf, R_OK) == 0;
}

static void scan_dumps(struct jit_ctx *j)
{
	uint32_t n = sb_ndsos(j->sb);
	char buf[4096];

	for (; j->scanned < n; j->scanned++) {
		const struct sb_dso *d = sb_dso_at(j->sb, j->scanned);
		const char *base = d && d->path ? strrchr(d->path, '/') : NULL;
		int32_t pid;
		base = base ? base + 1 : d ? d->path : NULL;
		if (base && jit_dump_name(base, &pid) &&
		    find_file(j, d->path, buf, sizeof(buf)))
			load_dump(j, buf, pid);
	}
}

/* perf's /tmp/perf-PID.map: "START SIZE NAME" per line, hex numbers. */
static void load_map(struct jit_ctx *j, struct jproc *pr)
{
	char path[64], buf[4096];
	size_t size;

	pr->map_tried = true;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pr->pid);
	if (!find_file(j, path, buf, sizeof(buf)))
		return;
	/* read, not mapped: names are cut out of the text in place */
	FILE *f = fopen(buf, "re");
	if (!f)
		return;
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (pr->maptext = malloc((size_t)st.st_size + 1))) {
		size = fread(pr->maptext, 1, (size_t)st.st_size, f);
		pr->maptext[size] = '\0';
	}
	fclose(f);
	if (!pr->maptext)
		return;
	for (char *line = pr->maptext, *next; *line; line = next) {
		char *end;
		next = strchr(line, '\n');
		next = next ? (*next = '\0', next + 1) : line + strlen(line);
		uint64_t start = strtoull(line, &end, 16);
		if (end == line || *end != ' ')
			continue;
		char *s = end + 1;
		uint64_t sz = strtoull(s, &end, 16);
		if (end == s || *end != ' ' || !sz || start + sz < start)
			continue;
		size_t nl = strlen(end + 1);
		if (nl && end[nl] == '\r')
			end[nl] = '\0';
		struct place *p = add_place(&pr->map);
		if (!p)
			return;
		*p = (struct place){ start, sz, 0, UINT64_MAX, 0, NULL, end + 1, NULL, 0, j->seq++, false };
	}
	sort_list(&pr->map);
}

/* A raw time of a dump as a trace time; 0 when the clocks differ (timeless). */
static uint64_t trace_time(const struct jit_ctx *j, const struct place *p, uint64_t t)
{
	if (t == UINT64_MAX || !p->code)
		return t;
	if (!p->arch)
		return j->mono ? t : 0;
	if (!j->tsc)
		return 0;
	uint64_t quot = t >> j->shift, rem = t & ((1ULL << j->shift) - 1);
	return j->zero + quot * j->mult + ((rem * j->mult) >> j->shift);
}

/* The placement of `l` holding addr at time t (the latest placed wins), and the times
 * between which that answer holds: the nearest start or end of any placement holding
 * addr around t. */
static const struct place *lookup(const struct jit_ctx *j, const struct plist *l, uint64_t t,
				  uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	const struct place *best = NULL;
	uint64_t bfrom = 0;
	size_t a = 0, b = l->n;

	while (a < b) {	/* first placement starting after addr */
		size_t mid = a + (b - a) / 2;
		if (l->p[mid].start <= addr)
			a = mid + 1;
		else
			b = mid;
	}
	for (size_t i = a; i-- > 0 && addr - l->p[i].start < l->maxsize;) {
		const struct place *p = &l->p[i];
		if (addr - p->start >= p->size)
			continue;
		uint64_t from = trace_time(j, p, p->from), to = trace_time(j, p, p->to);
		if (from <= t && t < to) {
			if (!best || from > bfrom || (from == bfrom && p->seq > best->seq)) {
				best = p;
				bfrom = from;
			}
		}
		if (from <= t && from > *lo)
			*lo = from;
		if (from > t && from < *hi)
			*hi = from;
		if (to <= t && to > *lo)
			*lo = to;
		if (to > t && to < *hi)
			*hi = to;
	}
	return best;
}

static const struct place *find(struct jit_ctx *j, int32_t pid, uint64_t time, uint64_t addr,
				uint64_t *from, uint64_t *to)
{
	uint64_t t = time ? time : UINT64_MAX - 1;
	const struct place *p = NULL;

	*from = 0;
	*to = UINT64_MAX;
	scan_dumps(j);
	struct jproc *pr = proc_of(j, pid, true);
	if (!pr)
		return NULL;
	if (!pr->map_tried)
		load_map(j, pr);
	p = lookup(j, &pr->dump, t, addr, from, to);
	if (!p)
		p = lookup(j, &pr->map, t, addr, from, to);
	if (!time) {
		*from = 0;
		*to = UINT64_MAX;
	}
	return p;
}

bool jit_srcline(struct jit_ctx *j, int32_t pid, uint64_t time, uint64_t addr, const char **file,
		 int *line)
{
	uint64_t from, to;
	const struct place *p = find(j, pid, time, addr, &from, &to);
	bool found = false;

	if (!p || !p->lines)
		return false;
	/* entries: addr (of the code as loaded), lineno, discrim, file name; in address
	 * order, each line holding until the next entry's address */
	uint64_t code = rd64(p->lines), n = rd64(p->lines + 8), off = 16, want = addr - p->start;
	for (uint64_t i = 0; i < n && off + 16 < p->nlines; i++) {
		const char *name = (const char *)p->lines + off + 16;
		size_t room = p->nlines - off - 16, nl = strnlen(name, room);
		uint64_t at = rd64(p->lines + off);
		if (nl == room)
			break;
		if (at - code > want)
			break;
		*file = name;
		*line = (int)rd32(p->lines + off + 8);
		found = true;
		off += 16 + nl + 1;
	}
	return found;
}

bool jit_find(struct jit_ctx *j, int32_t pid, uint64_t time, uint64_t addr, struct jit_sym *out)
{
	const struct place *p = find(j, pid, time, addr, &out->from, &out->to);

	if (!p)
		return false;
	out->start = p->start;
	out->size = p->size;
	out->name = p->name;
	out->code = p->code;
	if (p->code)
		snprintf(j->module, sizeof(j->module), "jitted-%d-%llu.so", pid, (unsigned long long)p->index);
	else
		snprintf(j->module, sizeof(j->module), "[JIT] tid %d", pid);
	out->module = j->module;
	return true;
}

size_t jit_sym_read(const struct jit_sym *s, uint64_t addr, uint8_t *buf, size_t n)
{
	if (!s->code || addr < s->start || addr - s->start >= s->size)
		return 0;
	uint64_t left = s->size - (addr - s->start);
	size_t k = n < left ? n : (size_t)left;
	memcpy(buf, s->code + (addr - s->start), k);
	return k;
}
