/* perf.data reader: PERFILE2 files (mapped through bounded windows, so files larger
 * than memory stream) and pipe-mode streams.
 *
 *   struct pd_file *f;
 *   if (pd_open(path, &f) < 0) ...;          // header, attrs + ids, features
 *   pd_read_events(f, PD_ORDERED, my_fn, ctx); // every record, in time order
 *   pd_stats(f)->...;                        // what was skipped or lost
 *   pd_close(f);
 *
 * Every record reaches the callback as a `struct pd_rec`: the raw bytes, the attr it
 * belongs to (by sample id), its sample_id_all fields and, per type, a parsed view
 * (sample, mmap, comm, ...).  AUXTRACE records carry their trailing trace bytes in
 * `aux`/`aux_size`.  All pointers are valid only during the callback.
 *
 * Nothing read from the file is trusted: a size that does not fit ends the stream with
 * a partial result (pd_stats()->truncated says where) instead of a crash. */
#ifndef PD_READ_H
#define PD_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "perfdata/pd_format.h"

struct pd_attr {
	struct perf_event_attr attr;	/* zero-extended to our sizeof */
	uint64_t *ids;
	uint32_t nids;
	uint32_t index;			/* position in the file's attr list */
	char *name;			/* from EVENT_DESC, else a generic name */
	int id_pos;			/* u64 index of the id in a SAMPLE, -1 none */
	int is_pos;			/* u64 index from the end in other records, -1 none */
	uint32_t sample_size;		/* bytes of the fixed part (perf's sample_size) */
	/* u64 index of the time in a SAMPLE, and from the end of other records' sample_id
	 * trailer; -1 none */
	int time_pos, time_back;
};

#define PD_MAX_VALUES 16

struct pd_read_value {
	uint64_t value, id, lost;
};

/* One SAMPLE, fields present per attr.sample_type (others are zero / NULL). */
struct pd_sample {
	uint64_t type;			/* the attr's sample_type */
	uint64_t ip;
	uint32_t pid, tid;
	uint64_t time;
	uint64_t addr;
	uint64_t id;
	uint64_t stream_id;
	uint32_t cpu;
	uint64_t period;
	/* READ: one value per group member (nr_values == 1 without PERF_FORMAT_GROUP) */
	uint64_t time_enabled, time_running;
	uint32_t nr_values;
	uint32_t values_dropped;	/* group members beyond PD_MAX_VALUES */
	uint64_t nr_callchain;
	const uint64_t *callchain;	/* may contain PERF_CONTEXT_* markers */
	uint32_t raw_size;
	const void *raw;
	uint64_t nr_branch;
	uint64_t branch_hw_idx;		/* with PERF_SAMPLE_BRANCH_HW_INDEX, else -1 */
	const struct perf_branch_entry *branch;
	uint64_t user_abi;		/* PERF_SAMPLE_REGS_ABI_*; 0: no regs */
	uint64_t user_regs_mask;
	const uint64_t *user_regs;	/* one per bit of user_regs_mask, in bit order */
	uint64_t user_stack_size;	/* bytes at user_stack (copied size) */
	const void *user_stack;
	uint64_t user_stack_dyn_size;	/* bytes actually valid */
	uint64_t weight;
	uint64_t data_src;
	uint64_t transaction;
	uint64_t intr_abi, intr_regs_mask;
	const uint64_t *intr_regs;
	uint64_t phys_addr;
	uint64_t cgroup;
	uint64_t data_page_size, code_page_size;
	uint64_t aux_size;
	const void *aux;
	struct pd_read_value values[PD_MAX_VALUES];	/* last: not cleared per sample */
};

/* sample_id_all fields of a non-sample record (valid flags per field). */
struct pd_sid {
	bool has_tid, has_time, has_cpu, has_id;
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t id;
};

struct pd_mmap {		/* MMAP and MMAP2 */
	uint32_t pid, tid;
	uint64_t start, len, pgoff;
	uint32_t prot, flags;		/* MMAP2 only; MMAP: PROT_EXEC unless misc DATA */
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint8_t build_id[20];
	uint8_t build_id_size;		/* MMAP2 with PERF_RECORD_MISC_MMAP_BUILD_ID */
	const char *filename;
};

