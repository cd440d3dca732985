/* LBR / branch-stack decoder: turns PERF_SAMPLE_BRANCH_STACK samples (Intel LBR, AMD
 * BRS/LbrExtV2, or branch stacks perf inject synthesizes from PT) into the common
 * execution-event stream, every event marked XEV_F_SAMPLED.
 *
 * A branch stack lists the last N taken branches, newest first.  Between two of them the
 * code ran straight: [e[i+1].to, e[i].from] is an executed range, and e[i].cycles (when
 * the hardware fills it; 0 means unknown) is the time it took, the branch included.  So a
 * sample of N entries gives N-1 ranges, N taken branches (calls and returns among them
 * when the entry type or the code says so) and, in call-stack mode (`-g lbr`), a callchain
 * instead of ranges. */
#ifndef DLBR_H
#define DLBR_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "decode/xev.h"
#include "arch/x86_64/x86_range.h"

/* perf's own limit for brstackinsn: a longer "range" is two unrelated entries. */
#define DLBR_MAX_RANGE 16384

/* What the code says about a range, when the caller can read it (module snapshots via
 * the session): the ISA's range walk.  Without it ranges carry insns = 0 (unknown) and
 * no not-taken branches. */
struct dlbr_code {
	/* 0 and *ri filled, or negative when the bytes are not available. */
	int (*range)(void *ctx, int32_t pid, uint64_t time, uint64_t start, uint64_t end,
		     struct x86_range_info *ri);
	/* Kind of the branch at ip when the entry has no type: sets *kind and *flags
	 * (XEV_F_COND, XEV_F_INDIRECT, ...); negative when unknown. */
	int (*classify)(void *ctx, int32_t pid, uint64_t time, uint64_t ip,
			enum xev_kind *kind, uint32_t *flags);
	void *ctx;
};

struct dlbr_opts {
	int call_stack;		/* branch_sample_type had PERF_SAMPLE_BRANCH_CALL_STACK */
	int emit_sample;	/* also emit the XEV_SAMPLE itself (ip, period, callchain) */
	uint64_t max_range;	/* 0: DLBR_MAX_RANGE */
};

struct dlbr_stats {
	uint64_t samples;
	uint64_t entries;
	uint64_t ranges;
	uint64_t bad_ranges;	/* backwards, too long, or crossing user/kernel */
	uint64_t cycles_known;	/* ranges with a cycle count */
	uint64_t calls, returns, branches;
	uint64_t no_code;	/* ranges whose code could not be read */
};

struct dlbr_sample {
	int32_t pid, tid, cpu;
	uint64_t time;
	uint64_t ip;
	uint64_t period;
	uint32_t event;
	const struct perf_branch_entry *br;	/* newest first */
	uint32_t nr;
};

struct dlbr {
	struct dlbr_opts o;
	struct dlbr_code code;
	struct dlbr_stats st;
	struct x86_range_info ri;
	uint64_t chain[1 + 256];	/* call-stack mode callchain */
};

void dlbr_init(struct dlbr *d, const struct dlbr_opts *o, const struct dlbr_code *code);

/* Emits the sample's events oldest first.  Returns 0 or the sink's non-zero value. */
int dlbr_sample(struct dlbr *d, const struct dlbr_sample *s, const struct xev_sink *sink);

/* Parses the PERF_SAMPLE_BRANCH_STACK part of a sample body at p (bytes left: len):
 * { u64 nr; [u64 hw_idx;] struct perf_branch_entry[nr] }.  Sets *br (pointing into p, 8-byte
 * aligned as the record is), *nr, *hw_idx (-1 when absent) and returns the bytes used, or
 * -EINVAL when nr does not fit. */
long dlbr_parse_stack(const void *p, size_t len, int has_hw_idx,
		      const struct perf_branch_entry **br, uint32_t *nr, uint64_t *hw_idx);

#endif
