/* Exact call/return input to the call tree: a shadow stack per thread that follows
 * calls, returns (including returns that skip frames), tail calls, signal handlers
 * and traces that start mid-stack. */
#include <errno.h>
#include <stdlib.h>

#include "analysis/ct_int.h"
#include "util/xp_grow.h"

struct frame {
	uint32_t node;
	uint32_t fn;
	bool tail;	/* entered by a tail call: leaves together with the frame below */
	bool tramp;	/* the signal trampoline's, which the handler returned into */
	uint64_t sig;	/* a signal handler's frame (or its trampoline's): the signal's id */
	/* code inlined into the function of the frame below (ct_cost_inline): no frame
	 * of the program's own, so it leaves with that frame, and a return to `owner`
	 * comes back to it */
	bool inl;
	uint32_t owner;
};

struct ct_cursor {
	struct ct_tree *t;
	struct frame *f;
	uint32_t n, cap;
};

struct ct_cursor *ct_cursor_new(struct ct_tree *t)
{
	struct ct_cursor *c = calloc(1, sizeof(*c));

	if (c)
		c->t = t;
	return c;
}

void ct_cursor_free(struct ct_cursor *c)
{
	if (c) {
		free(c->f);
		free(c);
	}
}

uint32_t ct_cursor_depth(const struct ct_cursor *c) { return c->n; }
uint32_t ct_cursor_node(const struct ct_cursor *c) { return c->n ? c->f[c->n - 1].node : CT_ROOT; }

static int push_at(struct ct_cursor *c, uint32_t parent, uint32_t fn, bool tail, bool count)
{
	uint32_t node = ct_child(c->t, parent, fn);

	if (node == CT_NONE)
		return -ENOMEM;
	if (XP_GROW(c->f, c->cap, c->n + 1) < 0)
		return -ENOMEM;
	c->f[c->n++] = (struct frame){ node, fn, tail, false, 0, false, fn };
	if (count) {
		c->t->nodes[node].calls++;
		c->t->nodes[node].sampled = false;	/* an exact call went through */
	}
	return 0;
}

static int push(struct ct_cursor *c, uint32_t fn, bool tail, bool count)
{
	return push_at(c, ct_cursor_node(c), fn, tail, count);
}

int ct_call(struct ct_cursor *c, uint32_t callee, unsigned flags)
{
	return push(c, callee, (flags & CT_TAIL) != 0, true);
}

int ct_call_at(struct ct_cursor *c, uint32_t parent, uint32_t callee)
{
	return push_at(c, c->n ? ct_cursor_node(c) : parent, callee, false, true);
}

int ct_signal(struct ct_cursor *c, uint32_t handler, uint64_t sig)
{
	int rc = push(c, handler, false, true);

	if (rc == 0)
		c->f[c->n - 1].sig = sig;
	return rc;
}

/* The frame a return now leaves: the top one below the tail-called frames above it. */
static int32_t leaving(const struct ct_cursor *c)
{
	int32_t k = (int32_t)c->n - 1;

	while (k > 0 && (c->f[k].tail || c->f[k].inl))
		k--;
	return k;
}

bool ct_in_handler(const struct ct_cursor *c)
{
	return c->n && c->f[leaving(c)].sig && !c->f[leaving(c)].tramp;
}

uint64_t ct_in_trampoline(const struct ct_cursor *c)
{
	return c->n && c->f[c->n - 1].tramp ? c->f[c->n - 1].sig : 0;
}

int ct_resume(struct ct_cursor *c, uint64_t sig)
{
	for (uint32_t j = c->n; j-- > 0;)
		if (c->f[j].sig == sig) {
			c->n = j;
			return 1;
		}
	return 0;
}

/* The trace started below the bottom frame: it returns into `to`, a caller we never
 * saw enter.  Everything recorded under the bottom frame moves under to -> bottom. */
static int reparent(struct ct_cursor *c, uint32_t to)
{
	struct ct_tree *t = c->t;
	uint32_t bottom = c->f[0].node;
	uint32_t bparent = t->nodes[bottom].parent;
	uint32_t g, moved;

	c->n = 0;
	/* unlink the old bottom first: `to` may be its own function (recursion) */
	uint32_t *link = &t->nodes[bparent].first_child, prev = CT_NONE;
	while (*link != CT_NONE && *link != bottom) {
		prev = *link;
		link = &t->nodes[*link].next_sibling;
	}
	if (*link == bottom) {
		*link = t->nodes[bottom].next_sibling;
		if (t->last_child[bparent] == bottom)
			t->last_child[bparent] = prev;
	}
	ct_unlink_key(t, bparent, t->nodes[bottom].fn);
	t->nodes[bottom].parent = CT_NONE;
	g = ct_child(t, bparent, to);
	if (g == CT_NONE)
		return -ENOMEM;
	moved = ct_child(t, g, t->nodes[bottom].fn);
	if (moved == CT_NONE)
		return -ENOMEM;
	t->nodes[moved].calls += t->nodes[bottom].calls;
	ct_add_base(t, moved, t->base + (size_t)bottom * t->nm);
	if (ct_merge_subtree(t, moved, t, bottom) < 0)
		return -ENOMEM;
	c->f[0] = (struct frame){ g, to, false, false, 0, false, to };
	c->n = 1;
	return 0;
}

