/* libipt decode loops (block and instruction decoders) producing xev events.
 *
 * The loop is resumable (dpt_run): it pauses at the first timestamp later than the
 * caller's limit, so several traces (perf's per-cpu or per-thread AUX queues) can be
 * decoded together in time order.  The check costs nothing per block: it is made only
 * where the time changes.
 *
 * A block's terminating transfer is only known once the next block (its target)
 * arrives, so it is kept pending and emitted right before that block; an interrupt,
 * a disable or a gap in between resolves it too (or drops it when nothing is known).
 * Errors become gaps and decoding resumes at the next PSB. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decoders/pt/dpt_int.h"

/* Records a gap for error `err` found at `off`; the trace up to `to` is skipped. */
static int gap(struct dctx *c, int err, uint64_t off, uint64_t to)
{
	struct xev ev = dpt_mkev(c, XEV_GAP);
	int r = dpt_flush_held(c);	/* it ran before the trace was lost */
	if (r || (r = dpt_drop_pending(c)))
		return r;
	c->enabled = 0;
	if (c->in_tsx && (r = dpt_tsx_end(c, false)))	/* its outcome is not known */
		return r;
	c->specf = 0;
	if (!c->st->first_error) {
		c->st->first_error = err;
		c->st->first_error_offset = c->opt->base_offset + off;
	}
	if (off > c->len)
		off = c->len;
	if (to < off)
		to = off;
	if (to > c->len)
		to = c->len;
	ev.reason = pt_errstr(pt_errcode(err));
	ev.offset = c->opt->base_offset + off;
	ev.lost = to - off;
	c->st->gaps++;
	c->st->lost_bytes += ev.lost;
	if (pt_errcode(err) == pte_nomap) {
		c->st->nocode++;
		c->st->nocode_bytes += ev.lost;
	}
	return dpt_emit(c, &ev);
}

/* A piece reaching the PSB+ of a PSB it may end at (dpt_options.stop): it ends there
 * when nothing but a held block or a pending transfer carries over, which the piece
 * after it, starting at that PSB, stitches (decode/dec_par.h).  Only the first event
 * of a PSB+ is looked at: the piece after it takes them all. */
