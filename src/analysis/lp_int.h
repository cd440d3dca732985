/* What the loop analysis's files share (lp.h): functions and their graphs
 * (lp_graph.c), threads and their frames (lp_track.c). */
#ifndef LP_INT_H
#define LP_INT_H

#include "analysis/lp.h"
#include "util/xp_map.h"

#define LP_NONE UINT32_MAX
#define LP_MAX_NEST 16		/* loops active in one frame; deeper ones are not followed */
#define LP_MAX_FRAMES 4096	/* frames of one thread; past that the top is replaced */

struct lp_func {
	uint64_t key, start;
	int32_t pid;
	uint64_t time;
	/* pass 1 */
	struct xp_map range_end;	/* block start -> the furthest block end from it */
	struct xp_map edge_of;		/* hash of an edge -> index + 1 in edges */
	uint64_t (*edges)[2];		/* (last instruction of the source block, target) */
	uint32_t nedges, capedges;
	struct xp_map entries;		/* where frames of it started */
	/* lp_find */
	uint64_t *lead;			/* the leaders, sorted: the graph's nodes */
	uint32_t nlead;
	uint64_t *nins;			/* instructions of each node */
	uint64_t *nend;			/* the address after each node's last instruction */
	uint32_t *inner;		/* the innermost loop holding each node, LP_NONE */
	uint64_t *visits;		/* pass 2 */
	uint64_t *cycles;		/* pass 2: of the blocks starting at each node */
};

/* per loop, the trip counts of its entries */
struct lp_trips {
	struct xp_map count_of;		/* trips -> entries with them */
	bool overflow;			/* more distinct values than LP_MAX_DISTINCT */
};

struct lp_act {
	uint32_t loop;
	uint64_t trips;
};

struct lp_frame {
	uint32_t fn;			/* index in funcs, LP_PENDING, LP_NONE: no function */
	uint64_t last_end;		/* last instruction of its last block, 0: none */
	uint32_t nact;
	struct lp_act act[LP_MAX_NEST];
};
#define LP_PENDING (UINT32_MAX - 1)	/* a call's frame before its first block */

struct lp_thread {
	struct lp_frame *fr;
	uint32_t n, cap;
};

struct lp {
	struct lp_env env;
	bool found;			/* lp_find ran: pass 2 */
	struct lp_func *funcs;
	uint32_t nfuncs, capfuncs;
	struct xp_map func_of;		/* hash of (key, start) -> index + 1 */
	struct lp_thread *threads;
	uint32_t nthreads, capthreads;
	struct xp_map thread_of;	/* tid -> index + 1 */
	struct lp_loop *loops;
	struct lp_trips *trips;
	uint32_t nloops, caploops, captrips;
	struct lp_loop *out;		/* lp_loops' ordered copy */
	bool has_cycles;		/* a block of pass 2 had a cycle count */
};

/* lp_graph.c: pass 1's recording for a block of function f in frame fr (fresh: fr
 * began with it), and the function of a key and start (added when new; LP_NONE: no
 * memory, or pass 2 meets a function pass 1 did not) */
int lp_record(struct lp_func *f, struct lp_frame *fr, bool fresh, const struct xev *ev);
uint32_t lp_func_index(struct lp *a, uint64_t key, uint64_t start, const struct xev *ev);
void lp_func_free(struct lp_func *f);

#endif
