/* Module store: snapshots of executable mappings by build-id, in the layout of perf's
 * build-id cache so `perf --buildid-dir DIR report` symbolizes from them:
 *
 *   DIR/<path>/<build-id hex>/elf          the file (reflink, else hardlink, else copy)
 *   DIR/[vdso]/<build-id hex>/vdso         the vdso image dumped from memory
 *   DIR/.build-id/<hex[0:2]>/<hex[2:]>  -> ../../<path>/<hex>   (symlink to the directory;
 *                                          perf appends elf or vdso)
 *
 * Each build-id is stored once per store (later adds return 0).  Files are verified
 * against the build-id the kernel reported, so a binary replaced since the mapping was
 * made is refused (-ESTALE) instead of silently mis-symbolizing. */
#ifndef MS_STORE_H
#define MS_STORE_H

#include <stddef.h>
#include <stdint.h>

#define MS_BUILD_ID_MAX 20

struct ms_store;

/* Opens (creating DIR and DIR/.build-id as needed) the store rooted at `dir`. */
int ms_store_open(struct ms_store **out, const char *dir);
void ms_store_close(struct ms_store *s);

/* Snapshots the file readable at `src` (a path, or /proc/PID/map_files/START-END which
 * still works after the file was deleted; when it cannot be read, as after the process
 * exited, the file at `name`; NULL: `name`) under the name `name` (absolute path as the
 * process saw it; a " (deleted)" suffix is dropped).  bid NULL: read it from the file.
 * Returns 1 when stored now, 0 when that build-id was already stored, or -ENOENT
 * (unreadable), -ENODATA (no build-id note), -ESTALE (build-id differs), -EINVAL (name). */
int ms_store_add_file(struct ms_store *s, const char *name, const char *src, const uint8_t *bid,
		      size_t bid_size);
/* Same for an image in memory (vdso): stored as DIR/[name]/<hex>/vdso when name is
 * "[vdso]", else as .../elf. */
int ms_store_add_image(struct ms_store *s, const char *name, const void *img, size_t size,
		       const uint8_t *bid, size_t bid_size);
/* Dumps this process's own [vdso] (the same image every 64-bit process of this kernel
 * maps).  Returns like ms_store_add_file. */
int ms_store_add_vdso(struct ms_store *s);

/* Deferred mode (xptrace record): a snapshot that must be copied (no reflink, no
 * hardlink) only opens the file now and copies it at ms_store_flush(), so a large
 * binary does not stall the reading of the rings.  The open descriptor keeps the file's
 * content even if it is deleted, or replaced by a new file of the same name, before
 * the flush. */
void ms_store_defer_copies(struct ms_store *s, int on);
/* Performs the postponed copies; returns the first error (also done by close).  A copy
 * that fails leaves no file, no .build-id link and no entry (ms_store_count() drops
 * it); ms_store_failed() names it. */
int ms_store_flush(struct ms_store *s);
/* The i-th snapshot whose postponed copy failed, and why (*err); NULL past the last. */
const char *ms_store_failed(const struct ms_store *s, size_t i, int *err);

int ms_store_has(const struct ms_store *s, const uint8_t *bid, size_t bid_size);
/* Stored entries, in insertion order, for the HEADER_BUILD_ID feature. */
size_t ms_store_count(const struct ms_store *s);
int ms_store_entry(const struct ms_store *s, size_t i, const char **name, const uint8_t **bid,
		   size_t *bid_size);
/* Bytes copied (hardlinks and reflinks cost none) and entries linked vs copied. */
uint64_t ms_store_bytes_copied(const struct ms_store *s);

/* A plain copy of `src` as `dst`, through dst.tmp (never a half file under the final
 * name): for files that are not modules (JIT files, see rec_jit.c).  0 or -errno. */
int ms_copy_file(const char *src, const char *dst);

/* Build-id of an ELF file / image (first GNU build-id note; at most MS_BUILD_ID_MAX).
 * 0 on success, -ENODATA without a note, -ENOENT/-EINVAL when unreadable. */
int ms_build_id_file(const char *path, uint8_t *bid, size_t *bid_size);
int ms_build_id_mem(const void *img, size_t size, uint8_t *bid, size_t *bid_size);
/* Whether the snapshot at `path` can stand for the module of build-id `bid` (NULL: not
 * checked): 0, or why not in `why` ("empty (0 bytes)", "truncated (...)", "not an ELF
 * file", "build-id mismatch (...)") with -ENODATA, -EBADMSG, -ENOEXEC, -ESTALE, or the
 * -errno of a file that cannot be read. */
int ms_check_file(const char *path, const uint8_t *bid, size_t bid_size, char *why, size_t whylen);
/* This process's vdso image. */
int ms_vdso_self(const void **img, size_t *size);
/* Lower-case hex of a build-id into out (2*size+1 bytes). */
void ms_hex(char *out, const uint8_t *bid, size_t size);

#endif
