/* THE call tree: one structure fed by sampled stacks and by exact call/return events.
 *
 * A node is a call path from the root (a distinct sequence of functions).  Functions
 * are small dense integer keys chosen by the caller (sym_fn ids); ct never interprets
 * them.  Every node carries Calls and, per metric (samples, period, instructions,
 * cycles, ... fixed at ct_new), Base (cost while the node was the leaf / top of stack)
 * and Cum (Base plus every descendant's Base).  After ct_finish each node also has:
 *   Lvl  depth (children of the root are level 1),
 *   RL   recursion level: how many times the node's function occurs on the path from
 *        the root down to and including the node (1 = not recursive).
 *
 * Sampled input (ct_add_stack): one stack per sample, root first.  Calls of every node
 * on the path += 1 (samples through the node), Base of the leaf += weights.
 *
 * Exact input (ct_cursor): per thread, ct_call / ct_return / ct_cost follow the
 * program.  Calls = times the path was entered.  Handled without corrupting the tree:
 *   - tail calls (CT_TAIL): the callee is shown under the function that jumped to it;
 *     returning from it also leaves that function;
 *   - returns that skip frames (exceptions): a return whose target function is deeper
 *     on the stack pops every frame above it;
 *   - jumps back into a live frame (longjmp): ct_jump to a function deeper on the stack
 *     pops every frame above it (their costs stay where they were spent);
 *   - signal handlers (ct_signal): a handler's frame goes above the interrupted one,
 *     its return leads into the signal trampoline's frame, and sigreturn (ct_resume)
 *     leaves both: the interrupted frame goes on, it is not entered again;
 *   - traces that start mid-stack: the first function seen hangs off the root; when it
 *     returns into a function not on the stack, the subtree seen so far is moved under
 *     that caller (and merged with what is there);
 *   - gaps (ct_gap): the stack is unknown afterwards and restarts at the root.
 * Merged event/sample trees: exact calls and returns (probe entries/exits, PT) build
 * the event nodes; each sample hangs its callchain below the event node active in its
 * thread (ct_add_stack_at with CT_SAMPLED): nodes only samples made are `sampled`
 * (their Calls are unknown).  ct_apportion then splits an event node's exact Base of
 * one metric (time) between its own code and its sampled descendants in proportion
 * to where its samples fell: its Cum stays exact.
 *
 * Per thread and merged: build one tree per thread and ct_merge them into another. */
#ifndef CT_H
#define CT_H

#include <stdbool.h>
#include <stdint.h>

#define CT_ROOT 0u		/* node index of the root */
#define CT_NONE UINT32_MAX
#define CT_FN_ROOT UINT32_MAX	/* fn key of the root */
#define CT_FN_UNKNOWN (UINT32_MAX - 1)	/* "don't know" for ct_return's target */
#define CT_MAX_METRICS 8

struct ct_node {
	uint32_t fn;
	uint32_t parent;
	uint32_t first_child, next_sibling;
	uint32_t lvl, rl;	/* valid after ct_finish */
	uint64_t calls;
	bool sampled;		/* made by samples only: Calls unknown */
};

struct ct_tree;

struct ct_tree *ct_new(unsigned nmetrics);
void ct_free(struct ct_tree *t);
unsigned ct_nmetrics(const struct ct_tree *t);

/* The child of `parent` for function fn, created when missing; CT_NONE on ENOMEM. */
uint32_t ct_child(struct ct_tree *t, uint32_t parent, uint32_t fn);

enum { CT_NO_CALLS = 1u << 0, CT_SAMPLED = 1u << 1 };
/* One sampled stack, root first (fns[0] is the outermost caller, fns[n-1] the leaf).
 * `w` has nmetrics weights.  Returns the leaf node, or CT_NONE on ENOMEM. */
uint32_t ct_add_stack(struct ct_tree *t, const uint32_t *fns, uint32_t n, const uint64_t *w,
		      unsigned flags);
/* The same below `parent`; with CT_SAMPLED the nodes it creates are marked sampled. */
uint32_t ct_add_stack_at(struct ct_tree *t, uint32_t parent, const uint32_t *fns, uint32_t n,
			 const uint64_t *w, unsigned flags);
