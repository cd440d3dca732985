/* Chunks of events on their way from a producer thread to the decode's thread (the
 * pieces of eng_par.c, the streams of eng_streams.c).  A list runs from head to tail;
 * the producer fills its tail outside the lock, the reader takes a chunk once a later
 * one exists or the producer is done, so only the hand-over is locked.  Read chunks go
 * to a spare list for reuse: fresh ones cost page faults. */
#ifndef ENG_CHUNK_H
#define ENG_CHUNK_H

#include <stdlib.h>
#include <string.h>

#include "decode/xev.h"

struct eng_chunk {
	struct eng_chunk *next;
	size_t n, cap;
	struct xev *ev;
	uint8_t (*raw)[16];	/* the bytes of instruction events */
};

struct eng_chunks {
	struct eng_chunk *head, *tail;
	size_t n;
};

/* A chunk of `cap` events, from `spare` when it has one (all of a list's chunks have
 * one size); NULL when out of memory.  The caller holds the lock guarding `spare`. */
static inline struct eng_chunk *eng_chunk_new(struct eng_chunk **spare, size_t cap)
{
	struct eng_chunk *c = *spare;

	if (c)
		*spare = c->next;
	else if ((c = malloc(sizeof(*c) + cap * (sizeof(struct xev) + 16)))) {
		c->ev = (struct xev *)(c + 1);
		c->raw = (uint8_t (*)[16])(c->ev + cap);
		c->cap = cap;
	}
	if (c) {
		c->next = NULL;
		c->n = 0;
	}
	return c;
}

static inline void eng_chunks_append(struct eng_chunks *l, struct eng_chunk *c)
{
	if (l->tail)
		l->tail->next = c;
	else
		l->head = c;
	l->tail = c;
	l->n++;
}

/* The head chunk, taken off the list. */
static inline struct eng_chunk *eng_chunks_take(struct eng_chunks *l)
{
	struct eng_chunk *c = l->head;

	if (c) {
		l->head = c->next;
		if (!l->head)
			l->tail = NULL;
		l->n--;
	}
	return c;
}

/* `ev` into the next slot of c (which has room), its instruction bytes copied along. */
static inline void eng_chunk_put(struct eng_chunk *c, const struct xev *ev)
{
	struct xev *e = &c->ev[c->n];

	*e = *ev;
	if (ev->bytes) {
		memcpy(c->raw[c->n], ev->bytes, ev->nbytes < 16 ? ev->nbytes : 16);
		e->bytes = c->raw[c->n];
	}
	c->n++;
}

static inline void eng_chunk_free_all(struct eng_chunk *c)
{
	while (c) {
		struct eng_chunk *n = c->next;
		free(c);
		c = n;
	}
}

#endif
