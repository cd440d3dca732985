/* Session: the sideband state of a trace over time.  Fed every record in time order
 * (sb_feed), it keeps per process the history of its address space (a mapping is
 * valid from the time it appears until it is replaced, unmapped by exec, or the
 * process is gone) and per thread its names over time, parent and lifetime.
 * Lookups take a time, so a decoder that runs behind the sideband (PT) sees the
 * mappings as they were when the code ran. */
#ifndef SB_H
#define SB_H

#include <stdbool.h>
#include <stdint.h>

#include "perfdata/pd_read.h"

#define SB_PID_KERNEL (-1)

/* One mapped file (interned by path + build-id); symbols hang off `sym`. */
struct sb_dso {
	char *path;
	uint8_t build_id[20];
	uint8_t bid_size;	/* 0: unknown */
	bool kernel;		/* [kernel.kallsyms], modules */
	bool anon;		/* //anon, [heap], [stack], ... (no file to read) */
	uint32_t id;		/* dense index */
	void *sym;		/* owned by the symbol layer */
};

struct sb_map {
	uint64_t start, end;	/* [start, end) */
	uint64_t pgoff;		/* file offset of `start` */
	uint64_t time_from, time_to;	/* valid [from, to); to = UINT64_MAX while live */
	uint32_t prot, flags;
	struct sb_dso *dso;
};

struct sb_thread {
	int32_t pid, tid, ppid;
	uint64_t start_time, exit_time;	/* 0: unknown */
	uint32_t ncomms;
	struct { uint64_t time; char *comm; } *comms;	/* in time order */
};

struct sb_session;

struct sb_session *sb_new(void);
void sb_free(struct sb_session *s);

/* Takes MMAP/MMAP2/COMM/FORK/EXIT (others are ignored); 0 or -ENOMEM. */
int sb_feed(struct sb_session *s, const struct pd_rec *rec);
/* Build-ids from the file header, used for mappings whose MMAP2 lacks one.  The list
 * is copied (HEADER_BUILD_ID records read after add to the reader's, which moves), its
 * file names are not: the pd_file outlives s.  0 or -ENOMEM. */
int sb_set_build_ids(struct sb_session *s, const struct pd_build_id *bids, size_t n);

/* Adds a mapping directly (synthetic producers, tests). */
int sb_add_map(struct sb_session *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
	       uint32_t prot, const char *path, const uint8_t *bid, uint8_t bid_size, uint64_t time);

/* The mapping holding addr in process pid at `time` (0: the latest state). Kernel
 * addresses are looked up in the kernel's maps whatever pid says. */
const struct sb_map *sb_find_map(struct sb_session *s, int32_t pid, uint64_t addr, uint64_t time);

/* The current (latest) mappings of process pid, sorted by address. */
uint32_t sb_maps(struct sb_session *s, int32_t pid, const struct sb_map **maps);

struct sb_thread *sb_thread(struct sb_session *s, int32_t tid);
/* Creates the thread when unknown (samples of threads without a COMM). */
struct sb_thread *sb_thread_get(struct sb_session *s, int32_t pid, int32_t tid);
/* Name of the thread at `time` (its first name when time precedes it; ":TID" if none). */
const char *sb_comm_at(struct sb_session *s, int32_t tid, uint64_t time);

/* Changes whenever a mapping is added or retired (for lookup caches). */
uint64_t sb_generation(const struct sb_session *s);

uint32_t sb_ndsos(const struct sb_session *s);
struct sb_dso *sb_dso_at(struct sb_session *s, uint32_t i);
/* The dso's file by its absolute path (what objdump, KCachegrind or a reader of its
 * code can open), NULL for anonymous code and names like [vdso] or [kernel.kallsyms]. */
static inline const char *sb_dso_file(const struct sb_dso *d)
{
	return d && !d->anon && d->path && d->path[0] == '/' ? d->path : NULL;
}
struct sb_dso *sb_dso_get(struct sb_session *s, const char *path, const uint8_t *bid, uint8_t bid_size);

/* All known threads (for per-thread reports), in order of first appearance. */
uint32_t sb_nthreads(const struct sb_session *s);
struct sb_thread *sb_thread_at(struct sb_session *s, uint32_t i);

#endif
