/* Parallel decode: the worker pool and the in-order join (eng_par.h). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/eng_chunk.h"
#include "engine/eng_par.h"
#include "util/xp_err.h"

/* Events of a piece on their way to the decode's thread.  A chunk holds about 360 KB
 * of events (the instruction bytes, rarely used, are not touched); a piece waits when
 * CHUNKS_MAX of its chunks are unread, and jobs + 1 pieces are out at once: the buffers
 * only smooth the flow, a view slower than the decode sets the pace anyway.  Events'
 * stack and values arrays are not copied: the decoders that split emit none. */
#define CHUNK_EVS 2048
#define CHUNKS_MAX 4

enum { P_WAITING, P_RUNNING, P_DONE };

struct piece {
	int state;
	int rc;
	size_t next;
	struct eng_chunks chunks;	/* written, not yet read */
	/* a view state of its own (the view splits) */
	bool has_part, in_part;
	struct xev_sink part;
	unsigned blocks;	/* XEV_BLOCKs before the part took over */
	struct xev tail_ev;	/* XEV_ST_HELD / XEV_ST_PENDING of a piece with a part */
	bool has_tail;
	uint64_t min_time, max_time;	/* of the events the part took */
	struct pool *pool;
	size_t idx;
};

/* Joins pieces into one stream as one decode would have made it (decode/xev.h,
 * enum xev_stitch): the block and transfer left over at the end of a piece meet the
 * start of the next, and times never go back. */
struct stitch {
	const struct xev_sink *out;
	enum { C_NONE, C_HELD, C_PENDING } carry;
	struct xev held;	/* or the pending transfer */
	bool merge_next;	/* the next block continues `held` */
	uint64_t time;		/* the latest time given out */
};

struct pool {
	pthread_mutex_t mu;
	pthread_cond_t work, done;
	struct piece *p;
	size_t n, take, head;	/* next to hand out, the one read now */
	size_t window;		/* pieces handed out ahead of the head */
	bool stop;
	dec_piece_fn fn;
	void *arg;
	struct eng_par_view *view;
	bool parts;		/* pieces feed view parts */
	unsigned busy;		/* workers that decoded a piece */
	struct stitch st;
	struct eng_chunk *spare;	/* read chunks, for reuse */
};

/* Worker side: an event into the piece's chunks; waits while too many are unread
 * (the few events before a part takes over are not read before the piece is done:
 * they never wait). */
static int buffer_event(struct piece *p, const struct xev *ev)
{
	struct pool *pl = p->pool;
	struct eng_chunk *c = p->chunks.tail;
	if (!c || c->n == c->cap) {
		pthread_mutex_lock(&pl->mu);
		while (p->chunks.n >= CHUNKS_MAX && !pl->stop && !pl->parts)
			pthread_cond_wait(&pl->work, &pl->mu);
		c = pl->stop ? NULL : eng_chunk_new(&pl->spare, CHUNK_EVS);
		if (!c) {
			bool stop = pl->stop;
			pthread_mutex_unlock(&pl->mu);
			return stop ? -ECANCELED : -ENOMEM;
		}
		eng_chunks_append(&p->chunks, c);
		pthread_cond_broadcast(&pl->done);	/* the chunk before is full */
		pthread_mutex_unlock(&pl->mu);
	}
	eng_chunk_put(c, ev);
	return 0;
}

static int piece_event(void *ctx, const struct xev *ev)
{
	struct piece *p = ctx;
	if (!p->has_part)
		return buffer_event(p, ev);
	if (ev->kind == XEV_STITCH && p->in_part) {
		/* the end of the piece: for the decode's thread */
		p->tail_ev = *ev;
		p->has_tail = true;
		return 0;
	}
	/* A part starts at a block: the first block of a piece may continue the block
	 * of the piece before, so the part takes over at the second */
	if (!p->in_part) {
		if (ev->kind != XEV_BLOCK || ++p->blocks < 2)
			return buffer_event(p, ev);
		p->in_part = true;
	}
	if (ev->time < p->min_time)
		p->min_time = ev->time;
	if (ev->time > p->max_time)
		p->max_time = ev->time;
	return xev_emit(&p->part, ev);
}

