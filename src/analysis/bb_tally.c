/* Block tallies: one open-addressing table keyed by (start, end); memory grows with the
 * number of distinct blocks, never with the trace. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "analysis/bb.h"
#include "util/xp_hash.h"

struct bb_tally {
	struct bb_block *tab;
	size_t cap, n;		/* cap is a power of two */
	unsigned bits;		/* log2(cap) */
	struct bb_block *last;	/* block whose terminating branch is pending */
	struct bb_block **sorted;
	uint64_t insns, gaps;
	uint64_t aborted;	/* instructions run in transactions that aborted */
	bool cycles;
};

/* Blocks are short, so end - start goes into the upper half to matter. */
static inline size_t slot(uint64_t start, uint64_t end, unsigned bits)
{
	return (size_t)xp_hash_bits(start ^ (end - start) << 32, bits);
}

struct bb_tally *bb_tally_new(void)
{
	struct bb_tally *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->cap = 1024;
	t->bits = 10;
	t->tab = calloc(t->cap, sizeof(*t->tab));
	if (!t->tab) {
		free(t);
		return NULL;
	}
	return t;
}

void bb_tally_free(struct bb_tally *t)
{
	if (!t)
		return;
	free(t->tab);
	free(t->sorted);
	free(t);
}

/* Empty slots have count 0 (a stored block always has count >= 1). */
static int grow(struct bb_tally *t)
{
	size_t cap = t->cap * 2;
	struct bb_block *tab = calloc(cap, sizeof(*tab));
	if (!tab)
		return -ENOMEM;
	for (size_t i = 0; i < t->cap; i++) {
		struct bb_block *b = &t->tab[i];
		if (!b->count)
			continue;
		size_t s = slot(b->start, b->end, t->bits + 1);
		while (tab[s].count)
			s = (s + 1) & (cap - 1);
		tab[s] = *b;
	}
	free(t->tab);
	t->tab = tab;
	t->cap = cap;
	t->bits++;
	t->last = NULL;
	return 0;
}

static __attribute__((noinline)) struct bb_block *lookup_slow(struct bb_tally *t, const struct xev *ev)
{
	size_t s = slot(ev->ip, ev->end, t->bits);
	for (;;) {
		struct bb_block *b = &t->tab[s];
		if (!b->count)
			break;
		if (b->start == ev->ip && b->end == ev->end)
			return b;
		s = (s + 1) & (t->cap - 1);
	}
	if ((t->n + 1) * 10 > t->cap * 7) {
		if (grow(t) < 0)
			return NULL;
		return lookup_slow(t, ev);
	}
	struct bb_block *b = &t->tab[s];
	memset(b, 0, sizeof(*b));
	b->start = ev->ip;
	b->end = ev->end;
	b->insns = ev->insns;
	b->pid = ev->pid;
	b->time = ev->time;
	t->n++;
	return b;
}

/* The first probe finds most blocks.  Consecutive lookups do not depend on each
 * other (no state carried from one to the next), so a batch of them overlaps. */
static inline struct bb_block *lookup(struct bb_tally *t, const struct xev *ev)
{
	struct bb_block *b = &t->tab[slot(ev->ip, ev->end, t->bits)];
	if (b->start == ev->ip && b->end == ev->end && ev->ip)	/* ip 0: maybe an empty slot */
		return b;
	return lookup_slow(t, ev);
}

/* The conditional branch ending block b. */
static inline void cond_branch(struct bb_block *b, const struct xev *ev)
{
	b->cond = true;
	if (ev->flags & XEV_F_TAKEN) {
		b->taken++;
		b->target = ev->addr;
	} else {
		b->not_taken++;
		b->fall = ev->addr;
	}
}

static inline int tally_one(struct bb_tally *t, const struct xev *ev)
{
	struct bb_block *b;

	switch (ev->kind) {
	case XEV_BLOCK:
		b = lookup(t, ev);
		if (!b)
			return -ENOMEM;
		if (ev->flags & XEV_F_ABORTED) {
			/* it ran, but was undone: apart from the executions that count */
			b->aborted++;
			t->aborted += ev->insns;
			t->last = NULL;
			break;
		}
		b->count++;
		t->insns += ev->insns;
		if (ev->cycles != XEV_CYCLES_UNKNOWN) {
			b->cycles += ev->cycles;
			b->cyc_execs++;
			b->approx += !!(ev->flags & XEV_F_CYC_APPROX);
			t->cycles = true;
		}
		t->last = b;
		break;
	case XEV_BRANCH:
		b = t->last;
		t->last = NULL;
		if (b && (ev->flags & XEV_F_COND) && ev->ip == b->end)
			cond_branch(b, ev);
		break;
	case XEV_GAP:
		t->gaps++;
		t->last = NULL;
		break;
	case XEV_SAMPLE:
		break;
	default:
		t->last = NULL;
		break;
	}
	return 0;
}

