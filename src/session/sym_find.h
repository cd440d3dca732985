/* Functions of one ELF file by name or glob, with the file offset the kernel wants for
 * uprobes and address filters (symbols hold virtual addresses; PIE and shared objects
 * place them through their PT_LOAD program headers, which need not map 1:1). */
#ifndef SYM_FIND_H
#define SYM_FIND_H

#include <stddef.h>
#include <stdint.h>

/* One PT_LOAD segment: file bytes [offset, offset + filesz) at [vaddr, vaddr + filesz). */
struct sym_seg {
	uint64_t vaddr, offset, filesz;
};

/* File offset of `vaddr` in the segments: 0, or -ENOENT when no segment's file bytes
 * hold it (.bss, or an address outside every segment). */
int sym_vaddr_offset(const struct sym_seg *segs, size_t n, uint64_t vaddr, uint64_t *off);

struct sym_found {
	char *name;
	uint64_t vaddr, size, offset;
	int ifunc;		/* STT_GNU_IFUNC: the symbol is a resolver, not the code */
	int no_offset;		/* outside every loadable segment: cannot be probed */
};

/* Functions of `path` whose name is `pattern` (fnmatch glob when `glob`), from .symtab
 * when the file has one, else .dynsym; aliases of one address count once (first name
 * in the table).  Returns the number found (0: none) with *out malloc'ed, or a negative
 * errno (-ENOEXEC: not ELF). */
int sym_find_funcs(const char *path, const char *pattern, int glob, struct sym_found **out);
void sym_found_free(struct sym_found *v, int n);
/* "NAME+0xOFF" of the function of `path` holding file offset `off` (a message's
 * where), "?" when none does. */
void sym_func_at(const char *path, uint64_t off, char *out, size_t len);

#endif
