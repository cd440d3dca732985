/* One AUX queue of a PT perf.data decoding (dec_pt.c): its images (the process's file
 * mappings, the session for the rest), who a per-cpu queue runs at each time (the
 * switch records), its parts with their gaps, and where it stands (dec_pt_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decoders/pt/dec_pt_int.h"
#include "session/sb_code.h"
#include "session/sym.h"
#include "util/xp_err.h"
#include "util/xp_status.h"

static void who_runs(const struct dpp *p, struct swcur *w, int32_t cpu, uint64_t time)
{
	if (time < w->time)	/* a resync went back: start over */
		*w = (struct swcur){ 0, 0, -1, -1 };
	w->time = time;
	for (; w->pos < p->nsw && p->sws[w->pos].time <= time; w->pos++)
		if (p->sws[w->pos].cpu == cpu) {
			w->pid = p->sws[w->pos].pid;
			w->tid = p->sws[w->pos].tid;
		}
}

static size_t fallback(void *ctx, uint64_t addr, uint8_t *buf, size_t n)
{
	struct qdec *d = ctx;
	int32_t pid = d->pid;
	if (d->q->cpu >= 0) {	/* the address space of whoever runs now */
		who_runs(d->p, &d->read_w, d->q->cpu, d->now);
		pid = d->read_w.pid;
	}
	if (d->par)
		d->par->lock(d->par);
	size_t got = sb_code_read(d->p->mem, pid, d->now, addr, buf, n);
	if (!got) {	/* for the warning on gaps without code */
		if (!sym_map_uprobes(sb_find_map(d->p->c->sb, pid, addr, d->now)))
			d->p->nocode_other = true;
		else if (!d->p->xol_at)
			d->p->xol_at = addr;
	}
	if (d->par)
		d->par->unlock(d->par);
	return got;
}

/* The code a queue runs at `time` is its process's as of then (dpt_options'
 * space_at): its image, with its mappings as file sections, is the decoder's from then
 * on, and the decoder's cached decodings of instructions are kept per address space.
 * The last QIMAGES images are kept: processes take turns on a cpu. */
static uint64_t use_space(struct qdec *d, int32_t pid, uint64_t time, struct dpt_image **img)
{
	uint64_t space = dec_pt_space(d->p, pid, time);
	if (d->nimgs && d->imgs[0].space == space)
		return space;
	unsigned i = 1;
	while (i < d->nimgs && d->imgs[i].space != space)
		i++;
	typeof(d->imgs[0]) e = { space, NULL };
	if (i < d->nimgs) {
		e = d->imgs[i];
	} else {
		if (d->par)
			d->par->lock(d->par);
		e.img = dec_pt_image_for(d, pid, time);
		if (d->par)
			d->par->unlock(d->par);
		if (!e.img)	/* out of memory: the image in use reads through the fallback */
			return space;
		if (d->nimgs == QIMAGES)
			dpt_image_free(d->imgs[--d->nimgs].img);	/* never imgs[0], in use */
		i = d->nimgs++;
	}
	memmove(&d->imgs[1], &d->imgs[0], i * sizeof(d->imgs[0]));
	d->imgs[0] = e;
	d->img = *img = e.img;
	return space;
}

/* A per-cpu queue runs whichever process the cpu ran. */
static uint64_t space_at(void *ctx, uint64_t time, struct dpt_image **img)
{
	struct qdec *d = ctx;
	who_runs(d->p, &d->read_w, d->q->cpu, time);
	return use_space(d, d->read_w.pid, time, img);
}

/* A per-thread queue runs its process, which an exec gives new code. */
static uint64_t space_at_thread(void *ctx, uint64_t time, struct dpt_image **img)
{
	struct qdec *d = ctx;
	return use_space(d, d->pid, time, img);
}

