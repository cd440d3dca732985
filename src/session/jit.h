/* JIT code: names (and code bytes) of functions a JIT compiled at run time, from the
 * two files perf's conventions define, so every decoder and view resolves them:
 *
 *   jit-PID.dump     perf's jitdump (tools/perf/util/jitdump.h), written by the JIT
 *                    (perf's jvmti agent, V8 --perf-prof, ...) and mapped by it so that
 *                    the mapping shows in the sideband.  JIT_CODE_LOAD records carry
 *                    name and code bytes, JIT_CODE_MOVE records relocate loaded code,
 *                    JIT_CODE_DEBUG_INFO records give source lines of the next load.
 *   perf-PID.map     "START SIZE NAME" lines (hex), names only, valid for the whole
 *                    life of the process (perf reads /tmp/perf-PID.map); where lines
 *                    overlap the later wins (JITs reuse freed code addresses).
 *
 * Both are looked up in the trace directory first (TRACE_DIR/jit/, where `xptrace
 * record` keeps them), then where the process wrote them, so a trace decodes after the
 * JIT process is gone or on another machine.  Files are mapped, not read, and indexed
 * once; sizes from them are never trusted (a record cut by the end of the file, a
 * corrupt size or an unknown record ends or skips the parse, never a crash).
 *
 * Names are given as perf report shows them after `perf inject --jit`: the name from
 * the dump, in module "jitted-PID-INDEX.so" (INDEX: the code_index of the load); perf
 * map names in module "[JIT] tid PID" (what perf report shows for them). */
#ifndef JIT_H
#define JIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "session/sb.h"

struct jit_ctx;

/* One JIT function as it lies in memory at the time asked for. */
struct jit_sym {
	uint64_t start, size;	/* runtime addresses */
	const char *name;
	const char *module;	/* valid until the next jit_find */
	const uint8_t *code;	/* `size` bytes; NULL: a perf map entry (no code) */
	uint64_t from, to;	/* trace times between which this answer holds */
};

/* Finds jitdumps among the dsos of `sb` as it grows; `trace_dir` may be NULL. */
struct jit_ctx *jit_new(struct sb_session *sb, const char *trace_dir);
void jit_free(struct jit_ctx *j);

/* How jitdump timestamps become trace times.  A dump writes CLOCK_MONOTONIC times,
 * usable as is when the trace's events use that clock (`mono`), or TSC values when its
 * header says JITDUMP_FLAGS_ARCH_TIMESTAMP, converted like the trace's own TSC (PT).
 * A dump whose clock is not the trace's is applied timeless: its final state holds
 * over the whole trace (loads in file order, the later winning). */
void jit_set_mono(struct jit_ctx *j, bool mono);
void jit_set_tsc_conv(struct jit_ctx *j, uint16_t shift, uint32_t mult, uint64_t zero);

/* The JIT function of process `pid` holding `addr` at trace time `time` (0: the
 * latest state): from its jitdumps, else its perf map.  Returns false when none;
 * out->from and out->to are set in both cases (when the answer may change). */
bool jit_find(struct jit_ctx *j, int32_t pid, uint64_t time, uint64_t addr, struct jit_sym *out);

/* Up to `n` bytes of `s`'s code at `addr`; 0 outside it or for a perf map entry. */
size_t jit_sym_read(const struct jit_sym *s, uint64_t addr, uint8_t *buf, size_t n);

/* Source file and line of JIT code at `addr` from the JIT_CODE_DEBUG_INFO record
 * that came with its load (perf's order: just before it); false when none.  `file`
 * stays valid until jit_free. */
bool jit_srcline(struct jit_ctx *j, int32_t pid, uint64_t time, uint64_t addr, const char **file,
		 int *line);

/* True when `base` (a file name without directory) is a jitdump's, "jit-PID.dump",
 * with its pid. */
bool jit_dump_name(const char *base, int32_t *pid);

#endif