int ct_return(struct ct_cursor *c, uint32_t to)
{
	int32_t k;

	if (c->n == 0) {
		/* returning out of code we never saw entered: we are now in `to` */
		return to == CT_FN_UNKNOWN ? 0 : push(c, to, false, false);
	}
	/* the frame being left, with the tail-called frames above it */
	k = leaving(c);
	if (c->f[k].sig && !c->f[k].tramp) {
		/* a handler returns into the signal trampoline the kernel put on the
		 * stack, not after a call: it runs in the signal's frame until
		 * sigreturn resumes the interrupted one (ct_resume) */
		uint64_t sig = c->f[k].sig;
		c->n = (uint32_t)k;
		if (to == CT_FN_UNKNOWN)
			return 0;
		if (push(c, to, false, false) < 0)
			return -ENOMEM;
		c->f[c->n - 1].sig = sig;
		c->f[c->n - 1].tramp = true;
		return 0;
	}
	k--;	/* the caller (with the code inlined into it where the call was) */
	if (to == CT_FN_UNKNOWN || (k >= 0 && c->f[k].owner == to)) {
		c->n = (uint32_t)(k + 1);
		return 0;
	}
	for (int32_t j = k - 1; j >= 0; j--)
		if (c->f[j].owner == to) {	/* longjmp / exception: frames skipped */
			c->n = (uint32_t)(j + 1);
			return 0;
		}
	return reparent(c, to);
}

int ct_jump(struct ct_cursor *c, uint32_t to)
{
	if (c->n < 2 || to == CT_FN_UNKNOWN || c->f[c->n - 1].owner == to)
		return 0;
	/* the nearest activation: with recursion the stack alone cannot tell which one
	 * the jmp_buf belongs to, and the innermost is the common case */
	for (uint32_t j = c->n - 1; j-- > 0;)
		if (c->f[j].owner == to) {
			c->n = j + 1;
			return 1;
		}
	return 0;
}

int ct_leave(struct ct_cursor *c, uint32_t fn)
{
	for (uint32_t j = c->n; j-- > 0;)
		if (c->f[j].fn == fn) {
			int skipped = (int)(c->n - 1 - j);
			c->n = j;
			return skipped;
		}
	return -ENOENT;
}

/* The frame of `fn` among the top's tail chain (the frames entered by tail calls and
 * the one they were entered from), CT_NONE when none.  A tail jump takes no stack:
 * coming back to one of those is a jump back (a function's .cold part returning to its
 * body, mutual tail recursion), not a deeper call. */
static uint32_t tail_chain_frame(const struct ct_cursor *c, uint32_t fn)
{
	for (uint32_t j = c->n; j-- > 0;) {
		if (c->f[j].fn == fn)
			return j;
		if (!c->f[j].tail)
			break;
	}
	return CT_NONE;
}

int ct_cost(struct ct_cursor *c, uint32_t fn, const uint64_t *w)
{
	uint32_t j;

	if (c->n == 0) {
		if (push(c, fn, false, false) < 0)
			return -ENOMEM;
	} else if (fn != CT_FN_UNKNOWN && c->f[c->n - 1].fn != fn) {
		if ((j = tail_chain_frame(c, fn)) != CT_NONE)
			c->n = j + 1;
		else if (push(c, fn, true, true) < 0)
			return -ENOMEM;
	}
	ct_add_base(c->t, c->f[c->n - 1].node, w);
	return 0;
}

int ct_cost_inline(struct ct_cursor *c, uint32_t fn, const uint32_t *chain, uint32_t n, const uint64_t *w)
{
	static const uint64_t zero[CT_MAX_METRICS];
	uint32_t base = c->n, k = 0;

	while (base > 0 && c->f[base - 1].inl)
		base--;
	if (fn == CT_FN_UNKNOWN && base)
		fn = c->f[base - 1].fn;
	if (!base || c->f[base - 1].fn != fn) {
		/* control left the inlined code for another function: ct_cost's rules */
		c->n = base;
		if (ct_cost(c, fn, zero) < 0)
			return -ENOMEM;
		base = c->n;
	}
	while (k < n && base + k < c->n && c->f[base + k].fn == chain[k])
		k++;
	c->n = base + k;
	for (; k < n; k++) {
		if (push(c, chain[k], false, true) < 0)
			return -ENOMEM;
		c->f[c->n - 1].inl = true;
		c->f[c->n - 1].owner = fn;
	}
	ct_add_base(c->t, c->f[c->n - 1].node, w);
	return 0;
}

void ct_gap(struct ct_cursor *c)
{
	c->n = 0;
}
