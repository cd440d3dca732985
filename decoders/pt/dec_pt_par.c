/* -j for PT in perf.data (dec_pt.c): the queues cut into pieces between PSBs for the
 * engine's workers, or, with timestamps in several queues, a thread per queue. */
#include <stdlib.h>
#include <string.h>

#include "decoders/pt/dec_pt_int.h"
#include "util/xp_err.h"

/* ---- -j (decode/dec_par.h): the queues one after the other (a trace without
 * timestamps, or with one queue: the order one thread decodes them in), each part of
 * each queue cut into pieces between PSBs ---- */

struct qpiece {
	size_t q, part, split, k;	/* queue, part, its dpt_split, piece of that */
};

struct ppar {
	struct dpp *p;
	struct qdec *qd;	/* the queues, opened: what a piece starts from */
	struct dpt_split *splits;	/* one per part of each queue */
	size_t *first;		/* per split: its first piece */
	size_t nsplits;
	struct qpiece *pc;
	size_t npc;
	struct dpt_stats *st;	/* per piece */
	/* per piece: the bytes of its queue it decoded (with those of the pieces it
	 * decoded through), counted on the decode's thread once its events went out: the
	 * progress line (workers never touch it) */
	uint64_t *bytes;
};

#define PIECE_MIN (256u << 10)
/* and no larger than this: a running piece keeps up to about its size of the trace
 * mapped (decode release_behind), so memory stays N times this whatever the trace */
#define PIECE_MAX (2u << 20)

static int qpiece_run(void *arg, unsigned w, size_t i, const struct xev_sink *sink, size_t *next)
{
	struct ppar *pp = arg;
	const struct qpiece *pc = &pp->pc[i];
	struct dec_par *par = pp->p->c->par;
	struct qdec d = pp->qd[pc->q];	/* the queue's setup; state of its own */
	const struct part *pt = &d.q->parts[pc->part];
	const struct dpt_split *s = &pp->splits[pc->split];
	uint64_t end = pt->end == UINT64_MAX ? d.q->size : pt->end;
	int r = 0;

	(void)w;
	d.read_w = d.event_w = (struct swcur){ 0, 0, -1, -1 };
	d.known = false;
	d.now = 0;
	d.dec = NULL;
	d.par = par;
	d.out = sink;
	d.sink = d.q->cpu >= 0 ? (struct xev_sink){ dec_pt_cpu_sink, &d, NULL } : *sink;
	par->lock(par);
	d.img = dec_pt_image_for(&d, d.pid, 0);
	par->unlock(par);
	if (!d.img)
		return xp_err("decode", NULL, "out of memory");
	d.imgs[0].space = dec_pt_space(d.p, d.pid, 0);
	d.imgs[0].img = d.img;
	d.nimgs = 1;
	struct dpt_options o = d.o;
	o.progress = NULL;
	uint64_t off = dpt_split_piece(s, pc->k, &o);
	o.base_offset = pt->start + off;
	o.time_out = &d.now;
	if (o.space_at)
		o.space_ctx = &d;
	struct dpt_stats gap = { 0 };
	if (pc->k == 0 && pt->why) {	/* (no timestamps: a part's gap is at time 0) */
		struct xev ev = { .kind = XEV_GAP, .pid = o.pid, .tid = o.tid, .cpu = o.cpu_nr,
				  .cycles = XEV_CYCLES_UNKNOWN, .reason = pt->why, .lost = pt->lost,
				  .offset = pt->start };
		gap.gaps = 1;
		gap.lost_bytes = pt->lost;
		r = xev_emit(&d.sink, &ev);
	}
	if (!r)
		r = dpt_decode(d.buf + pt->start + off, end - pt->start - off, d.img, &o, &d.sink, &pp->st[i]);
	pp->st[i].gaps += gap.gaps;
	pp->st[i].lost_bytes += gap.lost_bytes;
	size_t nk = dpt_split_next(s, pc->k, &pp->st[i]);
	*next = pp->first[pc->split] + nk;
	uint64_t to = nk < s->npieces ? s->psbs[s->start[nk]] : end - pt->start;
	pp->bytes[i] = to - off;
	dpt_split_release(d.buf + pt->start, off, to);
	for (unsigned k = 0; k < d.nimgs; k++)
		dpt_image_free(d.imgs[k].img);
	return r;
}

