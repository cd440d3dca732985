/* The call tree against hand-computed trees: sampled stacks (recursion, a function
 * reached by two paths) and exact call/return streams (tail calls, longjmp, traces
 * starting mid-stack, gaps, signal handlers), plus merge and per-function totals. */
#include "xp_test.h"

#include "analysis/ct.h"
#include "analysis/ct_sig.h"

enum { MAIN = 1, A, B, C, F, G, LEAF, ROOTFN };
static const char *const names[] = { "?", "main", "a", "b", "c", "f", "g", "leaf", "start" };

struct dump {
	char buf[4096];
	size_t n;
};

/* "lvl rl calls base cum name" per node, depth first, one line each */
static int dump_node(void *arg, const struct ct_tree *t, uint32_t v)
{
	struct dump *d = arg;
	const struct ct_node *nd = ct_node(t, v);

	d->n += (size_t)snprintf(d->buf + d->n, sizeof(d->buf) - d->n, "%u %u %llu %llu %llu %s\n",
				 nd->lvl, nd->rl, (unsigned long long)nd->calls,
				 (unsigned long long)ct_base(t, v, 0), (unsigned long long)ct_cum(t, v, 0),
				 names[nd->fn]);
	return 0;
}

static const char *dump(struct ct_tree *t)
{
	static struct dump d;

	d.n = 0;
	d.buf[0] = 0;
	assert_int_equal(ct_finish(t), 0);
	assert_int_equal(ct_walk(t, 0, dump_node, &d), 0);
	return d.buf;
}

static void add(struct ct_tree *t, uint64_t w, uint32_t n, ...)
{
	uint32_t fns[16];
	va_list ap;

	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++)
		fns[i] = va_arg(ap, uint32_t);
	va_end(ap);
	assert_int_not_equal(ct_add_stack(t, fns, n, &w, 0), CT_NONE);
}

/* Samples (root first):
 *   3x main a b a b leaf   (recursion a->b->a->b)
 *   2x main a leaf
 *   1x main c leaf         (leaf reached by a second path)
 *   4x main c              (c itself)
 * Expected tree by hand; cum sorted descending. */
/* The tree of the mixed stacks both tests add (by ct_add_stack, then through a path) */
#define MIXED_TREE \
	"1 1 10 0 10 main\n" \
	"2 1 5 0 5 a\n" \
	"3 1 3 0 3 b\n" \
	"4 2 3 0 3 a\n" \
	"5 2 3 0 3 b\n" \
	"6 1 3 3 3 leaf\n" \
	"3 1 2 2 2 leaf\n" \
	"2 1 5 4 5 c\n" \
	"3 1 1 1 1 leaf\n"

static void test_samples_tree(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	add(t, 1, 6, MAIN, A, B, A, B, LEAF);
	add(t, 1, 6, MAIN, A, B, A, B, LEAF);
	add(t, 1, 6, MAIN, A, B, A, B, LEAF);
	add(t, 1, 3, MAIN, A, LEAF);
	add(t, 1, 3, MAIN, A, LEAF);
	add(t, 1, 3, MAIN, C, LEAF);
	for (int i = 0; i < 4; i++)
		add(t, 1, 2, MAIN, C);
	assert_string_equal(dump(t), MIXED_TREE);

	/* per function: base summed, cum once per sample (RL 1 nodes only) */
	struct ct_fn_total tot[ROOTFN + 1];
	assert_int_equal(ct_max_fn(t), LEAF);
	ct_fn_totals(t, tot, LEAF + 1);
	assert_int_equal(tot[A].cum[0], 5);	/* not 8: the inner a is the same samples */
	assert_int_equal(tot[B].cum[0], 3);
	assert_int_equal(tot[LEAF].base[0], 6);
	assert_int_equal(tot[LEAF].cum[0], 6);	/* two paths add up */
	assert_int_equal(tot[C].base[0], 4);
	assert_int_equal(tot[MAIN].cum[0], 10);
	assert_int_equal(ct_total(t, 0), 10);
	ct_free(t);
}

static void add_path(struct ct_tree *t, struct ct_path *p, uint64_t w, uint32_t n, ...)
{
	uint32_t fns[16];
	va_list ap;

	va_start(ap, n);
	for (uint32_t i = 0; i < n; i++)
		fns[i] = va_arg(ap, uint32_t);
	va_end(ap);
	assert_int_not_equal(ct_add_stack_path(t, p, fns, n, &w, 0), CT_NONE);
}