int bb_tally_event(void *ctx, const struct xev *ev)
{
	return tally_one(ctx, ev);
}

/* bb_tally_event over an array.  What the loop carries from one event to the next
 * stays in registers (the table, the instruction total, the last block): updating
 * them in *t made every event wait on the previous one's stores. */
int bb_tally_batch(void *ctx, const struct xev *evs, size_t n)
{
	struct bb_tally *t = ctx;
	struct bb_block *tab = t->tab, *last = t->last;
	unsigned bits = t->bits;
	uint64_t insns = 0;
	int r = 0;
	for (const struct xev *ev = evs, *end = evs + n; ev != end; ev++) {
		struct bb_block *b;
		/* blocks without cycles are nearly all the events: theirs is the straight path */
		if (__builtin_expect(ev->kind == XEV_BLOCK && ev->cycles == XEV_CYCLES_UNKNOWN &&
				     !(ev->flags & XEV_F_ABORTED), 1)) {
			uint64_t ip = ev->ip, e = ev->end;
			b = &tab[slot(ip, e, bits)];
			if (__builtin_expect(b->start != ip || b->end != e || !ip, 0)) {
				b = lookup_slow(t, ev);
				if (!b) {
					r = -ENOMEM;
					break;
				}
				tab = t->tab;	/* it may have grown */
				bits = t->bits;
			}
			b->count++;
			insns += ev->insns;
			last = b;
		} else if (ev->kind == XEV_BRANCH && !(ev->flags & XEV_F_ABORTED)) {
			b = last;
			last = NULL;
			if (b && (ev->flags & XEV_F_COND) && ev->ip == b->end)
				cond_branch(b, ev);
		} else {
			t->last = last;
			r = tally_one(t, ev);
			last = t->last;
			tab = t->tab;
			bits = t->bits;
			if (r)
				break;
		}
	}
	t->last = last;
	t->insns += insns;
	return r;
}

/* src's terminating branch added to b's: counts summed, the later-seen target and
 * fall-through kept (both merge and the basic-block split take src as the later) */
static void add_branch(struct bb_block *b, const struct bb_block *src)
{
	b->taken += src->taken;
	b->not_taken += src->not_taken;
	if (src->taken)
		b->target = src->target;
	if (src->not_taken)
		b->fall = src->fall;
}

int bb_tally_merge(struct bb_tally *t, const struct bb_tally *later)
{
	for (size_t i = 0; i < later->cap; i++) {
		const struct bb_block *src = &later->tab[i];
		if (!src->count && !src->aborted)
			continue;
		struct xev ev = { .kind = XEV_BLOCK, .ip = src->start, .end = src->end, .insns = src->insns,
				  .pid = src->pid, .time = src->time };
		struct bb_block *b = lookup(t, &ev);
		if (!b)
			return -ENOMEM;
		b->count += src->count;
		b->aborted += src->aborted;
		b->cycles += src->cycles;
		b->cyc_execs += src->cyc_execs;
		b->approx += src->approx;
		add_branch(b, src);
		b->cond |= src->cond;
	}
	t->insns += later->insns;
	t->gaps += later->gaps;
	t->aborted += later->aborted;
	t->cycles |= later->cycles;
	t->last = NULL;
	if (later->last) {	/* its terminating branch may come next */
		struct xev ev = { .kind = XEV_BLOCK, .ip = later->last->start, .end = later->last->end };
		t->last = lookup(t, &ev);
	}
	return 0;
}

size_t bb_tally_nblocks(const struct bb_tally *t)
{
	return t->n;
}

uint64_t bb_tally_insns(const struct bb_tally *t)
{
	return t->insns;
}

uint64_t bb_tally_gaps(const struct bb_tally *t)
{
	return t->gaps;
}

uint64_t bb_tally_aborted(const struct bb_tally *t)
{
	return t->aborted;
}

bool bb_tally_has_cycles(const struct bb_tally *t)
{
	return t->cycles;
}