int dpt_at_stop(struct dctx *c, uint64_t off)
{
	const struct dpt_options *o = c->opt;
	off += o->psb_base;
	if (off <= o->stop_from)
		return 0;
	size_t lo = 0, hi = o->npsbs;
	while (lo < hi) {	/* the last PSB before the decoder's position */
		size_t mid = lo + (hi - lo) / 2;
		if (o->psbs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || lo - 1 == c->psb_seen)
		return 0;
	size_t k = lo - 1;
	c->psb_seen = k;
	if (o->psbs[k] < o->stop_from || !o->stop[k] || c->in_tsx || c->cyc_mode)
		return 0;
	c->st->stopped_at = k;
	return 1;
}

/* The piece ends: what carries over to the next one goes out as XEV_STITCH. */
int dpt_piece_end(struct dctx *c)
{
	struct xev m;
	if (c->held) {
		m = c->out ? *c->next : c->blk_ev;
		m.sub = XEV_ST_HELD;
	} else if (c->pending) {
		m = c->out ? *c->next : c->br_ev;
		m.arg0 = m.kind;
		m.arg1 = c->pend_fall;
		m.addr = m.time = 0;	/* the slot's last use: the resolution sets them */
		m.sub = XEV_ST_PENDING;
	} else {
		return PIECE_END;
	}
	m.kind = XEV_STITCH;
	c->held = c->pending = 0;
	int r = dpt_emit(c, &m);
	return r ? r : PIECE_END;
}

/* The two libipt decoders have parallel APIs; the loop is written once over these. */
struct dec_ops {
	int (*sync_forward)(void *dec);
	int (*get_offset)(const void *dec, uint64_t *off);
	int (*get_sync_offset)(const void *dec, uint64_t *off);
	int (*event)(void *dec, struct pt_event *ev, size_t size);
	/* decodes and emits the next block/instruction; returns libipt status, or
	 * XEV_STOP (below) when the sink stopped the decode */
	int (*step)(struct dctx *c, void *dec);
};

#define SINK_STOPPED (-0x10000)

static int blk_sync_forward(void *d) { return pt_blk_sync_forward(d); }
static int blk_get_offset(const void *d, uint64_t *o) { return pt_blk_get_offset(d, o); }
static int blk_get_sync_offset(const void *d, uint64_t *o) { return pt_blk_get_sync_offset(d, o); }
static int blk_event(void *d, struct pt_event *e, size_t n) { return pt_blk_event(d, e, n); }
static int insn_sync_forward(void *d) { return pt_insn_sync_forward(d); }
static int insn_get_offset(const void *d, uint64_t *o) { return pt_insn_get_offset(d, o); }
static int insn_get_sync_offset(const void *d, uint64_t *o) { return pt_insn_get_sync_offset(d, o); }
static int insn_event(void *d, struct pt_event *e, size_t n) { return pt_insn_event(d, e, n); }

static int blk_step(struct dctx *c, void *dec)
{
	struct pt_block b;
	int status = pt_blk_next(dec, &b, sizeof(b));
	return dpt_blk_take(c, &b, false, &c->st->insns, &c->st->blocks) ? SINK_STOPPED : status;
}

/* The hot one, inlined into the loop.  While the decoder has nothing else to say
 * (no event pending, no error, not the end of the trace) and no release is due
 * (run() counts steps), the next block is decoded before this one is taken in:
 * reading a block right after libipt wrote it waited on those stores, which cost
 * more than taking it in.  Nothing between the two calls depends on the order (time
 * and image change only at events), and the events keep theirs. */
static inline __attribute__((always_inline)) int blk_out_step(struct dctx *c, void *dec)
{
	struct pt_block b[2], *cur = &b[0], *ahead = &b[1];
	/* counted here, in registers, and added up once */
	uint64_t insns = 0, blocks = 0;
	uint32_t room = 0xfff - (c->steps & 0xfff), left = room;
	int r = 0, status = pt_blk_next(dec, cur, sizeof(*cur));
	while (!(status & (pts_event_pending | pts_eos)) && status >= 0 && left) {
		left--;
		int st = pt_blk_next(dec, ahead, sizeof(*ahead));
		if ((r = dpt_blk_take(c, cur, true, &insns, &blocks)))
			break;
		struct pt_block *t = cur;
		cur = ahead;
		ahead = t;
		status = st;
	}
	if (!r)
		r = dpt_blk_take(c, cur, true, &insns, &blocks);
	c->steps += room - left;
	c->st->insns += insns;
	c->st->blocks += blocks;
	return r ? SINK_STOPPED : status;
}

/* The instruction decoder's hot path: one event per instruction, so the event is
 * kept filled between calls and only what changes is written. */
static int insn_step(struct dctx *c, void *dec)
{
	struct pt_insn in;
	in.iclass = ptic_error;	/* left untouched when libipt returns early (end of trace) */
	int status = pt_insn_next(dec, &in, sizeof(in));
	c->query_branch = 0;
	if (in.iclass != ptic_error) {
		int r = dpt_resolve(c, in.ip);
		if (!r) {
			struct xev *ev = &c->insn_ev;
			ev->time = c->tmpl.time;
			ev->ip = ev->end = in.ip;
			ev->flags = in.speculative ? XEV_F_SPECULATIVE : 0;
			ev->bytes = in.raw;
			ev->nbytes = in.size;
			c->st->insns++;
			c->st->blocks++;
			r = dpt_emit(c, ev);
		}
		if (r) {
			c->stop = r;
			return SINK_STOPPED;
		}
		dpt_set_pending(c, in.ip, in.iclass, false);
		/* (run() takes a disable bound to it: bound_disable) */
		c->query_branch = (status == -pte_bad_query || status == -pte_eos) && in.iclass != ptic_other;
	}
	return status;
}

static const struct dec_ops blk_ops = {
	blk_sync_forward, blk_get_offset, blk_get_sync_offset, blk_event, blk_step,
};
static const struct dec_ops blk_out_ops = {
	blk_sync_forward, blk_get_offset, blk_get_sync_offset, blk_event, blk_out_step,
};
static const struct dec_ops insn_ops = {
	insn_sync_forward, insn_get_offset, insn_get_sync_offset, insn_event, insn_step,
};

static void release(struct dctx *c, void *dec, const struct dec_ops *ops)
{
	uint64_t off;
	if (ops->get_offset(dec, &off) == 0)
		dpt_release(c, off);
}

/* A TIP.PGD without an IP binds to the next branch that needs trace (a ret, an
 * indirect or conditional branch): libipt's block decoder knows it, its instruction
 * decoder (2.0) fails that branch's query instead (no match, or the end of the
 * trace), with the disable already fetched.  Taking the disable there is what the
 * block decoder does.  Any other event (or none) leaves the error standing, reported
 * where it was found, not after the event taken; decoding resumes at the next PSB
 * all the same.  *status becomes the event's status; returns on_event's return. */
static int bound_disable(struct dctx *c, void *dec, const struct dec_ops *ops, int *status)
{
	struct pt_event pev;
	uint64_t off;
	int have_off = ops->get_offset(dec, &off) >= 0;
	int st = ops->event(dec, &pev, sizeof(pev));

	c->query_branch = 0;
	if (st < 0 || pev.type != ptev_disabled) {
		if (have_off && *status != -pte_eos) {
			c->err_off = off;
			c->have_err_off = 1;
		}
		return 0;
	}
	*status = st;
	int r = dpt_on_event(c, &pev);
	if (r == PAUSED) {
		c->saved = pev;
		c->have_saved = 1;
		c->status = st;
	}
	return r;
}

/* Inlined into each caller with a constant `ops`, so the per-block calls are direct.
 * Returns 0 at the end of the buffer, PAUSED at dpt_run's limit, else the value
 * dpt_run returns; the state between calls lives in `c`. */
static inline __attribute__((always_inline)) int run(struct dctx *c, void *dec, const struct dec_ops *ops)
{
	int status = c->status, r;

	if (c->have_saved) {
		c->have_saved = 0;
		if ((r = dpt_on_event(c, &c->saved)))
			return r;
	}
	for (;;) {
		if (!c->in_sync) {
			/* after the walker (dpt_fast.c): at the PSB it could not go on from */
			status = c->sync_at ? pt_blk_sync_set(dec, c->sync_at - 1) : ops->sync_forward(dec);
			c->sync_at = 0;
			uint64_t sync = c->len;
			if (status >= 0) {
				ops->get_sync_offset(dec, &sync);
			} else if (status != -pte_eos) {
				/* a broken PSB+ header: the next sync starts beyond it */
				if (ops->get_sync_offset(dec, &sync) < 0 || (c->bad_sync && sync <= c->last_bad))
					return c->err ? gap(c, c->err, c->err_off, c->len) : 0;
				c->bad_sync = 1;
				c->last_bad = sync;
				if (!c->err) {
					c->err = status;
					c->err_off = sync;
				}
				c->synced = 1;
				continue;
			}
			if (c->err) {
				/* the bytes from the error to the next PSB (or the end) are lost */
				if ((r = gap(c, c->err, c->err_off, sync)))
					return r;
				c->err = 0;
			} else if (!c->synced && sync > 0) {
				struct xev ev = dpt_mkev(c, XEV_GAP);
				ev.reason = "no PSB at the start of the trace";
				ev.offset = c->opt->base_offset;
				ev.lost = sync;
				c->st->gaps++;
				c->st->lost_bytes += sync;
				if ((r = dpt_emit(c, &ev)))
					return r;
			}
			if (status < 0)
				return 0;
			c->synced = 1;
			c->in_sync = 1;
			c->sync = sync;
			c->enabled = !(status & pts_ip_suppressed);
		}
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event pev;
				status = ops->event(dec, &pev, sizeof(pev));
				if (status < 0)
					break;
				uint64_t off;
				if (pev.status_update && (c->opt->npsbs || c->fast) && ops->get_offset(dec, &off) == 0) {
					if (c->opt->npsbs && dpt_at_stop(c, off))
						return dpt_piece_end(c);
					if (c->fast && dpt_fast_take_over(c, off, &pev))
						return HANDOVER;
				}
				if ((r = dpt_on_event(c, &pev))) {
					if (r == PAUSED) {
						c->saved = pev;
						c->have_saved = 1;
						c->status = status;
					}
					return r;
				}
			}
			if (status < 0)
				break;
			/* the trace is over (libipt's pts_eos, once the events are taken): what
			 * follows is not proven by it, even the straight-line code libipt
			 * would go on decoding */
			if (status & pts_eos) {
				status = -pte_eos;
				break;
			}
			status = ops->step(c, dec);
			if (status == SINK_STOPPED)
				return c->stop;
			if (c->query_branch && (r = bound_disable(c, dec, ops, &status)))
				return r;
			if (!(++c->steps & 0xfff) && c->opt->release_behind)
				release(c, dec, ops);
			if (!(c->steps & 0xfff) && c->opt->progress) {
				uint64_t off;
				if (ops->get_offset(dec, &off) == 0)
					c->opt->progress(c->opt->progress_ctx, c->buf + off);
			}
			if (status < 0)
				break;
		}
		if (status == -pte_eos) {
			if ((r = dpt_flush_held(c)) || (r = dpt_resolve(c, 0)))
				return r;
			if (c->in_tsx && (r = dpt_tsx_end(c, false)))
				return r;
			if (c->enabled) {
				struct xev ev = dpt_mkev(c, XEV_END);
				c->enabled = 0;
				if ((r = dpt_emit(c, &ev)))
					return r;
			}
			return c->ngroup ? dpt_flush_group(c, XEV_CYCLES_UNKNOWN) : 0;
		}
		c->in_sync = 0;
		c->err = status;
		if (!c->have_err_off && ops->get_offset(dec, &c->err_off) < 0)
			c->err_off = c->sync;
		c->have_err_off = 0;
		if (c->opt->strict) {
			gap(c, c->err, c->err_off, c->len);
			return DPT_EDECODE;
		}
	}
}

