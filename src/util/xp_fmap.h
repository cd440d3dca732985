/* A file's bytes mapped read-only for the code a decoder walks, as the file holds them.
 * A private mapping would not do: the kernel writes a live uprobe's int3 into every
 * private mapping of the probed file that may become executable, read-only ones too (a
 * file on an exec mount is VM_MAYEXEC), so a decoder would see another tool's
 * breakpoints; shared mappings are left alone (uprobes.c: valid_vma). */
#ifndef XP_FMAP_H
#define XP_FMAP_H

#include <stddef.h>

/* The `size` first bytes of the file open at fd (read-only is enough), to release with
 * xp_funmap; NULL with errno set. */
const void *xp_fmap(int fd, size_t size);
void xp_funmap(const void *p, size_t size);

#endif