static void qpiece_done(void *arg, size_t i)
{
	struct ppar *pp = arg;
	pp->p->gaps += pp->st[i].gaps;
	pp->p->nocode += pp->st[i].nocode;
	pp->p->nocode_bytes += pp->st[i].nocode_bytes;
	pp->p->lost_bytes += pp->st[i].lost_bytes;
	pp->p->insns += pp->st[i].insns;
	pp->p->pos[pp->pc[i].q] += pp->bytes[i];
	dec_pt_show_progress(pp->p);
}

/* *ran false: not a trace for pieces (several queues in time order, a thread name to
 * look up per event) or not worth it; the caller decodes on this thread. */
int dec_pt_pieces(struct dpp *p, struct qdec *qd, bool timed, bool *ran)
{
	struct dec_par *par = p->c->par;
	struct ppar pp = { .p = p, .qd = qd };
	size_t nopen = 0, nparts = 0;
	uint64_t size = p->total / (8 * (uint64_t)par->jobs);
	int rc = 0;

	*ran = false;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			nopen++;
			nparts += p->q[i].nparts;
			/* a part's gap takes the time the one before ended at */
			if (timed && p->q[i].nparts > 1)
				return 0;
		}
	if (size < PIECE_MIN)
		size = PIECE_MIN;
	if (size > PIECE_MAX)
		size = PIECE_MAX;
	if (par->piece_size)
		size = par->piece_size;
	if ((timed && nopen > 1) || p->c->opts->comm || p->total < 2 * size)
		return 0;
	pp.splits = calloc(nparts ? nparts : 1, sizeof(*pp.splits));
	pp.first = calloc(nparts ? nparts : 1, sizeof(*pp.first));
	if (!pp.splits || !pp.first)
		goto nomem;
	for (size_t i = 0; i < p->nq; i++) {
		const struct qdec *d = &qd[i];
		for (size_t j = 0; !d->done && j < p->q[i].nparts; j++) {
			const struct part *pt = &p->q[i].parts[j];
			uint64_t end = pt->end == UINT64_MAX ? p->q[i].size : pt->end;
			const uint8_t *b = d->buf + pt->start;
			struct dpt_split *s = &pp.splits[pp.nsplits];
			/* a decode counting cycles cannot end a piece early: one piece */
			if ((rc = dpt_split(b, end - pt->start, dpt_counts_cycles(b, end - pt->start, &d->o) ?
					    UINT64_MAX : size, true, s)) < 0)
				goto nomem;
			pp.first[pp.nsplits++] = pp.npc;
			struct qpiece *pc = realloc(pp.pc, (pp.npc + s->npieces) * sizeof(*pc));
			if (!pc)
				goto nomem;
			pp.pc = pc;
			for (size_t k = 0; k < s->npieces; k++)
				pp.pc[pp.npc++] = (struct qpiece){ i, j, pp.nsplits - 1, k };
		}
	}
	if (pp.npc < 2)
		goto out;
	pp.st = calloc(pp.npc, sizeof(*pp.st));
	pp.bytes = calloc(pp.npc, sizeof(*pp.bytes));
	if (!pp.st || !pp.bytes)
		goto nomem;
	*ran = true;
	rc = par->run(par, pp.npc, qpiece_run, qpiece_done, &pp, p->sink);
	goto out;
nomem:
	rc = xp_err("decode", NULL, "out of memory");
out:
	for (size_t i = 0; i < pp.nsplits; i++)
		dpt_split_free(&pp.splits[i]);
	free(pp.splits);
	free(pp.first);
	free(pp.pc);
	free(pp.st);
	free(pp.bytes);
	return rc;
}

/* ---- -j on a trace with timestamps in several queues (per-cpu): each queue decodes
 * on a thread of its own, pausing wherever its time moves on (XEV_ST_TIME says to
 * what), and this thread interleaves them exactly as decode_queues' loop does: the
 * queue with the lowest time runs until its time passes the next lowest.  The stream
 * is then the one -j1 gives, as long as where a decode pauses changes nothing in it
 * (not with split_at_pause).  More queues than this decode on one thread: */