enum { TP_CYC = 1, TP_MTC = 2 };

/* Which timing packets the trace carries (TP_*).  Looks at the first packets only:
 * CYC and MTC are configuration bits, on for the whole trace or off. */
static unsigned timing_packets(const struct pt_config *cfg, int max)
{
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(cfg);
	unsigned found = 0;
	if (!pd)
		return 0;
	for (int synced = 0, n = 0; n < max && found != (TP_CYC | TP_MTC); n++) {
		struct pt_packet p;
		if (!synced) {
			if (pt_pkt_sync_forward(pd) < 0)
				break;
			synced = 1;
		}
		int r = pt_pkt_next(pd, &p, sizeof(p));
		if (r == -pte_eos)
			break;
		if (r < 0) {
			synced = 0;
			continue;
		}
		found |= p.type == ppt_cyc ? TP_CYC : p.type == ppt_mtc ? TP_MTC : 0;
	}
	pt_pkt_free_decoder(pd);
	return found;
}

bool dpt_counts_cycles(const uint8_t *buf, size_t len, const struct dpt_options *opt)
{
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	return opt->nom_freq && (timing_packets(&cfg, 65536) & TP_CYC);
}

int dpt_open(struct dpt_dec **out, const uint8_t *buf, size_t len, struct dpt_image *img,
	     const struct dpt_options *opt)
{
	struct dpt_dec *d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	struct dctx *c = &d->c;
	struct pt_config *cfg = &d->cfg;
	int ret = -ENOMEM;
	d->opt = *opt;
	opt = &d->opt;
	c->opt = opt;
	c->st = &d->st;
	c->img = img;
	c->len = len;
	c->buf = buf;
	c->tmpl.pid = opt->pid;
	c->tmpl.tid = opt->tid;
	c->tmpl.cpu = opt->cpu_nr;
	c->tmpl.cycles = XEV_CYCLES_UNKNOWN;
	c->unk = opt->cont ? UNK_HELD | UNK_PENDING : 0;
	c->psb_seen = SIZE_MAX;
	d->st.stopped_at = SIZE_MAX;
	c->insn_ev = c->tmpl;
	c->insn_ev.kind = XEV_BLOCK;
	c->insn_ev.insns = 1;
	/* ptic_other makes no transfer; ptic_error: the instruction is looked up */
	c->want_ic = ~(1u << ptic_other);
	if (opt->ignore & (1u << XEV_CALL))
		c->want_ic &= ~(1u << ptic_call);
	if (opt->ignore & (1u << XEV_RETURN))
		c->want_ic &= ~(1u << ptic_return);
	if (opt->ignore & (1u << XEV_BRANCH))
		c->want_ic &= ~(1u << ptic_jump | 1u << ptic_cond_jump);
	/* a far transfer's class also says whether a disable was a syscall's */
	if ((opt->ignore & (1u << XEV_BRANCH)) && (opt->ignore & (1u << XEV_DISABLE)))
		c->want_ic &= ~(1u << ptic_far_call | 1u << ptic_far_return | 1u << ptic_far_jump);
	c->blk_ev = c->tmpl;
	c->blk_ev.kind = XEV_BLOCK;
	c->br_ev = c->tmpl;
	if (dpt_table_get(&d->btab, 1u << BCACHE_BITS, sizeof(*c->bcache)) < 0) {
		free(d);
		return -ENOMEM;
	}
	c->btab = &d->btab;
	c->bcache = d->btab.ent;
	c->tsx_tab = d->tsx_tab;
	if (dpt_dis_get(&c->dis) < 0) {
		dpt_table_put(&d->btab);
		free(d);
		return -ENOMEM;
	}

	pt_config_init(cfg);
	cfg->begin = (uint8_t *)buf;
	cfg->end = (uint8_t *)buf + len;
	cfg->cpu = opt->cpu;
	if (opt->cpu.vendor != pcv_unknown)
		pt_cpu_errata(&cfg->errata, &opt->cpu);
	cfg->mtc_freq = opt->mtc_freq;
	cfg->nom_freq = opt->nom_freq;
	cfg->cpuid_0x15_eax = opt->cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = opt->cpuid_0x15_ebx;

	/* cycles need CYC packets and the nominal ratio to undo libipt's calibration; with
	 * neither that ratio nor CPUID 0x15's there is nothing to convert timing packets
	 * with, and no scan (up to 64 Ki packets: ~1 ms) */
	unsigned tp = opt->nom_freq || (opt->cpuid_0x15_eax && opt->cpuid_0x15_ebx) ? timing_packets(cfg, 65536) : 0;
	/* time advances at every timing packet libipt can convert (tick events), not
	 * only at TSC packets and events: MTC (every 2^MTCFreq crystal clocks) needs the
	 * TSC:crystal ratio of CPUID 0x15 */
	bool ticks = (tp & TP_CYC) || ((tp & TP_MTC) && opt->cpuid_0x15_eax && opt->cpuid_0x15_ebx);
	if (opt->nom_freq && (tp & TP_CYC)) {
		if (dpt_table_get(&d->group_tab[0], GROUP_MAX, sizeof(*c->group)) < 0 ||
		    dpt_table_get(&d->group_tab[1], GROUP_MAX, sizeof(*c->group_raw)) < 0)
			goto fail;
		c->group = d->group_tab[0].ent;
		c->group_raw = d->group_tab[1].ent;
		c->cyc_mode = 1;
	} else if (opt->mode == DPT_BLOCKS) {
		if (dpt_table_get(&d->otab, OUT_MAX, sizeof(*c->out)) < 0)
			goto fail;
		c->out = d->otab.ent;
		/* the walker makes no time from CYC, and libipt does given the nominal ratio
		 * or the TSC packets around them (a decoder started at a PSB would not have
		 * learnt the cycles' length yet, one that ran up to it would have).  CYC is
		 * on or off for a whole trace, and frequent when on: its first packets tell
		 * (the nominal ratio alone, as perf.data gives it, changes nothing without
		 * them).  MTC and TMA it takes as libipt does (dpt_fast.c, struct ftime) */
		bool cyc = (tp & TP_CYC) || (!opt->libipt_only && (timing_packets(cfg, 4096) & TP_CYC));
		if (!c->out || (!opt->libipt_only && !cyc && dpt_fast_init(c) < 0))
			goto fail;
		if (c->fast)
			dpt_fast_ticks(c, ticks);
		/* in doubling copies: 256 copies of one event were a sixth of a small
		 * input's decode under ASan */
		c->out[0] = c->tmpl;
		for (size_t n = 1; n < OUT_MAX; n *= 2)
			memcpy(c->out + n, c->out, (n < OUT_MAX - n ? n : OUT_MAX - n) * sizeof(*c->out));
		c->next = c->out;
		c->out_end = c->out + OUT_MAX;
	}
	ret = -EINVAL;	/* libipt refuses the configuration */
	if (opt->mode == DPT_INSNS) {
		cfg->flags.variant.insn.enable_tick_events = ticks;
		struct pt_insn_decoder *dec = pt_insn_alloc_decoder(cfg);
		if (!dec)
			goto fail;
		c->dec = dec;
		c->is_insn = 1;
		pt_insn_set_image(dec, dpt_image_pt(img));
	} else {
		/* every branch ends a block: blocks are basic blocks, calls are seen */
		cfg->flags.variant.block.end_on_call = 1;
		cfg->flags.variant.block.end_on_jump = 1;
		cfg->flags.variant.block.enable_tick_events = ticks;
		struct pt_block_decoder *dec = pt_blk_alloc_decoder(cfg);
		if (!dec)
			goto fail;
		c->dec = dec;
		pt_blk_set_image(dec, dpt_image_pt(img));
	}
	*out = d;
	return 0;
fail:
	dpt_close(d);
	return ret;
}

