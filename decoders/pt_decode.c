/* libipt decode loops (block and instruction decoders) producing xev events.
 *
 * A block's terminating transfer is only known once the next block (its target)
 * arrives, so it is kept pending and emitted right before that block; an interrupt,
 * a disable or a gap in between resolves it too (or drops it when nothing is known).
 * Errors become gaps and decoding resumes at the next PSB. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pt.h"

#define BCACHE_BITS 12

struct bcache_ent {
	uint64_t ip;		/* 0: empty */
	struct dpt_branch br;
};

struct dctx {
	const struct dpt_options *opt;
	const struct xev_sink *sink;
	struct dpt_stats *st;
	struct dpt_image *img;
	size_t len;
	struct xev tmpl;	/* pid/tid/cpu/time of every event */
	int have_tsc;
	uint64_t tsc;
	/* the transfer ending the previous block, waiting for its target */
	int pending;
	enum dpt_bclass pend_cls;
	uint64_t pend_ip, pend_fall;
	uint32_t pend_flags;
	struct bcache_ent *bcache;
	int stop;		/* the sink's non-zero return */
};

static void set_time(struct dctx *c, uint64_t tsc)
{
	const struct dpt_options *o = c->opt;
	c->have_tsc = 1;
	c->tsc = tsc;
	if (!o->have_time_conv) {
		c->tmpl.time = tsc;
		return;
	}
	/* perf's tsc_to_perf_time: split to keep tsc * mult from overflowing */
	uint64_t quot = tsc >> o->time_shift, rem = tsc & ((1ULL << o->time_shift) - 1);
	c->tmpl.time = o->time_zero + quot * o->time_mult + ((rem * o->time_mult) >> o->time_shift);
}

static int emit(struct dctx *c, struct xev *ev)
{
	return xev_emit(c->sink, ev);
}

static struct xev mkev(const struct dctx *c, enum xev_kind kind)
{
	struct xev ev = c->tmpl;
	ev.kind = kind;
	return ev;
}

static const struct dpt_branch *branch_at(struct dctx *c, uint64_t ip, enum pt_exec_mode mode)
{
	struct bcache_ent *e = &c->bcache[(ip ^ (ip >> BCACHE_BITS)) & ((1u << BCACHE_BITS) - 1)];
	if (e->ip == ip && ip)
		return &e->br;
	uint8_t buf[16];
	size_t n = dpt_image_read(c->img, ip, buf, sizeof(buf));
	if (dpt_branch_decode(buf, n, mode, ip, &e->br) < 0)
		e->br = (struct dpt_branch){ DPT_B_OTHER, 0, 0, 0 };
	e->ip = ip;
	return &e->br;
}

static enum dpt_bclass class_of(enum pt_insn_class ic)
{
	switch (ic) {
	case ptic_call: return DPT_B_CALL;
	case ptic_return: return DPT_B_RET;
	case ptic_jump: return DPT_B_JUMP;
	case ptic_cond_jump: return DPT_B_COND;
	case ptic_far_call: case ptic_far_return: case ptic_far_jump: return DPT_B_FAR;
	default: return DPT_B_OTHER;
	}
}

/* Emits the pending transfer with destination `to` (0: unknown). */
static int resolve(struct dctx *c, uint64_t to)
{
	if (!c->pending)
		return 0;
	c->pending = 0;
	struct xev ev = mkev(c, XEV_BRANCH);
	ev.ip = c->pend_ip;
	ev.addr = to;
	ev.flags = c->pend_flags;
	switch (c->pend_cls) {
	case DPT_B_COND:
		ev.flags |= XEV_F_COND;
		if (to != c->pend_fall)
			ev.flags |= XEV_F_TAKEN;
		break;
	case DPT_B_CALL:
		ev.kind = XEV_CALL;
		ev.flags |= XEV_F_TAKEN;
		break;
	case DPT_B_RET:
		ev.kind = XEV_RETURN;
		ev.flags |= XEV_F_TAKEN;
		break;
	case DPT_B_FAR:
		ev.flags |= XEV_F_TAKEN | XEV_F_SYSCALL;
		break;
	default:
		ev.flags |= XEV_F_TAKEN;
		break;
	}
	return emit(c, &ev);
}

/* Remembers the transfer made by the instruction at `ip` ending a block. */
static void set_pending(struct dctx *c, uint64_t ip, enum pt_insn_class ic,
			enum pt_exec_mode mode, uint8_t size)
{
	enum dpt_bclass cls = class_of(ic);
	const struct dpt_branch *br = NULL;

