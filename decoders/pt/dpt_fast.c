/* The packet walker: decodes the plain stretches of a PT trace itself, faster than
 * libipt's block decoder, and gives libipt the rest.
 *
 * A plain stretch starts at a PSB+ that holds just the mode (64-bit), an IP and maybe
 * a TSC, a TMA, a CBR, an idle MODE.TSX, and goes on with TNT, TIP, TIP.PGD (no IP),
 * MODE.Exec + TIP.PGE, TSC, MTC, TMA and further such PSB+ (the step tracer's traces,
 * perf's traces without CYC).  Timing packets make the time of libipt's next events
 * (a PSB+'s status updates, a disable, an enable, the tick events libipt makes when
 * it makes time from MTC: struct ftime); where such an event moves the time past
 * dpt_run's limit the walker pauses, and takes the event up again when called again.
 * Each basic block is decoded once (a cache by address: its last instruction, its
 * length, how it ends, its direct target), so a conditional branch costs one TNT bit
 * and one lookup.  The blocks and events go through the same code as libipt's
 * (dpt_int.h: dpt_blk_take, dpt_on_event), made as libipt's block decoder makes them.
 *
 * Anything else (another packet, a PSB+ with more in it, code that does not decode,
 * a branch the packets do not fit, the end of the buffer) is libipt's: the walker goes
 * back to its last checkpoint (the state before the PSB+ it last took, kept whole),
 * libipt synchronises at that PSB (a PSB+ restates all a decoder needs, as for the
 * pieces of a parallel decode), and the events the walker already delivered since
 * then are not delivered again (libipt makes the same ones first).  libipt hands
 * back at the next plain PSB+ (lib_stop) once the state there is one the walker
 * carries: tracing on, no transaction, no error, no time waiting to be taken. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoders/pt/dpt_int.h"

#define FB_BITS 13
#define FB_MAX_INSNS 4096	/* longer straight runs are libipt's */
#define FOLLOW_MAX 64		/* direct branches followed before one packet */
#define PSB_LEN 16
#define HEADER_MAX 32		/* packets of a PSB+ looked at */
#define SCAN_AHEAD (1u << 20)	/* lib_stop is looked for this far, then again */

/* dpt_fast_run's internal "libipt must do this" */
#define BAIL (-0x10005)

struct fblk {
	uint64_t key;		/* ip ^ space; 0 empty */
	uint64_t end;		/* address of the last instruction */
	uint64_t next;		/* the fall-through */
	uint64_t target;	/* direct branches: the target */
	uint32_t ninsn;
	uint8_t cls;		/* enum bclass */
	uint8_t ic;		/* enum pt_insn_class of the last instruction */
	uint8_t indirect;
	uint8_t bad;		/* does not decode (or too long): the walker stops */
};

/* libipt's time as its query decoder keeps it (without CYC, which turns the walker
 * off): a TSC sets it, a TMA after it says where in the crystal clock's period the TSC
 * fell, and each MTC then moves it by the crystal clocks since the last MTC (or the
 * TMA), times CPUID 0x15's TSC:crystal ratio.  Without the ratio (not `timed`) the
 * walker leaves MTC and TMA to libipt. */
struct ftime {
	uint64_t tsc, base;
	uint32_t ctc;		/* the last MTC's (or the TMA's) crystal clock bits */
	uint8_t have_tsc, have_tma, have_mtc;
};

/* The CBR of a PSB+ that has it before its MODE.Exec (and MODE.TSX): libipt's event
 * for it (a status update bound to no IP) comes right after the query whose read-ahead
 * decoded the PSB+ (the first bit of the TNT, the TIP or the TIP.PGE last before it),
 * with the time after the PSB+; the MODE.Exec's comes at the PSB+'s IP, as without. */
struct early_cbr {
	uint64_t q;		/* the TNT, TIP or TIP.PGE packet (UINT64_MAX: none) */
	uint8_t ratio;
	struct ftime t;
};

struct dpt_fast {
	struct fblk *cache;	/* tab.ent */
	struct dpt_table tab;
	uint64_t pos;		/* the next packet */
	uint64_t cur;		/* where the code goes on */
	uint64_t last_ip;	/* IP compression */
	uint64_t psb;		/* the checkpoint's PSB */
	uint64_t psb_end;	/* its PSB+ ends here */
	int start;		/* the PSB+ at psb is still to be taken */
	struct ftime t;		/* the time of the packets read so far: libipt's events' */
	struct ftime at;	/* the time at the last TNT or TIP (libipt's last_time) */
	uint64_t ev_tsc;	/* the time of libipt's last event: a tick comes when it differs */
	int ticks;		/* libipt makes tick events (enable_tick_events) */
	int mode_seen;		/* a MODE.Exec before a TIP.PGE, at time mode_t */
	struct ftime mode_t;
	int tnt_done;		/* bits of the TNT at pos taken before a pause */
	struct early_cbr ec;	/* of the PSB+ ending the stretch walked */
	int cbr_done;		/* its event went out (the walker's or libipt's) */
	struct pt_event saved;	/* the event dpt_run paused at (dctx.fast_saved) */
	/* libipt's events the walker makes, in order: several may come of one packet (a
	 * PSB+'s status updates, an enable and the event of its MODE.Exec); those after
	 * one that paused are delivered when dpt_run goes on */
	struct pt_event q[4];
	int nq, iq;
	struct dctx snap;	/* the checkpoint */
	struct xev snap_slot;
	struct dpt_stats snap_st;
};

static const uint8_t psb_bytes[PSB_LEN] = {
	2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
};

/* Payload bytes of an IP packet by its compression (-1: reserved). */
static const int8_t ip_bytes[8] = { 0, 2, 4, 6, 6, -1, 8, -1 };

