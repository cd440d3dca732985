/* ELF symbol tables, module lookup (snapshot store, ~/.debug, recorded path with a
 * build-id check), function interning and file:line through libdw. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/ms_store.h"
#include "session/sym.h"
#include "session/sym_dwsec.h"
#include "arch/x86_64/x86_plt.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

struct esym {
	uint64_t start, end;
	uint32_t name;		/* offset in the dso's string pool */
	uint8_t bind;
};

struct seg {
	uint64_t off, vaddr, filesz;
};

struct sdso {
	bool loaded, usable;
	char *file;		/* the file symbols come from */
	int fd;
	Elf *elf;
	int dbg_fd;
	Elf *dbg_elf;		/* separate debug file (/usr/lib/debug/.build-id/…) */
	Dwarf *dw;
	bool dw_tried;
	struct sym_dwsec *dws;	/* dw's sections when inflated by us (NULL: libdw's) */
	struct esym *syms;
	uint32_t nsyms;
	char *pool;
	size_t pool_len;
	uint32_t pool_cap;	/* offsets into the pool are 32-bit */
	struct cached_tab *borrowed;	/* syms and pool are this cache entry's */
	/* the session's interned id of each symbol, UINT32_MAX until first use (not in
	 * syms: a cached table is read by the sessions after) */
	uint32_t *fn_ids;
	struct seg *segs;
	uint32_t nsegs;
	bool is_rel;		/* ET_REL (kernel modules): offsets are addresses */
	bool kallsyms;		/* symbols from a kallsyms file: absolute addresses */
	bool ksame_boot;	/* the running kernel's, for maps recorded with its _text */
	uint64_t ktext;		/* its _text address (KASLR relocation against the map) */
	struct { uint64_t vaddr; const char *file; int line; bool ok; } last_line;
	/* sym_inline: the inlined subroutines' ranges of every function of the CUs
	 * looked at (each CU's DIEs read once), by function range */
	struct inl_sub { uint64_t lo, hi; uint32_t first, n; } *isubs;
	uint32_t nisubs, capisubs;
	struct inl_rng { uint64_t lo, hi; uint32_t fn, depth; } *irngs;
	uint32_t nirngs, capirngs;
	struct xp_map icus;	/* CU offsets read */
};

struct sym_ctx {
	char *trace_dir;
	char *debug_dir;
	struct sym_fn *fns;
	uint32_t nfns, capfns;
	struct xp_map unk;	/* (dso, addr) -> id for unresolved addresses */
	struct xp_map jit;	/* jit_key(name, module) -> id of a JIT function */
	struct xp_map inl;	/* jit_key(name, module) -> id of an inlined function */
	struct xp_map srcs;	/* libdw's file name -> abs_src's (pointers) */
	struct sdso **dsos;	/* all loaded, for cleanup */
	uint32_t ndsos, capdsos;
	char **strs;		/* owned strings (names, files) */
	size_t nstrs, capstrs;
	char **bad_snaps;	/* unusable snapshots already reported (dsos may share one) */
	size_t nbad, capbad;
	struct sym_cache *cache;	/* NULL: none */
};

/* A file's symbol table as load_symtab leaves it. */
struct cached_tab {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	struct esym *syms;
	uint32_t nsyms;
	char *pool;
	size_t pool_len;
	uint64_t used;		/* when last taken: the oldest is replaced */
	uint32_t users;		/* dsos reading it now: not replaced */
};

#define SYM_CACHE_FILES 16

struct sym_cache {
	struct cached_tab t[SYM_CACHE_FILES];
	uint64_t clock;
};

struct sym_cache *sym_cache_new(void)
{
	return calloc(1, sizeof(struct sym_cache));
}

void sym_cache_free(struct sym_cache *k)
{
	if (!k)
		return;
	for (int i = 0; i < SYM_CACHE_FILES; i++) {
		free(k->t[i].syms);
		free(k->t[i].pool);
	}
	free(k);
}

void sym_use_cache(struct sym_ctx *c, struct sym_cache *k)
{
	c->cache = k;
}

static bool same_file(const struct cached_tab *t, const struct stat *st)
{
	return t->syms && t->dev == st->st_dev && t->ino == st->st_ino && t->size == st->st_size &&
	       t->mtime.tv_sec == st->st_mtim.tv_sec && t->mtime.tv_nsec == st->st_mtim.tv_nsec;
}

static void *dup_mem(const void *p, size_t n)
{
	void *q = malloc(n ? n : 1);

	if (q)
		memcpy(q, p, n);
	return q;
}

static const char *own(struct sym_ctx *c, char *s)
{
	if (!s)
		return NULL;
	if (XP_GROW(c->strs, c->capstrs, c->nstrs + 1) < 0) {
		free(s);
		return "?";
	}
	c->strs[c->nstrs++] = s;
	return s;
}

static uint32_t new_fn(struct sym_ctx *c, const char *name, const char *module, struct sb_dso *dso,
		       uint64_t start, uint64_t size, bool resolved);

struct sym_ctx *sym_new(const char *trace_dir, const char *debug_dir)
{
	struct sym_ctx *c = calloc(1, sizeof(*c));
	const char *home = getenv("HOME");
	char buf[PATH_MAX];

	if (!c)
		return NULL;
	elf_version(EV_CURRENT);
	c->trace_dir = trace_dir ? strdup(trace_dir) : NULL;
	if (debug_dir)
		c->debug_dir = strdup(debug_dir);
	else if (home) {
		snprintf(buf, sizeof(buf), "%s/.debug", home);
		c->debug_dir = strdup(buf);
	}
	/* id 0 is "[unknown]", what a failed lookup returns */
	new_fn(c, "[unknown]", "", NULL, 0, 0, false);
	return c;
}

static void sdso_free(struct sdso *d)
{
	if (d->dw)
		dwarf_end(d->dw);
	sym_dwsec_free(d->dws);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	if (d->dbg_elf)
		elf_end(d->dbg_elf);
	if (d->dbg_fd >= 0)
		close(d->dbg_fd);
	free(d->isubs);
	free(d->irngs);
	xp_map_free(&d->icus);
	if (d->borrowed) {
		d->borrowed->users--;
	} else {
		free(d->syms);
		free(d->pool);
	}
	free(d->fn_ids);
	free(d->segs);
	free(d->file);
	free(d);
}

void sym_free(struct sym_ctx *c)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < c->ndsos; i++)
		sdso_free(c->dsos[i]);
	free(c->dsos);
	for (size_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	free(c->strs);
	for (size_t i = 0; i < c->nbad; i++)
		free(c->bad_snaps[i]);
	free(c->bad_snaps);
	free(c->fns);
	xp_map_free(&c->unk);
	xp_map_free(&c->jit);
	xp_map_free(&c->inl);
	xp_map_free(&c->srcs);
	free(c->trace_dir);
	free(c->debug_dir);
	free(c);
}