	if (ic == ptic_error || ic == ptic_other || cls == DPT_B_COND || (cls != DPT_B_OTHER && !size)) {
		br = branch_at(c, ip, mode);
		if (ic == ptic_error || ic == ptic_other)
			cls = br->cls;
	}
	if (cls == DPT_B_OTHER)
		return;
	c->pending = 1;
	c->pend_cls = cls;
	c->pend_ip = ip;
	c->pend_flags = 0;
	if (br) {
		if (br->indirect)
			c->pend_flags |= XEV_F_INDIRECT;
		c->pend_fall = br->size ? ip + br->size : 0;
	} else {
		c->pend_fall = ip + size;
		if (cls == DPT_B_RET)
			c->pend_flags |= XEV_F_INDIRECT;
	}
}

static int on_event(struct dctx *c, const struct pt_event *pev)
{
	struct xev ev;
	int r;

	if (pev->has_tsc)
		set_time(c, pev->tsc);
	switch (pev->type) {
	case ptev_enabled:
		if ((r = resolve(c, pev->variant.enabled.ip)))
			return r;
		ev = mkev(c, XEV_ENABLE);
		ev.ip = pev->variant.enabled.ip;
		return emit(c, &ev);
	case ptev_disabled:
		if ((r = resolve(c, pev->ip_suppressed ? 0 : pev->variant.disabled.ip)))
			return r;
		ev = mkev(c, XEV_DISABLE);
		ev.ip = 0;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.disabled.ip;
		return emit(c, &ev);
	case ptev_async_disabled:
		if ((r = resolve(c, pev->variant.async_disabled.at)))
			return r;
		ev = mkev(c, XEV_DISABLE);
		ev.ip = pev->variant.async_disabled.at;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.async_disabled.ip;
		return emit(c, &ev);
	case ptev_async_branch:
		if ((r = resolve(c, pev->variant.async_branch.from)))
			return r;
		ev = mkev(c, XEV_INTERRUPT);
		ev.ip = pev->variant.async_branch.from;
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.async_branch.to;
		return emit(c, &ev);
	case ptev_overflow:
		c->pending = 0;
		c->st->overflows++;
		c->st->gaps++;
		ev = mkev(c, XEV_GAP);
		ev.reason = "overflow";
		ev.addr = pev->ip_suppressed ? 0 : pev->variant.overflow.ip;
		return emit(c, &ev);
	case ptev_stop:
		if ((r = resolve(c, 0)))
			return r;
		ev = mkev(c, XEV_DISABLE);
		return emit(c, &ev);
	default:
		return 0;	/* paging, mode, tsx, power, ptwrite, tick, cbr: timing only */
	}
}

/* Records a gap for error `err` found at `off`; the trace up to `to` is skipped. */
static int gap(struct dctx *c, int err, uint64_t off, uint64_t to)
{
	struct xev ev = mkev(c, XEV_GAP);
	c->pending = 0;
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
	return emit(c, &ev);
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
	if (b.ninsn) {
		int r = resolve(c, b.ip);
		if (!r) {
			struct xev ev = mkev(c, XEV_BLOCK);
			ev.ip = b.ip;
			ev.end = b.end_ip;
			ev.insns = b.ninsn;
			c->st->insns += b.ninsn;
			c->st->blocks++;
			r = emit(c, &ev);
		}
		if (r) {
			c->stop = r;
			return SINK_STOPPED;
		}
		set_pending(c, b.end_ip, b.iclass, b.mode, b.truncated ? b.size : 0);
	}
	return status;
}

static int insn_step(struct dctx *c, void *dec)
{
	struct pt_insn in;
	int status = pt_insn_next(dec, &in, sizeof(in));
	if (in.iclass != ptic_error) {
		int r = resolve(c, in.ip);
		if (!r) {
			struct xev ev = mkev(c, XEV_BLOCK);
			ev.ip = ev.end = in.ip;
			ev.insns = 1;
			ev.bytes = in.raw;
			ev.nbytes = in.size;
			c->st->insns++;
			c->st->blocks++;
			r = emit(c, &ev);
		}
		if (r) {
			c->stop = r;
			return SINK_STOPPED;
		}
		set_pending(c, in.ip, in.iclass, in.mode, in.size);
	}
	return status;
}

static const struct dec_ops blk_ops = {
	blk_sync_forward, blk_get_offset, blk_get_sync_offset, blk_event, blk_step,
};
static const struct dec_ops insn_ops = {
	insn_sync_forward, insn_get_offset, insn_get_sync_offset, insn_event, insn_step,
};