/* ct_add_stack_path (the previous stack's nodes reused) and ct_add_at (a leaf node
 * found again) make the tree ct_add_stack makes. */
static void test_samples_path(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1), *u = ct_new(1);
	struct ct_path p = {0};
	uint64_t one = 1;

	add_path(t, &p, 1, 6, MAIN, A, B, A, B, LEAF);
	uint32_t deep = ct_add_stack_path(t, &p, (const uint32_t[]){ MAIN, A, B, A, B, LEAF }, 6, &one, 0);
	ct_add_at(t, deep, &one, 0);
	add_path(t, &p, 1, 3, MAIN, A, LEAF);
	add_path(t, &p, 1, 3, MAIN, A, LEAF);
	add_path(t, &p, 1, 3, MAIN, C, LEAF);
	for (int i = 0; i < 4; i++)
		add_path(t, &p, 1, 2, MAIN, C);
	assert_string_equal(dump(t), MIXED_TREE);
	ct_path_free(&p);

	/* nodes that moved are not taken again: a mid-stack start re-rooted under the
	 * caller found later leaves the path's node elsewhere */
	struct ct_cursor *c = ct_cursor_new(u);
	uint64_t moves = ct_moves(u);
	ct_cost(c, LEAF, &one);
	add_path(u, &p, 1, 1, LEAF);
	ct_return(c, F);
	assert_int_not_equal(ct_moves(u), moves);
	add_path(u, &p, 1, 1, LEAF);
	assert_string_equal(dump(u),
		"1 1 0 0 2 f\n"
		"2 1 1 2 2 leaf\n"
		"1 1 1 1 1 leaf\n");
	ct_path_free(&p);
	ct_cursor_free(c);
	ct_free(t);
	ct_free(u);
}

static void test_exact_calls(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	/* main runs 1, calls f twice (f runs 2 each time), f recursion f->f once, then
	 * calls g which runs 3 */
	assert_int_equal(ct_cost(c, MAIN, &one), 0);
	for (int i = 0; i < 2; i++) {
		ct_call(c, F, 0);
		ct_cost(c, F, (uint64_t[]){ 2 });
		ct_return(c, MAIN);
	}
	ct_call(c, F, 0);
	ct_call(c, F, 0);
	ct_cost(c, F, (uint64_t[]){ 5 });
	ct_return(c, F);
	ct_return(c, MAIN);
	ct_call(c, G, 0);
	ct_cost(c, G, (uint64_t[]){ 3 });
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 1);
	assert_string_equal(dump(t),
		"1 1 0 1 13 main\n"
		"2 1 3 4 9 f\n"
		"3 2 1 5 5 f\n"
		"2 1 1 3 3 g\n");
	/* per function: every call counts, the recursive one too (4, not the 3 of RL 1);
	 * Cum once (9, not 14) */
	struct ct_fn_total tot[ROOTFN + 1];
	ct_fn_totals(t, tot, ct_max_fn(t) + 1);
	assert_int_equal(tot[F].calls, 4);
	assert_int_equal(tot[F].base[0], 9);
	assert_int_equal(tot[F].cum[0], 9);
	ct_cursor_free(c);
	ct_free(t);
}

/* Inline frames (ct_cost_inline): a (inlined into main) holding b; a real call from
 * b comes back to b without entering it again; b entered again from a is a call;
 * main's return leaves a and b with it. */
static void test_inline(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	const uint32_t ab[] = { A, B };

	assert_int_equal(ct_cost(c, ROOTFN, (uint64_t[]){ 0 }), 0);
	ct_call(c, MAIN, 0);
	assert_int_equal(ct_cost_inline(c, MAIN, NULL, 0, (uint64_t[]){ 1 }), 0);
	ct_cost_inline(c, MAIN, ab, 1, (uint64_t[]){ 2 });
	ct_cost_inline(c, MAIN, ab, 2, (uint64_t[]){ 3 });
	ct_call(c, LEAF, 0);
	ct_cost_inline(c, LEAF, NULL, 0, (uint64_t[]){ 4 });
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 4);
	ct_cost_inline(c, MAIN, ab, 2, (uint64_t[]){ 5 });
	ct_cost_inline(c, MAIN, ab, 1, (uint64_t[]){ 1 });
	ct_cost_inline(c, MAIN, ab, 2, (uint64_t[]){ 1 });
	ct_return(c, ROOTFN);
	assert_int_equal(ct_cursor_depth(c), 1);
	ct_cost(c, ROOTFN, (uint64_t[]){ 1 });
	assert_string_equal(dump(t),
		"1 1 0 1 18 start\n"
		"2 1 1 1 17 main\n"
		"3 1 1 3 16 a\n"
		"4 1 2 9 13 b\n"
		"5 1 1 4 4 leaf\n");
	ct_cursor_free(c);
	ct_free(t);
}

