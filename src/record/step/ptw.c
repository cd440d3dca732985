/* Intel PT packet stream writer (see ptw.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "record/step/ptw.h"

#define MAX_PACKET 16	/* the longest packet we write (PSB) */

static int flush_buf(struct ptw *w)
{
	int err = w->flush(w->ctx, w->buf, w->off);

	if (err < 0)
		return err;
	w->off = 0;
	return pt_enc_sync_set(w->enc, 0) < 0 ? -EIO : 0;
}

static int out(struct ptw *w, const struct pt_packet *p)
{
	int n, err;

	if (w->off + MAX_PACKET > w->cap && (err = flush_buf(w)) < 0)
		return err;
	n = pt_enc_next(w->enc, p);
	if (n < 0)
		return -EINVAL;
	w->off += (uint64_t)n;
	w->total += (uint64_t)n;
	return 0;
}

static int simple(struct ptw *w, enum pt_packet_type type)
{
	struct pt_packet p = { .type = type };

	return out(w, &p);
}

/* IP packets compress against the last IP, as the hardware does. */
static int ip_packet(struct ptw *w, enum pt_packet_type type, uint64_t ip, int suppress)
{
	struct pt_packet p = { .type = type };

	p.payload.ip.ip = ip;
	if (suppress)
		p.payload.ip.ipc = pt_ipc_suppressed;
	else if (w->have_last_ip && (ip >> 16) == (w->last_ip >> 16))
		p.payload.ip.ipc = pt_ipc_update_16;
	else if (w->have_last_ip && (ip >> 32) == (w->last_ip >> 32))
		p.payload.ip.ipc = pt_ipc_update_32;
	else if ((uint64_t)(((int64_t)ip << 16) >> 16) == ip)
		p.payload.ip.ipc = pt_ipc_sext_48;
	else
		p.payload.ip.ipc = pt_ipc_full;
	if (p.payload.ip.ipc == pt_ipc_update_16)
		p.payload.ip.ip &= 0xffff;
	else if (p.payload.ip.ipc == pt_ipc_update_32)
		p.payload.ip.ip &= 0xffffffff;
	else if (p.payload.ip.ipc == pt_ipc_sext_48)
		p.payload.ip.ip &= 0xffffffffffffull;
	if (!suppress) {
		w->last_ip = ip;
		w->have_last_ip = 1;
	}
	switch (type) {
	case ppt_tip: w->n_tip++; break;
	case ppt_tip_pge: w->n_pge++; break;
	case ppt_tip_pgd: w->n_pgd++; break;
	case ppt_fup: w->n_fup++; break;
	default: break;
	}
	return out(w, &p);
}

static int tnt_out(struct ptw *w)
{
	struct pt_packet p = { 0 };

	if (!w->ntnt)
		return 0;
	p.type = w->ntnt <= 6 ? ppt_tnt_8 : ppt_tnt_64;
	p.payload.tnt.bit_size = (uint8_t)w->ntnt;
	p.payload.tnt.payload = w->tnt;
	if (p.type == ppt_tnt_8)
		w->n_tnt8++;
	else
		w->n_tnt64++;
	w->tnt = 0;
	w->ntnt = 0;
	return out(w, &p);
}

static int tsc_out(struct ptw *w, uint64_t tsc)
{
	struct pt_packet p = { .type = ppt_tsc };

	if (w->o.no_tsc)
		return 0;
	p.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
	w->last_tsc = tsc;
	w->n_tsc++;
	return out(w, &p);
}

static int mode_exec(struct ptw *w)
{
	struct pt_packet p = { .type = ppt_mode };

	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return out(w, &p);
}

static int psb_plus(struct ptw *w, uint64_t ip, uint64_t tsc)
{
	int err;

	if ((err = tnt_out(w)) < 0)
		return err;
	/* the trace reaches the file in chunks that a decoder can start at */
	if (w->o.psb_flush && w->off >= w->o.psb_flush && (err = flush_buf(w)) < 0)
		return err;
	w->psb_at = w->total;
	w->have_last_ip = 0;	/* PSB resets the last IP */
	w->last_ip = 0;
	w->n_psb++;
	if ((err = simple(w, ppt_psb)) < 0 || (err = mode_exec(w)) < 0 ||
	    (err = tsc_out(w, tsc)) < 0)
		return err;
	if (w->enabled && (err = ip_packet(w, ppt_fup, ip, 0)) < 0)
		return err;
	return simple(w, ppt_psbend);
}

/* Before an event at ip while tracing is on: PSB+ when due, TSC when time moved on
 * (always, with `force_tsc`). */
static int before(struct ptw *w, uint64_t ip, uint64_t tsc, int force_tsc)
{
	int err;

	if (w->lost) {
		/* after OVF: where decoding goes on, with the time */
		w->lost = 0;
		if ((err = tsc_out(w, tsc)) < 0)
			return err;
		return ip_packet(w, ppt_fup, ip, 0);
	}
	if (!w->o.psb_at_sync && w->total - w->psb_at >= w->o.psb_period)
		return psb_plus(w, ip, tsc);
	if (!w->o.no_tsc && (force_tsc || tsc - w->last_tsc >= w->o.tsc_period)) {
		if ((err = tnt_out(w)) < 0)
			return err;
		return tsc_out(w, tsc);
	}
	return 0;
}