static int piece_batch(void *ctx, const struct xev *evs, size_t n)
{
	struct piece *p = ctx;
	if (!p->in_part) {
		for (size_t i = 0; i < n; i++) {
			int r = piece_event(p, &evs[i]);
			if (r)
				return r;
		}
		return 0;
	}
	/* times only grow along a piece */
	if (n && evs[0].time < p->min_time)
		p->min_time = evs[0].time;
	if (n && evs[n - 1].time > p->max_time)
		p->max_time = evs[n - 1].time;
	return xev_emit_batch(&p->part, evs, n);
}

static void run_piece(struct pool *pl, unsigned w, struct piece *p)
{
	p->min_time = UINT64_MAX;
	if (pl->parts) {
		int r = pl->view->v->part_open(pl->view->state, &p->part);
		p->has_part = r == 0;
		if (r < 0) {
			p->rc = r;
			p->next = p->idx + 1;
			return;
		}
	}
	struct xev_sink sink = { piece_event, p, piece_batch };
	p->next = p->idx + 1;
	p->rc = pl->fn(pl->arg, w, p->idx, &sink, &p->next);
	if (p->next <= p->idx)
		p->next = p->idx + 1;
}

static void *worker(void *arg)
{
	struct pool *pl = ((void **)arg)[0];
	unsigned w = (unsigned)(uintptr_t)((void **)arg)[1];
	bool ran = false;
	pthread_mutex_lock(&pl->mu);
	for (;;) {
		while (!pl->stop && pl->take < pl->n && pl->take >= pl->head + pl->window)
			pthread_cond_wait(&pl->work, &pl->mu);
		if (pl->stop || pl->take >= pl->n)
			break;
		struct piece *p = &pl->p[pl->take++];
		bool skip = p->idx < pl->head;	/* taken by a piece before it */
		p->state = P_RUNNING;
		pthread_mutex_unlock(&pl->mu);
		if (!skip)
			run_piece(pl, w, p);
		pthread_mutex_lock(&pl->mu);
		if (!skip && !ran) {
			ran = true;
			pl->busy++;
		}
		p->state = P_DONE;
		pthread_cond_broadcast(&pl->done);
	}
	pthread_mutex_unlock(&pl->mu);
	return NULL;
}

/* ---- the join, on the decode's thread ---- */

static int stitch_emit(struct stitch *s, struct xev *ev)
{
	if (ev->time < s->time)
		ev->time = s->time;
	s->time = ev->time;
	return xev_emit(s->out, ev);
}

/* The transfer the previous piece left resolved at `to` (0: never), at `time`. */
static int stitch_resolve(struct stitch *s, uint64_t to, uint64_t time)
{
	if (s->carry != C_PENDING)
		return 0;
	s->carry = C_NONE;
	if (!to)
		return 0;
	struct xev ev = s->held;
	ev.kind = (enum xev_kind)ev.arg0;
	ev.flags |= to != ev.arg1 ? XEV_F_TAKEN : 0;
	ev.addr = to;
	ev.time = time;
	ev.sub = 0;
	ev.arg0 = ev.arg1 = 0;
	return stitch_emit(s, &ev);
}