void sym_bid_hex(const uint8_t *bid, int n, char *hex)
{
	for (int i = 0; i < n; i++)
		sprintf(hex + 2 * i, "%02x", bid[i]);
	hex[2 * n] = 0;
}

static int elf_build_id(Elf *e, uint8_t bid[20])
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		size_t off = 0, noff, doff;
		GElf_Nhdr nh;
		while (data && (off = gelf_getnote(data, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    memcmp((char *)data->d_buf + noff, "GNU", 4) == 0 && nh.n_descsz) {
				int n = nh.n_descsz > 20 ? 20 : (int)nh.n_descsz;
				memcpy(bid, (char *)data->d_buf + doff, (size_t)n);
				return n;
			}
		}
	}
	return 0;
}

int sym_file_build_id(const char *path, uint8_t bid[20])
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), n = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && elf_kind(e) == ELF_K_ELF)
		n = elf_build_id(e, bid);
	if (e)
		elf_end(e);
	close(fd);
	return n;
}

/* DIR/.build-id/ab/cdef…: a file, or perf's directory holding `elf`. */
static char *in_store(const char *dir, const struct sb_dso *d, const char *leaf)
{
	char hex[41], p[PATH_MAX];
	struct stat st;

	if (!dir || !d->bid_size)
		return NULL;
	sym_bid_hex(d->build_id, d->bid_size, hex);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s", dir, hex, hex + 2);
	if (stat(p, &st) < 0)
		return NULL;
	if (S_ISDIR(st.st_mode)) {
		size_t l = strlen(p);
		snprintf(p + l, sizeof(p) - l, "/%s", leaf);
		if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			return NULL;
	}
	return strdup(p);
}

/* Appends a name to the dso's string pool; its offset, or UINT32_MAX. */
static uint32_t pool_add(struct sdso *d, const char *name)
{
	size_t l = strlen(name) + 1;

	if (XP_GROW(d->pool, d->pool_cap, d->pool_len + l) < 0)
		return UINT32_MAX;
	memcpy(d->pool + d->pool_len, name, l);
	d->pool_len += l;
	return (uint32_t)(d->pool_len - l);
}

/* Symbols by address, then in the order they were read (their names enter the pool
 * in that order): aliases meet the dedups below in file order whatever qsort does. */
static int cmp_sym(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* perf's choose_best_symbol (util/symbol.c), so both tools name an address alike:
 * sized over zero-sized, non-weak over weak, global over not, fewer leading
 * underscores, then the longer name.  True when `a` beats the kept `b`. */
static bool better(const struct sdso *d, const struct esym *a, const struct esym *b)
{
	const char *na = d->pool + a->name, *nb = d->pool + b->name;
	bool sized_a = a->end > a->start, sized_b = b->end > b->start;

	if (sized_a != sized_b)
		return sized_a;
	if ((a->bind == STB_WEAK) != (b->bind == STB_WEAK))
		return b->bind == STB_WEAK;
	if ((a->bind == STB_GLOBAL) != (b->bind == STB_GLOBAL))
		return a->bind == STB_GLOBAL;
	size_t ua = strspn(na, "_"), ub = strspn(nb, "_");
	if (ua != ub)
		return ua < ub;
	return strlen(na) > strlen(nb);
}

/* The names of the GOT slots PLT entries jump through: every dynamic relocation with
 * a symbol ("printf@plt"), and IRELATIVE ones by their resolver's address as objdump
 * names them ("*ABS*+0x9f550@plt").  slot address -> offset in the pool. */
static int plt_slot_names(struct sdso *d, Elf *e, struct xp_map *names)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, dsh;

	while ((scn = elf_nextscn(e, scn))) {
		Elf_Scn *dyn;
		Elf_Data *rd, *dd;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
		    !(dyn = elf_getscn(e, sh.sh_link)) || !gelf_getshdr(dyn, &dsh) ||
		    dsh.sh_type != SHT_DYNSYM || !(rd = elf_getdata(scn, NULL)) || !(dd = elf_getdata(dyn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Rela r;
			GElf_Sym sym;
			const char *nm = NULL;
			char buf[512];
			if (!gelf_getrela(rd, (int)i, &r))
				continue;
			if (GELF_R_TYPE(r.r_info) == R_X86_64_IRELATIVE) {
				snprintf(buf, sizeof(buf), "*ABS*+%#" PRIx64 "@plt", (uint64_t)r.r_addend);
			} else if (GELF_R_SYM(r.r_info) && gelf_getsym(dd, (int)GELF_R_SYM(r.r_info), &sym) &&
				   (nm = elf_strptr(e, dsh.sh_link, sym.st_name)) && *nm) {
				snprintf(buf, sizeof(buf), "%s@plt", nm);
			} else {
				continue;
			}
			uint32_t at = pool_add(d, buf);
			if (at == UINT32_MAX || xp_map_put(names, r.r_offset, at) < 0)
				return -ENOMEM;
		}
	}
	return 0;
}

/* The PLT sections' entries and their size (.plt's first is its header); *header:
 * this is .plt. */
static bool plt_section(Elf *e, Elf_Scn *scn, size_t shstrndx, GElf_Shdr *sh, uint64_t *entsize, bool *header)
{
	const char *nm;

	if (!gelf_getshdr(scn, sh) || sh->sh_type != SHT_PROGBITS ||
	    !(nm = elf_strptr(e, shstrndx, sh->sh_name)) ||
	    (strcmp(nm, ".plt") && strcmp(nm, ".plt.sec") && strcmp(nm, ".plt.got")))
		return false;
	*entsize = sh->sh_entsize >= 8 ? sh->sh_entsize : 16;
	*header = strcmp(nm, ".plt") == 0;
	return true;
}

/* Synthesized PLT symbols, as objdump and perf name them: "name@plt" for each entry of
 * .plt, .plt.sec (IBT binaries) and .plt.got, named by the relocation of the GOT slot
 * it jumps through.  Without them calls through the PLT would land in whatever symbol
 * precedes it (_init, zero-sized, would take them all).  .plt's header, the stub every
 * lazily bound call runs into ld.so, is ".plt" as perf names it, and so are the
 * unnamed entries after it (IBT binaries' push-and-jump stubs, which objdump names
 * relative to a neighbour).  Appends up to cap - k symbols to v; returns the new count. */
static size_t add_plt(struct sdso *d, Elf *e, struct esym *v, size_t k, size_t cap)
{
	struct xp_map names = { 0 };
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	uint64_t es;
	bool header;
	uint32_t stub = UINT32_MAX;

	if (elf_getshdrstrndx(e, &shstrndx) != 0 || plt_slot_names(d, e, &names) < 0) {
		xp_map_free(&names);
		return k;
	}
	while (xp_map_count(&names) && (scn = elf_nextscn(e, scn))) {
		Elf_Data *data;
		if (!plt_section(e, scn, shstrndx, &sh, &es, &header) || !(data = elf_getdata(scn, NULL)) ||
		    !data->d_buf)
			continue;
		bool in_stub = header;
		for (uint64_t off = 0; off + es <= data->d_size && k < cap; off += es) {
			uint64_t slot, at;
			if (x86_plt_got_slot((const uint8_t *)data->d_buf + off, es, sh.sh_addr + off, &slot) &&
			    xp_map_get(&names, slot, &at)) {
				v[k++] = (struct esym){ sh.sh_addr + off, sh.sh_addr + off + es, (uint32_t)at,
							STB_GLOBAL };
				in_stub = false;
			} else if (in_stub && off) {
				v[k - 1].end += es;
			} else if (in_stub) {
				if (stub == UINT32_MAX && (stub = pool_add(d, ".plt")) == UINT32_MAX)
					break;
				v[k++] = (struct esym){ sh.sh_addr, sh.sh_addr + es, stub, STB_GLOBAL };
			}
		}
	}
	xp_map_free(&names);
	return k;
}

static size_t plt_slots(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx, n = 0;
	uint64_t es;
	bool header;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(e, scn)))
		if (plt_section(e, scn, shstrndx, &sh, &es, &header))
			n += sh.sh_size / es;
	return n;
}