#define STREAMS_MAX 256

struct qstreams {
	struct dpp *p;
	size_t *idx;		/* stream -> queue */
};

static int qstream_run(void *arg, size_t i, const struct xev_sink *sink)
{
	struct qstreams *qs = arg;
	struct qdec *d = &qs->p->qd[qs->idx[i]];

	if (d->q->cpu >= 0)
		d->out = sink;
	else
		d->sink = *sink;
	for (;;) {
		uint64_t t = dec_pt_qtime(d);
		if (t == UINT64_MAX)
			return 0;
		int r = dec_pt_qrun(d, t);
		if (r)
			return r;
		uint64_t nt = dec_pt_qtime(d);
		if (nt == UINT64_MAX)
			return 0;
		struct xev mark = { .kind = XEV_STITCH, .sub = XEV_ST_TIME, .time = nt };
		if ((r = xev_emit(sink, &mark)))
			return r;
	}
}

/* Events of stream `i` up to the first time mark past `limit`: *time is then that
 * mark's (UINT64_MAX at the stream's end). */
static int stream_turn(struct dpp *p, struct dec_streams *s, size_t i, uint64_t limit, uint64_t *time)
{
	struct dec_par *par = p->c->par;
	for (;;) {
		const struct xev *ev;
		int rc = 0;
		size_t n = par->streams_get(s, i, &ev, &rc);
		if (!n) {
			*time = UINT64_MAX;
			return rc;
		}
		size_t k = 0;
		while (k < n && !(ev[k].kind == XEV_STITCH && ev[k].sub == XEV_ST_TIME))
			k++;
		if (k) {
			par->lock(par);	/* the view takes them while no producer reads the session */
			rc = xev_emit_batch(p->sink, ev, k);
			par->unlock(par);
			par->streams_take(s, i, k);
			if (rc)
				return rc;
		}
		if (k < n) {
			*time = ev[k].time;
			par->streams_take(s, i, 1);
			if (*time > limit)
				return 0;
		}
	}
}

/* *ran false: not such a trace (or a view wanting the instructions' exact order);
 * the caller decodes on this thread. */
int dec_pt_streams(struct dpp *p, struct qdec *qd, bool *ran)
{
	struct dec_par *par = p->c->par;
	struct qstreams qs = { .p = p };
	struct dec_streams *s = NULL;
	uint64_t *cur = NULL;
	size_t n = 0;
	int rc = 0;

	*ran = false;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			n++;
			if (p->q[i].nparts > 1)	/* a part's gap takes the time the one before ended at */
				return 0;
			if (dpt_counts_cycles(qd[i].buf, p->q[i].size, &qd[i].o))	/* a pause per CYC */
				return 0;
		}
	/* the view takes every event on this thread: it needs a core of its own, the
	 * queues at least two more (on 2 cores, 3 threads were slower than one: measured) */
	if (n < 2 || n > STREAMS_MAX || par->jobs < 3 || (p->c->wants & DEC_WANT_FINE_ORDER) ||
	    p->c->opts->comm)
		return 0;
	qs.idx = calloc(n, sizeof(*qs.idx));
	cur = calloc(n, sizeof(*cur));
	if (!qs.idx || !cur) {
		rc = xp_err("decode", NULL, "out of memory");
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			qd[i].par = par;	/* code reads lock the session */
			qd[i].o.progress = dec_pt_progress_quiet;
			qs.idx[n++] = i;
		}
	if ((rc = par->streams_open(par, n, qstream_run, &qs, &s)) < 0)
		goto out;
	*ran = true;
	while (!rc) {
		size_t best = SIZE_MAX;
		uint64_t t0 = UINT64_MAX, t1 = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			if (cur[i] == UINT64_MAX)
				continue;
			if (best == SIZE_MAX || cur[i] < t0) {
				t1 = t0;
				t0 = cur[i];
				best = i;
			} else if (cur[i] < t1) {
				t1 = cur[i];
			}
		}
		if (best == SIZE_MAX)
			break;
		rc = stream_turn(p, s, best, t1, &cur[best]);
		dec_pt_show_progress(p);
	}
	par->streams_close(s);
out:
	free(qs.idx);
	free(cur);
	return rc;
}