static inline uint64_t ip_update(uint64_t last, unsigned ipc, const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, (size_t)ip_bytes[ipc]);
	switch (ipc) {
	case 1: return (last & ~0xffffULL) | v;
	case 2: return (last & ~0xffffffffULL) | v;
	case 3: return (uint64_t)((int64_t)(v << 16) >> 16);
	case 4: return (last & ~0xffffffffffffULL) | v;
	default: return v;
	}
}

/* MTC and TMA move libipt's time: CPUID 0x15's ratio is known (and MTCFreq one the
 * packets' shifts take). */
static inline bool timed(const struct dctx *c)
{
	return c->opt->cpuid_0x15_eax && c->opt->cpuid_0x15_ebx && c->opt->mtc_freq <= 15;
}

#define MTC_BITS 8		/* CTC bits an MTC carries (above MTCFreq) */
#define TMA_CTC_MASK 0xffffu	/* the CTC bits a TMA carries */

static inline void ft_tsc(struct ftime *t, const uint8_t *p)
{
	uint64_t v = 0;
	memcpy(&v, p, 7);
	t->have_tsc = 1;
	t->have_tma = t->have_mtc = 0;
	t->tsc = t->base = v;
	t->ctc = 0;
}

/* A TMA packet's payload at p (CTC, a reserved byte, FC); false where libipt refuses
 * it (no TSC before it, a second one) or may (bits set outside its fields). */
static inline bool ft_tma(const struct dctx *c, struct ftime *t, const uint8_t *p)
{
	uint32_t ctc = (uint32_t)p[0] | (uint32_t)p[1] << 8;
	uint64_t fc = (uint64_t)p[3] | (uint64_t)p[4] << 8;
	unsigned hi = c->opt->mtc_freq + MTC_BITS;
	if (!t->have_tsc || t->have_tma || t->have_mtc || p[2] || fc > 0x1ff)
		return false;
	t->have_tma = 1;
	t->base -= fc;
	/* a TMA holding all the CTC bits MTCs give counts as the last MTC */
	if (hi <= 16)
		t->have_mtc = 1;
	t->ctc = ctc & ((1u << hi) - 1);
	return true;
}

/* An MTC with CTC bits `v`; false where libipt fails it (a jump of more than one
 * wrap-around). */
static inline bool ft_mtc(const struct dctx *c, struct ftime *t, uint8_t v)
{
	unsigned freq = c->opt->mtc_freq;
	if (t->have_tsc && !t->have_tma)
		return true;	/* between a TSC and its TMA: ignored */
	uint32_t last = t->ctc, ctc = (uint32_t)v << freq;
	int had = t->have_mtc;
	t->have_mtc = 1;
	t->ctc = ctc;
	if (!had) {
		if (!t->have_tma)
			return true;	/* no idea where in the period tracing began */
		if (last & ~TMA_CTC_MASK)
			return false;
		/* the bits above the TMA's, from this MTC: one period back if its low
		 * bits are below the TMA's */
		uint32_t lo = ctc & TMA_CTC_MASK, hi = ctc & ~TMA_CTC_MASK;
		if (lo < last) {
			hi -= TMA_CTC_MASK + 1;
			hi &= 0xffu << freq;
		}
		last |= hi;
	}
	if (ctc < last) {
		ctc += 1u << (freq + MTC_BITS);
		if (ctc < last)
			return false;
	}
	uint64_t d = ((uint64_t)(ctc - last) * c->opt->cpuid_0x15_ebx) / c->opt->cpuid_0x15_eax;
	t->base += d;
	t->tsc = t->base;
	return true;
}

/* What a PSB+ the walker takes holds. */
struct psbinfo {
	uint64_t ip;		/* its FUP's */
	uint64_t end;		/* where it ends */
	struct ftime t;		/* the time a decoder synchronised there has after it */
	uint8_t cbr;		/* its CBR's ratio (0: none) */
	bool cbr_first;		/* before its MODE.Exec (and MODE.TSX): libipt's events come in
				 * that order */
	bool tsx;		/* a MODE.TSX outside a transaction (TSX-capable machines) */
	bool tsx_first;		/* before the MODE.Exec */
};

/* A PSB+ the walker takes: PSB, MODE.Exec 64-bit and a FUP, a TSC or not (with the
 * CPUID ratio: a TSC, then maybe a TMA), maybe a CBR and a MODE.TSX outside a
 * transaction, in any order, pads. */
static bool psb_plain_t(const struct dctx *c, uint64_t off, struct psbinfo *pi)
{
	const uint8_t *b = c->buf;
	uint64_t len = c->len, p = off + PSB_LEN, last = 0;
	bool fup = false, mode = false;
	struct ftime *t = &pi->t;
	memset(pi, 0, sizeof(*pi));

	if (off + PSB_LEN > len || memcmp(b + off, psb_bytes, PSB_LEN) != 0)
		return false;
	for (int n = 0; n < HEADER_MAX && p < len; n++) {
		uint8_t h = b[p];
		if (h == 0) {
			p++;
		} else if (h == 0x99) {
			/* MODE.Exec 64-bit, MODE.TSX not in a transaction: their events wait
			 * for the IP */
			if (p + 2 > len || (b[p + 1] == 0x01 ? mode : b[p + 1] != 0x20 || pi->tsx))
				return false;
			if (!mode && !pi->tsx)
				pi->cbr_first = pi->cbr != 0;
			if (b[p + 1] == 0x01) {
				mode = true;
			} else {
				pi->tsx = true;
				pi->tsx_first = !mode;
			}
			p += 2;
		} else if (h == 0x02 && p + 4 <= len && b[p + 1] == 0x03) {
			if (pi->cbr || !b[p + 2] || b[p + 3])	/* (libipt fails a ratio of 0) */
				return false;
			pi->cbr = b[p + 2];
			p += 4;
		} else if ((h & 0x1f) == 0x1d) {
			int k = ip_bytes[h >> 5];
			if (k <= 0 || fup || p + 1 + (uint64_t)k > len)
				return false;
			last = ip_update(last, h >> 5, b + p + 1);
			fup = true;
			p += 1 + (uint64_t)k;
		} else if (h == 0x19) {
			if (p + 8 > len || t->have_tsc)
				return false;
			ft_tsc(t, b + p + 1);
			p += 8;
		} else if (h == 0x02 && p + 7 <= len && b[p + 1] == 0x73) {
			if (!timed(c) || !ft_tma(c, t, b + p + 2))
				return false;
			p += 7;
		} else if (h == 0x02 && p + 2 <= len && b[p + 1] == 0x23) {
			pi->ip = last;
			pi->end = p + 2;
			/* a decoder synchronised here knows the time (MTCs move it from the TSC on) */
			return fup && mode && (t->have_tsc || !timed(c));
		} else {
			return false;
		}
	}
	return false;
}

