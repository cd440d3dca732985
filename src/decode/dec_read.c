/* Reading the perf.data for a decoder (ctx.h: dec_read, dec_read_samples): records in
 * time order with the sideband fed to the session first, the live status of a long
 * read; for sample traces with -j, the read and the ordering on a thread of their own. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decode/ctx.h"
#include "decode/dec_par.h"
#include "util/xp_err.h"
#include "util/xp_status.h"

struct rd_ctx {
	struct dec_ctx *c;
	pd_rec_fn fn;
	void *arg;
	/* the live status of a long read (util/xp_status.h: on when the command turned it
	 * on, on a terminal) */
	uint64_t nrec, start, end;
};

static void progress(struct rd_ctx *x, uint64_t offset)
{
	if (x->end > x->start && xp_status_due())
		xp_status_show("decode: %.0f%% of %s (%.1f of %.1f MB), %.1f s",
			       100.0 * (double)(offset - x->start) / (double)(x->end - x->start),
			       pd_name(x->c->pd), (double)(offset - x->start) / 1e6,
			       (double)(x->end - x->start) / 1e6, xp_status_elapsed());
}

/* The trace's TSC conversion (PT's AUXTRACE_INFO, perf's TIME_CONV) also converts the
 * times of jitdumps written with TSC timestamps. */
static void jit_clock(struct dec_ctx *c, const struct pd_rec *r)
{
	if (r->type == PD_RECORD_TIME_CONV && r->size >= 8 + 3 * 8) {
		uint64_t w[3];
		memcpy(w, (const uint8_t *)r->raw + 8, sizeof(w));
		jit_set_tsc_conv(c->jit, (uint16_t)w[0], (uint32_t)w[1], w[2]);
	} else if (r->type == PD_RECORD_AUXTRACE_INFO &&
		   r->size >= sizeof(struct pd_auxtrace_info_event) + 8 * (PD_PT_TIME_ZERO + 1) &&
		   r->u.auxtrace_info->type == PD_AUXTRACE_INTEL_PT) {
		uint64_t w[PD_PT_TIME_ZERO + 1];
		memcpy(w, (const uint8_t *)r->raw + sizeof(struct pd_auxtrace_info_event), sizeof(w));
		jit_set_tsc_conv(c->jit, (uint16_t)w[PD_PT_TIME_SHIFT], (uint32_t)w[PD_PT_TIME_MULT],
				 w[PD_PT_TIME_ZERO]);
	}
}

/* The records the session and the JIT clock take. */
static bool is_sideband(const struct pd_rec *r)
{
	return r->type == PERF_RECORD_MMAP || r->type == PERF_RECORD_MMAP2 || r->type == PERF_RECORD_COMM ||
		r->type == PERF_RECORD_FORK || r->type == PERF_RECORD_EXIT || r->type == PD_RECORD_TIME_CONV ||
		r->type == PD_RECORD_AUXTRACE_INFO;
}

static int rd_rec(void *a, const struct pd_rec *r)
{
	struct rd_ctx *x = a;

	if ((x->nrec++ & 0xff) == 0)
		progress(x, r->offset);
	if (r->type == PD_RECORD_TIME_CONV || r->type == PD_RECORD_AUXTRACE_INFO) {
		jit_clock(x->c, r);
	} else if (is_sideband(r)) {
		if (sb_feed(x->c->sb, r) < 0)
			return xp_err(pd_name(x->c->pd), NULL, "out of memory");
	}
	return x->fn(x->arg, r);
}

/* Branch-stack samples without TIME (perf inject --itrace=...l of a timeless PT trace)
 * cannot be put in time order and would all precede the sideband (records without a time
 * are delivered at once): such files are read in file order, the order their writer saw
 * the events in. */
static bool timeless_branch_samples(const struct pd_file *f)
{
	for (uint32_t i = 0; i < pd_nattrs(f); i++) {
		const struct perf_event_attr *a = &pd_attr_at(f, i)->attr;
		if ((a->sample_type & PERF_SAMPLE_BRANCH_STACK) && !(a->sample_type & PERF_SAMPLE_TIME))
			return true;
	}
	return false;
}

/* ---- dec_read_samples on two threads: the reader maps the file and puts its records
 * in time order, the decode's thread parses and decodes them.  A record goes over as
 * its offset and its address in the file's mapping (the mappings the read lets go of
 * follow as unmap entries: the decode's thread unmaps them once it read every record
 * before), or, when the reader had to copy it, as its bytes.  In chunks: RA_CHUNKS of
 * them at most are written and not yet read. */
