/* Symbols: address -> function (ELF .symtab/.dynsym through libelf), file:line
 * (libdw), C++ and Rust demangling.
 *
 * Each session dso is looked up, in order, in the trace's snapshot store
 * (TRACE_DIR/.build-id/xx/yyyy…, perf's build-id cache layout), in ~/.debug (perf's
 * cache), then at its recorded path.  A recorded path whose build-id differs from the
 * trace's is refused with a warning (its symbols would be wrong); so is a store's file
 * that cannot stand for its module (empty, truncated, not ELF, another build-id), once
 * per file, naming what is used instead.
 *
 * Functions are interned: every distinct (dso, symbol) gets a small dense id, which the
 * call tree and the reports use as their key.  Addresses without a symbol get one id
 * per (dso, address) named like perf does ("0x…"). */
#ifndef SYM_H
#define SYM_H

#include <stdbool.h>
#include <stdint.h>

#include "session/sb.h"

struct sym_ctx;

struct sym_fn {
	const char *name;	/* demangled */
	const char *module;	/* short name of the dso ("libc.so.6", "[vdso]") */
	struct sb_dso *dso;	/* NULL for the synthetic roots */
	uint64_t start;		/* ELF virtual address of the symbol (0: unresolved) */
	uint64_t size;
	bool resolved;
	bool jit;		/* JIT code (jit.h): start is a runtime address, no dso */
	/* code the compiler inlined (DWARF's inlined subroutines): named "NAME [inline]",
	 * one id per name and module, no address of its own */
	bool inlined;
};

/* `trace_dir` holds the snapshot store (NULL: none).  Honours $HOME for ~/.debug;
 * `debug_dir` overrides it (NULL: default). */
struct sym_ctx *sym_new(const char *trace_dir, const char *debug_dir);
void sym_free(struct sym_ctx *c);

/* Symbol tables kept across the sessions of a process, one at a time (a fuzzer's
 * inputs): each file's is read and sorted once, up to 16 files, keyed by the file's
 * device, inode, size and time.  Sessions read the kept tables in place: one a live
 * session reads is not replaced (a 17th file is then read for its session alone). */
struct sym_cache;
struct sym_cache *sym_cache_new(void);
void sym_cache_free(struct sym_cache *k);
/* c reads symbol tables through k (which outlives c) from now on. */
void sym_use_cache(struct sym_ctx *c, struct sym_cache *k);

/* The function holding `addr` in map `m` (NULL map: unknown).  Returns its id. */
uint32_t sym_fn_of(struct sym_ctx *c, const struct sb_map *m, uint64_t addr);
/* The id of a JIT function (jit.h), interned by name and module; `start` and `size`
 * are those of its first placement. */
uint32_t sym_fn_jit(struct sym_ctx *c, const char *name, const char *module, uint64_t start,
		    uint64_t size);
/* An id for a name that is not a symbol (thread roots, "[unknown]", "[gap]"). */
uint32_t sym_fn_named(struct sym_ctx *c, const char *name, const char *module);
/* Whether m is the kernel's uprobes page ([uprobes]: uretprobe trampolines, probed
 * instructions stepped out of line), which every view names "[uprobes]". */
bool sym_map_uprobes(const struct sb_map *m);
const struct sym_fn *sym_fn(const struct sym_ctx *c, uint32_t id);
uint32_t sym_nfns(const struct sym_ctx *c);

/* ELF virtual address of a runtime address in map m (what symbols and DWARF use). */
bool sym_map_vaddr(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint64_t *vaddr);
/* The file used for the dso (NULL if none was found). */
const char *sym_dso_file(struct sym_ctx *c, struct sb_dso *d);
/* Source file and line of a runtime address; false if unknown. `file` stays valid until
 * sym_free. */
bool sym_srcline(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, const char **file,
		 int *line);

/* The functions inlined at a runtime address, innermost first (as `addr2line -i` and
 * `eu-addr2line -i` list them before the symbol's function): their ids (sym_fn.inlined)
 * in fns, at most max.  0: none, or no DWARF. */
unsigned sym_inline(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint32_t *fns, unsigned max);
/* sym_inline, and in *until the end of the run of addresses from addr on that have
 * the same functions inlined (UINT64_MAX: all of the map's), as far as the DWARF
 * read so far tells: a block up to there needs no look-up per instruction. */
unsigned sym_inline_span(struct sym_ctx *c, const struct sb_map *m, uint64_t addr, uint32_t *fns, unsigned max,
			 uint64_t *until);

/* Source file and first line of an interned function; false if unknown. */
bool sym_fn_srcline(struct sym_ctx *c, uint32_t fn, const char **file, int *line);

/* What a function returns, from its DWARF type, as far as the integer return register
 * (rax) tells it: SYM_RET_UNKNOWN without debug info (the register is all there is). */
enum sym_ret_kind {
	SYM_RET_UNKNOWN,
	SYM_RET_VOID,
	SYM_RET_OTHER,		/* not in rax: floating point, structures */
	SYM_RET_SIGNED,		/* integers and enums of `size` bytes */
	SYM_RET_UNSIGNED,
	SYM_RET_BOOL,
	SYM_RET_POINTER,
};
struct sym_ret {
	enum sym_ret_kind kind;
	unsigned size;		/* bytes (SIGNED, UNSIGNED, BOOL) */
};
struct sym_ret sym_fn_ret(struct sym_ctx *c, uint32_t fn);

/* Demangles C++ (Itanium) and Rust (legacy and v0) names; NULL when `name` is not
 * mangled.  `params` keeps C++ parameter lists (perf drops them by default).  The
 * result is malloc'ed. */
char *sym_demangle(const char *name, bool params);

/* Build-id of an ELF file (hex in `hex`, 41 bytes); returns its size in bytes or 0. */
int sym_file_build_id(const char *path, uint8_t bid[20]);
void sym_bid_hex(const uint8_t *bid, int n, char *hex);

#endif