int ptw_init(struct ptw *w, const struct ptw_opts *o, ptw_flush_fn flush, void *ctx)
{
	struct pt_config cfg;

	memset(w, 0, sizeof(*w));
	if (o)
		w->o = *o;
	if (!w->o.psb_period)
		w->o.psb_period = 4096;
	if (!w->o.tsc_period)
		w->o.tsc_period = 100000;
	if (!w->o.chunk)
		w->o.chunk = 64 * 1024;
	w->cap = w->o.chunk < 4096 ? 4096 : w->o.chunk;
	w->buf = malloc(w->cap);
	if (!w->buf)
		return -ENOMEM;
	pt_config_init(&cfg);
	cfg.begin = w->buf;
	cfg.end = w->buf + w->cap;
	w->enc = pt_alloc_encoder(&cfg);
	if (!w->enc) {
		free(w->buf);
		w->buf = NULL;
		return -ENOMEM;
	}
	w->flush = flush;
	w->ctx = ctx;
	return 0;
}

int ptw_begin(struct ptw *w, uint64_t tsc)
{
	(void)tsc;
	/* The first PSB+ waits for the first IP: a stream that starts with PSB+ and FUP
	 * gives decoders an IP and a time at once (perf's timed decoding needs both
	 * before it walks any instruction). */
	w->enabled = 0;
	w->need_psb = 1;
	return 0;
}

int ptw_enable(struct ptw *w, uint64_t ip, uint64_t tsc)
{
	int err;

	w->lost = 0;	/* TIP.PGE gives the IP itself */
	if (w->need_psb) {
		w->need_psb = 0;
		w->enabled = 1;
		return psb_plus(w, ip, tsc);
	}

	if ((err = tnt_out(w)) < 0 || (err = mode_exec(w)) < 0 || (err = tsc_out(w, tsc)) < 0)
		return err;
	w->enabled = 1;
	return ip_packet(w, ppt_tip_pge, ip, 0);
}

int ptw_disable(struct ptw *w, uint64_t ip, uint64_t to, uint64_t tsc)
{
	int err;

	if ((err = before(w, ip, tsc, 0)) < 0 || (err = tnt_out(w)) < 0)
		return err;
	w->enabled = 0;
	return ip_packet(w, ppt_tip_pgd, to, to == 0);
}

int ptw_tnt(struct ptw *w, uint64_t ip, int taken, uint64_t tsc)
{
	int err;

	if ((err = before(w, ip, tsc, 0)) < 0)
		return err;
	w->tnt = (w->tnt << 1) | (taken ? 1 : 0);
	w->ntnt++;
	w->n_tnt_bits++;
	if (w->ntnt == 47)	/* a full TNT-64 */
		return tnt_out(w);
	return 0;
}

int ptw_tnt_run(struct ptw *w, const uint8_t *bits, size_t n, uint64_t tsc)
{
	int err;

	if ((err = before(w, 0, tsc, 0)) < 0)
		return err;
	for (size_t i = 0; i < n; i++) {
		w->tnt = (w->tnt << 1) | bits[i];
		if (++w->ntnt == 47 && (err = tnt_out(w)) < 0)
			return err;
	}
	w->n_tnt_bits += n;
	return 0;
}

int ptw_tip(struct ptw *w, uint64_t ip, uint64_t to, uint64_t tsc)
{
	int err;

	if ((err = before(w, ip, tsc, 0)) < 0 || (err = tnt_out(w)) < 0)
		return err;
	return ip_packet(w, ppt_tip, to, 0);
}

int ptw_async(struct ptw *w, uint64_t from, uint64_t to, uint64_t tsc)
{
	int err;

	if ((err = before(w, from, tsc, 1)) < 0 || (err = tnt_out(w)) < 0 ||
	    (err = ip_packet(w, ppt_fup, from, 0)) < 0)
		return err;
	return ip_packet(w, ppt_tip, to, 0);
}

int ptw_async_disable(struct ptw *w, uint64_t from, uint64_t tsc)
{
	int err;

	if ((err = before(w, from, tsc, 1)) < 0 || (err = tnt_out(w)) < 0 ||
	    (err = ip_packet(w, ppt_fup, from, 0)) < 0)
		return err;
	w->enabled = 0;
	return ip_packet(w, ppt_tip_pgd, 0, 1);
}

int ptw_sync(struct ptw *w, uint64_t ip, uint64_t tsc)
{
	if (w->enabled && w->total - w->psb_at >= w->o.psb_period)
		return psb_plus(w, ip, tsc);
	return 0;
}

int ptw_overflow(struct ptw *w, uint64_t tsc)
{
	int err;

	(void)tsc;	/* the time comes with the resynchronizing FUP */
	if ((err = tnt_out(w)) < 0)
		return err;
	w->lost = 1;
	w->n_ovf++;
	/* decoders forget the last IP at OVF (libipt, perf): the next IP packet is whole */
	w->have_last_ip = 0;
	w->last_ip = 0;
	return simple(w, ppt_ovf);
}

int ptw_flush(struct ptw *w)
{
	int err;

	if ((err = tnt_out(w)) < 0)
		return err;
	if (w->off) {
		if ((err = w->flush(w->ctx, w->buf, w->off)) < 0)
			return err;
		w->off = 0;
		if (pt_enc_sync_set(w->enc, 0) < 0)
			return -EIO;
	}
	return 0;
}

void ptw_fini(struct ptw *w)
{
	if (w->enc)
		pt_free_encoder(w->enc);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