static uint64_t next_psb(const struct dctx *c, uint64_t from);

/* The stretch from `from` (the end of a PSB+) is one the walker takes: only the
 * packets it knows, in an order that makes sense (TNT and TIP while tracing is on,
 * MODE.Exec and TIP.PGE while off), up to a plain PSB+ reached with tracing on.
 * Looked at before the walker starts it: libipt's events depend on the packets it
 * reads ahead, so what the walker delivers must not be found wrong later. */
static bool seg_plain_cbr(const struct dctx *c, uint64_t from, const struct ftime *t0, struct early_cbr *ec)
{
	const uint8_t *b = c->buf;
	uint64_t len = c->len, p = from, q = UINT64_MAX;
	bool on = true, mode = false;
	struct ftime t = *t0;	/* a timing packet libipt fails is its */

	ec->q = UINT64_MAX;
	while (p < len) {
		uint8_t h = b[p];
		if (!(h & 1) && h > 2) {
			if (!on)
				return false;
			q = p;
			p++;
		} else if (h == 0) {
			p++;
		} else if ((h & 0x1f) == 0x0d || (h & 0x1f) == 0x01 || (h & 0x1f) == 0x11) {
			unsigned ipc = h >> 5;
			int k = ip_bytes[ipc];
			if (k < 0 || p + 1 + (uint64_t)k > len)
				return false;
			q = UINT64_MAX;
			if ((h & 0x1f) == 0x0d) {
				if (!ipc || !on)
					return false;
				q = p;
			} else if ((h & 0x1f) == 0x01) {
				if (ipc || !on)
					return false;
				on = false;
			} else {
				if (!ipc || on)
					return false;
				on = true;
				mode = false;
				q = p;	/* its events are libipt's query here */
			}
			p += 1 + (uint64_t)k;
		} else if (h == 0x99) {	/* one before a TIP.PGE (its event waits for it) */
			if (p + 2 > len || b[p + 1] != 0x01 || on || mode)
				return false;
			mode = true;
			q = UINT64_MAX;
			p += 2;
		} else if (h == 0x19) {
			if (p + 8 > len)
				return false;
			ft_tsc(&t, b + p + 1);
			p += 8;
		} else if (h == 0x59) {
			if (p + 2 > len || !timed(c) || !ft_mtc(c, &t, b[p + 1]))
				return false;
			p += 2;
		} else if (h == 0x02 && p + 7 <= len && b[p + 1] == 0x73) {
			if (!timed(c) || !ft_tma(c, &t, b + p + 2))
				return false;
			p += 7;
		} else if (h == 0x02 && p + 8 <= len && b[p + 1] == 0xa3) {
			uint64_t v = 0;
			memcpy(&v, b + p + 2, 6);
			if (!v || !on)
				return false;
			q = p;
			p += 8;
		} else if (h == 0x02 && p + 2 <= len && b[p + 1] == 0x82) {
			struct psbinfo pi;
			if (!on || !psb_plain_t(c, p, &pi))
				return false;
			if (pi.cbr_first) {	/* (after no query: libipt's) */
				ec->q = q;
				ec->ratio = pi.cbr;
				ec->t = pi.t.have_tsc ? pi.t : t;
			}
			return !pi.cbr_first || q != UINT64_MAX;
		} else {
			return false;
		}
	}
	return false;	/* the end of the buffer: libipt says how it ends */
}

static bool seg_plain(const struct dctx *c, uint64_t from, const struct ftime *t0)
{
	struct early_cbr ec;
	return seg_plain_cbr(c, from, t0, &ec);
}

static uint64_t next_psb(const struct dctx *c, uint64_t from)
{
	if (from >= c->len)
		return c->len;
	const uint8_t *p = memmem(c->buf + from, c->len - from, psb_bytes, PSB_LEN);
	return p ? (uint64_t)(p - c->buf) : c->len;
}

/* Where libipt may hand over next: the first plain PSB+ from `from`, or a point a
 * scan window further on (looked at again when libipt gets there); UINT64_MAX none. */
static uint64_t find_lib_stop(const struct dctx *c, uint64_t from)
{
	uint64_t limit = from + SCAN_AHEAD;
	struct psbinfo pi;
	for (uint64_t p = next_psb(c, from); p < c->len; p = next_psb(c, p + 1)) {
		if (psb_plain_t(c, p, &pi) && seg_plain(c, pi.end, &pi.t))
			return p;
		if (p >= limit)
			return p;
	}
	return UINT64_MAX;
}

/* The block at ip, decoded from the image's sections only: the walker keeps it for
 * the whole decode, so code the fallback gives (JIT code, anonymous mappings, which
 * may change with the time) is left to libipt. */
