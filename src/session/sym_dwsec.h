/* The DWARF sections libdw reads for symbols (sym_elf.c), from a file whose sections
 * are compressed (SHF_COMPRESSED, as Debian's debug packages ship them).  libdw
 * inflates every one of them when it opens the file: for libc's debug file 10 MB,
 * the most of a decode's CPU.  Here they are inflated into one image of our own
 * instead, without what symbols never read (location lists, call frames, macros),
 * and the line tables (.debug_line) only when a source line is first asked for.
 * Reading the same DIEs and lines from the same bytes, libdw answers as before. */
#ifndef SYM_DWSEC_H
#define SYM_DWSEC_H

#include <libelf.h>

struct sym_dwsec;

/* The image of e's DWARF sections, as an Elf for dwarf_begin_elf (valid until
 * sym_dwsec_free), or NULL when e is better read as it is: no compressed DWARF
 * section, a relocatable file, sections in another compression, GNU's .zdebug, a
 * supplementary file (.gnu_debugaltlink, found through the file's own path), or
 * sections that do not inflate.  *out is set when the image is returned. */
Elf *sym_dwsec_open(Elf *e, struct sym_dwsec **out);
/* .debug_line inflated, before anything reads a line table.  0, or a negative error
 * (the file has no line tables to give). */
int sym_dwsec_lines(struct sym_dwsec *s);
void sym_dwsec_free(struct sym_dwsec *s);

#endif