/* Whether section `ndx` is a text section by perf's test (its name holds "text"). */
static bool in_text(Elf *e, size_t ndx)
{
	Elf_Scn *scn = elf_getscn(e, ndx);
	GElf_Shdr sh;
	size_t shstrndx;
	const char *nm;

	return scn && gelf_getshdr(scn, &sh) && elf_getshdrstrndx(e, &shstrndx) == 0 &&
	       (nm = elf_strptr(e, shstrndx, sh.sh_name)) && strstr(nm, "text");
}

/* Functions, and as perf takes them, labels: zero-sized untyped symbols in a text
 * section (ld.so's _start and _dl_start_user, hand-written assembly entries). */
static bool is_code_sym(Elf *e, const GElf_Sym *s)
{
	int t = GELF_ST_TYPE(s->st_info);

	if (s->st_shndx == SHN_UNDEF || !s->st_value)
		return false;
	if (t == STT_FUNC || t == STT_GNU_IFUNC)
		return true;
	return t == STT_NOTYPE && s->st_size == 0 && s->st_shndx != SHN_ABS && s->st_shndx < SHN_LORESERVE &&
	       in_text(e, s->st_shndx);
}

/* `plt_elf` (the mapped file, may be NULL) contributes its PLT entries. */
static int load_symtab(struct sdso *d, Elf *e, Elf_Scn *scn, GElf_Shdr *sh, Elf *plt_elf)
{
	Elf_Data *data = elf_getdata(scn, NULL);

	if (!data || !sh->sh_entsize)
		return 0;
	size_t n = sh->sh_size / sh->sh_entsize, nplt = plt_elf ? plt_slots(plt_elf) : 0;
	struct esym *v = calloc(n + nplt + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		if (!gelf_getsym(data, (int)i, &s))
			continue;
		if (!is_code_sym(e, &s))
			continue;
		const char *nm = elf_strptr(e, sh->sh_link, s.st_name);
		if (!nm || !*nm)
			continue;
		uint32_t at = pool_add(d, nm);
		if (at == UINT32_MAX) {	/* the name pool could not grow */
			free(v);
			return -ENOMEM;
		}
		v[k].start = s.st_value;
		v[k].end = s.st_value + s.st_size;
		v[k].name = at;
		v[k].bind = (uint8_t)GELF_ST_BIND(s.st_info);
		k++;
	}
	if (plt_elf)
		k = add_plt(d, plt_elf, v, k, n + nplt + 1);
	qsort(v, k, sizeof(*v), cmp_sym);
	/* one symbol per address; zero-sized ones extend to the next */
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && v[w - 1].start == v[i].start) {
			if (better(d, &v[i], &v[w - 1]))
				v[w - 1] = v[i];
			else if (v[i].end > v[w - 1].end && v[w - 1].end == v[w - 1].start)
				v[w - 1].end = v[i].end;
			continue;
		}
		v[w++] = v[i];
	}
	/* a zero-sized symbol inside a sized function (a label of its loop) does not
	 * split it: the function names its code, as perf mostly does (its lookup among
	 * overlapping symbols depends on its tree's shape) */
	size_t kept = 0;
	uint64_t covered = 0;
	for (size_t i = 0; i < w; i++) {
		bool sized = v[i].end > v[i].start;
		if (!sized && v[i].start < covered)
			continue;
		if (sized && v[i].end > covered)
			covered = v[i].end;
		v[kept++] = v[i];
	}
	w = kept;
	for (size_t i = 0; i < w; i++)
		if (v[i].end == v[i].start)
			v[i].end = i + 1 < w ? v[i + 1].start : v[i].start + 1;
	d->syms = v;
	d->nsyms = (uint32_t)w;
	return 0;
}

static Elf *open_elf(const char *path, int *fdp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;

	if (fd < 0)
		return NULL;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return NULL;
	}
	*fdp = fd;
	return e;
}

static bool find_symtabs(Elf *e, Elf_Scn **symtab, GElf_Shdr *symsh, Elf_Scn **dynsym, GElf_Shdr *dynsh)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	*symtab = *dynsym = NULL;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB) {
			*symtab = scn;
			*symsh = sh;
		} else if (sh.sh_type == SHT_DYNSYM) {
			*dynsym = scn;
			*dynsh = sh;
		}
	}
	return *symtab != NULL;
}

/* Distribution debug files: /usr/lib/debug/.build-id/ab/cdef….debug (XP_DEBUG_ROOT
 * replaces /usr/lib/debug for tests). */
static void open_debug_file(struct sdso *d)
{
	uint8_t bid[20];
	char hex[41], p[PATH_MAX];
	const char *root = getenv("XP_DEBUG_ROOT");
	int n = elf_build_id(d->elf, bid);

	if (!n)
		return;
	sym_bid_hex(bid, n, hex);
	snprintf(p, sizeof(p), "%s/.build-id/%.2s/%s.debug", root ? root : "/usr/lib/debug", hex, hex + 2);
	d->dbg_elf = open_elf(p, &d->dbg_fd);
}

/* Build-id of the running kernel, from /sys/kernel/notes. */
static int running_kernel_build_id(uint8_t bid[20])
{
	uint8_t buf[4096];
	int fd = open("/sys/kernel/notes", O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	for (ssize_t off = 0; n > 0 && off + 12 <= n;) {
		uint32_t namesz, descsz, type;
		memcpy(&namesz, buf + off, 4);
		memcpy(&descsz, buf + off + 4, 4);
		memcpy(&type, buf + off + 8, 4);
		ssize_t name = off + 12, desc = name + ((namesz + 3) & ~3u);
		if (desc + (ssize_t)descsz > n)
			break;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(buf + name, "GNU", 4) == 0) {
			int k = descsz > 20 ? 20 : (int)descsz;
			memcpy(bid, buf + desc, (size_t)k);
			return k;
		}
		off = desc + ((descsz + 3) & ~3u);
	}
	return 0;
}