static void fblk_fill(struct dctx *c, struct fblk *e, uint64_t ip)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	uint64_t a = ip;

	if (!e->key)
		dpt_table_note(&c->fast->tab, (size_t)(e - c->fast->cache));
	e->key = ip ^ c->space;
	e->bad = 1;
	for (uint32_t n = 1; n <= FB_MAX_INSNS; n++) {
		size_t got = dpt_image_read_sections(c->img, a, buf, sizeof(buf));
		if (!got || x86_dis_one(&c->dis, buf, got, a, &in) < 0)
			return;
		if (in.br.cls == X86_BR_NONE) {
			a += in.size;
			continue;
		}
		e->end = a;
		e->next = a + in.size;
		e->target = in.br.target;
		e->ninsn = n;
		e->indirect = 0;
		e->bad = 0;
		switch (in.br.cls) {
		case X86_BR_COND: e->cls = B_COND; e->ic = ptic_cond_jump; break;
		case X86_BR_JMP: e->cls = B_JUMP; e->ic = ptic_jump; break;
		case X86_BR_CALL: e->cls = B_CALL; e->ic = ptic_call; break;
		case X86_BR_JMP_IND: e->cls = B_JUMP; e->ic = ptic_jump; e->indirect = 1; break;
		case X86_BR_CALL_IND: e->cls = B_CALL; e->ic = ptic_call; e->indirect = 1; break;
		case X86_BR_RET: e->cls = B_RET; e->ic = ptic_return; e->indirect = 1; break;
		case X86_BR_SYSCALL: e->cls = B_FAR; e->ic = ptic_far_call; e->indirect = 1; break;
		default: e->bad = 1; break;	/* traps, far jumps: libipt's */
		}
		return;
	}
}

static inline const struct fblk *fblk_at(struct dctx *c, uint64_t ip)
{
	struct fblk *e = &c->fast->cache[(ip ^ (ip >> FB_BITS)) & ((1u << FB_BITS) - 1)];
	if (e->key != (ip ^ c->space) || !ip)
		fblk_fill(c, e, ip);
	return e->bad ? NULL : e;
}

/* The block from cur, as dpt_blk_take takes libipt's (dpt_int.h), with what the cache
 * knows of its end instead of a second lookup. */
static inline __attribute__((always_inline)) int take(struct dctx *c, const struct fblk *e)
{
	uint64_t ip = c->fast->cur;
	int r;
	if (__builtin_expect(c->unk, 0)) {
		c->unk = 0;
		if ((r = dpt_stitch(c, XEV_ST_BLOCK, ip)))
			return r;
	}
	if (c->pending && (r = dpt_resolve_in(c, ip, true)))
		return r;
	c->st->insns += e->ninsn;
	c->st->blocks++;
	struct xev *ev = c->next;
	if (c->held) {
		ev->end = e->end;
		ev->insns += e->ninsn;
		c->held = 0;
	} else {
		ev->kind = XEV_BLOCK;
		ev->flags = 0;
		ev->addr = 0;
		ev->ip = ip;
		ev->end = e->end;
		ev->insns = e->ninsn;
		ev->time = c->tmpl.time;
	}
	if ((r = dpt_commit(c)))
		return r;
	if (!(c->want_ic & (1u << e->ic)))
		return 0;
	c->pending = 1;
	c->pend_fall = e->cls == B_COND ? e->next : 0;
	ev = c->next;
	ev->kind = bclass_ev[e->cls].kind;
	ev->flags = bclass_ev[e->cls].flags | (e->indirect ? XEV_F_INDIRECT : 0) | c->specf;
	ev->ip = e->end;
	ev->end = 0;
	ev->insns = 0;
	return 0;
}

/* Follows the code from cur through direct jumps and calls (which need no packet) to
 * the block that ends in a branch which needs one; NULL (*r set) when it cannot. */
static inline __attribute__((always_inline)) const struct fblk *to_traced(struct dctx *c, int *r)
{
	struct dpt_fast *f = c->fast;
	for (int n = 0; n < FOLLOW_MAX; n++) {
		const struct fblk *e = fblk_at(c, f->cur);
		if (!e)
			break;
		if ((e->cls != B_JUMP && e->cls != B_CALL) || e->indirect)
			return e;
		if ((*r = take(c, e)))
			return NULL;
		f->cur = e->target;
	}
	*r = BAIL;
	return NULL;
}

static int tick(struct dctx *c, uint64_t ip);

static inline __attribute__((always_inline)) int tnt_bit(struct dctx *c, int taken)
{
	int r = 0;
	const struct fblk *e = to_traced(c, &r);
	if (!e)
		return r;
	if (e->cls != B_COND)
		return BAIL;	/* a compressed return among them */
	if ((r = take(c, e)))
		return r;
	c->fast->cur = taken ? e->target : e->next;
	return __builtin_expect(c->fast->ticks && c->fast->at.tsc != c->fast->ev_tsc, 0) ? tick(c, e->end) : 0;
}

/* A TIP (to `ip`) or a TIP.PGD without IP (ip 0): the next indirect branch. */
static inline __attribute__((always_inline)) int tip(struct dctx *c, uint64_t ip)
{
	int r = 0;
	const struct fblk *e = to_traced(c, &r);
	if (!e)
		return r;
	if (!e->indirect)
		return BAIL;
	if ((r = take(c, e)))
		return r;
	c->fast->cur = ip;
	return ip && c->fast->ticks && c->fast->at.tsc != c->fast->ev_tsc ? tick(c, e->end) : 0;
}

/* One of libipt's events, with its time: the last event's time decides the next tick. */
static int deliver_ev(struct dctx *c, const struct pt_event *ev)
{
	c->fast->ev_tsc = ev->tsc;
	int r = dpt_on_event(c, ev);
	if (r == PAUSED) {	/* taken up again when dpt_run goes on (f->pos is after it) */
		c->fast->saved = *ev;
		c->fast_saved = 1;
	}
	return r;
}

/* Delivers the queued events (dpt_fast.q) in order; 0 when all went. */
static int drain(struct dctx *c)
{
	struct dpt_fast *f = c->fast;
	int r = 0;
	while (!r && f->iq < f->nq)
		r = deliver_ev(c, &f->q[f->iq++]);
	if (!r)
		f->iq = f->nq = 0;
	return r;
}