#define RA_CHUNK (256u << 10)
#define RA_CHUNKS 4
#define RA_UNMAP UINT64_MAX	/* an entry's first word: an unmap entry (p, len) */

struct ra_chunk {
	struct ra_chunk *next;
	size_t used;
	uint64_t buf[RA_CHUNK / 8];
};

struct ra {
	struct dec_ctx *c;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct ra_chunk *head, *tail, *spare;	/* full ones head..tail; tail is written */
	size_t nfull;
	size_t limit;		/* bytes a chunk takes (tests make small chunks) */
	bool done, stop;
	int rc;			/* the reader's return */
};

/* Reader thread: room for `need` bytes in the chunk being written (a full one goes
 * over); NULL when the decode stopped (*err 0) or memory ran out. */
static uint64_t *ra_room(struct ra *a, size_t need, int *err)
{
	/* a record always fits an empty chunk (64 KiB at most) */
	if (!a->tail || (a->tail->used && a->tail->used + need > a->limit)) {
		pthread_mutex_lock(&a->mu);
		if (a->tail) {
			a->nfull++;
			pthread_cond_broadcast(&a->cond);
		}
		while (a->nfull >= RA_CHUNKS && !a->stop)
			pthread_cond_wait(&a->cond, &a->mu);
		struct ra_chunk *ch = a->stop ? NULL : a->spare;
		if (ch)
			a->spare = ch->next;
		else if (!a->stop)
			ch = malloc(sizeof(*ch));
		*err = a->stop ? 0 : -ENOMEM;
		if (ch) {
			ch->next = NULL;
			ch->used = 0;
			if (a->tail)
				a->tail->next = ch;
			else
				a->head = ch;
			a->tail = ch;
		}
		pthread_mutex_unlock(&a->mu);
		if (!ch)
			return NULL;
	}
	/* written outside the lock: the decode's thread reads a chunk once it is full */
	uint64_t *p = a->tail->buf + a->tail->used / 8;
	a->tail->used += need;
	return p;
}

static int ra_put(void *arg, const struct pd_rec *r)
{
	struct ra *a = arg;
	bool copy = !r->in_place;
	size_t need = 16 + (copy ? ((size_t)r->size + 7) / 8 * 8 : 0);
	int err;

	/* the kernel records (the decode's thread counts them) and the user records the
	 * context takes */
	if (r->type >= PD_RECORD_HEADER_ATTR && !is_sideband(r))
		return 0;
	uint64_t *p = ra_room(a, need, &err);
	if (!p)
		return err ? xp_err(pd_name(a->c->pd), NULL, "out of memory") : -ECANCELED;
	p[0] = r->offset;
	p[1] = copy ? 0 : (uintptr_t)r->raw;
	if (copy)
		memcpy(p + 2, r->raw, r->size);
	return 0;
}

/* Reader thread (pd_set_unmap_hook): a mapping to unmap once the records before are
 * read. */
static void ra_unmap(void *arg, void *p, size_t len)
{
	struct ra *a = arg;
	int err;
	uint64_t *e = ra_room(a, 24, &err);

	/* the decode stopped reading (and will not again): now; out of memory: records
	 * in the chunks before may still be read, the mapping stays */
	if (!e) {
		if (!err)
			munmap(p, len);
		return;
	}
	e[0] = RA_UNMAP;
	e[1] = (uintptr_t)p;
	e[2] = len;
}

static void *ra_reader(void *arg)
{
	struct ra *a = arg;
	int rc = pd_read_events(a->c->pd, PD_ORDERED | PD_RAW, ra_put, a);
	pthread_mutex_lock(&a->mu);
	a->rc = rc;
	a->done = true;
	if (a->tail)
		a->nfull++;
	pthread_cond_broadcast(&a->cond);
	pthread_mutex_unlock(&a->mu);
	return NULL;
}

/* The entries of a chunk: records parsed into rd_rec until it returns non-zero (x
 * NULL: none), unmap entries all. */