/* Kernel symbols: the kallsyms saved in the snapshot store or perf's cache, else
 * /proc/kallsyms when the running kernel is the recorded one (same build-id). */
static void load_kallsyms(struct sym_ctx *c, struct sb_dso *bd, struct sdso *d)
{
	char *file = in_store(c->trace_dir, bd, "kallsyms");
	uint8_t bid[20];

	if (!file)
		file = in_store(c->debug_dir, bd, "kallsyms");
	if (!file && bd->bid_size) {
		int n = running_kernel_build_id(bid);
		if (n == bd->bid_size && memcmp(bid, bd->build_id, (size_t)n) == 0)
			file = strdup("/proc/kallsyms");
	}
	/* no build-id (a trace from a pipe has none, perf writes them at the end of a
	 * file): the running kernel's symbols, as perf takes them, but only for a kernel
	 * map recorded at its _text (this boot's relocation) */
	if (!file && !bd->bid_size) {
		file = strdup("/proc/kallsyms");
		d->ksame_boot = true;
	}
	if (!file)
		return;
	FILE *f = fopen(file, "r");
	if (!f) {
		free(file);
		return;
	}
	size_t cap = 0, k = 0;
	struct esym *v = NULL;
	char line[512];
	while (fgets(line, sizeof(line), f)) {
		/* "ffffffff81000000 T _text [module]": parsed by hand, sscanf is the
		 * bottleneck on 200k lines */
		unsigned long long a = 0;
		char *p = line, type, *name;
		for (; *p && *p != ' '; p++) {
			int h = *p >= '0' && *p <= '9' ? *p - '0' : (*p | 32) >= 'a' && (*p | 32) <= 'f' ?
				(*p | 32) - 'a' + 10 : -1;
			if (h < 0)
				break;
			a = a << 4 | (unsigned)h;
		}
		if (p[0] != ' ' || !p[1] || p[2] != ' ')
			continue;
		type = p[1];
		name = p + 3;
		name[strcspn(name, " \t\n")] = 0;
		if (strcmp(name, "_text") == 0)
			d->ktext = a;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (!a)	/* kptr_restrict hides the addresses */
			continue;
		if (XP_GROW(v, cap, k + 1) < 0)
			break;
		uint32_t at = pool_add(d, name);
		if (at == UINT32_MAX)
			break;
		v[k++] = (struct esym){ a, a, at,
					(uint8_t)(type == 'T' ? STB_GLOBAL : type == 'W' ? STB_WEAK : STB_LOCAL) };
	}
	fclose(f);
	if (!k) {
		free(v);
		free(file);
		return;
	}
	/* Of the names at one address perf keeps the one kallsyms lists last: it sizes
	 * each symbol up to the next, which leaves the earlier ones at that address with
	 * size 0, and prefers a sized symbol before its other rules
	 * (__x86_indirect_thunk_rbp, listed after __pi___x86_indirect_thunk_rbp).  Names
	 * enter the pool in file order.  The kernel's own symbols come in address order
	 * (all of them without modules): sorting them again would cost as much as reading
	 * them. */
	size_t sorted = 1;
	while (sorted < k && cmp_sym(&v[sorted - 1], &v[sorted]) < 0)
		sorted++;
	if (sorted < k)
		qsort(v, k, sizeof(*v), cmp_sym);
	size_t w = 0;
	for (size_t i = 0; i < k; i++) {
		if (w && v[w - 1].start == v[i].start) {
			v[w - 1] = v[i];
			continue;
		}
		v[w++] = v[i];
	}
	/* kallsyms has no sizes: each symbol runs to the next */
	for (size_t i = 0; i < w; i++)
		v[i].end = i + 1 < w ? v[i + 1].start : v[i].start + 4096;
	d->syms = v;
	d->nsyms = (uint32_t)w;
	d->file = file;
	d->kallsyms = true;
	d->usable = true;
}

/* A snapshot that cannot stand for its module (the first met while looking for one). */
struct bad_snap {
	char *file;
	char why[160];
};

/* The store's file for the dso when it can stand for the module; an unusable one is
 * kept in *bad (the first only) and the search goes on. */
static char *usable_in_store(const char *dir, const struct sb_dso *bd, const char *leaf,
			     struct bad_snap *bad)
{
	char *file = in_store(dir, bd, leaf);
	char why[sizeof(bad->why)];

	if (!file || ms_check_file(file, bd->build_id, bd->bid_size, why, sizeof(why)) == 0)
		return file;
	if (!bad->file) {
		bad->file = file;
		memcpy(bad->why, why, sizeof(why));
	} else {
		free(file);
	}
	return NULL;
}

/* Once per snapshot, whatever the dsos sharing it: which module lost what, and what
 * stands in for it. */
static void report_bad_snap(struct sym_ctx *c, const struct sb_dso *bd, const struct bad_snap *bad,
			    const char *instead)
{
	for (size_t i = 0; i < c->nbad; i++)
		if (strcmp(c->bad_snaps[i], bad->file) == 0)
			return;
	char *keep = strdup(bad->file);
	if (keep && XP_GROW(c->bad_snaps, c->capbad, c->nbad + 1) == 0)
		c->bad_snaps[c->nbad++] = keep;
	else
		free(keep);
	if (instead)
		xp_warn("%s: snapshot %s is unusable: %s (its symbols and code are read from %s "
			"instead)", bd->path, bad->file, bad->why, instead);
	else
		xp_warn("%s: snapshot %s is unusable: %s (its functions show as addresses and "
			"its code cannot be decoded: copy the trace directory again from where it "
			"was recorded)", bd->path, bad->file, bad->why);
}

/* d's symbol table from the cache: 0, or -ENOENT when it has none of d's file.  d
 * reads the cached table in place: a copy of a libc's (~10k symbols) per session was
 * fresh memory, page faults under ASan, each time. */
static int cache_get(struct sym_ctx *c, struct sdso *d, const struct stat *st)
{
	struct sym_cache *k = c->cache;

	for (int i = 0; k && i < SYM_CACHE_FILES; i++) {
		struct cached_tab *t = &k->t[i];
		if (!same_file(t, st))
			continue;
		d->syms = t->syms;
		d->nsyms = t->nsyms;
		d->pool = t->pool;
		d->pool_len = t->pool_len;
		d->pool_cap = (uint32_t)t->pool_len;
		d->borrowed = t;
		t->users++;
		t->used = ++k->clock;
		return 0;
	}
	return -ENOENT;
}