/* Returns 0 at the end of the buffer, else the value dpt_decode returns. */
static int run(struct dctx *c, void *dec, const struct dec_ops *ops)
{
	uint64_t err_off = 0, last_bad = 0;
	int err = 0, synced = 0, bad_sync = 0, r;

	for (;;) {
		int status = ops->sync_forward(dec);
		uint64_t sync = c->len;
		if (status >= 0) {
			ops->get_sync_offset(dec, &sync);
		} else if (status != -pte_eos) {
			/* a broken PSB+ header: the next sync starts beyond it */
			if (ops->get_sync_offset(dec, &sync) < 0 || (bad_sync && sync <= last_bad))
				return err ? gap(c, err, err_off, c->len) : 0;
			bad_sync = 1;
			last_bad = sync;
			if (!err) {
				err = status;
				err_off = sync;
			}
			synced = 1;
			continue;
		}
		if (err) {
			/* the bytes from the error to the next PSB (or the end) are lost */
			if ((r = gap(c, err, err_off, sync)))
				return r;
			err = 0;
		} else if (!synced && sync > 0) {
			struct xev ev = mkev(c, XEV_GAP);
			ev.reason = "no PSB at the start of the trace";
			ev.offset = c->opt->base_offset;
			ev.lost = sync;
			c->st->gaps++;
			c->st->lost_bytes += sync;
			if ((r = emit(c, &ev)))
				return r;
		}
		if (status < 0)
			return 0;
		synced = 1;
		for (;;) {
			while (status & pts_event_pending) {
				struct pt_event pev;
				status = ops->event(dec, &pev, sizeof(pev));
				if (status < 0)
					break;
				if ((r = on_event(c, &pev)))
					return r;
			}
			if (status < 0)
				break;
			status = ops->step(c, dec);
			if (status == SINK_STOPPED)
				return c->stop;
			if (status < 0)
				break;
		}
		if (status == -pte_eos)
			return resolve(c, 0);
		err = status;
		if (ops->get_offset(dec, &err_off) < 0)
			err_off = sync;
		if (c->opt->strict) {
			gap(c, err, err_off, c->len);
			return -1;
		}
	}
}

int dpt_decode(const uint8_t *buf, size_t len, struct dpt_image *img,
	       const struct dpt_options *opt, const struct xev_sink *sink,
	       struct dpt_stats *stats)
{
	struct dpt_stats local;
	struct pt_config cfg;
	struct dctx c;
	int ret;

	if (!stats)
		stats = &local;
	memset(stats, 0, sizeof(*stats));
	memset(&c, 0, sizeof(c));
	c.opt = opt;
	c.sink = sink;
	c.st = stats;
	c.img = img;
	c.len = len;
	c.tmpl.pid = opt->pid;
	c.tmpl.tid = opt->tid;
	c.tmpl.cpu = opt->cpu_nr;
	c.tmpl.cycles = XEV_CYCLES_UNKNOWN;
	c.bcache = calloc(1u << BCACHE_BITS, sizeof(*c.bcache));
	if (!c.bcache)
		return -ENOMEM;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	cfg.cpu = opt->cpu;
	if (opt->cpu.vendor != pcv_unknown)
		pt_cpu_errata(&cfg.errata, &opt->cpu);
	cfg.mtc_freq = opt->mtc_freq;
	cfg.nom_freq = opt->nom_freq;
	cfg.cpuid_0x15_eax = opt->cpuid_0x15_eax;
	cfg.cpuid_0x15_ebx = opt->cpuid_0x15_ebx;

	if (opt->mode == DPT_INSNS) {
		struct pt_insn_decoder *dec = pt_insn_alloc_decoder(&cfg);
		if (!dec) {
			free(c.bcache);
			return -EINVAL;
		}
		pt_insn_set_image(dec, dpt_image_pt(img));
		ret = run(&c, dec, &insn_ops);
		pt_insn_free_decoder(dec);
	} else {
		/* every branch ends a block: blocks are basic blocks, calls are seen */
		cfg.flags.variant.block.end_on_call = 1;
		cfg.flags.variant.block.end_on_jump = 1;
		struct pt_block_decoder *dec = pt_blk_alloc_decoder(&cfg);
		if (!dec) {
			free(c.bcache);
			return -EINVAL;
		}
		pt_blk_set_image(dec, dpt_image_pt(img));
		ret = run(&c, dec, &blk_ops);
		pt_blk_free_decoder(dec);
	}
	free(c.bcache);
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
			return -1;
		n++;
		if (*end == '\0')
			break;
		if (*end != '/')
			return -1;
		p = end + 1;
	}
	if (*end != '\0' || n < 2 || v[0] > 0xffff || v[1] > 0xff || v[2] > 0xff)
		return -1;
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = pcv_intel;
	cpu->family = (uint16_t)v[0];
	cpu->model = (uint8_t)v[1];
	cpu->stepping = (uint8_t)v[2];
	return 0;
}