/* An event of `type` at time t, queued (drain() delivers). */
static struct pt_event *push_ev(struct dctx *c, enum pt_event_type type, const struct ftime *t, uint64_t ip)
{
	struct dpt_fast *f = c->fast;
	struct pt_event *ev = &f->q[f->nq++];
	memset(ev, 0, sizeof(*ev));
	ev->type = type;
	ev->has_tsc = t->have_tsc;
	ev->tsc = t->tsc;
	switch (type) {
	case ptev_enabled:
		ev->variant.enabled.ip = ip;
		break;
	case ptev_disabled:
		ev->ip_suppressed = 1;
		break;
	case ptev_tick:
		ev->variant.tick.ip = ip;
		break;
	case ptev_tsx:
		ev->variant.tsx.ip = ip;
		break;
	default:
		ev->variant.exec_mode.ip = ip;
		ev->variant.exec_mode.mode = ptem_64bit;
		break;
	}
	return ev;
}

/* libipt's tick after a branch queried at a TNT or TIP whose time is not the last
 * event's (the block ending at it is taken, the branch made). */
static __attribute__((noinline)) int tick(struct dctx *c, uint64_t ip)
{
	push_ev(c, ptev_tick, &c->fast->at, ip);
	return drain(c);
}

static int event(struct dctx *c, enum pt_event_type type, uint64_t ip)
{
	push_ev(c, type, &c->fast->t, ip);
	return drain(c);
}

/* The instructions from `from` up to `to` (exclusive): how many, the last one. */
static int count_to(struct dctx *c, uint64_t from, uint64_t to, uint32_t *n, uint64_t *last)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	uint64_t a = from;
	for (*n = 0; a < to && *n < FB_MAX_INSNS; ++*n) {
		size_t got = dpt_image_read_sections(c->img, a, buf, sizeof(buf));
		if (!got || x86_dis_one(&c->dis, buf, got, a, &in) < 0)
			return BAIL;
		*last = a;
		a += in.size;
	}
	return a == to ? 0 : BAIL;
}

/* A PSB+ with its IP at `to`: libipt's block decoder goes there (through direct
 * branches) before it takes the PSB+, ending its block where the PSB+ fell. */
static int advance_to(struct dctx *c, uint64_t to)
{
	struct dpt_fast *f = c->fast;
	int r;
	for (int n = 0; n < FOLLOW_MAX; n++) {
		if (f->cur == to)
			return 0;
		const struct fblk *e = fblk_at(c, f->cur);
		if (!e)
			return BAIL;
		if (to > f->cur && to <= e->end) {
			struct pt_block b;
			uint32_t n;
			memset(&b, 0, sizeof(b));
			if ((r = count_to(c, f->cur, to, &n, &b.end_ip)))
				return r;
			b.ninsn = (uint16_t)n;
			b.ip = f->cur;
			b.iclass = ptic_other;
			if ((r = dpt_blk_take(c, &b, true, &c->st->insns, &c->st->blocks)))
				return r;
			f->cur = to;
			return 0;
		}
		if ((e->cls != B_JUMP && e->cls != B_CALL) || e->indirect)
			return BAIL;
		if ((r = take(c, e)))
			return r;
		f->cur = e->target;
	}
	return BAIL;
}

/* The PSB+ at f->psb is taken: the state before it is the checkpoint. */
static int checkpoint(struct dctx *c)
{
	struct dpt_fast *f = c->fast;
	int r = dpt_deliver(c);
	if (r)
		return r;
	f->snap = *c;
	f->snap_slot = *c->next;
	f->snap_st = *c->st;
	c->counted = 0;
	c->st->walked++;
	if (c->opt->release_behind)
		dpt_release(c, f->psb);
	if (c->opt->progress)
		c->opt->progress(c->opt->progress_ctx, c->buf + f->psb);
	f->pos = f->psb_end;
	f->last_ip = f->cur;
	f->tnt_done = 0;
	f->mode_seen = 0;
	f->nq = f->iq = 0;
	/* libipt's status updates (MODE.Exec with the PSB+'s IP, the CBR) in the PSB+'s
	 * order, with the time after the PSB+ (from its TSC, else the last one) */
	struct psbinfo pi;
	psb_plain_t(c, f->psb, &pi);
	if (pi.t.have_tsc)
		f->t = pi.t;
	if (pi.cbr && pi.cbr_first && !f->cbr_done)
		push_ev(c, ptev_cbr, &f->t, 0)->variant.cbr.ratio = pi.cbr;
	f->cbr_done = 0;
	if (pi.tsx && pi.tsx_first)
		push_ev(c, ptev_tsx, &f->t, f->cur);
	push_ev(c, ptev_exec_mode, &f->t, f->cur);
	if (pi.tsx && !pi.tsx_first)
		push_ev(c, ptev_tsx, &f->t, f->cur);
	if (pi.cbr && !pi.cbr_first)
		push_ev(c, ptev_cbr, &f->t, 0)->variant.cbr.ratio = pi.cbr;
	for (int i = 0; i < f->nq; i++)
		f->q[i].status_update = 1;
	return drain(c);
}

/* Back to the checkpoint: libipt decodes from its PSB, without the events delivered
 * since. */
static void rollback(struct dctx *c)
{
	struct dpt_fast *f = c->fast;
	uint64_t counted = c->counted;
	const struct xev_sink *sink = c->sink, *real = c->real_sink;
	/* with the checkpoint's limit too (it may be from an earlier dpt_run): libipt's
	 * first event, the PSB+'s status update, pauses where the walker's did, and with
	 * split_at_pause gives out the block held across the PSB+ as the walker did.  The
	 * limits of later dpt_runs change nothing that shows: the walker's other events
	 * hold no block (a disable gives it out before it pauses) */
	*c = f->snap;
	c->sink = sink;
	c->real_sink = real;
	c->fast_saved = 0;
	f->nq = f->iq = 0;
	*c->next = f->snap_slot;
	*c->st = f->snap_st;
	c->skip = counted;
	c->counted = 0;
	c->in_fast = 0;
	c->in_sync = 0;
	c->sync_at = f->psb + 1;
	c->lib_stop = find_lib_stop(c, f->psb + 1);
}