static void cache_put(struct sym_ctx *c, const struct sdso *d, const struct stat *st)
{
	struct sym_cache *k = c->cache;
	struct cached_tab *t;

	if (!k)
		return;
	t = NULL;
	for (int i = 0; i < SYM_CACHE_FILES; i++)
		if (!k->t[i].users && (!t || k->t[i].used < t->used))
			t = &k->t[i];
	if (!t)
		return;	/* every table is read by a dso of a live session */
	free(t->syms);
	free(t->pool);
	memset(t, 0, sizeof(*t));
	if (!(t->syms = dup_mem(d->syms, d->nsyms * sizeof(*d->syms))) ||
	    !(t->pool = dup_mem(d->pool, d->pool_len))) {
		free(t->syms);
		t->syms = NULL;
		return;
	}
	t->nsyms = d->nsyms;
	t->pool_len = d->pool_len;
	t->dev = st->st_dev;
	t->ino = st->st_ino;
	t->size = st->st_size;
	t->mtime = st->st_mtim;
	t->used = ++k->clock;
}

static void load_dso(struct sym_ctx *c, struct sb_dso *bd, struct sdso *d)
{
	char *file = NULL;
	uint8_t bid[20];
	struct bad_snap bad = { NULL, "" };

	d->loaded = true;
	d->fd = -1;
	d->dbg_fd = -1;
	if (bd->anon && strcmp(bd->path, "[vdso]") != 0)
		return;
	if (bd->kernel) {
		if (strcmp(bd->path, "[kernel.kallsyms]") == 0)
			load_kallsyms(c, bd, d);
		return;
	}
	/* perf's cache names the file by kind: "vdso" for the vdso, "elf" otherwise */
	const char *leaf = strcmp(bd->path, "[vdso]") == 0 ? "vdso" : "elf";
	file = usable_in_store(c->trace_dir, bd, leaf, &bad);
	if (!file)
		file = usable_in_store(c->debug_dir, bd, leaf, &bad);
	if (!file && strcmp(leaf, "elf") != 0)
		file = usable_in_store(c->trace_dir, bd, "elf", &bad);
	if (!file && bd->path[0] == '/') {
		int n = sym_file_build_id(bd->path, bid);
		if (bd->bid_size && n && (n != bd->bid_size || memcmp(bid, bd->build_id, (size_t)n))) {
			char want[41], have[41];
			sym_bid_hex(bd->build_id, bd->bid_size, want);
			sym_bid_hex(bid, n, have);
			xp_warn("%s: build-id mismatch (trace has %s, file has %s): the file changed "
				"since recording, its symbols are not used (record with snapshots, or "
				"restore the original binary)", bd->path, want, have);
		} else if (access(bd->path, R_OK) == 0) {
			file = strdup(bd->path);
		}
	}
	if (bad.file) {
		report_bad_snap(c, bd, &bad, file);
		free(bad.file);
	}
	if (!file)
		return;
	d->elf = open_elf(file, &d->fd);
	if (!d->elf) {
		free(file);
		return;
	}
	d->file = file;
	GElf_Ehdr eh;
	if (!gelf_getehdr(d->elf, &eh))
		return;
	d->is_rel = eh.e_type == ET_REL;
	size_t nph = 0;
	elf_getphdrnum(d->elf, &nph);
	d->segs = calloc(nph ? nph : 1, sizeof(*d->segs));
	for (size_t i = 0; d->segs && i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(d->elf, (int)i, &ph) && ph.p_type == PT_LOAD)
			d->segs[d->nsegs++] = (struct seg){ ph.p_offset, ph.p_vaddr, ph.p_filesz };
	}
	Elf_Scn *symtab, *dynsym, *dsymtab, *ddynsym;
	GElf_Shdr symsh, dynsh, dsymsh, ddynsh;
	bool from_dbg = false;
	struct stat st;
	if (!find_symtabs(d->elf, &symtab, &symsh, &dynsym, &dynsh) || !gelf_getehdr(d->elf, &eh) ||
	    eh.e_type != ET_REL) {
		/* stripped: the full symbol table (and DWARF) may be in a debug file */
		if (!symtab)
			open_debug_file(d);
		from_dbg = d->dbg_elf && find_symtabs(d->dbg_elf, &dsymtab, &dsymsh, &ddynsym, &ddynsh);
	}
	bool keyed = c->cache && fstat(d->fd, &st) == 0;
	if (keyed && cache_get(c, d, &st) == 0) {
		d->usable = true;
		return;
	}
	if (from_dbg)
		load_symtab(d, d->dbg_elf, dsymtab, &dsymsh, d->elf);
	if (!d->nsyms && symtab)
		load_symtab(d, d->elf, symtab, &symsh, d->elf);
	if (!d->nsyms && dynsym) {
		free(d->syms);
		d->syms = NULL;
		load_symtab(d, d->elf, dynsym, &dynsh, d->elf);
	}
	if (keyed)
		cache_put(c, d, &st);
	d->usable = true;
}

static struct sdso *get_sdso(struct sym_ctx *c, struct sb_dso *bd)
{
	if (!bd->sym) {
		struct sdso *d = calloc(1, sizeof(*d));
		if (!d)
			return NULL;
		if (XP_GROW(c->dsos, c->capdsos, c->ndsos + 1) < 0) {
			free(d);
			return NULL;
		}
		c->dsos[c->ndsos++] = d;
		bd->sym = d;
		load_dso(c, bd, d);
	}
	return bd->sym;
}

const char *sym_dso_file(struct sym_ctx *c, struct sb_dso *bd)
{
	struct sdso *d = get_sdso(c, bd);

	return d ? d->file : NULL;
}

bool sym_map_vaddr(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint64_t *vaddr)
{
	struct sdso *d = get_sdso(c, m->dso);
	uint64_t off = addr - m->start + m->pgoff;

	if (!d || !d->usable)
		return false;
	if (d->kallsyms) {	/* kernel map: pgoff is the recorded _text address */
		if (d->ksame_boot && m->pgoff != d->ktext)
			return false;
		*vaddr = addr - (m->pgoff && d->ktext ? m->pgoff - d->ktext : 0);
		return true;
	}
	if (d->is_rel || !d->nsegs) {
		*vaddr = off;
		return true;
	}
	for (uint32_t i = 0; i < d->nsegs; i++)
		if (off >= d->segs[i].off && off < d->segs[i].off + d->segs[i].filesz) {
			*vaddr = off - d->segs[i].off + d->segs[i].vaddr;
			return true;
		}
	/* past the file-backed part of the last segment (bss) */
	if (d->nsegs) {
		const struct seg *s = &d->segs[d->nsegs - 1];
		*vaddr = off - s->off + s->vaddr;
		return true;
	}
	return false;
}

static const char *short_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

static uint32_t new_fn(struct sym_ctx *c, const char *name, const char *module, struct sb_dso *dso,
		       uint64_t start, uint64_t size, bool resolved)
{
	if (XP_GROW(c->fns, c->capfns, c->nfns + 1) < 0)
		return 0;
	c->fns[c->nfns] = (struct sym_fn){ name, module, dso, start, size, resolved, false, false };
	return c->nfns++;
}

bool sym_map_uprobes(const struct sb_map *m)
{
	return m && strcmp(m->dso->path, "[uprobes]") == 0;
}

