#include "decoders/pt/dpt_table.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Enough for the decoders open at once in a `-j` decode on a few cores (three tables
 * each); more are freed (memory does not grow with the number of pieces). */
#define SPARES 12

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct dpt_table spare[SPARES];
static int nspare;
static struct x86_dis spare_dis[SPARES];
static int nspare_dis;

int dpt_table_get(struct dpt_table *t, size_t n, size_t size)
{
	pthread_mutex_lock(&lock);
	for (int i = 0; i < nspare; i++) {
		if (spare[i].n != n || spare[i].size != size)
			continue;
		*t = spare[i];
		spare[i] = spare[--nspare];
		pthread_mutex_unlock(&lock);
		return 0;
	}
	pthread_mutex_unlock(&lock);
	t->n = n;
	t->size = size;
	t->nused = 0;
	t->ent = calloc(n, size);
	t->used = malloc((n / 8 ? n / 8 : 1) * sizeof(*t->used));
	if (!t->ent || !t->used) {
		free(t->ent);
		free(t->used);
		t->ent = NULL;
		t->used = NULL;
		return -ENOMEM;
	}
	return 0;
}

void dpt_table_put(struct dpt_table *t)
{
	if (!t->ent)
		return;
	if (t->nused > t->n / 8) {
		memset(t->ent, 0, t->n * t->size);
	} else {
		for (size_t i = 0; i < t->nused; i++)
			memset((char *)t->ent + t->used[i] * t->size, 0, t->size);
	}
	t->nused = 0;
	pthread_mutex_lock(&lock);
	if (nspare < SPARES) {
		spare[nspare++] = *t;
		t->ent = NULL;
	}
	pthread_mutex_unlock(&lock);
	if (t->ent) {
		free(t->ent);
		free(t->used);
	}
	t->ent = NULL;
	t->used = NULL;
}

int dpt_dis_get(struct x86_dis *d)
{
	pthread_mutex_lock(&lock);
	if (nspare_dis) {
		*d = spare_dis[--nspare_dis];
		pthread_mutex_unlock(&lock);
		d->hint = -1;
		return 0;
	}
	pthread_mutex_unlock(&lock);
	return x86_dis_init(d);
}

void dpt_dis_put(struct x86_dis *d)
{
	if (!d->handle)
		return;
	pthread_mutex_lock(&lock);
	if (nspare_dis < SPARES) {
		spare_dis[nspare_dis++] = *d;
		memset(d, 0, sizeof(*d));
	}
	pthread_mutex_unlock(&lock);
	if (d->handle)
		x86_dis_fini(d);
}
