/* Blocks cut by their inline chains (tree_inline.h): a block's instructions are
 * decoded once, each one's chain looked up (innermost first from DWARF, kept
 * outermost first), runs of one chain kept; memory grows with distinct blocks. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_inline.h"
#include "session/sb_code.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

struct ti_block {
	uint64_t ip, end;
	int32_t pid;
	uint32_t seg, nseg;
};

struct ti {
	struct dec_ctx *c;
	struct sb_code *mem;
	struct x86_dis dis;
	struct ti_block *blocks;
	uint32_t nblocks, capblocks;
	struct xp_map block_of;	/* hash of (ip, end, pid) -> index + 1 */
	struct ti_seg *segs;
	uint32_t nsegs, capsegs;
	uint32_t *chains;
	uint32_t nchains, capchains;
};

struct ti *ti_new(struct dec_ctx *c)
{
	struct ti *t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->c = c;
	t->mem = sb_code_new(c->sb, c->sym, c->jit);
	if (!t->mem || x86_dis_init(&t->dis) < 0) {
		sb_code_free(t->mem);
		free(t);
		return NULL;
	}
	return t;
}

void ti_free(struct ti *t)
{
	if (!t)
		return;
	sb_code_free(t->mem);
	x86_dis_fini(&t->dis);
	free(t->blocks);
	free(t->segs);
	free(t->chains);
	xp_map_free(&t->block_of);
	free(t);
}

static bool same_chain(const struct ti *t, const struct ti_seg *s, const uint32_t *fns, uint32_t n)
{
	return s->nchain == n && (!n || !memcmp(t->chains + s->chain, fns, n * sizeof(*fns)));
}

/* One run of a chain: a segment, or more instructions of the last one. */
static int add_run(struct ti *t, uint32_t first, const uint32_t *fns, uint32_t n, uint64_t insns)
{
	struct ti_seg *last = t->nsegs > first ? &t->segs[t->nsegs - 1] : NULL;
	if (last && same_chain(t, last, fns, n)) {
		last->insns += insns;
		return 0;
	}
	if (XP_GROW(t->segs, t->capsegs, t->nsegs + 1) < 0 || XP_GROW(t->chains, t->capchains, t->nchains + n) < 0)
		return -ENOMEM;
	if (n)	/* (no chains yet: no array) */
		memcpy(t->chains + t->nchains, fns, n * sizeof(*fns));
	t->segs[t->nsegs++] = (struct ti_seg){ t->nchains, n, insns };
	t->nchains += n;
	return 0;
}

static bool decodes(struct ti *t, int32_t pid, uint64_t time, uint64_t ip, uint8_t *size)
{
	uint8_t buf[X86_MAX_INSN];
	size_t k = sb_code_read(t->mem, pid, time, ip, buf, sizeof(buf));
	*size = k ? (uint8_t)x86_dis_len(&t->dis, buf, k, ip) : 0;
	return *size != 0;
}

/* Whether [ip, end] reads whole and its last instruction (at end) decodes: what
 * decoding each instruction in turn finds of a block the trace decoded. */
static bool whole(struct ti *t, int32_t pid, uint64_t time, uint64_t ip, uint64_t end)
{
	uint8_t buf[256], size;
	for (uint64_t a = ip; a < end;) {
		size_t want = end - a < sizeof(buf) ? end - a : sizeof(buf);
		if (sb_code_read(t->mem, pid, time, a, buf, want) != want)
			return false;
		a += want;
	}
	return decodes(t, pid, time, end, &size);
}

/* Cuts a block of `insns` instructions: segments from t->nsegs on.  Instructions are
 * decoded one by one only where a chain changes inside the block; a chain that holds
 * to its end takes the block's remaining instructions. */
static int cut(struct ti *t, int32_t pid, uint64_t time, uint64_t ip, uint64_t end, uint64_t insns)
{
	const struct sb_map *m = sb_find_map(t->c->sb, pid, ip, time);
	uint32_t first = t->nsegs;
	uint64_t done = 0;
	while (ip <= end) {
		uint32_t inner[TI_MAX_DEPTH], fns[TI_MAX_DEPTH];
		uint64_t until;
		uint8_t size;
		unsigned n = sym_inline_span(t->c->sym, m, ip, inner, TI_MAX_DEPTH, &until);
		for (unsigned i = 0; i < n; i++)
			fns[i] = inner[n - 1 - i];
		if (until > end && done < insns && whole(t, pid, time, ip, end))
			return add_run(t, first, fns, n, insns - done);
		/* instructions up to the chain's end have its chain */
		bool some = false;
		for (; ip < until && ip <= end && decodes(t, pid, time, ip, &size); ip += size, done++) {
			if (!some && add_run(t, first, fns, n, 0) < 0)
				return -ENOMEM;
			some = true;
			t->segs[t->nsegs - 1].insns++;
		}
		if (ip < until && ip <= end)
			break;	/* undecodable */
	}
	return 0;
}

int ti_block(struct ti *t, int32_t pid, uint64_t time, uint64_t ip, uint64_t end, uint64_t insns,
	     const struct ti_seg **segs, uint32_t *n, const uint32_t **chains)
{
	uint64_t h = xp_hash_key3(ip, end, (uint32_t)pid), v;
	struct ti_block *b = NULL;
	for (; xp_map_get(&t->block_of, h, &v); h++)
		if (t->blocks[v - 1].ip == ip && t->blocks[v - 1].end == end && t->blocks[v - 1].pid == pid) {
			b = &t->blocks[v - 1];
			break;
		}
	if (!b) {
		uint32_t first = t->nsegs;
		if (cut(t, pid, time, ip, end, insns) < 0 || XP_GROW(t->blocks, t->capblocks, t->nblocks + 1) < 0 ||
		    xp_map_put(&t->block_of, h, t->nblocks + 1) < 0)
			return -ENOMEM;
		b = &t->blocks[t->nblocks++];
		*b = (struct ti_block){ ip, end, pid, first, t->nsegs - first };
	}
	*segs = t->segs + b->seg;
	*n = b->nseg;
	*chains = t->chains;
	return 0;
}

uint32_t ti_sample(struct dec_ctx *c, const struct xev *ev, const uint32_t *fns, uint32_t n, uint32_t *out)
{
	uint32_t k = 0;

	for (uint32_t i = 0; i < n; i++) {
		uint64_t at = !ev->nstack ? ev->ip : ev->stack[n - 1 - i];
		uint32_t inner[TI_MAX_DEPTH];
		unsigned ni = 0;
		out[k++] = fns[i];
		if (i + 1 < n)
			at = at ? at - 1 : 0;
		if (at)
			ni = sym_inline(c->sym, sb_find_map(c->sb, ev->pid, at, ev->time), at, inner, TI_MAX_DEPTH);
		while (ni)
			out[k++] = inner[--ni];
	}
	return k;
}
