/* Streams of a parallel decode (decode/dec_par.h): a producer per stream on a thread
 * of its own, writing into chunks that the decode's thread reads in whatever order the
 * decoder asks.  A producer waits when STREAM_CHUNKS of its chunks are unread: memory
 * stays under STREAMS_BYTES whatever the trace and the number of streams.  Chunks are
 * large: each one handed over costs a lock and often a thread's wake-up (with 256
 * events a chunk that doubled the CPU time of the hand-over, measured). */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/eng_chunk.h"
#include "engine/eng_par.h"
#include "util/xp_err.h"

#define SCHUNK_EVS_MAX 4096
#define SCHUNK_EVS_MIN 256
#define STREAM_CHUNKS 2
#define STREAMS_BYTES (48u << 20)

struct stream {
	struct dec_streams *s;
	size_t idx;
	pthread_t th;
	struct eng_chunks chunks;	/* written by the producer, not yet read */
	bool done;
	int rc;
	struct eng_chunk *rd;	/* the reader's: the chunk being read, from rd_pos */
	size_t rd_pos;
};

struct dec_streams {
	pthread_mutex_t mu;
	pthread_cond_t room, ready;
	bool stop;
	dec_stream_fn fn;
	void *arg;
	struct stream *st;
	size_t n, started;
	struct eng_chunk *spare;	/* read chunks, for reuse */
	size_t cap;		/* events a chunk holds */
};

static int stream_event(void *ctx, const struct xev *ev)
{
	struct stream *t = ctx;
	struct dec_streams *s = t->s;
	struct eng_chunk *c = t->chunks.tail;

	if (!c || c->n == c->cap) {
		pthread_mutex_lock(&s->mu);
		while (t->chunks.n >= STREAM_CHUNKS && !s->stop)
			pthread_cond_wait(&s->room, &s->mu);
		c = s->stop ? NULL : eng_chunk_new(&s->spare, s->cap);
		if (!c) {
			bool stop = s->stop;
			pthread_mutex_unlock(&s->mu);
			return stop ? -ECANCELED : -ENOMEM;
		}
		eng_chunks_append(&t->chunks, c);
		pthread_cond_broadcast(&s->ready);	/* the chunk before is complete */
		pthread_mutex_unlock(&s->mu);
	}
	eng_chunk_put(c, ev);
	return 0;
}

static void *producer(void *arg)
{
	struct stream *t = arg;
	struct dec_streams *s = t->s;
	struct xev_sink sink = { stream_event, t, NULL };
	int rc = s->fn(s->arg, t->idx, &sink);

	pthread_mutex_lock(&s->mu);
	t->done = true;
	t->rc = rc;
	pthread_cond_broadcast(&s->ready);
	pthread_mutex_unlock(&s->mu);
	return NULL;
}

static void streams_close(struct dec_streams *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->mu);
	s->stop = true;
	pthread_cond_broadcast(&s->room);
	pthread_mutex_unlock(&s->mu);
	for (size_t i = 0; i < s->started; i++)
		pthread_join(s->st[i].th, NULL);
	for (size_t i = 0; i < s->n; i++) {
		eng_chunk_free_all(s->st[i].chunks.head);
		free(s->st[i].rd);
	}
	eng_chunk_free_all(s->spare);
	pthread_mutex_destroy(&s->mu);
	pthread_cond_destroy(&s->room);
	pthread_cond_destroy(&s->ready);
	free(s->st);
	free(s);
}

static int streams_open(struct dec_par *par, size_t n, dec_stream_fn fn, void *arg,
			struct dec_streams **out)
{
	struct dec_streams *s = calloc(1, sizeof(*s));

	*out = NULL;
	if (!s || !(s->st = calloc(n ? n : 1, sizeof(*s->st)))) {
		free(s);
		return xp_err_code(-ENOMEM, "decode", NULL, "out of memory");
	}
	s->fn = fn;
	s->arg = arg;
	s->n = n;
	/* each stream holds up to STREAM_CHUNKS + 1 chunks (the one being read) */
	s->cap = STREAMS_BYTES / ((n ? n : 1) * (STREAM_CHUNKS + 1) * (sizeof(struct xev) + 16));
	s->cap = s->cap > SCHUNK_EVS_MAX ? SCHUNK_EVS_MAX : s->cap < SCHUNK_EVS_MIN ? SCHUNK_EVS_MIN : s->cap;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->room, NULL);
	pthread_cond_init(&s->ready, NULL);
	for (; s->started < n; s->started++) {
		struct stream *t = &s->st[s->started];
		t->s = s;
		t->idx = s->started;
		if (pthread_create(&t->th, NULL, producer, t) != 0) {
			streams_close(s);
			return xp_err_code(-EAGAIN, "decode", "decode with -j1", "cannot start threads");
		}
	}
	/* the producers and the decode's thread reading them (decode -v) */
	if (n + 1 > par->threads)
		par->threads = (unsigned)n + 1;
	*out = s;
	return 0;
}

static size_t streams_get(struct dec_streams *s, size_t i, const struct xev **evs, int *rc)
{
	struct stream *t = &s->st[i];

	while (!t->rd || t->rd_pos == t->rd->n) {
		pthread_mutex_lock(&s->mu);
		if (t->rd) {
			t->rd->next = s->spare;
			s->spare = t->rd;
			t->rd = NULL;
		}
		/* a chunk is complete once a later one exists, or its producer is done */
		while (!t->done && (!t->chunks.head || t->chunks.head == t->chunks.tail))
			pthread_cond_wait(&s->ready, &s->mu);
		t->rd = eng_chunks_take(&t->chunks);
		t->rd_pos = 0;
		if (t->rd)
			pthread_cond_broadcast(&s->room);
		bool end = !t->rd;
		*rc = t->rc;
		pthread_mutex_unlock(&s->mu);
		if (end)
			return 0;
	}
	*evs = &t->rd->ev[t->rd_pos];
	return t->rd->n - t->rd_pos;
}

static void streams_take(struct dec_streams *s, size_t i, size_t k)
{
	s->st[i].rd_pos += k;
}

void eng_streams_init(struct dec_par *par)
{
	par->streams_open = streams_open;
	par->streams_get = streams_get;
	par->streams_take = streams_take;
	par->streams_close = streams_close;
}