static void test_tail_and_longjmp(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	ct_cost(c, MAIN, &one);
	/* main -> a, a tail-calls b, b returns straight to main */
	ct_call(c, A, 0);
	ct_call(c, B, CT_TAIL);
	ct_cost(c, B, &one);
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 1);
	/* main -> f -> g -> c, then a longjmp back into main skips three frames */
	ct_call(c, F, 0);
	ct_call(c, G, 0);
	ct_call(c, C, 0);
	ct_cost(c, C, &one);
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 1);
	ct_cost(c, MAIN, &one);
	assert_string_equal(dump(t),
		"1 1 0 2 4 main\n"
		"2 1 1 0 1 a\n"
		"3 1 1 1 1 b\n"
		"2 1 1 0 1 f\n"
		"3 1 1 0 1 g\n"
		"4 1 1 1 1 c\n");
	ct_cursor_free(c);
	ct_free(t);
}

/* longjmp as the trace shows it: main -> f -> g -> g (recursion) -> c, then an
 * indirect jump from c lands in the middle of main.  The skipped frames close with
 * their costs; main goes on at RL 1 (no phantom main under c); a later call from main
 * hangs off main.  A jump into a function not on the stack is a tail call, as before,
 * and a jump to the top function itself changes nothing. */
static void test_jump_into_live_frame(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1, two = 2;

	ct_cost(c, MAIN, &one);
	ct_call(c, F, 0);
	ct_cost(c, F, &one);
	ct_call(c, G, 0);
	ct_call(c, G, 0);
	ct_cost(c, G, &two);
	ct_call(c, C, 0);
	ct_cost(c, C, &one);
	assert_int_equal(ct_jump(c, C), 0);		/* within the top function */
	assert_int_equal(ct_jump(c, LEAF), 0);		/* not on the stack */
	assert_int_equal(ct_cursor_depth(c), 5);
	ct_cost(c, LEAF, &one);				/* ... so a tail call */
	assert_int_equal(ct_cursor_depth(c), 6);
	assert_int_equal(ct_jump(c, MAIN), 1);		/* the longjmp */
	assert_int_equal(ct_cursor_depth(c), 1);
	assert_int_equal(ct_cursor_node(c), ct_child(t, CT_ROOT, MAIN));
	ct_cost(c, MAIN, &two);
	ct_call(c, A, 0);
	ct_cost(c, A, &one);
	ct_return(c, MAIN);
	ct_cost(c, MAIN, &one);
	/* into the nearer of two activations of g */
	ct_call(c, G, 0);
	ct_call(c, G, 0);
	ct_call(c, B, 0);
	assert_int_equal(ct_jump(c, G), 1);
	assert_int_equal(ct_cursor_depth(c), 3);
	assert_string_equal(dump(t),
		"1 1 0 4 10 main\n"
		"2 1 1 1 5 f\n"
		"3 1 1 0 4 g\n"
		"4 2 1 2 4 g\n"
		"5 1 1 1 2 c\n"
		"6 1 1 1 1 leaf\n"
		"2 1 1 1 1 a\n"
		"2 1 1 0 0 g\n"
		"3 2 1 0 0 g\n"
		"4 1 1 0 0 b\n");
	ct_cursor_free(c);
	ct_free(t);
}

/* A function's .cold part is another symbol that the body jumps to and back from
 * (main -> main.cold -> main, as a C++ handler does at each catch): the jump back
 * leaves the tail frame instead of nesting main under main.cold each time.  A tail call
 * chain a -> b -> c coming back to b stays bounded the same way. */