uint32_t sym_fn_named(struct sym_ctx *c, const char *name, const char *module)
{
	for (uint32_t i = 0; i < c->nfns; i++)
		if (!c->fns[i].dso && !c->fns[i].jit && strcmp(c->fns[i].name, name) == 0)
			return i;
	return new_fn(c, own(c, strdup(name)), module ? own(c, strdup(module)) : "", NULL, 0, 0, false);
}

static uint32_t unknown_fn(struct sym_ctx *c, struct sb_dso *dso, uint64_t addr)
{
	uint64_t key = ((uint64_t)(dso ? dso->id + 1 : 0) << 48) ^ addr;
	char buf[40];
	uint64_t found;

	if (xp_map_get(&c->unk, key, &found))
		return (uint32_t)found;
	snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)addr);
	uint32_t id = new_fn(c, own(c, strdup(buf)), dso ? short_name(dso->path) : "[unknown]", dso,
			     0, 0, false);
	return id && xp_map_put(&c->unk, key, id) == 0 ? id : 0;
}

uint32_t sym_fn_of(struct sym_ctx *c, const struct sb_map *m, uint64_t addr)
{
	uint64_t va;

	if (!m)
		return unknown_fn(c, NULL, addr);
	/* the kernel's page of uretprobe trampolines and out-of-line probed instructions:
	 * code without a file, one name (perf: [unknown] in [uprobes]) */
	if (sym_map_uprobes(m))
		return sym_fn_named(c, "[uprobes]", "[uprobes]");
	struct sdso *d = get_sdso(c, m->dso);
	if (!d || !d->usable || !sym_map_vaddr(c, m, addr, &va))
		return unknown_fn(c, m->dso, m->dso->kernel ? addr : addr - m->start + m->pgoff);
	uint32_t lo = 0, hi = d->nsyms;
	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (d->syms[mid].start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || va >= d->syms[lo - 1].end)
		return unknown_fn(c, m->dso, va);
	const struct esym *s = &d->syms[lo - 1];
	if (!d->fn_ids) {
		d->fn_ids = malloc(d->nsyms * sizeof(*d->fn_ids));
		if (!d->fn_ids)
			return unknown_fn(c, m->dso, va);
		memset(d->fn_ids, 0xff, d->nsyms * sizeof(*d->fn_ids));
	}
	uint32_t *id = &d->fn_ids[lo - 1];
	if (*id == UINT32_MAX) {
		const char *raw = d->pool + s->name;
		char *dm = sym_demangle(raw, false);
		const char *name = dm ? own(c, dm) : raw;
		*id = new_fn(c, name, short_name(m->dso->path), m->dso, s->start, s->end - s->start, true);
	}
	return *id;
}

static uint64_t jit_key(const char *name, const char *module)
{
	return xp_hash_str(xp_hash_str(XP_HASH_STR_SEED, module) * 31, name);
}

uint32_t sym_fn_jit(struct sym_ctx *c, const char *name, const char *module, uint64_t start,
		    uint64_t size)
{
	uint64_t k = jit_key(name, module), found;

	/* a key taken by another name that hashed alike: this one's is the next free */
	for (; xp_map_get(&c->jit, k, &found); k++) {
		const struct sym_fn *f = &c->fns[found];
		if (strcmp(f->module, module) == 0 && strcmp(f->name, name) == 0)
			return (uint32_t)found;
	}
	/* JIT names are shown demangled like ELF ones (perf demangles the ELF files
	 * `perf inject --jit` writes) */
	char *dm = sym_demangle(name, false);
	const char *mod = own(c, strdup(module));
	uint32_t id = new_fn(c, dm ? own(c, dm) : own(c, strdup(name)), mod, NULL, start, size, true);
	if (!id)
		return 0;
	c->fns[id].jit = true;
	return xp_map_put(&c->jit, k, id) == 0 ? id : 0;
}

const struct sym_fn *sym_fn(const struct sym_ctx *c, uint32_t id)
{
	return id < c->nfns ? &c->fns[id] : NULL;
}

uint32_t sym_nfns(const struct sym_ctx *c) { return c->nfns; }

/* Relative DWARF file names are relative to the CU's compilation directory: join
 * them, so tools reading our output (callgrind_annotate) find the sources.  Joined
 * names are interned in the context, and kept by libdw's name (a CU's file table
 * names each file once, and lives as long as the context): a line per instruction
 * asks for the same few. */
static const char *abs_src(struct sym_ctx *c, Dwarf_Die *cu, const char *src)
{
	Dwarf_Attribute at;
	const char *dir, *out = src;
	char buf[PATH_MAX];
	uint64_t known;

	if (src[0] == '/')
		return src;
	if (xp_map_get(&c->srcs, (uintptr_t)src, &known))
		return (const char *)(uintptr_t)known;
	if (dwarf_attr(cu, DW_AT_comp_dir, &at) && (dir = dwarf_formstring(&at))) {
		snprintf(buf, sizeof(buf), "%s/%s", dir, src);
		out = NULL;
		for (size_t i = c->nstrs; i-- > 0 && i + 64 >= c->nstrs && !out;)
			if (strcmp(c->strs[i], buf) == 0)
				out = c->strs[i];
		if (!out && !(out = own(c, strdup(buf))))
			return NULL;
	}
	xp_map_put(&c->srcs, (uintptr_t)src, (uintptr_t)out);	/* (not kept: joined again) */
	return out;
}

static Dwarf *dwarf_of(struct sdso *d)
{
	if (!d->dw_tried) {
		d->dw_tried = true;
		Elf *e = d->dbg_elf ? d->dbg_elf : d->elf, *img = e ? sym_dwsec_open(e, &d->dws) : NULL;
		d->dw = e ? dwarf_begin_elf(img ? img : e, DWARF_C_READ, NULL) : NULL;
	}
	return d->dw;
}

static bool srcline_va(struct sym_ctx *c, struct sdso *d, uint64_t va, const char **file, int *line)
{
	if (d->last_line.ok && d->last_line.vaddr == va) {
		*file = d->last_line.file;
		*line = d->last_line.line;
		return true;
	}
	Dwarf_Die cu;
	if (!dwarf_of(d) || (d->dws && sym_dwsec_lines(d->dws) < 0) || !dwarf_addrdie(d->dw, va, &cu))
		return false;
	Dwarf_Line *ln = dwarf_getsrc_die(&cu, va);
	int lno = 0;
	const char *src;
	if (!ln || !(src = dwarf_linesrc(ln, NULL, NULL)) || dwarf_lineno(ln, &lno) != 0)
		return false;
	src = abs_src(c, &cu, src);
	d->last_line.vaddr = va;
	d->last_line.file = src;	/* owned by libdw or the context */
	d->last_line.line = lno;
	d->last_line.ok = true;
	*file = src;
	*line = lno;
	return true;
}