/* Events of a per-cpu queue belong to whichever thread the cpu ran at their time. */
int dec_pt_cpu_sink(void *ctx, const struct xev *ev)
{
	struct qdec *d = ctx;
	struct dpp *p = d->p;
	if (!d->known || ev->time != d->last_time) {
		who_runs(p, &d->event_w, d->q->cpu, ev->time);
		d->last_time = ev->time;
		d->known = true;
	}
	if (d->event_w.tid >= 0 && !dec_thread_selected(p->c, d->event_w.tid, ev->time))
		return 0;
	struct xev e = *ev;
	e.pid = d->event_w.pid;
	e.tid = d->event_w.tid;
	return xev_emit(d->out, &e);
}

uint64_t dec_pt_space(const struct dpp *p, int32_t pid, uint64_t time)
{
	uint64_t gen = 0;
	for (size_t i = 0; i < p->nexecs; i++)
		if (p->execs[i].pid == pid && p->execs[i].time <= time)
			gen++;
	return (uint32_t)pid | gen << 32;
}

struct dpt_image *dec_pt_image_for(struct qdec *d, int32_t pid, uint64_t time)
{
	struct dpp *p = d->p;
	struct dpt_image *img = dpt_image_new("perf.data");
	uint64_t space = dec_pt_space(p, pid, time);
	if (!img)
		return NULL;
	/* the process's executable mappings of this exec as file sections (libipt's fast
	 * path), in record order: a later mapping at the same place replaces an earlier
	 * one; those of another exec are the fallback's to read, at their time */
	for (size_t i = 0; pid >= 0 && i < p->nmaps; i++) {
		const struct mapping *m = &p->maps[i];
		if (m->pid != pid || !m->dso || m->dso->anon || m->dso->kernel)
			continue;
		if (p->nexecs && dec_pt_space(p, pid, m->time) != space)
			continue;
		/* (a file that is not ELF too: libipt reads any file's bytes) */
		const char *path = sb_code_file(p->mem, m->dso);
		if (path)
			dpt_image_add_file(img, path, m->pgoff, m->len, m->start);
	}
	dpt_image_set_fallback(img, fallback, d);
	return img;
}

/* The live status (on only when the command turned it on, on a terminal): how much
 * of the PT data of all queues was decoded. */
void dec_pt_show_progress(struct dpp *p)
{
	uint64_t done = 0;

	if (!xp_status_due() || !p->total)
		return;
	for (size_t i = 0; i < p->nq; i++)	/* (a queue's own thread may be moving it) */
		done += __atomic_load_n(&p->qd[i].done, __ATOMIC_RELAXED) ? p->q[i].size :
			__atomic_load_n(&p->pos[i], __ATOMIC_RELAXED);
	xp_status_show("decode: %.0f%% of %.1f MB of Intel PT, %.1f s", 100.0 * (double)done / (double)p->total,
		       (double)p->total / 1e6, xp_status_elapsed());
}

static void qdec_progress(void *ctx, const uint8_t *at)
{
	struct qdec *d = ctx;

	d->p->pos[d->q - d->p->q] = (uint64_t)(at - d->buf);
	dec_pt_show_progress(d->p);
}

/* The same on a queue's own thread (dec_pt_streams): the decode's thread shows it. */
void dec_pt_progress_quiet(void *ctx, const uint8_t *at)
{
	struct qdec *d = ctx;

	__atomic_store_n(&d->p->pos[d->q - d->p->q], (uint64_t)(at - d->buf), __ATOMIC_RELAXED);
}