static int stitch_event(void *ctx, const struct xev *in)
{
	struct stitch *s = ctx;
	struct xev ev = *in;

	if (ev.kind == XEV_STITCH) {
		switch ((enum xev_stitch)ev.sub) {
		case XEV_ST_HELD:
			if (s->merge_next) {	/* the piece's one block continues the held one */
				s->held.end = ev.end;
				s->held.insns += ev.insns;
				s->merge_next = false;
			} else {
				s->held = ev;
			}
			s->carry = C_HELD;
			return 0;
		case XEV_ST_PENDING:
			s->held = ev;
			s->carry = C_PENDING;
			return 0;
		case XEV_ST_BLOCK:
			if (s->carry == C_HELD) {
				s->merge_next = true;
				return 0;
			}
			return stitch_resolve(s, ev.addr, ev.time);
		case XEV_ST_FLUSH:
			if (s->carry != C_HELD)
				return 0;
			s->carry = C_NONE;
			ev = s->held;
			ev.kind = XEV_BLOCK;
			ev.sub = 0;
			return stitch_emit(s, &ev);
		case XEV_ST_RESOLVE:
			return stitch_resolve(s, ev.addr, ev.time);
		case XEV_ST_TIME:	/* a decoder's own mark, never in a piece */
			return 0;
		}
		return 0;
	}
	if (s->merge_next && ev.kind == XEV_BLOCK) {
		struct xev b = s->held;
		b.kind = XEV_BLOCK;
		b.sub = 0;
		b.end = ev.end;
		b.insns += ev.insns;
		s->merge_next = false;
		s->carry = C_NONE;
		return stitch_emit(s, &b);
	}
	return stitch_emit(s, &ev);
}

/* The events the head piece wrote, as they come, into the join. */
static int drain(struct pool *pl, struct piece *p)
{
	const struct xev_sink st = { stitch_event, &pl->st, NULL };
	int rc = 0;
	for (;;) {
		pthread_mutex_lock(&pl->mu);
		while (p->state != P_DONE && (!p->chunks.head || p->chunks.head == p->chunks.tail))
			pthread_cond_wait(&pl->done, &pl->mu);
		struct eng_chunk *c = eng_chunks_take(&p->chunks);
		if (c)
			pthread_cond_broadcast(&pl->work);
		pthread_mutex_unlock(&pl->mu);
		if (!c)
			return rc;
		pthread_mutex_lock(&pl->view->lock);
		for (size_t i = 0; i < c->n && !rc; i++)
			rc = xev_emit(&st, &c->ev[i]);
		pthread_mutex_unlock(&pl->view->lock);
		pthread_mutex_lock(&pl->mu);
		c->next = pl->spare;
		pl->spare = c;
		pthread_mutex_unlock(&pl->mu);
		if (rc)
			return rc;
	}
}

static void drop_chunks(struct piece *p)
{
	eng_chunk_free_all(p->chunks.head);
	p->chunks = (struct eng_chunks){ 0 };
}

/* A piece's part folds into the view; its first events and its end go through the
 * join.  A part whose times the join would have raised (a piece starting earlier than
 * the one before it ended) is not taken: -EAGAIN, decode it again in order. */
static int join_part(struct pool *pl, struct piece *p)
{
	const struct eng_par_view *v = pl->view;
	if (p->in_part && p->min_time < pl->st.time) {
		v->v->part_join(NULL, &p->part);
		p->has_part = false;
		drop_chunks(p);
		return -EAGAIN;
	}
	int rc = drain(pl, p);
	if (rc)
		return rc;
	if (p->in_part && p->max_time > pl->st.time)
		pl->st.time = p->max_time;
	pthread_mutex_lock(&pl->view->lock);
	rc = v->v->part_join(v->state, &p->part);
	p->has_part = false;
	if (!rc && p->has_tail) {
		const struct xev_sink st = { stitch_event, &pl->st, NULL };
		rc = xev_emit(&st, &p->tail_ev);
	}
	pthread_mutex_unlock(&pl->view->lock);
	return rc;
}

