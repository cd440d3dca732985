/* Signal handlers in a thread's exact event stream, as perf's thread stack sees them.
 *
 * A handler is entered asynchronously: by an interrupt (PT FUP + TIP: XEV_INTERRUPT
 * ip -> handler), or, when the kernel delivers the signal on its way back to user
 * code (a syscall such as raise's tgkill, an interrupt while tracing was off), by
 * tracing resuming somewhere else than where it stopped (XEV_DISABLE, then XEV_ENABLE
 * at the handler).  The handler's frame goes above the interrupted one.  It ends when
 * execution comes back where it was interrupted (sigreturn: XEV_ENABLE there, or a
 * far return of a trace with the kernel): the frames above the interrupted one are
 * left, not entered.  Each entered signal has an id (from 1) that the consumer puts on
 * the frame it pushes, so the way back finds that frame again.  The interrupt right
 * after a transaction's abort is the jump to its abort handler, not a signal. */
#ifndef CT_SIG_H
#define CT_SIG_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/xev.h"

#define CT_SIG_DEPTH 16	/* nested signals remembered; deeper ones drop the oldest */

struct ct_sig {
	uint64_t end;		/* the last instruction run (its block's end) */
	/* where execution goes on after tracing stopped, [lo, hi] (0: not known) */
	uint64_t lo, hi;
	uint64_t stop_time;	/* when tracing stopped (the disable's time) */
	bool aborted;		/* a transaction aborted, and no block ran since */
	uint64_t next_id;
	struct { uint64_t lo, hi, id; } st[CT_SIG_DEPTH];	/* signals entered, oldest first */
	uint32_t n;
};

enum ct_sig_what {
	CT_SIG_NONE,
	CT_SIG_ENTER,	/* ev enters a handler at *at; its frame gets id *id */
	CT_SIG_BACK,	/* ev comes back into the frame signal *id interrupted */
};

/* One event of the thread (a zeroed struct ct_sig starts it). */
enum ct_sig_what ct_sig_event(struct ct_sig *s, const struct xev *ev, uint64_t *at, uint64_t *id);
/* The thread exec'd while tracing was off (perf flushes its thread stack then): the
 * next XEV_ENABLE starts a new program, no signal; nothing open is returned to. */
void ct_sig_exec(struct ct_sig *s);
/* The handler of signal `id`, entered from an XEV_ENABLE, came as the sigreturn of
 * signal `old` ended (old's handler had returned into its trampoline): the kernel
 * delivers a signal pending at sigreturn right after restoring what old interrupted,
 * so that is where `id` goes back to, and old is over. */
void ct_sig_chain(struct ct_sig *s, uint64_t old, uint64_t id);

#endif