static int by_cycles(const void *a, const void *b)
{
	const struct bb_block *x = *(struct bb_block *const *)a, *y = *(struct bb_block *const *)b;
	if (x->cycles != y->cycles)
		return x->cycles < y->cycles ? 1 : -1;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

static int by_count(const void *a, const void *b)
{
	const struct bb_block *x = *(struct bb_block *const *)a, *y = *(struct bb_block *const *)b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->end > y->end) - (x->end < y->end);
}

struct bb_block **bb_tally_sorted(struct bb_tally *t, size_t *n)
{
	free(t->sorted);
	t->sorted = malloc((t->n ? t->n : 1) * sizeof(*t->sorted));
	if (!t->sorted) {
		*n = 0;
		return NULL;
	}
	size_t k = 0;
	for (size_t i = 0; i < t->cap; i++)
		if (t->tab[i].count || t->tab[i].aborted)
			t->sorted[k++] = &t->tab[i];
	qsort(t->sorted, k, sizeof(*t->sorted), t->cycles ? by_cycles : by_count);
	*n = k;
	return t->sorted;
}

/* Adds `n` executions of [start, end] with their totals (used to rebuild a tally). */
static int add_piece(struct bb_tally *t, const struct bb_block *src, uint64_t start, uint64_t end,
		     uint64_t insns, double share, bool last)
{
	struct xev ev = { .kind = XEV_BLOCK, .ip = start, .end = end, .insns = insns,
			  .pid = src->pid, .time = src->time };
	struct bb_block *b = lookup(t, &ev);
	if (!b)
		return -ENOMEM;
	b->count += src->count;
	t->insns += insns * src->count;
	b->aborted += src->aborted;
	t->aborted += insns * src->aborted;
	if (src->cyc_execs) {
		b->cycles += (uint64_t)((double)src->cycles * share + 0.5);
		b->cyc_execs += src->cyc_execs;
		b->approx += share < 1.0 ? src->count : src->approx;
		t->cycles = true;
	}
	if (last && src->cond) {
		b->cond = true;
		add_branch(b, src);
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

struct bb_tally *bb_tally_basic(struct bb_tally *t, size_t (*len)(void *ctx, const struct bb_block *b,
								  uint64_t ip), void *ctx)
{
	struct bb_tally *out = bb_tally_new();
	uint64_t *starts = malloc((t->n ? t->n : 1) * sizeof(*starts));
	size_t ns = 0;
	struct { uint64_t start, end, insns; } piece[64];
	if (!out || !starts)
		goto fail;
	for (size_t i = 0; i < t->cap; i++)
		if (t->tab[i].count || t->tab[i].aborted)
			starts[ns++] = t->tab[i].start;
	qsort(starts, ns, sizeof(*starts), cmp_u64);
	out->gaps = t->gaps;
	for (size_t i = 0; i < t->cap; i++) {
		const struct bb_block *b = &t->tab[i];
		if (!b->count && !b->aborted)
			continue;
		size_t lo = 0, hi = ns, np = 0;
		while (lo < hi) {	/* the first block start after this one's */
			size_t mid = (lo + hi) / 2;
			if (starts[mid] <= b->start)
				lo = mid + 1;
			else
				hi = mid;
		}
		/* walk the instructions; a block start inside ends a piece before it */
		uint64_t start = b->start, ip = b->start, prev = b->start, k = 0;
		bool ok = true;
		for (uint64_t left = b->insns; ok;) {
			while (lo < ns && starts[lo] < ip)
				lo++;	/* starts inside instructions (overlapping code) */
			if (ip != start && lo < ns && starts[lo] == ip) {
				if (np == 63) {
					ok = false;
					break;
				}
				piece[np++] = (typeof(piece[0])){ start, prev, k };
				start = ip;
				k = 0;
			}
			while (lo < ns && starts[lo] <= ip)
				lo++;
			k++;
			prev = ip;
			if (!--left)
				break;
			size_t l = len(ctx, b, ip);
			ip += l;
			ok = l && ip <= b->end;
		}
		if (!ok || prev != b->end) {
			np = 0;	/* bytes that do not match the block: keep it whole */
			start = b->start;
			k = b->insns;
		}
		piece[np++] = (typeof(piece[0])){ start, b->end, k };
		for (size_t j = 0; j < np; j++)
			if (add_piece(out, b, piece[j].start, piece[j].end, piece[j].insns,
				      (double)piece[j].insns / (double)b->insns, j + 1 == np) < 0)
				goto fail;
	}
	free(starts);
	return out;
fail:
	free(starts);
	bb_tally_free(out);
	return NULL;
}