static int ra_entries(struct ra *a, struct ra_chunk *ch, struct rd_ctx *x, struct pd_tally *t)
{
	struct pd_rec r;
	int rc = 0;

	for (size_t at = 0; at < ch->used;) {
		const uint64_t *p = ch->buf + at / 8;
		if (p[0] == RA_UNMAP) {
			munmap((void *)(uintptr_t)p[1], (size_t)p[2]);
			at += 24;
			continue;
		}
		const uint8_t *raw = p[1] ? (const uint8_t *)(uintptr_t)p[1] : (const uint8_t *)(p + 2);
		uint16_t size;
		memcpy(&size, raw + 6, 2);
		at += 16 + (p[1] ? 0 : ((size_t)size + 7) / 8 * 8);
		if (!x || rc)
			continue;
		if (pd_parse_record(a->c->pd, raw, size, p[0], t, &r) == 0)
			rc = rd_rec(x, &r);
	}
	return rc;
}

/* The decode's thread: every chunk, in order. */
static int ra_decode(struct ra *a, struct rd_ctx *x, struct pd_tally *t)
{
	int rc = 0;

	for (;;) {
		pthread_mutex_lock(&a->mu);
		while (!a->nfull && !a->done)
			pthread_cond_wait(&a->cond, &a->mu);
		struct ra_chunk *ch = a->nfull ? a->head : NULL;
		pthread_mutex_unlock(&a->mu);
		if (!ch)
			break;
		rc = ra_entries(a, ch, x, t);
		pthread_mutex_lock(&a->mu);
		a->head = ch->next;
		if (!a->head)
			a->tail = NULL;
		a->nfull--;
		ch->next = a->spare;
		a->spare = ch;
		pthread_cond_broadcast(&a->cond);
		pthread_mutex_unlock(&a->mu);
		if (rc)
			break;
	}
	return rc;
}

/* The read on two threads; -EAGAIN when no thread could be started. */
static int read_ahead(struct dec_ctx *c, struct rd_ctx *x)
{
	struct ra a = { .c = c, .limit = RA_CHUNK };
	struct pd_tally t = {0};
	pthread_t th;
	int rc;

	if (c->par->piece_size && c->par->piece_size < RA_CHUNK)
		a.limit = (size_t)c->par->piece_size;
	pthread_mutex_init(&a.mu, NULL);
	pthread_cond_init(&a.cond, NULL);
	pd_set_unmap_hook(c->pd, ra_unmap, &a);
	if (pthread_create(&th, NULL, ra_reader, &a) != 0) {
		rc = -EAGAIN;
		goto out;
	}
	rc = ra_decode(&a, x, &t);
	pthread_mutex_lock(&a.mu);
	a.stop = true;
	pthread_cond_broadcast(&a.cond);
	pthread_mutex_unlock(&a.mu);
	pthread_join(th, NULL);
	if (!rc)
		rc = a.rc;
	if (c->par->threads < 2)
		c->par->threads = 2;
out:
	pd_set_unmap_hook(c->pd, NULL, NULL);
	pd_add_tally(c->pd, &t);
	while (a.head) {	/* a decode that stopped: what the reader let go of */
		struct ra_chunk *ch = a.head;
		a.head = ch->next;
		ra_entries(&a, ch, NULL, &t);
		free(ch);
	}
	while (a.spare) {
		struct ra_chunk *ch = a.spare;
		a.spare = ch->next;
		free(ch);
	}
	pthread_mutex_destroy(&a.mu);
	pthread_cond_destroy(&a.cond);
	return rc;
}

static int read_all(struct dec_ctx *c, pd_rec_fn fn, void *arg, bool samples)
{
	struct rd_ctx x = { .c = c, .fn = fn, .arg = arg };
	const struct pd_build_id *b;
	size_t nb = pd_build_ids(c->pd, &b);
	unsigned flags = timeless_branch_samples(c->pd) ? 0 : PD_ORDERED;
	int rc = -EAGAIN;

	if (sb_set_build_ids(c->sb, b, nb) < 0)
		return xp_err(pd_name(c->pd), NULL, "out of memory");
	pd_data_range(c->pd, &x.start, &x.end);
	/* a pipe's attrs grow as it is read: parsed on the thread reading it */
	if (samples && flags && c->par && c->par->jobs > 1 && !pd_is_pipe(c->pd))
		rc = read_ahead(c, &x);
	if (rc == -EAGAIN)
		rc = pd_read_events(c->pd, flags, rd_rec, &x);
	xp_status_clear();
	pd_report_losses(c->pd);
	return rc;
}

int dec_read(struct dec_ctx *c, pd_rec_fn fn, void *arg)
{
	return read_all(c, fn, arg, false);
}

int dec_read_samples(struct dec_ctx *c, pd_rec_fn fn, void *arg)
{
	return read_all(c, fn, arg, true);
}