/* A piece may end at the PSB at p or at the one after it (dpt_options.stop).  Where
 * it ends is libipt's to say: its query decoder reads ahead of the events it gives,
 * through a PSB+ no branch follows, and takes the last PSB it passed; and a decoder
 * synchronised at a PSB (the walker's checkpoint) may see the PSB+ after it at
 * another point of its read-ahead than one that decoded up to it.  So the walker
 * neither starts at such a PSB nor goes past one. */
static bool near_stop(const struct dctx *c, uint64_t p)
{
	const struct dpt_options *o = c->opt;
	size_t lo = 0, hi = o->npsbs;
	p += o->psb_base;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (o->psbs[mid] < p)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t k = lo; k < o->npsbs && k <= lo + 1; k++)
		if (o->stop[k] && o->psbs[k] >= o->stop_from)
			return true;
	return false;
}

static int at_psb(struct dctx *c, uint64_t p)
{
	struct dpt_fast *f = c->fast;
	int r;
	/* libipt takes the stretch before a PSB+ the walker does not take, up to and
	 * through that PSB+ (a decoder synchronising there could see another error, at
	 * another offset, than one that decoded up to it) */
	struct psbinfo pi;
	struct early_cbr ec;
	if (!c->enabled || !psb_plain_t(c, p, &pi) ||
	    !seg_plain_cbr(c, pi.end, pi.t.have_tsc ? &pi.t : &f->t, &ec) || (c->opt->npsbs && near_stop(c, p)))
		return BAIL;
	/* a PSB+ without a TSC after one: a decoder synchronised there would know no
	 * time (libipt fails a TMA without a TSC before it, one that ran up to it not) */
	if (!pi.t.have_tsc && f->t.have_tsc)
		return BAIL;
	if ((r = advance_to(c, pi.ip)))
		return r;
	f->psb = p;
	f->psb_end = pi.end;
	f->ec = ec;
	return checkpoint(c);
}

/* The event of the CBR of the PSB+ ahead (struct early_cbr), after its query's (r:
 * what the query returned; a tick that paused goes first). */
static __attribute__((noinline)) int early_cbr(struct dctx *c, int r)
{
	struct dpt_fast *f = c->fast;
	if (r && r != PAUSED)
		return r;
	struct pt_event *ev = push_ev(c, ptev_cbr, &f->ec.t, 0);
	ev->variant.cbr.ratio = f->ec.ratio;
	ev->status_update = 1;
	f->ec.q = UINT64_MAX;
	f->cbr_done = 1;
	return r ? r : drain(c);
}

/* A TNT's bit paused at (dpt_run's limit, at a tick): the walk goes on with the next
 * bit of the TNT at p. */
static int tnt_paused(struct dpt_fast *f, int r, uint64_t p, int done)
{
	if (r == PAUSED) {
		f->pos = p;
		f->tnt_done = done;
	}
	return r;
}

/* The bits of the TNT at p, v its payload, from its highest (`top`, below the stop
 * bit) down to bit `low` (TNT-8's bit 0 is the header's), from where a pause left
 * off; the PSB+ ahead's early CBR after the first bit's query. */
static inline __attribute__((always_inline)) int tnt_bits(struct dctx *c, uint64_t p, uint64_t v, int top,
							   int low)
{
	struct dpt_fast *f = c->fast;
	f->at = f->t;
	for (int i = top - f->tnt_done; i >= low; i--) {
		int r = tnt_bit(c, (int)((v >> i) & 1));
		if (__builtin_expect(p == f->ec.q, 0) && i == top)
			r = early_cbr(c, r);
		if (r)
			return tnt_paused(f, r, p, top - i + 1);
	}
	f->tnt_done = 0;
	return 0;
}

static int walk(struct dctx *c)
{
	struct dpt_fast *f = c->fast;
	const uint8_t *b = c->buf;
	uint64_t len = c->len, p = f->pos;
	int r = 0;

	while (p < len) {
		uint8_t h = b[p];
		if (!(h & 1) && h > 2) {	/* TNT-8: the bits below the stop bit */
			if (!c->enabled)
				return BAIL;
			if ((r = tnt_bits(c, p, h, 30 - __builtin_clz(h), 1)))
				return r;
			p++;
		} else if (h == 0) {
			p++;
		} else if ((h & 0x1f) == 0x0d || (h & 0x1f) == 0x01 || (h & 0x1f) == 0x11) {
			unsigned ipc = h >> 5;
			int k = ip_bytes[ipc];
			if (k < 0 || p + 1 + (uint64_t)k > len)
				return BAIL;
			uint64_t ip = 0;
			if (ipc) {
				ip = ip_update(f->last_ip, ipc, b + p + 1);
				f->last_ip = ip;
			}
			f->pos = p + 1 + (uint64_t)k;	/* where a pause at its event goes on */
			if ((h & 0x1f) == 0x0d) {	/* TIP */
				if (!ipc || !c->enabled)
					return BAIL;
				f->at = f->t;
				r = tip(c, ip);
				if (__builtin_expect(p == f->ec.q, 0))
					r = early_cbr(c, r);
			} else if ((h & 0x1f) == 0x01) {	/* TIP.PGD: at the next indirect branch */
				if (ipc || !c->enabled)
					return BAIL;
				if (!(r = tip(c, 0))) {
					c->enabled = 0;
					r = event(c, ptev_disabled, 0);
				}
			} else {	/* TIP.PGE */
				if (!ipc || c->enabled)
					return BAIL;
				c->enabled = 1;
				f->cur = ip;
				push_ev(c, ptev_enabled, &f->t, ip);
				/* libipt's event for a MODE.Exec before it comes after it, with the
				 * time at the MODE.Exec (later when a TSC between them went back) */
				if (f->mode_seen) {
					f->mode_seen = 0;
					push_ev(c, ptev_exec_mode, &f->mode_t, ip);
				}
				r = __builtin_expect(p == f->ec.q, 0) ? early_cbr(c, 0) : drain(c);
			}
			if (r)
				return r;
			p += 1 + (uint64_t)k;
		} else if (h == 0x19) {	/* TSC: the time of libipt's next events */
			if (p + 8 > len)
				return BAIL;
			ft_tsc(&f->t, b + p + 1);
			p += 8;
		} else if (h == 0x59) {	/* MTC */
			if (p + 2 > len || !timed(c) || !ft_mtc(c, &f->t, b[p + 1]))
				return BAIL;
			p += 2;
		} else if (h == 0x02 && p + 7 <= len && b[p + 1] == 0x73) {	/* TMA */
			if (!timed(c) || !ft_tma(c, &f->t, b + p + 2))
				return BAIL;
			p += 7;
		} else if (h == 0x99) {	/* MODE.Exec before a TIP.PGE */
			if (p + 2 > len || b[p + 1] != 0x01 || c->enabled || f->mode_seen)
				return BAIL;
			f->mode_seen = 1;
			f->mode_t = f->t;
			p += 2;
		} else if (h == 0x02 && p + 8 <= len && b[p + 1] == 0xa3) {	/* TNT-64 */
			uint64_t v = 0;
			memcpy(&v, b + p + 2, 6);
			if (!v || !c->enabled)
				return BAIL;
			if ((r = tnt_bits(c, p, v, 62 - __builtin_clzll(v), 0)))
				return r;
			p += 8;
		} else if (h == 0x02 && p + 2 <= len && b[p + 1] == 0x82) {
			if ((r = at_psb(c, p)))
				return r;
			p = f->pos;
		} else {
			return BAIL;
		}
	}
	return BAIL;	/* the end of the buffer: libipt says how it ends */
}

