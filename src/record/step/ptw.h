/* Intel PT packet stream writer for one thread, on libipt's encoder (pt_enc_next).
 *
 * It writes what a user-only tracer (intel_pt//u, branch=1, noretcomp=1) emits: PSB+ at
 * start and every psb_period bytes (MODE.EXEC 64-bit, TSC, FUP when tracing is on,
 * PSBEND), TNT-8/TNT-64 for conditional branches, TIP for indirect branches and returns,
 * TIP.PGD/TIP.PGE when tracing stops/starts (syscalls, filter exits), FUP+TIP for
 * asynchronous transfers, TSC from the caller's clock.  No CYC and no MTC: the step
 * tracer has no cycle timing.  IP packets are compressed against the last IP like the
 * hardware does.  Bytes go to a flush callback in chunks that end on packet boundaries,
 * so memory does not grow with the trace. */
#ifndef PTW_H
#define PTW_H

#include <stddef.h>
#include <stdint.h>

struct pt_encoder;

/* Receives `len` bytes of trace (a chunk that ends on a packet boundary). */
typedef int (*ptw_flush_fn)(void *ctx, const uint8_t *data, size_t len);

struct ptw_opts {
	uint64_t psb_period;	/* bytes between PSB+; 0 = 4096 */
	uint64_t tsc_period;	/* min. clock ticks between TSC packets (besides PSB+/PGE/FUP); 0 = 100000 */
	int no_tsc;		/* 1: no TSC packets at all */
	size_t chunk;		/* flush threshold; 0 = 64 KiB */
	size_t psb_flush;	/* a PSB+ with this much buffered starts a new chunk; 0 = never */
	int psb_at_sync;	/* 1: PSB+ only at ptw_sync() (a writer that does not know the IP
				 * of every branch, only the target of the last transfer) */
};

struct ptw {
	struct ptw_opts o;
	struct pt_encoder *enc;
	uint8_t *buf;
	size_t cap;
	uint64_t off;		/* bytes in buf */
	uint64_t total;		/* bytes flushed + in buf */
	uint64_t psb_at;	/* total at the last PSB */
	uint64_t last_ip;
	int have_last_ip;
	uint64_t tnt;
	unsigned ntnt;
	int enabled;
	int need_psb;		/* nothing written yet: the first enable writes PSB+ with FUP */
	int lost;		/* an OVF was written: the next event starts with FUP */
	uint64_t last_tsc;
	ptw_flush_fn flush;
	void *ctx;
	/* packet counts, for reports and tests */
	uint64_t n_psb, n_tnt_bits, n_tnt8, n_tnt64, n_tip, n_pge, n_pgd, n_fup, n_tsc, n_ovf;
};

int ptw_init(struct ptw *w, const struct ptw_opts *o, ptw_flush_fn flush, void *ctx);
/* A stream that starts with tracing off (in the kernel, e.g. at exec): its first
 * PSB+ is written at the first ptw_enable(), with FUP there. */
int ptw_begin(struct ptw *w, uint64_t tsc);
/* Tracing (re)starts at ip: MODE.EXEC, TSC, TIP.PGE (PSB+ with FUP the first time). */
int ptw_enable(struct ptw *w, uint64_t ip, uint64_t tsc);
/* Tracing stops at the branch at `ip`; `to` = 0 suppresses the target (syscall). */
int ptw_disable(struct ptw *w, uint64_t ip, uint64_t to, uint64_t tsc);
/* Asynchronous stop (interrupted at `from`, continuing outside the traced code):
 * FUP + TIP.PGD. */
int ptw_async_disable(struct ptw *w, uint64_t from, uint64_t tsc);
/* Conditional branch at ip. */
int ptw_tnt(struct ptw *w, uint64_t ip, int taken, uint64_t tsc);
/* n conditional branches in a row, bits[i] 0 or 1 (not taken / taken), at one time:
 * for a writer that knows outcomes, not addresses (psb_at_sync). */
int ptw_tnt_run(struct ptw *w, const uint8_t *bits, size_t n, uint64_t tsc);
/* Indirect branch or return at ip to `to`. */
int ptw_tip(struct ptw *w, uint64_t ip, uint64_t to, uint64_t tsc);
/* Asynchronous transfer: interrupted at `from`, continues at `to`. */
int ptw_async(struct ptw *w, uint64_t from, uint64_t to, uint64_t tsc);
/* The next instruction is at ip (right after a transfer to it): PSB+ there when one is
 * due.  Only with psb_at_sync. */
int ptw_sync(struct ptw *w, uint64_t ip, uint64_t tsc);
/* What runs from here to the next event is lost (code the tracer cannot follow): OVF,
 * what the hardware writes when it dropped packets.  The next event resynchronizes
 * decoders with a FUP at its IP (a TIP.PGE needs none), as the hardware's after OVF. */
int ptw_overflow(struct ptw *w, uint64_t tsc);
/* Pending TNT bits out and the buffer flushed (end of thread, before sideband). */
int ptw_flush(struct ptw *w);
void ptw_fini(struct ptw *w);

#endif
