/* Intel PT decoder (libipt): turns a PT byte stream plus the memory image it ran on
 * into the common execution-event stream (xev.h).
 *
 * Two decode granularities:
 *   - blocks (libipt block decoder, ending at every branch): one XEV_BLOCK per basic
 *     block, followed by the XEV_BRANCH/XEV_CALL/XEV_RETURN that ends it; this feeds
 *     tallies and call trees and is the fast path;
 *   - instructions (libipt instruction decoder): one XEV_BLOCK of one instruction per
 *     executed instruction, with its bytes (xev.bytes), plus the same transfer events.
 * Errors never end a decode: a decode error, an overflow or a truncated buffer becomes
 * an XEV_GAP (offset, reason, bytes skipped) and decoding resumes at the next PSB. */
#ifndef DPT_H
#define DPT_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <intel-pt.h>

#include "decode/xev.h"

/* ---- memory image: what the traced code looked like ---------------------------- */

struct dpt_image;

struct dpt_image *dpt_image_new(const char *name);
void dpt_image_free(struct dpt_image *img);

/* `size` bytes of `path` from `offset`, mapped at `vaddr`.  Later sections shadow
 * earlier ones where they overlap (libipt semantics: a new mapping replaces). */
int dpt_image_add_file(struct dpt_image *img, const char *path, uint64_t offset,
		       uint64_t size, uint64_t vaddr);
/* Code bytes owned by the caller (JIT code); they must outlive the image. */
int dpt_image_add_mem(struct dpt_image *img, const uint8_t *bytes, uint64_t size,
		      uint64_t vaddr);
/* Told of each executable segment added as the mapping that would hold it (page
 * aligned start, length, file offset), e.g. to enter it in a session; non-zero stops. */
typedef int (*dpt_segment_fn)(void *ctx, uint64_t start, uint64_t len, uint64_t pgoff);
/* The executable PT_LOAD segments of an ELF file.  `base` is the address the file's
 * first segment (lowest p_vaddr, page aligned) is loaded at; `have_base` = 0 loads
 * at the link-time addresses (ET_EXEC, or ptxed's --elf FILE without :BASE).
 * `each` (may be NULL) is called for every segment added. */
int dpt_image_add_elf(struct dpt_image *img, const char *path, int have_base,
		      uint64_t base, dpt_segment_fn each, void *ctx);
/* Memory no section holds is asked of `fn` (e.g. a session's mappings at the decode
 * time); it returns the bytes read (0: unmapped).  Called while decoding. */
typedef size_t (*dpt_fallback_fn)(void *ctx, uint64_t addr, uint8_t *buf, size_t n);
void dpt_image_set_fallback(struct dpt_image *img, dpt_fallback_fn fn, void *ctx);

/* Reads up to `n` bytes at `addr`; returns the count read (0 when unmapped). */
size_t dpt_image_read(const struct dpt_image *img, uint64_t addr, uint8_t *buf, size_t n);
/* The same from the sections only, without the fallback: code that stays the same
 * for the whole decode (what the fallback gives may change with the time: JIT code,
 * anonymous mappings). */
size_t dpt_image_read_sections(const struct dpt_image *img, uint64_t addr, uint8_t *buf, size_t n);

/* A new image with the sections of `src` (files mapped again, memory sections shared)
 * and its fallback: one per thread of a parallel decode (libipt's images are not
 * shared between decoders running at once).  NULL when out of memory. */
struct dpt_image *dpt_image_clone(const struct dpt_image *src);

/* Number of sections (tests, diagnostics). */
size_t dpt_image_nsections(const struct dpt_image *img);

/* The libipt image behind it (bare-loop benchmarks). */
struct pt_image *dpt_image_pt(struct dpt_image *img);

/* ---- decoding ------------------------------------------------------------------ */

enum dpt_mode {
	DPT_BLOCKS,	/* libipt block decoder: one XEV_BLOCK per basic block */
	DPT_INSNS,	/* libipt instruction decoder: one XEV_BLOCK per instruction */
};