/* The nodes of the previous stack added through it (a zeroed struct: none).  A
 * thread's consecutive samples share their outer frames: ct_add_stack_path finds their
 * nodes again without a lookup.  Same result as ct_add_stack. */
struct ct_path {
	const struct ct_tree *tree;
	uint64_t unlinks;	/* the tree's moves when the path was taken */
	uint32_t *fn, *node;	/* root first */
	uint32_t n, cap, capnode;
};
uint32_t ct_add_stack_path(struct ct_tree *t, struct ct_path *p, const uint32_t *fns, uint32_t n,
			   const uint64_t *w, unsigned flags);
void ct_path_free(struct ct_path *p);
/* Changes when nodes move (a subtree re-rooted under a caller found later): a node
 * found before may then stand for another path. */
uint64_t ct_moves(const struct ct_tree *t);
/* One more sample of the stack that ends at `leaf`, a node made by samples earlier:
 * Calls of every node from it up to the root (unless CT_NO_CALLS), Base of it += w.
 * What ct_add_stack of that path does, as long as ct_moves is unchanged. */
void ct_add_at(struct ct_tree *t, uint32_t leaf, const uint64_t *w, unsigned flags);
/* Splits the Base of metric `m` of every event (not sampled) node between the node and
 * the sampled nodes below it (down to the next event nodes) in proportion to their
 * Base of metric `by`; nodes with no `by` weight below them keep theirs.  Before
 * ct_finish. */
int ct_apportion(struct ct_tree *t, unsigned m, unsigned by);
/* Probe-overhead compensation of merged trees: every call of an event node was a probe
 * hit pair that cost `callee` in the node's own time and `caller` in its parent's.  So
 * each event node (and the root) loses from its Base of metric `m` calls * callee plus,
 * per event child (the nearest event nodes below it, through sampled ones), the
 * child's calls * caller (clamped at 0).  What a Base cannot give is taken from the
 * node's child of function `spill` (CT_NONE: none), the time the thread was switched
 * out there: a hit's cost in wall time includes the preemption it causes.  *sub: the
 * total taken.
 * Before ct_apportion, so sampled nodes get their share of the compensated time; Cum
 * follows at ct_finish.  0 or -ENOMEM. */
int ct_compensate(struct ct_tree *t, unsigned m, uint64_t caller, uint64_t callee, uint32_t spill,
		  uint64_t *sub);
/* The smallest Base of metric `m` per call among event nodes without event children
 * called at least min_calls times: what a probed call costs inside the callee in this
 * very trace, plus that leaf's own work (0: no such node).  Before ct_apportion. */
uint64_t ct_leaf_window(const struct ct_tree *t, unsigned m, uint64_t min_calls);
/* Adds weights to a node's Base directly. */
void ct_add_base(struct ct_tree *t, uint32_t node, const uint64_t *w);

/* Exact events. */
struct ct_cursor;
struct ct_cursor *ct_cursor_new(struct ct_tree *t);
void ct_cursor_free(struct ct_cursor *c);
enum { CT_TAIL = 1u << 0 };
int ct_call(struct ct_cursor *c, uint32_t callee, unsigned flags);
/* A call whose callers are known only from a callchain: on an empty stack the callee's
 * node goes below `parent` (the callers' sampled path, ct_add_stack_at), else on top
 * of the stack as ct_call. */
int ct_call_at(struct ct_cursor *c, uint32_t parent, uint32_t callee);
/* A return whose target lies in function `to` (CT_FN_UNKNOWN: plain pop).  The return
 * of a signal handler (ct_in_handler) goes to the signal trampoline `to`, entered at
 * its start: its frame (not counted as a call) replaces the handler's until ct_resume. */
int ct_return(struct ct_cursor *c, uint32_t to);
/* A signal handler (or interrupt handler) entered asynchronously above the running
 * frame: a call of `handler` whose frame carries the signal's id (analysis/ct_sig.h). */
