/* Internals shared by the pd_read*.c files. */
#ifndef PD_READ_INT_H
#define PD_READ_INT_H

#include "perfdata/pd_read.h"
#include "util/xp_map.h"

struct pd_queue;

/* Memory that queued records point into without a copy (the reader's mapped file
 * window): counted against the queue's limit while records in it are queued; the
 * queue calls release when the last of them is delivered. */
struct pd_hold {
	size_t live;		/* queued records in it */
	size_t bytes;
	void (*release)(struct pd_hold *h);	/* NULL: nothing to do */
};

/* A mapped window of the data section.  Replaced windows that queued records still
 * point into stay mapped (retired) until the queue releases them. */
struct pd_win {
	struct pd_hold hold;
	struct pd_file *f;
	uint8_t *p;
	uint64_t off;
	size_t len;
	bool retired;
};

struct pd_file {
	char *name;
	int fd;
	/* pd_open_mem: the file's bytes (the caller's), read instead of fd */
	const uint8_t *mem;
	size_t mem_pos;		/* a stream's next byte */
	bool pipe;
	bool owns_fd;
	uint64_t file_size;
	uint64_t data_off, data_end;	/* file mode */
	struct pd_file_header hdr;
	struct pd_attr *attrs;
	uint32_t nattrs;
	struct xp_map ids;	/* id -> attr index; id 0 is never stored */
	char *feat_str[PD_FEAT_BITS];
	uint32_t nr_cpus;
	uint64_t first_sample, last_sample;	/* HEADER_SAMPLE_TIME, 0: absent */
	struct pd_build_id *bids;
	size_t nbids;
	bool finalized;		/* file mode: the writer ended it (it has features) */
	uint64_t pt_info[PD_PT_INFO_WORDS];	/* the first intel_pt AUXTRACE_INFO's words */
	uint32_t pt_info_n;
	/* file window */
	struct pd_win *win;
	size_t win_size;
	/* pipe / copy buffer */
	uint8_t *buf;
	size_t buf_cap;
	uint64_t pos;
	/* pipe mode: records read ahead at open (the attrs), replayed by the read */
	uint8_t *pre;
	size_t pre_len, pre_pos;
	uint32_t pre_attrs;	/* HEADER_ATTRs already applied */
	size_t queue_limit;
	/* pd_set_unmap_hook */
	void (*unmap_hook)(void *ctx, void *p, size_t len);
	void *unmap_ctx;
	struct pd_stats st;
	bool read_done;
};

/* The calls between the pd_read*.c files go one way: pd_read.c -> pd_read_rec.c ->
 * pd_read_attr.c, and pd_read.c -> pd_read_queue.c. */

/* pd_read_attr.c: attrs and ids */
int pd_add_attr(struct pd_file *f, const void *attr, size_t attr_size, const uint64_t *ids,
		size_t nids);
/* The attr a record belongs to (by its sample id), NULL when it cannot tell. */
const struct pd_attr *pd_rec_attr(struct pd_file *f, const void *raw, size_t size);
/* Gives attrs without an EVENT_DESC name the generic one ("cycles", "type8/config0x..."). */
void pd_name_attrs(struct pd_file *f);

/* pd_read_rec.c: kernel record bodies */
int pd_parse_rec(struct pd_file *f, const void *raw, size_t size, struct pd_rec *r);

/* pd_read.c: feature payload parsing (file sections and pipe-mode HEADER_FEATURE
 * records). */
int pd_parse_feature(struct pd_file *f, unsigned feat, const uint8_t *p, size_t n);
int pd_add_build_id(struct pd_file *f, const void *rec, size_t n);

/* pd_read_queue.c: the ordering queue */
struct pd_queue *pd_queue_new(size_t limit);
void pd_queue_free(struct pd_queue *q);
/* Copies the record in (in == NULL), or queues it in place: it stays in `in`. */
int pd_queue_push(struct pd_queue *q, uint64_t time, const void *raw, size_t size, uint64_t offset,
		  struct pd_hold *in);
/* Delivers every queued record with time <= limit, in (time, arrival) order. */
/* in_place: raw is in the hold it was pushed with (not a copy) */
typedef int (*pd_queue_fn)(void *ctx, const void *raw, size_t size, uint64_t offset, bool in_place);
int pd_queue_flush(struct pd_queue *q, uint64_t limit, pd_queue_fn fn, void *ctx);
/* Called when the queue is over its memory limit: delivers the older half. */
bool pd_queue_over(const struct pd_queue *q);
int pd_queue_flush_half(struct pd_queue *q, pd_queue_fn fn, void *ctx);
uint64_t pd_queue_last_flushed(const struct pd_queue *q);

#endif