static void test_tail_jump_back(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	ct_cost(c, MAIN, &one);
	for (int i = 0; i < 5; i++) {
		ct_call(c, F, 0);
		ct_cost(c, F, &one);
		ct_return(c, MAIN);
		ct_cost(c, MAIN, &one);
		ct_cost(c, C, &one);	/* main.cold */
		assert_int_equal(ct_cursor_depth(c), 2);
		ct_cost(c, MAIN, &one);	/* back into the body */
		assert_int_equal(ct_cursor_depth(c), 1);
	}
	ct_call(c, A, 0);
	ct_cost(c, B, &one);
	ct_cost(c, G, &one);
	ct_cost(c, B, &one);
	assert_int_equal(ct_cursor_depth(c), 3);
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 1);
	assert_string_equal(dump(t),
		"1 1 0 11 24 main\n"
		"2 1 5 5 5 f\n"
		"2 1 5 5 5 c\n"
		"2 1 1 0 3 a\n"
		"3 1 1 2 3 b\n"
		"4 1 1 1 1 g\n"
		"");
	ct_cursor_free(c);
	ct_free(t);
}

/* The trace starts inside leaf, called from f, called from main: two returns into
 * callers never seen move what was recorded under them; f is then called again from
 * main and merges with the moved subtree. */
static void test_mid_stack(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	ct_cost(c, LEAF, &one);
	ct_return(c, F);
	ct_cost(c, F, &one);
	ct_return(c, MAIN);
	ct_cost(c, MAIN, &one);
	ct_call(c, F, 0);
	ct_call(c, LEAF, 0);
	ct_cost(c, LEAF, &one);
	ct_return(c, F);
	ct_return(c, MAIN);
	assert_string_equal(dump(t),
		"1 1 0 1 4 main\n"
		"2 1 1 1 3 f\n"
		"3 1 1 2 2 leaf\n");
	/* a gap: the stack restarts at the root */
	ct_call(c, G, 0);
	ct_gap(c);
	ct_cost(c, C, &one);
	assert_int_equal(ct_cursor_depth(c), 1);
	ct_cursor_free(c);
	ct_free(t);
}

/* Recursion that started before the trace: f returns into f. */
static void test_mid_stack_recursion(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	ct_cost(c, F, &one);
	ct_return(c, F);
	ct_cost(c, F, &one);
	ct_return(c, MAIN);
	assert_string_equal(dump(t),
		"1 1 0 0 2 main\n"
		"2 1 0 1 2 f\n"
		"3 2 0 1 1 f\n");
	ct_cursor_free(c);
	ct_free(t);
}

/* Exact calls with sampled costs spliced in; merge of two thread trees. */
static void test_merge_and_splice(void **state)
{
	(void)state;
	struct ct_tree *t1 = ct_new(1), *t2 = ct_new(1), *all = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t1);
	uint64_t zero = 0, w = 7;

	ct_cost(c, MAIN, &zero);
	ct_call(c, F, 0);
	ct_return(c, MAIN);
	ct_call(c, F, 0);
	ct_return(c, MAIN);
	uint32_t stack[] = { MAIN, F };
	ct_add_stack(t1, stack, 2, &w, CT_NO_CALLS);
	add(t2, 1, 2, MAIN, G);
	add(t2, 1, 2, MAIN, F);
	assert_int_equal(ct_merge(all, t1), 0);
	assert_int_equal(ct_merge(all, t2), 0);
	assert_string_equal(dump(all),
		"1 1 2 0 9 main\n"
		"2 1 3 8 8 f\n"
		"2 1 1 1 1 g\n");
	ct_cursor_free(c);
	ct_free(t1);
	ct_free(t2);
	ct_free(all);
}

/* Deep recursion must not overflow anything (iterative walks). */
static void test_deep(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t one = 1;

	ct_cost(c, MAIN, &one);
	for (int i = 0; i < 100000; i++)
		ct_call(c, F, 0);
	ct_cost(c, F, &one);
	assert_int_equal(ct_finish(t), 0);
	assert_int_equal(ct_nnodes(t), 100002);
	assert_int_equal(ct_node(t, 100001)->rl, 100000);
	assert_int_equal(ct_node(t, 100001)->lvl, 100001);
	assert_int_equal(ct_cum(t, 1, 0), 2);
	ct_cursor_free(c);
	ct_free(t);
}