bool sym_srcline(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, const char **file, int *line)
{
	uint64_t va;
	struct sdso *d;

	if (!m || !(d = get_sdso(c, m->dso)) || !d->usable || !sym_map_vaddr(c, m, addr, &va))
		return false;
	return srcline_va(c, d, va, file, line);
}

/* The name of an inlined subroutine: its abstract origin's, demangled. */
static char *inline_name(Dwarf_Die *die)
{
	Dwarf_Attribute at;
	const char *raw;
	char *dm;

	if ((dwarf_attr_integrate(die, DW_AT_linkage_name, &at) || dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &at)) &&
	    (raw = dwarf_formstring(&at)) && (dm = sym_demangle(raw, false)))
		return dm;
	if (dwarf_attr_integrate(die, DW_AT_name, &at) && (raw = dwarf_formstring(&at)))
		return strdup(raw);
	return strdup("[unknown]");
}

static uint32_t inline_fn(struct sym_ctx *c, const char *name, const char *module)
{
	char *full = malloc(strlen(name) + sizeof(" [inline]"));
	if (!full)
		return 0;
	sprintf(full, "%s [inline]", name);
	uint64_t k = jit_key(full, module), id;
	for (; xp_map_get(&c->inl, k, &id); k++)
		if (!strcmp(c->fns[id].name, full) && !strcmp(c->fns[id].module, module)) {
			free(full);
			return (uint32_t)id;
		}
	id = new_fn(c, own(c, full), module, NULL, 0, 0, false);
	if (!id || xp_map_put(&c->inl, k, id) < 0)
		return 0;
	c->fns[id].inlined = true;
	return (uint32_t)id;
}

/* Whether DIEs of this tag may hold code's scopes: not call sites (their children
 * are parameters: most DIEs of optimised code), variables, parameters, enumerations,
 * arrays, function types, none of which holds an inlined subroutine.  (A class may,
 * in C++: a local class's member functions.) */
static bool may_hold_code(int tag)
{
	switch (tag) {
	case DW_TAG_call_site:
	case DW_TAG_GNU_call_site:
	case DW_TAG_formal_parameter:
	case DW_TAG_variable:
	case DW_TAG_enumeration_type:
	case DW_TAG_array_type:
	case DW_TAG_subroutine_type:
		return false;
	default:
		return true;
	}
}

/* The inlined subroutines below `die` (depth: how many enclose them), their ranges
 * added to d->irngs. */