struct dpt_options {
	enum dpt_mode mode;
	struct pt_cpu cpu;	/* vendor pcv_unknown: no errata applied */
	int strict;		/* stop at the first error (after reporting its gap) */
	int32_t pid, tid, cpu_nr;	/* copied into every event (-1 unknown) */
	/* TSC -> perf time (ns): time_zero + tsc * mult >> shift (perf_event_mmap_page
	 * time_* fields, kept in AUXTRACE_INFO); without it events carry raw TSC. */
	int have_time_conv;
	uint16_t time_shift;
	uint32_t time_mult;
	uint64_t time_zero;
	/* Timing packet configuration (IA32_RTIT_CTL, CPUID 0x15, MSR_PLATFORM_INFO). */
	uint8_t mtc_freq, nom_freq;
	uint32_t cpuid_0x15_eax, cpuid_0x15_ebx;
	/* Event kinds the consumer does not need, as (1u << kind): a speed hint, the
	 * decoder may skip them (XEV_CALL, XEV_RETURN). */
	uint32_t ignore;
	/* When set, kept equal to the decode time (perf ns, or TSC) as it advances, so
	 * memory callbacks look mappings up as they were when the code ran. */
	uint64_t *time_out;
	/* The buffer is a read-only mapping of a file: pages well behind the decoder are
	 * given back (madvise), so memory stays flat however long the trace is. */
	int release_behind;
	/* The code can change with the time (a per-cpu trace runs one process, then
	 * another): called as the decode time advances, returns a number naming the
	 * address space the code then comes from (the running pid); what the decoder
	 * caches about instructions is kept per space.  Setting *img (else left NULL)
	 * makes the decoder read code from that image from then on (each process's own
	 * file sections: libipt's fast path).  NULL: one space, one image. */
	uint64_t (*space_at)(void *ctx, uint64_t time, struct dpt_image **img);
	/* Called now and then (every few thousand decode steps) with the address in the
	 * buffer the decoder reached: progress of a long decode.  NULL: not called. */
	void (*progress)(void *ctx, const uint8_t *at);
	void *progress_ctx;
	void *space_ctx;
	/* dpt_run's pauses follow the instructions' time exactly: a block that a PSB+ cuts
	 * where the decode pauses goes out in two (for views listing instructions across
	 * traces in time order; tallies want it whole, which keeps each thread's order). */
	int split_at_pause;
	/* DPT_BLOCKS: decode with libipt's block decoder alone (--pt-decoder libipt, a
	 * cross-check), not with the packet walker (dpt_fast.c) that takes the plain
	 * stretches of a trace (TNT, TIP, TIP.PGE/PGD, TSC between PSB+ of the mode, an
	 * IP and a TSC) and gives libipt the rest; both make the same events */
	int libipt_only;
	/* Offset of the buffer within its source (AUX area position) for gap reports. */
	uint64_t base_offset;
	/* A piece of a parallel decode (decode/dec_par.h).  `cont`: the buffer starts at
	 * a PSB inside a trace, so the state the decode before it left is unknown: XEV_STITCH
	 * events say where it shows.  `stops` (psbs[i] with stop[i] set, offsets in the
	 * buffer plus psb_base, ascending; psbs lists every PSB from the buffer's start):
	 * the decode ends at the first such PSB after stop_from whose PSB+ it reaches with
	 * no state but what XEV_ST_HELD / XEV_ST_PENDING carry (not in a transaction, no
	 * cycles waiting), before taking that PSB+; dpt_stats.stopped_at says which. */
	int cont;
	const uint64_t *psbs;
	const uint8_t *stop;
	size_t npsbs;
	uint64_t psb_base, stop_from;
};

struct dpt_stats {
	uint64_t insns;		/* instructions decoded */
	uint64_t blocks;
	uint64_t gaps;
	uint64_t lost_bytes;	/* trace bytes skipped by resynchronisation */
	/* of those, the gaps at an address whose code the image does not have (a module
	 * without a usable file): the trace is whole there, the code to follow it is not */
	uint64_t nocode, nocode_bytes;
	uint64_t overflows;
	int first_error;	/* libipt error code of the first error (0 none) */
	uint64_t first_error_offset;
	size_t stopped_at;	/* a piece (dpt_options.psbs): index of the PSB it ended
				 * at, SIZE_MAX when it decoded to the end */
	uint64_t walked;	/* PSB+ stretches the packet walker decoded (libipt the rest) */
};