int dpt_run(struct dpt_dec *d, const struct xev_sink *sink, uint64_t limit)
{
	struct dctx *c = &d->c;
	if (c->done || ((c->have_saved || c->fast_saved) && c->tmpl.time > limit))
		return 0;	/* over, or still paused: the next event is later */
	if (c->fast) {	/* through the walker's counter (dpt_int.h) */
		c->real_sink = sink;
		sink = &c->wrap;
	}
	if (c->in_tsx)
		c->user_sink = sink;	/* the transaction's events still wait */
	else
		c->sink = sink;
	c->limit = limit;
	int r;
	if (c->fast) {
		if (!c->begun) {
			c->begun = 1;
			dpt_fast_begin(c);
		}
		do
			r = c->in_fast ? dpt_fast_run(c) : run(c, c->dec, &blk_out_ops);
		while (r == HANDOVER);
	} else {
		r = c->is_insn ? run(c, c->dec, &insn_ops) :
			c->out ? run(c, c->dec, &blk_out_ops) : run(c, c->dec, &blk_ops);
	}
	/* what waits in out goes to the sink before the caller moves on (to another
	 * queue, or to the report) */
	if (r == 0 || r == PAUSED || r == PIECE_END) {
		int e = dpt_deliver(c);
		if (e)
			r = e;
	}
	if (r == PAUSED)
		return 0;
	c->done = 1;
	return r == PIECE_END ? 0 : r;
}