static int par_run(struct dec_par *dp, size_t n, dec_piece_fn fn, dec_piece_done_fn done, void *arg,
		   const struct xev_sink *sink)
{
	struct eng_par_view *view = dp->ctx;
	unsigned jobs = dp->jobs;
	struct pool pl = { .n = n, .fn = fn, .arg = arg, .view = view };
	pthread_t *th = calloc(jobs, sizeof(*th));
	void *(*targs)[2] = calloc(jobs, sizeof(*targs));
	unsigned started = 0;
	int rc = 0;

	pl.p = calloc(n ? n : 1, sizeof(*pl.p));
	if (!pl.p || !th || !targs) {
		free(pl.p);
		free(th);
		free(targs);
		return xp_err_code(-ENOMEM, "decode", NULL, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		pl.p[i].pool = &pl;
		pl.p[i].idx = i;
	}
	pl.window = (size_t)jobs + 1;
	/* parts when this view's state splits (one tried here) */
	if (view->direct && view->v->part_open && view->v->part_join) {
		struct xev_sink part;
		int r = view->v->part_open(view->state, &part);
		if (r == 0)
			view->v->part_join(NULL, &part);
		pl.parts = r == 0;
	}
	pl.st.out = sink;
	pthread_mutex_init(&pl.mu, NULL);
	pthread_cond_init(&pl.work, NULL);
	pthread_cond_init(&pl.done, NULL);
	for (; started < jobs; started++) {
		targs[started][0] = &pl;
		targs[started][1] = (void *)(uintptr_t)started;
		if (pthread_create(&th[started], NULL, worker, targs[started]) != 0)
			break;
	}
	if (!started)
		rc = xp_err_code(-EAGAIN, "decode", "decode with -j1", "cannot start worker threads");
	for (size_t i = 0; i < n && !rc;) {
		struct piece *p = &pl.p[i];
		if (pl.parts) {
			pthread_mutex_lock(&pl.mu);
			while (p->state != P_DONE)
				pthread_cond_wait(&pl.done, &pl.mu);
			pthread_mutex_unlock(&pl.mu);
		}
		if (p->has_part) {
			rc = join_part(&pl, p);
			if (rc == -EAGAIN) {	/* again, here, in order */
				const struct xev_sink st = { stitch_event, &pl.st, NULL };
				p->next = i + 1;
				p->rc = 0;
				pthread_mutex_lock(&view->lock);	/* the view takes events all along */
				rc = fn(arg, jobs, i, &st, &p->next);
				pthread_mutex_unlock(&view->lock);
				if (p->next <= i)
					p->next = i + 1;
			}
		} else {
			rc = drain(&pl, p);
			if (!rc)
				rc = p->rc;
		}
		if (!rc && p->rc)
			rc = p->rc;
		done(arg, i);
		if (rc)
			break;
		size_t next = p->next;
		pthread_mutex_lock(&pl.mu);
		pl.head = next;
		pthread_cond_broadcast(&pl.work);
		pthread_mutex_unlock(&pl.mu);
		i = next;
	}
	pthread_mutex_lock(&pl.mu);
	pl.stop = true;
	pthread_cond_broadcast(&pl.work);
	pthread_mutex_unlock(&pl.mu);
	for (unsigned t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	/* the workers that decoded, and this thread, which fed the view meanwhile */
	if (pl.busy + 1 > dp->threads)
		dp->threads = pl.busy + 1;
	for (size_t i = 0; i < n; i++) {
		struct piece *p = &pl.p[i];
		drop_chunks(p);
		if (p->has_part)
			view->v->part_join(NULL, &p->part);
	}
	eng_chunk_free_all(pl.spare);
	pthread_mutex_destroy(&pl.mu);
	pthread_cond_destroy(&pl.work);
	pthread_cond_destroy(&pl.done);
	free(pl.p);
	free(th);
	free(targs);
	return rc;
}

static void par_lock(struct dec_par *dp)
{
	pthread_mutex_lock(&((struct eng_par_view *)dp->ctx)->lock);
}

static void par_unlock(struct dec_par *dp)
{
	pthread_mutex_unlock(&((struct eng_par_view *)dp->ctx)->lock);
}

void eng_par_fini(struct dec_par *dp)
{
	pthread_mutex_destroy(&((struct eng_par_view *)dp->ctx)->lock);
}

void eng_par_init(struct dec_par *dp, unsigned jobs, struct eng_par_view *view)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&view->lock, &a);
	pthread_mutexattr_destroy(&a);
	dp->lock = par_lock;
	dp->unlock = par_unlock;
	const char *ps = getenv("XPTRACE_PIECE_SIZE");
	dp->jobs = jobs;
	dp->piece_size = ps ? strtoull(ps, NULL, 0) : 0;
	dp->run = par_run;
	dp->threads = 1;
	dp->ctx = view;
	eng_streams_init(dp);
}

unsigned eng_par_default_jobs(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}