struct pd_comm {
	uint32_t pid, tid;
	bool exec;			/* PERF_RECORD_MISC_COMM_EXEC */
	const char *comm;
};

struct pd_task {		/* FORK and EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct pd_lost {
	uint64_t id, lost;
};

struct pd_aux {			/* PERF_RECORD_AUX */
	uint64_t offset, size, flags;
};

struct pd_switch {		/* SWITCH and SWITCH_CPU_WIDE */
	bool out, preempt;
	uint32_t next_prev_pid, next_prev_tid;	/* CPU_WIDE only, else 0 */
};

struct pd_rec {
	uint32_t type;
	uint16_t misc;
	uint32_t size;			/* header.size */
	const void *raw;		/* the whole record, header first */
	uint64_t offset;		/* file offset (pipe: stream offset) */
	/* raw is in the file's mapping, not a copy: with an unmap hook it stays valid
	 * until the hook gets that mapping (pd_set_unmap_hook); else during the call */
	bool in_place;
	uint64_t time;			/* sample or sample_id_all time; 0 unknown */
	const struct pd_attr *attr;	/* NULL when no attr matches */
	struct pd_sid sid;
	const void *aux;		/* AUXTRACE: trailing trace bytes */
	uint64_t aux_size;
	union {
		struct pd_sample sample;
		struct pd_mmap mmap;
		struct pd_comm comm;
		struct pd_task task;
		struct pd_lost lost;
		struct pd_aux auxrec;
		struct pd_switch sw;
		const struct pd_auxtrace_event *auxtrace;
		const struct pd_auxtrace_info_event *auxtrace_info;
		const struct pd_time_conv_event *time_conv;
	} u;
};

struct pd_build_id {
	int32_t pid;
	uint8_t build_id[20];
	uint8_t size;
	char *filename;
};

struct pd_stats {
	uint64_t records;		/* delivered */
	uint64_t by_type[PD_RECORD_FINISHED_INIT + 1];
	uint64_t unknown;		/* records of a type we do not know, skipped */
	uint64_t bad;			/* records whose body did not parse, skipped */
	uint64_t lost;			/* events the kernel reported lost (LOST) */
	uint64_t lost_samples;		/* LOST_SAMPLES */
	uint64_t compressed;		/* PERF_RECORD_COMPRESSED, not supported, skipped */
	uint64_t out_of_order;		/* delivered after a later event (queue overflow) */
	bool truncated;			/* the stream ended inside a record */
	uint64_t truncated_at;		/* offset where reading stopped */
	uint64_t bytes_lost;		/* bytes of the data section not read */
};

struct pd_file;

/* Opens a perf.data file ("-" reads pipe mode from stdin; any other path must be a
 * regular file); reports errors itself. */
int pd_open(const char *path, struct pd_file **out);
/* Same on an open descriptor (pipe or file); `name` is used in messages. */
int pd_open_fd(int fd, const char *name, struct pd_file **out);
/* Same on a perf.data's bytes in memory (file or pipe mode, as a saved file), which
 * stay the caller's and must outlive the pd_file; records point into them. */
int pd_open_mem(const void *data, size_t size, const char *name, struct pd_file **out);
void pd_close(struct pd_file *f);

enum pd_read_flags {
	PD_ORDERED = 1u << 0,	/* deliver in time order (perf's FINISHED_ROUND rules) */
	/* kernel records reach the callback unparsed and uncounted: type, misc, size,
	 * raw, offset and in_place only (time 0, attr NULL, u not filled);
	 * pd_parse_record parses and counts them, on another thread too (decode/ctx.c
	 * reads on two threads) */
	PD_RAW = 1u << 1,
};

/* Returning non-zero from the callback stops reading; pd_read_events returns it. */
typedef int (*pd_rec_fn)(void *ctx, const struct pd_rec *rec);
/* Returns 0 at the end of data (also after truncation: see pd_stats), < 0 on error. */
int pd_read_events(struct pd_file *f, unsigned flags, pd_rec_fn fn, void *ctx);