/* A tree with nothing in it (a thread whose trace held only gaps) walks to nothing;
 * so does a leaf: no children to sort (the ASan/UBSan build checks no NULL reaches
 * qsort). */
static void test_empty_tree(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	assert_string_equal(dump(t), "");
	add(t, 1, 1, 1);
	assert_string_equal(dump(t), "1 1 1 1 1 main\n");
	ct_free(t);
}

/* Probe-overhead compensation, then the split of an event node's time by samples
 * (metric 0 time, 1 samples; a probed call costs 20 in its caller, 10 in itself):
 *   root  Base 100 - A's 2 calls * 20                        = 60
 *   a     2 calls, Base 1000 - 2 * 10 - b's 3 calls * 20     = 920, then split with
 *         the sampled leaf by samples 1 : 3: a 230, leaf 690
 *   b     3 calls, Base 25 - 3 * 10: clamped at 0 (25 taken)
 * 40 + 80 + 25 = 145 taken in all. */
static void test_compensate(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(2);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t w[2], sub = 0;
	uint32_t leaf = LEAF;

	assert_int_equal(ct_call(c, A, 0), 0);
	uint32_t a = ct_cursor_node(c);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(ct_call(c, B, 0), 0);
		assert_int_equal(ct_return(c, CT_FN_UNKNOWN), 0);
	}
	assert_int_equal(ct_return(c, CT_FN_UNKNOWN), 0);
	assert_int_equal(ct_call(c, A, 0), 0);
	assert_int_equal(ct_return(c, CT_FN_UNKNOWN), 0);
	ct_add_base(t, CT_ROOT, (uint64_t[]){ 100, 0 });
	ct_add_base(t, a, (uint64_t[]){ 1000, 1 });
	ct_add_base(t, ct_child(t, a, B), (uint64_t[]){ 25, 0 });
	w[0] = 0;
	w[1] = 3;
	assert_int_not_equal(ct_add_stack_at(t, a, &leaf, 1, w, CT_NO_CALLS | CT_SAMPLED), CT_NONE);
	assert_int_equal(ct_compensate(t, 0, 20, 10, CT_NONE, &sub), 0);
	assert_int_equal(sub, 145);
	assert_int_equal(ct_apportion(t, 0, 1), 0);
	assert_string_equal(dump(t), "1 1 2 230 920 a\n"
				     "2 1 0 690 690 leaf\n"
				     "2 1 3 0 0 b\n");
	assert_int_equal(ct_total(t, 0), 980);
	ct_cursor_free(c);
	ct_free(t);
}

/* A node's Base short of its probes' cost lends the rest from its child of the spill
 * function (the time it was switched out), and an event node below sampled callers
 * (main, an outermost probe's callchain) charges its caller's cost to the root: B
 * called 3 times below main (sampled) with a Base of 25 and a switched-out child of
 * 40; callee 10, caller 20: B gives 25 + 5 of the child's, the root 60 of its 100. */
static void test_compensate_spill(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	uint64_t zero = 0, off = 40, sub = 0;
	uint32_t fn = MAIN, leaf = LEAF;
	uint32_t above = ct_add_stack_at(t, CT_ROOT, &fn, 1, &zero, CT_NO_CALLS | CT_SAMPLED);

	for (int i = 0; i < 3; i++) {
		assert_int_equal(ct_call_at(c, above, B), 0);
		assert_int_equal(ct_leave(c, B), 0);
	}
	uint32_t b = ct_child(t, above, B);
	ct_add_base(t, CT_ROOT, (uint64_t[]){ 100 });
	ct_add_base(t, b, (uint64_t[]){ 25 });
	assert_int_not_equal(ct_add_stack_at(t, b, &leaf, 1, &off, CT_NO_CALLS | CT_SAMPLED), CT_NONE);
	assert_int_equal(ct_compensate(t, 0, 20, 10, LEAF, &sub), 0);
	assert_int_equal(sub, 60 + 30);
	assert_string_equal(dump(t), "1 1 0 0 35 main\n"
				     "2 1 3 0 35 b\n"
				     "3 1 0 35 35 leaf\n");
	assert_int_equal(ct_total(t, 0), 40 + 35);
	ct_cursor_free(c);
	ct_free(t);
}

