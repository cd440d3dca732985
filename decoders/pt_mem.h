/* Code bytes of a traced process at a given time, for decoders and views of perf.data
 * traces: the session's mapping of the address, read from the file the symbol layer
 * found for its dso (snapshot store by build-id, ~/.debug, the recorded path); for
 * anonymous memory, JIT code from the jitdump files the process mapped (jit.h). */
#ifndef DPT_MEM_H
#define DPT_MEM_H

#include <stddef.h>
#include <stdint.h>

#include "sb.h"
#include "jit.h"
#include "sym.h"

struct dpt_mem;

/* `jit` (NULL: none) gives the bytes of JIT code in anonymous memory. */
struct dpt_mem *dpt_mem_new(struct sb_session *sb, struct sym_ctx *sym, struct jit_ctx *jit);
void dpt_mem_free(struct dpt_mem *m);
/* Bytes at `addr` in process `pid` at `time` (0: latest state); 0 when unknown. */
size_t dpt_mem_read(struct dpt_mem *m, int32_t pid, uint64_t time, uint64_t addr, uint8_t *buf,
		    size_t n);
/* The times [from, to) around `time` over which the bytes at `addr` stay what
 * dpt_mem_read gives for `time`: the mapping's life, narrowed by JIT loads and moves. */
void dpt_mem_span(struct dpt_mem *m, int32_t pid, uint64_t time, uint64_t addr, uint64_t *from,
		  uint64_t *to);
/* The file behind a mapping (NULL for anonymous memory or a dso without a file). */
const char *dpt_mem_path(struct dpt_mem *m, const struct sb_map *map);

#endif