static int inl_collect(struct sym_ctx *c, struct sdso *d, Dwarf_Die *die, uint32_t depth, const char *module)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		uint32_t below = depth;
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_inlined_subroutine) {
			char *name = inline_name(&child);
			uint32_t id = name ? inline_fn(c, name, module) : 0;
			Dwarf_Addr base, lo, hi;
			free(name);
			if (!id)
				return -ENOMEM;
			for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;) {
				if (XP_GROW(d->irngs, d->capirngs, d->nirngs + 1) < 0)
					return -ENOMEM;
				d->irngs[d->nirngs++] = (struct inl_rng){ lo, hi, id, depth };
			}
			below = depth + 1;
		}
		if (may_hold_code(tag) && inl_collect(c, d, &child, below, module) < 0)
			return -ENOMEM;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static int by_lo(const void *a, const void *b)
{
	const struct inl_sub *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every function with code below `die` (namespaces and classes hold C++'s; `types`:
 * the CU's structures may, not C's): its ranges, each pointing to its inlined
 * subroutines' ranges. */
static int inl_subprograms(struct sym_ctx *c, struct sdso *d, Dwarf_Die *die, const char *module, bool types)
{
	Dwarf_Die child;
	if (dwarf_child(die, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			uint32_t first = d->nirngs;
			Dwarf_Addr base, lo, hi;
			if (inl_collect(c, d, &child, 0, module) < 0)
				return -ENOMEM;
			for (ptrdiff_t off = 0; (off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0;) {
				if (XP_GROW(d->isubs, d->capisubs, d->nisubs + 1) < 0)
					return -ENOMEM;
				d->isubs[d->nisubs++] = (struct inl_sub){ lo, hi, first, d->nirngs - first };
			}
		} else if (tag == DW_TAG_namespace || (types && (tag == DW_TAG_class_type || tag == DW_TAG_structure_type))) {
			if (inl_subprograms(c, d, &child, module, types) < 0)
				return -ENOMEM;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

static bool c_unit(Dwarf_Die *cu)
{
	int lang = dwarf_srclang(cu);
	return lang == DW_LANG_C89 || lang == DW_LANG_C || lang == DW_LANG_C99 || lang == DW_LANG_C11;
}

/* The index of the first function range starting past va (nisubs: none). */
static uint32_t subs_past(const struct sdso *d, uint64_t va)
{
	uint32_t lo = 0, hi = d->nisubs;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		if (d->isubs[mid].lo <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const struct inl_sub *inl_sub_at(const struct sdso *d, uint64_t va)
{
	uint32_t lo = subs_past(d, va);
	/* the last range starting at or before va, or one a little before it: GNU C's
	 * nested functions lie inside their parent's range */
	for (uint32_t k = lo; k-- > 0 && lo - k <= 8;)
		if (va >= d->isubs[k].lo && va < d->isubs[k].hi)
			return &d->isubs[k];
	return NULL;
}

/* How far from runtime address addr of map m its ELF address goes on in step (the
 * rest of its segment's file bytes), in bytes; 1 when that is not known. */
static uint64_t vaddr_run(const struct sdso *d, const struct sb_map *m, uint64_t addr)
{
	uint64_t off = addr - m->start + m->pgoff;

	if (d->kallsyms || d->is_rel || !d->nsegs)
		return UINT64_MAX;
	for (uint32_t i = 0; i < d->nsegs; i++)
		if (off >= d->segs[i].off && off < d->segs[i].off + d->segs[i].filesz)
			return d->segs[i].off + d->segs[i].filesz - off;
	return 1;
}

/* Where the first function range past va starts (UINT64_MAX: none). */
static uint64_t next_sub(const struct sdso *d, uint64_t va)
{
	uint32_t k = subs_past(d, va);
	return k < d->nisubs ? d->isubs[k].lo : UINT64_MAX;
}

/* Where the answer of dwarf_addrdie (its address range of .debug_aranges, or none)
 * changes after va: the end of va's range, the start of the next; va + 1 when the
 * ranges overlap there. */
static uint64_t cu_run_end(Dwarf *dw, uint64_t va)
{
	Dwarf_Aranges *ar;
	size_t n, lo = 0, hi;
	Dwarf_Addr start, next = UINT64_MAX;
	Dwarf_Word len;

	if (dwarf_getaranges(dw, &ar, &n) != 0)
		return va + 1;
	for (hi = n; lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;
		if (dwarf_getarangeinfo(dwarf_onearange(ar, mid), &start, NULL, NULL) != 0)
			return va + 1;
		if (start <= va)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < n && dwarf_getarangeinfo(dwarf_onearange(ar, lo), &next, NULL, NULL) != 0)
		return va + 1;
	Dwarf_Arange *at = lo ? dwarf_onearange(ar, lo - 1) : NULL;
	if (!at || dwarf_getarangeinfo(at, &start, &len, NULL) != 0 || va >= start + len)
		return dwarf_getarange_addr(ar, va) ? va + 1 : next;
	if (dwarf_getarange_addr(ar, va) != at)
		return va + 1;
	return start + len < next ? start + len : next;
}

/* The chain at va from function range s, and where it changes: s's end, the next
 * range's start (a nested function), an inlined range's start or end. */
static unsigned chain_at(const struct sdso *d, const struct inl_sub *s, uint64_t va, uint32_t *fns, unsigned max,
			 uint64_t *until)
{
	const struct inl_rng *at[64];
	unsigned k = 0, n = 0;
	uint64_t u = s->hi;
	uint64_t nx = next_sub(d, va);

	if (nx < u)
		u = nx;
	/* the ranges holding va nest: ordered by depth they are the chain */
	for (uint32_t i = s->first; i < s->first + s->n; i++) {
		const struct inl_rng *r = &d->irngs[i];
		if (va >= r->lo && va < r->hi && k < 64)
			at[k++] = r;
		uint64_t b = r->lo > va ? r->lo : r->hi > va ? r->hi : UINT64_MAX;
		if (b < u)
			u = b;
	}
	for (unsigned depth = (unsigned)-1; n < max;) {
		const struct inl_rng *next = NULL;
		for (unsigned i = 0; i < k; i++)
			if (at[i]->depth < depth && (!next || at[i]->depth > next->depth))
				next = at[i];
		if (!next)
			break;
		fns[n++] = next->fn;
		depth = next->depth;
	}
	*until = u;
	return n;
}

unsigned sym_inline_span(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint32_t *fns, unsigned max,
			 uint64_t *until)
{
	uint64_t va, va_until = UINT64_MAX;
	struct sdso *d;
	Dwarf_Die cu;
	const struct inl_sub *s;
	unsigned n = 0;

	*until = UINT64_MAX;
	if (!m || !(d = get_sdso(c, m->dso)) || !d->usable || !sym_map_vaddr(c, m, addr, &va) || !dwarf_of(d))
		return 0;
	if (!(s = inl_sub_at(d, va))) {
		/* each CU's functions are read once, at the first address in it */
		bool fresh = false;
		if (!dwarf_addrdie(d->dw, va, &cu)) {
			va_until = cu_run_end(d->dw, va);
		} else if (!xp_map_get(&d->icus, dwarf_dieoffset(&cu), NULL)) {
			if (xp_map_put(&d->icus, dwarf_dieoffset(&cu), 1) < 0 ||
			    inl_subprograms(c, d, &cu, short_name(m->dso->path), !c_unit(&cu)) < 0) {
				*until = addr + 1;
				return 0;
			}
			fresh = true;
			if (d->nisubs)
				qsort(d->isubs, d->nisubs, sizeof(*d->isubs), by_lo);
		}
		if (!fresh || !(s = inl_sub_at(d, va))) {
			/* no function here: none until the CU's range ends or a function starts */
			uint64_t nx = next_sub(d, va), cu_end = va_until != UINT64_MAX ? va_until : cu_run_end(d->dw, va);
			va_until = nx < cu_end ? nx : cu_end;
		}
	}
	if (s)
		n = chain_at(d, s, va, fns, max, &va_until);
	uint64_t run = vaddr_run(d, m, addr), span = va_until - va;
	if (run < span)
		span = run;
	*until = span > UINT64_MAX - addr ? UINT64_MAX : addr + span;
	return n;
}

unsigned sym_inline(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint32_t *fns, unsigned max)
{
	uint64_t until;
	return sym_inline_span(c, m, addr, fns, max, &until);
}

bool sym_fn_srcline(struct sym_ctx *c, uint32_t fn, const char **file, int *line)
{
	const struct sym_fn *f = sym_fn(c, fn);
	struct sdso *d;

	if (!f || !f->resolved || !f->dso || !(d = get_sdso(c, f->dso)) || !d->usable)
		return false;
	return srcline_va(c, d, f->start, file, line);
}

/* The type of a return value: base types by encoding and size, pointers, enums by
 * size; typedefs and qualifiers peeled. */
static struct sym_ret ret_of_type(Dwarf_Die *type)
{
	Dwarf_Attribute at;
	Dwarf_Word enc = 0;
	int size;

	if (dwarf_peel_type(type, type) != 0)
		return (struct sym_ret){ SYM_RET_UNKNOWN, 0 };
	size = dwarf_bytesize(type);
	switch (dwarf_tag(type)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type:
		return (struct sym_ret){ SYM_RET_POINTER, 8 };
	case DW_TAG_enumeration_type:
		return (struct sym_ret){ SYM_RET_SIGNED, size > 0 && size <= 8 ? (unsigned)size : 4 };
	case DW_TAG_base_type:
		if (size <= 0 || size > 8 || !dwarf_attr(type, DW_AT_encoding, &at) || dwarf_formudata(&at, &enc) != 0)
			return (struct sym_ret){ SYM_RET_OTHER, 0 };
		switch (enc) {
		case DW_ATE_signed:
		case DW_ATE_signed_char:
			return (struct sym_ret){ SYM_RET_SIGNED, (unsigned)size };
		case DW_ATE_unsigned:
		case DW_ATE_unsigned_char:
		case DW_ATE_UTF:
			return (struct sym_ret){ SYM_RET_UNSIGNED, (unsigned)size };
		case DW_ATE_boolean:
			return (struct sym_ret){ SYM_RET_BOOL, (unsigned)size };
		default:
			return (struct sym_ret){ SYM_RET_OTHER, 0 };
		}
	default:
		return (struct sym_ret){ SYM_RET_OTHER, 0 };
	}
}

struct sym_ret sym_fn_ret(struct sym_ctx *c, uint32_t fn)
{
	const struct sym_fn *f = sym_fn(c, fn);
	struct sym_ret r = { SYM_RET_UNKNOWN, 0 };
	Dwarf_Die cu, *scopes = NULL, type;
	Dwarf_Attribute at;
	struct sdso *d;
	int n;

	if (!f || !f->resolved || !f->dso || !(d = get_sdso(c, f->dso)) || !d->usable || !dwarf_of(d) ||
	    !dwarf_addrdie(d->dw, f->start, &cu) || (n = dwarf_getscopes(&cu, f->start, &scopes)) <= 0)
		return r;
	/* the innermost subprogram at the function's entry (inlined callees aside) */
	for (int i = 0; i < n; i++) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
			continue;
		if (!dwarf_attr_integrate(&scopes[i], DW_AT_type, &at))
			r.kind = SYM_RET_VOID;
		else if (dwarf_formref_die(&at, &type))
			r = ret_of_type(&type);
		break;
	}
	free(scopes);
	return r;
}