uint64_t dpt_time(const struct dpt_dec *d)
{
	return d->c.done ? UINT64_MAX : d->c.tmpl.time;
}

const struct dpt_stats *dpt_dec_stats(const struct dpt_dec *d)
{
	return &d->st;
}

void dpt_close(struct dpt_dec *d)
{
	if (!d)
		return;
	struct dctx *c = &d->c;
	if (c->dec && c->is_insn)
		pt_insn_free_decoder(c->dec);
	else if (c->dec)
		pt_blk_free_decoder(c->dec);
	dpt_dis_put(&c->dis);
	dpt_fast_free(c);
	dpt_table_put(&d->btab);
	dpt_table_put(&d->otab);
	for (int i = 0; i < 2; i++) {
		dpt_table_put(&d->group_tab[i]);
		dpt_table_put(&d->tsx_tab[i]);
	}
	free(d);
}

int dpt_decode(const uint8_t *buf, size_t len, struct dpt_image *img,
	       const struct dpt_options *opt, const struct xev_sink *sink,
	       struct dpt_stats *stats)
{
	struct dpt_dec *d;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	int ret = dpt_open(&d, buf, len, img, opt);
	if (ret < 0)
		return ret;
	ret = dpt_run(d, sink, UINT64_MAX);
	if (stats)
		*stats = d->st;
	dpt_close(d);
	return ret;
}

void dpt_options_init(struct dpt_options *opt)
{
	memset(opt, 0, sizeof(*opt));
	opt->pid = opt->tid = opt->cpu_nr = -1;
}

int dpt_parse_cpu(const char *s, struct pt_cpu *cpu)
{
	unsigned long v[3] = { 0, 0, 0 };
	int n = 0;
	const char *p = s;
	char *end;

	while (n < 3) {
		errno = 0;
		v[n] = strtoul(p, &end, 0);
		if (end == p || errno)
			return -EINVAL;
		n++;
		if (*end == '\0')
			break;
		if (*end != '/')
			return -EINVAL;
		p = end + 1;
	}
	if (*end != '\0' || n < 2 || v[0] > 0xffff || v[1] > 0xff || v[2] > 0xff)
		return -EINVAL;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)v[0];
	cpu->model = (uint8_t)v[1];
	cpu->stepping = (uint8_t)v[2];
	return 0;
}