int dpt_fast_run(struct dctx *c)
{
	struct dpt_fast *f = c->fast;
	int r = 0;
	if (c->fast_saved) {	/* its time is taken now: it goes through */
		c->fast_saved = 0;
		r = dpt_on_event(c, &f->saved);
		if (!r)
			r = drain(c);	/* the events after it */
	} else if (f->start) {
		f->start = 0;
		r = checkpoint(c);
	}
	if (!r)
		r = walk(c);
	if (r != BAIL)
		return r;
	rollback(c);
	return HANDOVER;
}

/* The walker starts at a PSB+ libipt (or the start of the buffer) reached with its
 * block decoder at the PSB+'s IP. */
static void start_at(struct dctx *c, uint64_t psb, uint64_t ip, uint64_t end)
{
	struct dpt_fast *f = c->fast;
	f->psb = psb;
	f->psb_end = end;
	f->cur = ip;
	f->start = 1;
	c->in_fast = 1;
	c->in_sync = 0;
	c->lib_stop = UINT64_MAX;
}

void dpt_fast_begin(struct dctx *c)
{
	struct psbinfo pi;
	if (psb_plain_t(c, 0, &pi) && seg_plain_cbr(c, pi.end, &pi.t, &c->fast->ec) &&
	    !(c->opt->npsbs && near_stop(c, 0))) {
		memset(&c->fast->t, 0, sizeof(c->fast->t));
		c->fast->cbr_done = 0;
		c->enabled = 1;
		c->synced = 1;
		start_at(c, 0, pi.ip, pi.end);
	} else {
		c->lib_stop = find_lib_stop(c, 0);
	}
}

/* libipt comes to the PSB+ at `at` with nothing of before still bound to come: the
 * packet before it (pads and timing packets aside) is a TNT or a TIP, where libipt's
 * read-ahead stopped until the code got there.  After anything else it read on through
 * the PSB+'s header before delivering the events of before, so the status update
 * dpt_fast_take_over sees with its offset past this PSB+ may be an earlier PSB+'s; and
 * a FUP with no TIP yet (an asynchronous branch: the SDM has FUP "never sent alone",
 * and nothing says a PSB+ ends a compound event), a MODE.Exec, a PIP stay queued in
 * libipt across the PSB+ for the TIP that follows it, where the walker would carry
 * nothing.  Packets are read from the PSB before `at` (libipt's sync point at most:
 * it carries nothing from before it). */
static bool psb_clean(const struct dctx *c, uint64_t at)
{
	if (at == c->sync)
		return true;
	if (at < c->sync + PSB_LEN)
		return false;
	uint64_t p = at - PSB_LEN;
	while (p > c->sync && (c->buf[p] != 2 || memcmp(c->buf + p, psb_bytes, PSB_LEN) != 0))
		p--;
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)c->buf;
	cfg.end = (uint8_t *)c->buf + at;
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return false;
	enum pt_packet_type last = ppt_invalid;
	struct pt_packet pk;
	uint64_t end = 0;
	int r = pt_pkt_sync_set(pd, p);
	while (r >= 0 && (r = pt_pkt_next(pd, &pk, sizeof(pk))) >= 0)
		if (pk.type != ppt_pad && pk.type != ppt_tsc && pk.type != ppt_mtc && pk.type != ppt_tma &&
		    pk.type != ppt_cbr && pk.type != ppt_cyc)
			last = pk.type;
	bool ok = r == -pte_eos && pt_pkt_get_offset(pd, &end) == 0 && end == at;
	pt_pkt_free_decoder(pd);
	return ok && (last == ppt_tnt_8 || last == ppt_tnt_64 || last == ppt_tip);
}