/* What dpt_decode returns in strict mode when a trace error stopped it. */
#define DPT_EDECODE (-EBADMSG)

/* Decodes buf[0..len) against `img` and emits events into `sink`.  Returns 0 when the
 * whole buffer was decoded (gaps included), a sink's non-zero return when it stopped
 * the decode, DPT_EDECODE in strict mode when an error stopped it (stats->first_error
 * says which), or another negative errno (-ENOMEM).  `stats` may be NULL.  The buffer
 * must stay valid during the call. */
int dpt_decode(const uint8_t *buf, size_t len, struct dpt_image *img,
	       const struct dpt_options *opt, const struct xev_sink *sink,
	       struct dpt_stats *stats);

/* The same decode, resumable: dpt_run decodes until the next event would be later
 * than `limit` (perf ns, or TSC without conversion) or the buffer ends, and can be
 * called again to go on; dpt_time is then the time of that next event (the latest
 * timestamp seen, 0 before the first), UINT64_MAX once the decode is over.  Queues
 * decoded together call dpt_run on the one with the lowest time, limited by the next
 * lowest.  dpt_run returns 0 when it paused or reached the end, else what dpt_decode
 * returns (the decode is then over).  The buffer, image and sink must stay valid
 * while the decoder is open; `opt` is copied. */
struct dpt_dec;
int dpt_open(struct dpt_dec **out, const uint8_t *buf, size_t len, struct dpt_image *img,
	     const struct dpt_options *opt);
int dpt_run(struct dpt_dec *d, const struct xev_sink *sink, uint64_t limit);
uint64_t dpt_time(const struct dpt_dec *d);
const struct dpt_stats *dpt_dec_stats(const struct dpt_dec *d);
void dpt_close(struct dpt_dec *d);

void dpt_options_init(struct dpt_options *opt);

/* ---- parallel decode (decode/dec_par.h) --------------------------------------- */

/* The pieces of a buffer: psbs lists its PSBs; piece 0 starts at the buffer's start,
 * piece i > 0 at psbs[start[i]] (stop[] marks those). */
struct dpt_split {
	uint64_t *psbs;
	uint8_t *stop;
	size_t npsbs;
	size_t *start;
	size_t npieces;
};

/* Cuts buf[0..len) into pieces of about piece_size bytes, at PSB+ a decode can start
 * from; `release`: buf is a read-only file mapping, whose pages the scan gives back as
 * it goes (dpt_split_release).  0 or -ENOMEM. */
int dpt_split(const uint8_t *buf, size_t len, uint64_t piece_size, bool release, struct dpt_split *s);
void dpt_split_free(struct dpt_split *s);
/* Sets the piece fields of `o` for piece i; returns where in the buffer it starts
 * (decode buf + that, with base_offset raised by it). */
uint64_t dpt_split_piece(const struct dpt_split *s, size_t i, struct dpt_options *o);
/* The piece after piece i, from its decode's stats (dec_piece_fn's *next). */
size_t dpt_split_next(const struct dpt_split *s, size_t i, const struct dpt_stats *st);
/* Gives back the pages of buf[from, to), a read-only file mapping whose piece there
 * was decoded (release_behind keeps the pages a decode has left behind; the pages a
 * piece still holds at its end are its piece's). */
void dpt_split_release(const uint8_t *buf, uint64_t from, uint64_t to);
/* True when a decode of buf with `opt` counts cycles (CYC packets and the nominal
 * ratio): its pieces cannot end early (the cycles of a stretch need the time before
 * it), so it is not worth splitting. */
bool dpt_counts_cycles(const uint8_t *buf, size_t len, const struct dpt_options *opt);

/* True when the packet walker would decode most of buf with `opt` (its first PSB+
 * stretches are ones it takes).  A view that takes events only in order gets
 * nothing from -j then: the join buffers and replays every event of a piece, which
 * costs more than the walker's decode it would spread. */
bool dpt_walkable(const uint8_t *buf, size_t len, const struct dpt_options *opt);

/* "F/M[/S]" (decimal or 0x hex, as ptxed's --cpu) -> cpu; returns 0 or -1. */
int dpt_parse_cpu(const char *s, struct pt_cpu *cpu);

#endif