/* What tree_build does with ct_sig's answers. */
static void sig_ev(struct ct_sig *s, struct ct_cursor *c, struct xev ev, uint32_t handler)
{
	uint64_t at = 0, id = 0;

	switch (ct_sig_event(s, &ev, &at, &id)) {
	case CT_SIG_ENTER: {
		uint64_t old = ev.kind == XEV_ENABLE ? ct_in_trampoline(c) : 0;
		if (old) {
			ct_sig_chain(s, old, id);
			assert_int_equal(ct_resume(c, old), 1);
		}
		assert_int_equal(ct_signal(c, handler, id), 0);
		break;
	}
	case CT_SIG_BACK:
		assert_int_equal(ct_resume(c, id), 1);
		break;
	case CT_SIG_NONE:
		assert_int_equal(handler, 0);
		break;
	}
}

/* f is interrupted at 0x105 (FUP + TIP into g), then g is delivered after f's syscall
 * at 0x200 (TIP.PGD, TIP.PGE at g), and once more as that signal's sigreturn ends;
 * each g calls a and returns into the trampoline c; sigreturn lands back in f, which
 * goes on (one call) and returns to main. */
static void test_signals(void **state)
{
	(void)state;
	struct ct_tree *t = ct_new(1);
	struct ct_cursor *c = ct_cursor_new(t);
	struct ct_sig s = { 0 };

	ct_call(c, MAIN, 0);
	ct_call(c, F, 0);
	sig_ev(&s, c, (struct xev){ .kind = XEV_INTERRUPT, .ip = 0x105, .addr = 0x400 }, G);
	for (int i = 0; i < 3; i++) {
		ct_call(c, A, 0);
		ct_return(c, G);
		assert_true(ct_in_handler(c));
		ct_return(c, C);	/* into the trampoline */
		assert_false(ct_in_handler(c));
		sig_ev(&s, c, (struct xev){ .kind = XEV_BLOCK, .end = 0x500 }, 0);
		sig_ev(&s, c, (struct xev){ .kind = XEV_DISABLE, .flags = XEV_F_SYSCALL }, 0);
		if (i == 1) {	/* another signal pending at sigreturn */
			sig_ev(&s, c, (struct xev){ .kind = XEV_ENABLE, .ip = 0x400 }, G);
			continue;
		}
		sig_ev(&s, c, (struct xev){ .kind = XEV_ENABLE, .ip = i == 0 ? 0x105 : 0x202 }, 0);
		assert_int_equal(ct_cursor_depth(c), 2);
		if (i == 0) {	/* f's syscall, its return at 0x202 delivers g */
			sig_ev(&s, c, (struct xev){ .kind = XEV_BLOCK, .end = 0x200 }, 0);
			sig_ev(&s, c, (struct xev){ .kind = XEV_DISABLE, .flags = XEV_F_SYSCALL }, 0);
			sig_ev(&s, c, (struct xev){ .kind = XEV_ENABLE, .ip = 0x400 }, G);
		}
	}
	/* f's next syscall returns where it stopped: nothing happens */
	sig_ev(&s, c, (struct xev){ .kind = XEV_BLOCK, .end = 0x200 }, 0);
	sig_ev(&s, c, (struct xev){ .kind = XEV_DISABLE, .flags = XEV_F_SYSCALL }, 0);
	sig_ev(&s, c, (struct xev){ .kind = XEV_ENABLE, .ip = 0x202 }, 0);
	ct_return(c, MAIN);
	assert_int_equal(ct_cursor_depth(c), 1);
	assert_string_equal(dump(t), "1 1 1 0 0 main\n"
				     "2 1 1 0 0 f\n"
				     "3 1 3 0 0 g\n"
				     "4 1 3 0 0 a\n"
				     "3 1 0 0 0 c\n");
	ct_cursor_free(c);
	ct_free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_samples_tree),
		cmocka_unit_test(test_samples_path),
		cmocka_unit_test(test_empty_tree),
		cmocka_unit_test(test_exact_calls),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_tail_and_longjmp),
		cmocka_unit_test(test_jump_into_live_frame),
		cmocka_unit_test(test_tail_jump_back),
		cmocka_unit_test(test_mid_stack),
		cmocka_unit_test(test_mid_stack_recursion),
		cmocka_unit_test(test_merge_and_splice),
		cmocka_unit_test(test_deep),
		cmocka_unit_test(test_compensate),
		cmocka_unit_test(test_compensate_spill),
		cmocka_unit_test(test_signals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
