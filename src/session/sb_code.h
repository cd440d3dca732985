/* Code bytes of a traced process at a given time, for decoders and views of perf.data
 * traces: the session's mapping of the address, read from the file the symbol layer
 * found for its dso (snapshot store by build-id, ~/.debug, the recorded path); for
 * anonymous memory, JIT code from the jitdump files the process mapped (jit.h). */
#ifndef SB_CODE_H
#define SB_CODE_H

#include <stddef.h>
#include <stdint.h>

#include "session/sb.h"
#include "session/jit.h"
#include "session/sym.h"

struct sb_code;

/* `jit` (NULL: none) gives the bytes of JIT code in anonymous memory. */
struct sb_code *sb_code_new(struct sb_session *sb, struct sym_ctx *sym, struct jit_ctx *jit);
void sb_code_free(struct sb_code *m);
/* Bytes at `addr` in process `pid` at `time` (0: latest state); 0 when unknown. */
size_t sb_code_read(struct sb_code *m, int32_t pid, uint64_t time, uint64_t addr, uint8_t *buf,
		    size_t n);
/* Bytes at `addr` of the module file behind `map` (not JIT code); 0 when unknown. */
size_t sb_code_read_map(struct sb_code *m, const struct sb_map *map, uint64_t addr, uint8_t *buf, size_t n);
/* The times [from, to) around `time` over which the bytes at `addr` stay what
 * sb_code_read gives for `time`: the mapping's life, narrowed by JIT loads and moves. */
void sb_code_span(struct sb_code *m, int32_t pid, uint64_t time, uint64_t addr, uint64_t *from,
		  uint64_t *to);
/* The file holding a dso's code (NULL for anonymous memory or a dso without a file):
 * its snapshot or ELF file as the symbol layer found it, else the file at its recorded
 * path read raw (not ELF, no build-id to contradict it).  Decided once per dso. */
const char *sb_code_file(struct sb_code *m, struct sb_dso *d);
/* The same for the dso behind a mapping (NULL: no mapping). */
const char *sb_code_path(struct sb_code *m, const struct sb_map *map);

#endif