int dec_pt_qopen(struct dpp *p, struct queue *q, const struct dpt_options *base, struct qdec *d)
{
	*d = (struct qdec){ .p = p, .q = q, .pid = -1, .done = true, .out = p->sink };
	d->read_w = d->event_w = (struct swcur){ 0, 0, -1, -1 };
	if (!q->size)
		return 0;
	if (q->cpu >= 0) {
		d->sink = (struct xev_sink){ dec_pt_cpu_sink, d, NULL };
	} else {
		const struct sb_thread *t = sb_thread(p->c->sb, q->tid);
		if (!dec_thread_selected(p->c, q->tid, 0))
			return 0;
		d->pid = t ? t->pid : q->tid;
		d->sink = *p->sink;
	}
	fflush(q->f);
	d->buf = mmap(NULL, q->size, PROT_READ, MAP_PRIVATE, fileno(q->f), 0);
	if (d->buf == MAP_FAILED) {
		d->buf = NULL;
		return xp_err("decode", NULL, "cannot map the PT trace: %s", strerror(errno));
	}
	d->o = *base;
	d->o.cpu_nr = q->cpu;
	d->o.pid = d->pid;
	d->o.tid = q->cpu >= 0 ? -1 : q->tid;
	d->o.time_out = &d->now;
	d->o.progress = qdec_progress;
	d->o.progress_ctx = d;
	if (q->cpu >= 0 || p->nexecs) {
		d->o.space_at = q->cpu >= 0 ? space_at : space_at_thread;
		d->o.space_ctx = d;
	}
	d->img = dec_pt_image_for(d, d->pid, 0);
	if (!d->img)
		return xp_err("decode", NULL, "out of memory");
	d->imgs[0].space = dec_pt_space(p, d->pid, 0);
	d->imgs[0].img = d->img;
	d->nimgs = 1;
	d->done = false;
	return 0;
}

/* Ends the decoder of the current part, its counts going to the totals. */
static void qdec_end_part(struct qdec *d)
{
	const struct dpt_stats *st = dpt_dec_stats(d->dec);
	d->gaps += st->gaps;
	d->nocode += st->nocode;
	d->nocode_bytes += st->nocode_bytes;
	d->lost_bytes += st->lost_bytes;
	d->insns += st->insns;
	dpt_close(d->dec);
	d->dec = NULL;
}

void dec_pt_qclose(struct qdec *d)
{
	if (d->dec)
		qdec_end_part(d);
	for (unsigned i = 0; i < d->nimgs; i++)
		dpt_image_free(d->imgs[i].img);
	d->nimgs = 0;
	d->img = NULL;
	if (d->buf)
		munmap((void *)d->buf, d->q->size);
	d->buf = NULL;
	__atomic_store_n(&d->done, true, __ATOMIC_RELAXED);
}

/* Time of the queue's next event: where it paused, or before it starts a part, the
 * latest time it reached (the part's gap is emitted at that time). */
uint64_t dec_pt_qtime(const struct qdec *d)
{
	return d->done ? UINT64_MAX : d->dec ? dpt_time(d->dec) : d->now;
}

/* Decodes the queue's parts until its next event is later than `limit`. */
int dec_pt_qrun(struct qdec *d, uint64_t limit)
{
	struct queue *q = d->q;
	for (;;) {
		if (!d->dec) {
			if (d->next_part == q->nparts) {
				dec_pt_qclose(d);
				return 0;
			}
			const struct part *pt = &q->parts[d->next_part++];
			uint64_t end = pt->end == UINT64_MAX ? q->size : pt->end;
			if (pt->why) {
				struct xev gap = { .kind = XEV_GAP, .pid = d->o.pid, .tid = d->o.tid,
						   .cpu = d->o.cpu_nr, .time = d->now,
						   .cycles = XEV_CYCLES_UNKNOWN, .reason = pt->why,
						   .lost = pt->lost, .offset = pt->start };
				d->gaps++;
				d->lost_bytes += pt->lost;
				int r = xev_emit(&d->sink, &gap);
				if (r)
					return r;
			}
			d->o.base_offset = pt->start;
			int r = dpt_open(&d->dec, d->buf + pt->start, end - pt->start, d->img, &d->o);
			if (r < 0) {
				d->dec = NULL;
				return xp_err("decode", NULL, "cannot start the PT decoder: %s", strerror(-r));
			}
		}
		int r = dpt_run(d->dec, &d->sink, limit);
		if (r)
			return r;
		if (dpt_time(d->dec) != UINT64_MAX)
			return 0;	/* paused at the limit */
		qdec_end_part(d);
	}
}