int ct_signal(struct ct_cursor *c, uint32_t handler, uint64_t sig);
/* Whether a return now would leave a signal handler's frame. */
bool ct_in_handler(const struct ct_cursor *c);
/* The signal whose trampoline runs on top of the stack, 0 when none does. */
uint64_t ct_in_trampoline(const struct ct_cursor *c);
/* Execution is back in the frame signal `sig` interrupted (sigreturn): the handler's
 * frame and everything above it are left (1); 0 when no frame has that id. */
int ct_resume(struct ct_cursor *c, uint64_t sig);
/* A jump (not a call) into the middle of function `to` — how longjmp lands.  When `to`
 * is deeper on the stack, the frames above its nearest activation are left (1 is
 * returned); otherwise nothing changes (0) and ct_cost enters `to` as a tail call. */
int ct_jump(struct ct_cursor *c, uint32_t to);
/* Function `fn` returns (an exit event names the function, not the return address):
 * leaves its innermost activation and every frame above it.  Returns how many frames
 * above it were left unreturned (0 when fn was on top), -ENOENT when fn is not on the
 * stack (a return without its entry: nothing changes). */
int ct_leave(struct ct_cursor *c, uint32_t fn);
/* Cost spent in function `fn` (the function of the current ip): added to the top of
 * the stack.  An empty stack starts at fn (mid-stack start); a different fn than the
 * top means control reached it without a call we saw: it is entered as a tail call,
 * unless fn is in the top's chain of tail calls (a .cold part jumping back to its
 * function's body): then the frames above it are left. */
int ct_cost(struct ct_cursor *c, uint32_t fn, const uint64_t *w);
/* ct_cost for code inlined into fn: `chain` (n ids, outermost first) are the
 * functions inlined there (none: fn's own code).  They stand as frames above fn's:
 * those of the chain already there stay, the others are left, the new ones entered,
 * each entry a call; a call from inside them goes above them, its return comes back
 * to them, fn's return leaves them with fn.  Cost goes to the innermost. */
int ct_cost_inline(struct ct_cursor *c, uint32_t fn, const uint32_t *chain, uint32_t n, const uint64_t *w);
void ct_gap(struct ct_cursor *c);
uint32_t ct_cursor_depth(const struct ct_cursor *c);
uint32_t ct_cursor_node(const struct ct_cursor *c);	/* CT_ROOT when empty */

/* Computes Lvl, RL, Cum.  Call again after more input or a merge. */
int ct_finish(struct ct_tree *t);
/* Adds every path of src into dst (Calls, Base).  Run ct_finish(dst) afterwards. */
int ct_merge(struct ct_tree *dst, const struct ct_tree *src);

uint32_t ct_nnodes(const struct ct_tree *t);
const struct ct_node *ct_node(const struct ct_tree *t, uint32_t i);
uint64_t ct_base(const struct ct_tree *t, uint32_t node, unsigned metric);
uint64_t ct_cum(const struct ct_tree *t, uint32_t node, unsigned metric);
/* Total cost of the tree (the root's Cum). */
uint64_t ct_total(const struct ct_tree *t, unsigned metric);

/* Depth-first walk from the root (root itself not visited).  Children are visited by
 * decreasing Cum of `metric`, ties by Calls, then first appearance.  The visitor returns
 * 0 to go on, CT_SKIP to skip the node's children, anything else to stop (returned). */
#define CT_SKIP 1
typedef int (*ct_visit_fn)(void *ctx, const struct ct_tree *t, uint32_t node);
int ct_walk(const struct ct_tree *t, unsigned metric, ct_visit_fn fn, void *ctx);

/* Per-function totals: Base and Calls summed over the function's nodes (every call,
 * recursive ones too: fib(15) is 1973 calls), Cum summed over its outermost nodes only
 * (RL == 1: the time of a recursion counted once).  `out` is indexed by fn key, sized ct_max_fn()+1; needs ct_finish. */
struct ct_fn_total {
	uint64_t calls;
	bool exact;		/* some node of the function is an event node */
	uint64_t base[CT_MAX_METRICS];
	uint64_t cum[CT_MAX_METRICS];
	bool seen;
};
uint32_t ct_max_fn(const struct ct_tree *t);
int ct_fn_totals(const struct ct_tree *t, struct ct_fn_total *out, uint32_t nout);

#endif
