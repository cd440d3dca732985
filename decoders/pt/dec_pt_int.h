/* The perf.data PT decoder's own state: the records and the order of the queues
 * (dec_pt.c), one queue's decode (dec_pt_queue.c), the -j part (dec_pt_par.c: pieces
 * between PSBs, a thread per timed queue). */
#ifndef DEC_PT_INT_H
#define DEC_PT_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "decode/dec_par.h"
#include "decode/decoder.h"
#include "decoders/pt/dpt.h"
#include "perfdata/pd_format.h"

struct part {
	uint64_t start, end;	/* byte range of the queue's stream */
	uint64_t lost;		/* bytes lost before this part (0: none) */
	const char *why;
};

struct queue {
	uint32_t idx;
	int32_t tid, cpu;	/* tid -1: per-cpu queue */
	FILE *f;
	uint64_t size;		/* bytes written */
	uint64_t next_off;	/* AUX offset the next chunk should have */
	uint64_t last_off;	/* AUX offset of the last chunk */
	struct part *parts;
	size_t nparts;
};

struct mapping {
	int32_t pid;
	uint64_t start, len, pgoff, time;
	struct sb_dso *dso;
};

struct sw {
	int32_t cpu, pid, tid;
	uint64_t time;
};

/* A walk over the switch records of one cpu: queue times only grow, so each walk
 * passes over them once (two walks: the decoder reads code ahead of the events). */
struct swcur {
	size_t pos;
	uint64_t time;
	int32_t pid, tid;
};

struct dpp {
	struct dec_ctx *c;
	const struct xev_sink *sink;
	uint64_t priv[PD_PT_INFO_WORDS];
	size_t npriv;
	bool have_info;
	uint64_t config;	/* the PT attr's config */
	struct queue *q;
	size_t nq;
	struct mapping *maps;
	size_t nmaps, capmaps;
	/* execs (COMM records with the exec flag): a process's code before one is not its
	 * code after, though both may sit at the same addresses (valgrind, --mode dbt,
	 * loads every program at the same place) */
	struct { int32_t pid; uint64_t time; } *execs;
	size_t nexecs, capexecs;
	struct sw *sws;
	size_t nsw, capsw;
	struct sb_code *mem;
	uint64_t gaps, lost_bytes, insns, nocode, nocode_bytes;
	/* the first address whose code was missing in the kernel's [uprobes] page, and
	 * whether code was missing elsewhere (a module without a usable file) */
	uint64_t xol_at;
	bool nocode_other;
	struct qdec *qd;	/* pass 2: every queue's decoder, for the progress line */
	/* pass 2: bytes of each queue decoded, about (the progress line; apart from the
	 * queues' decoders, which pieces copy while it moves) */
	uint64_t *pos;
	uint64_t total;		/* pass 2: bytes of PT in all queues */
};

#define QIMAGES 8

/* Pass 2 state of one queue: all queues of a timed trace are open at once. */
struct qdec {
	struct dpp *p;
	struct queue *q;
	const uint8_t *buf;	/* the queue's file, mapped */
	struct dpt_image *img;
	struct dpt_options o;
	struct xev_sink sink;
	const struct xev_sink *out;	/* where a per-cpu queue's events go */
	struct dec_par *par;	/* a piece of a parallel decode: the session is shared */
	struct dpt_dec *dec;	/* the part being decoded, NULL between parts */
	/* what the queue's decodes counted (added to the dpp's at the end: with -j a
	 * queue may decode on a thread of its own) */
	uint64_t gaps, lost_bytes, insns, nocode, nocode_bytes;
	size_t next_part;
	bool done;
	int32_t pid;		/* per-thread queue's process, -1 per-cpu */
	uint64_t now;		/* time of the latest event: mappings are looked up then */
	struct swcur read_w, event_w;	/* who runs on a per-cpu queue: for code reads, events */
	uint64_t last_time;	/* of the latest event attributed (event_w is valid) */
	bool known;
	/* per-cpu queue: the images of the processes it ran lately (img is the one in
	 * use), most recent first */
	struct { uint64_t space; struct dpt_image *img; } imgs[QIMAGES];
	unsigned nimgs;
};

/* The address space `pid` runs at `time`: the pid, and above it the number of its
 * execs up to then. */
uint64_t dec_pt_space(const struct dpp *p, int32_t pid, uint64_t time);
/* The image of process `pid`'s code at `time` (file sections of its mappings between
 * the execs around `time`, the session through the fallback); NULL when out of memory.
 * The caller holds the session's lock with -j. */
struct dpt_image *dec_pt_image_for(struct qdec *d, int32_t pid, uint64_t time);
/* The progress line (on a terminal, when the command turned it on): every queue's
 * bytes decoded so far (p->pos). */
void dec_pt_show_progress(struct dpp *p);
/* dpt_options.progress of a queue decoding on a thread of its own: counts, never shows. */
void dec_pt_progress_quiet(void *ctx, const uint8_t *at);
/* A per-cpu queue's sink: each event goes to the thread the cpu ran then (d->out). */
int dec_pt_cpu_sink(void *ctx, const struct xev *ev);
/* Maps the queue and sets its decoding up from the trace's options `base`; a queue
 * with nothing to decode (empty, or a thread not selected) is done at once. */
int dec_pt_qopen(struct dpp *p, struct queue *q, const struct dpt_options *base, struct qdec *d);
/* Ends the queue's decode: its counts stay in d, its mapping and images go. */
void dec_pt_qclose(struct qdec *d);
/* Time of the queue's next event (UINT64_MAX when done). */
uint64_t dec_pt_qtime(const struct qdec *d);
/* Decodes the queue's parts until its next event is later than `limit`. */
int dec_pt_qrun(struct qdec *d, uint64_t limit);

/* -j: the open queues cut into pieces between PSBs, decoded on the engine's workers
 * (a trace without timestamps, or one queue).  *ran false: not such a trace. */
int dec_pt_pieces(struct dpp *p, struct qdec *qd, bool timed, bool *ran);
/* -j >= 3: several timed queues, each on a thread of its own, merged in the one-thread
 * order.  *ran false: not such a trace. */
int dec_pt_streams(struct dpp *p, struct qdec *qd, bool *ran);

#endif