int dpt_fast_take_over(struct dctx *c, uint64_t off, const struct pt_event *pev)
{
	uint64_t at = c->lib_stop;
	struct psbinfo pi;
	if (off <= at)
		return 0;
	/* a CBR before the MODE.Exec: its event comes before libipt is at the IP (struct
	 * early_cbr); the MODE.Exec's, at the IP, is where the walker may take over */
	if (pev->type == ptev_cbr && psb_plain_t(c, at, &pi) && pi.cbr_first && next_psb(c, at + 1) >= off)
		return 0;
	c->lib_stop = find_lib_stop(c, off);
	if (!psb_plain_t(c, at, &pi) || next_psb(c, at + 1) < off ||
	    (c->opt->npsbs && near_stop(c, at)))
		return 0;
	/* libipt takes the PSB+'s status update once it reached its IP, having read ahead
	 * to the first packet after it (pads and timing packets taken); further on, it
	 * took packets after the PSB+ to get there (its code before did not lead to the
	 * IP) */
	uint64_t first = pi.end;
	for (;;) {
		const uint8_t *q = c->buf + first;
		uint64_t n = first >= c->len ? 0 : !*q ? 1 : *q == 0x19 ? 8 : *q == 0x59 && timed(c) ? 2 :
			*q == 0x02 && first + 1 < c->len && q[1] == 0x73 && timed(c) ? 7 : 0;
		if (!n || first + n > c->len)
			break;
		first += n;
	}
	if (off != first)
		return 0;
	/* what the walker carries: tracing on at the PSB+'s IP, nothing else pending; the
	 * update's time is the PSB+'s TSC, or none yet (a decoder synchronised at the PSB,
	 * where the walker gives back, would know none: at_psb).  The walker makes this
	 * update and those after it again */
	bool first_ok = !pev->ip_suppressed && (pi.tsx_first ?
		pev->type == ptev_tsx && pev->variant.tsx.ip == pi.ip && !pev->variant.tsx.speculative &&
		!pev->variant.tsx.aborted :
		pev->type == ptev_exec_mode && pev->variant.exec_mode.ip == pi.ip);
	if (!c->enabled || c->in_tsx || c->specf || c->err || c->cyc_mode || c->have_saved || !first_ok ||
	    (pi.t.have_tsc ? !pev->has_tsc || pev->tsc != pi.t.tsc : pev->has_tsc) || !psb_clean(c, at))
		return 0;
	/* the time libipt's events carried up to here (a PSB+ without TSC keeps it) */
	if (pi.t.have_tsc) {
		c->fast->t = pi.t;
	} else {
		memset(&c->fast->t, 0, sizeof(c->fast->t));
		c->fast->t.have_tsc = pev->has_tsc;
		c->fast->t.tsc = c->fast->t.base = pev->tsc;
	}
	if (!seg_plain_cbr(c, pi.end, &c->fast->t, &c->fast->ec))
		return 0;
	c->fast->cbr_done = pi.cbr_first;	/* libipt's */
	start_at(c, at, pi.ip, pi.end);
	return 1;
}

#define WALKABLE_PSBS 16	/* PSBs looked at */

bool dpt_walkable(const uint8_t *buf, size_t len, const struct dpt_options *opt)
{
	struct dctx c;
	struct psbinfo pi;
	unsigned seen = 0, plain = 0;
	if (opt->mode != DPT_BLOCKS || opt->libipt_only)
		return false;
	memset(&c, 0, sizeof(c));
	c.buf = buf;
	c.len = len;
	c.opt = opt;
	for (uint64_t p = next_psb(&c, 0); p < len && seen < WALKABLE_PSBS; p = next_psb(&c, p + 1)) {
		seen++;
		plain += psb_plain_t(&c, p, &pi) && seg_plain(&c, pi.end, &pi.t);
	}
	return plain > 0 && 2 * plain >= seen;
}

/* The transfers the consumer does not want (dpt_options.ignore) are not delivered:
 * libipt's block decoder gives some anyway (a block whose class its cache does not
 * know is looked up, and its transfer made), the walker none, so that both deliver
 * the same events, and count them alike. */
static inline bool unwanted(const struct dctx *c, const struct xev *ev)
{
	return c->opt->ignore & (1u << XEV_BRANCH | 1u << XEV_CALL | 1u << XEV_RETURN) & (1u << ev->kind);
}

static int wrap_fn(void *ctx, const struct xev *ev)
{
	struct dctx *c = ctx;
	if (unwanted(c, ev))
		return 0;
	if (c->skip) {
		c->skip--;
		return 0;
	}
	c->counted++;
	return xev_emit(c->real_sink, ev);
}

static int wrap_run(struct dctx *c, const struct xev *evs, size_t n)
{
	if (c->skip) {
		size_t k = c->skip < n ? (size_t)c->skip : n;
		c->skip -= k;
		evs += k;
		n -= k;
		if (!n)
			return 0;
	}
	c->counted += n;
	return xev_emit_batch(c->real_sink, evs, n);
}

static int wrap_batch(void *ctx, const struct xev *evs, size_t n)
{
	struct dctx *c = ctx;
	if (!(c->opt->ignore & (1u << XEV_BRANCH | 1u << XEV_CALL | 1u << XEV_RETURN)))
		return wrap_run(c, evs, n);
	for (size_t i = 0, j; i < n; i = j) {
		while (i < n && unwanted(c, &evs[i]))
			i++;
		for (j = i; j < n && !unwanted(c, &evs[j]); j++)
			;
		int r = j > i ? wrap_run(c, evs + i, j - i) : 0;
		if (r)
			return r;
	}
	return 0;
}

int dpt_fast_init(struct dctx *c)
{
	c->fast = calloc(1, sizeof(*c->fast));
	if (!c->fast)
		return -ENOMEM;
	if (dpt_table_get(&c->fast->tab, 1u << FB_BITS, sizeof(*c->fast->cache)) < 0) {
		free(c->fast);
		c->fast = NULL;
		return -ENOMEM;
	}
	c->fast->cache = c->fast->tab.ent;
	c->wrap = (struct xev_sink){ wrap_fn, c, wrap_batch };
	return 0;
}

void dpt_fast_ticks(struct dctx *c, bool ticks)
{
	c->fast->ticks = ticks;
}

void dpt_fast_free(struct dctx *c)
{
	if (c->fast)
		dpt_table_put(&c->fast->tab);
	free(c->fast);
	c->fast = NULL;
}
