/* Time ordering of records (perf's ordered_events): kernel records are copied into a
 * queue and delivered in (time, arrival) order when a FINISHED_ROUND proves nothing
 * earlier can still arrive.  Memory is bounded: over the limit the older half is
 * delivered early (records arriving later with an earlier time are then counted as
 * out of order by the reader). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/pd_read_int.h"
#include "util/xp_grow.h"

struct chunk {
	size_t used, cap, live;
	uint8_t data[];
};

struct qent {
	uint64_t time, seq, offset;
	const uint8_t *raw;
	struct chunk *ch;	/* the copy's chunk, or NULL: */
	struct pd_hold *in;	/* the record is in place there */
	uint32_t size;
};

struct pd_queue {
	struct qent *e;
	size_t head, n, cap;	/* queued: e[head .. n) (delivered ones leave the head) */
	struct chunk *cur;
	size_t bytes, limit;
	uint64_t seq;
	uint64_t last_flushed;
};

#define CHUNK_BYTES (1u << 20)

struct pd_queue *pd_queue_new(size_t limit)
{
	struct pd_queue *q = calloc(1, sizeof(*q));

	if (q)
		q->limit = limit;
	return q;
}

static void chunk_release(struct pd_queue *q, struct chunk *ch)
{
	if (--ch->live == 0 && ch != q->cur) {
		q->bytes -= ch->cap;
		free(ch);
	}
}

static void ent_release(struct pd_queue *q, const struct qent *e)
{
	if (e->ch) {
		chunk_release(q, e->ch);
	} else if (--e->in->live == 0) {
		q->bytes -= e->in->bytes;
		if (e->in->release)
			e->in->release(e->in);
	}
}

void pd_queue_free(struct pd_queue *q)
{
	if (!q)
		return;
	for (size_t i = q->head; i < q->n; i++)
		ent_release(q, &q->e[i]);
	free(q->cur);
	free(q->e);
	free(q);
}

/* Room for the entry (the record's copy is made by the caller). */
static int ent_room(struct pd_queue *q)
{
	if (q->n == q->cap && q->head && q->head >= q->cap / 2) {
		/* room at the front, half or more: move the queue there instead of growing
		 * (a move per half a capacity of deliveries) */
		memmove(q->e, q->e + q->head, (q->n - q->head) * sizeof(*q->e));
		q->n -= q->head;
		q->head = 0;
	}
	return XP_GROW(q->e, q->cap, q->n + 1);
}

int pd_queue_push(struct pd_queue *q, uint64_t time, const void *raw, size_t size, uint64_t offset,
		  struct pd_hold *in)
{
	size_t need = (size + 7) & ~(size_t)7;

	if (in) {
		if (ent_room(q) < 0)
			return -ENOMEM;
		if (in->live++ == 0)
			q->bytes += in->bytes;
		q->e[q->n++] = (struct qent){ time, q->seq++, offset, raw, NULL, in, (uint32_t)size };
		return 0;
	}
	if (!q->cur || q->cur->cap - q->cur->used < need) {
		size_t cap = need > CHUNK_BYTES ? need : CHUNK_BYTES;
		struct chunk *ch = malloc(sizeof(*ch) + cap);

		if (!ch)
			return -ENOMEM;
		ch->used = 0;
		ch->cap = cap;
		ch->live = 0;
		if (q->cur && q->cur->live == 0) {
			q->bytes -= q->cur->cap;
			free(q->cur);
		}
		q->cur = ch;
		q->bytes += cap;
	}
	if (ent_room(q) < 0)
		return -ENOMEM;
	memcpy(q->cur->data + q->cur->used, raw, size);
	q->e[q->n++] = (struct qent){ time, q->seq++, offset, q->cur->data + q->cur->used, q->cur, NULL,
				      (uint32_t)size };
	q->cur->used += need;
	q->cur->live++;
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort_queue(struct pd_queue *q)
{
	for (size_t i = q->head + 1; i < q->n; i++)
		if (cmp_ent(&q->e[i - 1], &q->e[i]) > 0) {
			qsort(q->e + q->head, q->n - q->head, sizeof(*q->e), cmp_ent);
			return;
		}
}

/* Delivers the first `count` entries of the sorted queue. */
static int deliver(struct pd_queue *q, size_t count, pd_queue_fn fn, void *ctx)
{
	int rc = 0;

	while (count--) {
		struct qent *e = &q->e[q->head++];

		q->last_flushed = e->time;
		rc = fn(ctx, e->raw, e->size, e->offset, e->in != NULL);
		ent_release(q, e);
		if (rc)
			break;
	}
	if (q->head == q->n)
		q->head = q->n = 0;
	return rc;
}

int pd_queue_flush(struct pd_queue *q, uint64_t limit, pd_queue_fn fn, void *ctx)
{
	size_t count = 0;

	sort_queue(q);
	while (q->head + count < q->n && q->e[q->head + count].time <= limit)
		count++;
	return deliver(q, count, fn, ctx);
}

bool pd_queue_over(const struct pd_queue *q)
{
	return q->bytes > q->limit && q->n - q->head > 1;
}

int pd_queue_flush_half(struct pd_queue *q, pd_queue_fn fn, void *ctx)
{
	sort_queue(q);
	return deliver(q, (q->n - q->head) / 2, fn, ctx);
}

uint64_t pd_queue_last_flushed(const struct pd_queue *q)
{
	return q->last_flushed;
}