/* Memory the ordering queue may hold before it flushes early (default 256 MiB). */
void pd_set_queue_limit(struct pd_file *f, size_t bytes);
/* Bytes per mapping window over the data section (default 64 MiB; tests use small). */
void pd_set_window(struct pd_file *f, size_t bytes);

const char *pd_name(const struct pd_file *f);
/* Offsets of the data section (file mode; pipes: 0, 0) for progress reports. */
void pd_data_range(const struct pd_file *f, uint64_t *start, uint64_t *end);
bool pd_is_pipe(const struct pd_file *f);
uint32_t pd_nattrs(const struct pd_file *f);
const struct pd_attr *pd_attr_at(const struct pd_file *f, uint32_t i);
const struct pd_attr *pd_attr_by_id(const struct pd_file *f, uint64_t id);
const struct pd_stats *pd_stats(const struct pd_file *f);
bool pd_has_feature(const struct pd_file *f, unsigned feat);
/* Features as strings (NULL when absent): hostname, osrelease, version, arch, cpudesc,
 * cpuid, cmdline (arguments joined by spaces). */
const char *pd_feature_str(const struct pd_file *f, unsigned feat);
/* The engine that ran the traced program (PD_FEAT_XPTRACE_ENGINE, --mode dbt): 0 with
 * its name ("valgrind-3.19.0 (VEX, --mode dbt)") and what the program saw of the CPU
 * ("amd64-cx16-...") in the buffers, -ENOENT when the trace has none. */
int pd_engine(const struct pd_file *f, char *engine, size_t n, char *cpu, size_t m);
uint32_t pd_nr_cpus(const struct pd_file *f);
/* A file its writer ended (false: killed while recording, or a pipe). */
bool pd_finalized(const struct pd_file *f);
/* The words of the intel_pt AUXTRACE_INFO at the start of the data (file mode; 0: none
 * there), enum pd_intel_pt_info. */
uint32_t pd_pt_info(const struct pd_file *f, const uint64_t **words);
/* HEADER_SAMPLE_TIME: the first and last sample's times; false when absent. */
bool pd_sample_time(const struct pd_file *f, uint64_t *first, uint64_t *last);
/* HEADER_BUILD_ID entries (and pipe-mode HEADER_BUILD_ID records seen so far). */
size_t pd_build_ids(const struct pd_file *f, const struct pd_build_id **out);
const struct pd_build_id *pd_build_id_for(const struct pd_file *f, const char *filename);

const char *pd_record_name(uint32_t type);

/* Prints the loss summary of a read (nothing when the read was complete). */
void pd_report_losses(const struct pd_file *f);

/* What a PD_RAW read leaves to the one parsing its records: their counts (added to
 * the file's with pd_add_tally, once the read is over) and the latest time met. */
struct pd_tally {
	struct pd_stats st;
	uint64_t delivered_max;
};
/* Parses a record a PD_RAW read delivered (header first, `size` bytes; of the user
 * records AUXTRACE_INFO and TIME_CONV, which the read checked and counted) and counts
 * a kernel record into *t as the read would have.  Reads the file's attrs only: safe
 * while another thread reads a file (not a pipe: its attrs grow during the read).  0,
 * or -EINVAL for a record that does not parse (counted as damaged). */
int pd_parse_record(struct pd_file *f, const void *raw, size_t size, uint64_t offset, struct pd_tally *t,
		    struct pd_rec *r);
void pd_add_tally(struct pd_file *f, const struct pd_tally *t);
/* The mappings of the file a read lets go of go to `hook` (which unmaps them: munmap
 * p, len) instead of being unmapped, so that records delivered in place outlive their
 * callback (a consumer on another thread).  NULL: unmap them again. */
void pd_set_unmap_hook(struct pd_file *f, void (*hook)(void *ctx, void *p, size_t len), void *ctx);

/* Parses one SAMPLE body for `attr` (exposed for tests and synthetic producers). */
int pd_parse_sample(const struct pd_attr *attr, const void *rec, size_t size,
		    struct pd_sample *s);
/* Computes id_pos/is_pos/sample_size/time_pos/time_back of an attr (after attr is
 * filled). */
void pd_attr_init_pos(struct pd_attr *a);

#endif
