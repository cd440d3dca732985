/* perf.data (PERFILE2) writer, streaming, crash-safe.
 *
 * File layout we produce (perf reads every section through the header's offsets):
 *
 *   [file header][attr area: two halves of PD_WRITE_ATTR_AREA, each
 *   (attr ids (u64 arrays))(attrs: perf_event_attr + pd_section of ids, per attr)]
 *   [data: records ...][feature section table][feature payloads]
 *
 * Attrs and ids are written to the attr area as they are added (to the half not in
 * use, then the header is pointed at it) before any data that may use them reaches
 * the disk, so attrs added mid-run are covered too.  Records go to disk through one
 * fixed buffer that holds whole records only, flushed when the next record does not fit
 * and at the first record boundary FLUSH_NS (100 ms) after the last flush; the
 * header's data size follows every flush.  pd_writer_close() appends the features and
 * writes the final header.  A recorder killed at any moment leaves a file xptrace and
 * perf read up to the last flush (xptrace reads on to the end of a file without
 * features); only attrs that outgrew the area (more than ~250 attrs with 3000 ids)
 * are written after the data at close, and lost on a kill.
 *
 * Typical use (any attr type: software, hardware, intel_pt, ...):
 *
 *   struct pd_writer *w;
 *   pd_writer_create(&w, "DIR/perf.data");
 *   int idx = pd_writer_add_attr(w, &attr, "cpu-clock");
 *   pd_writer_add_id(w, idx, id_from_PERF_EVENT_IOC_ID, cpu, tid);
 *   pd_writer_feat_host(w);  pd_writer_feat_cmdline(w, argc, argv);
 *   pd_writer_record(w, hdr);            // kernel records as read from the ring
 *   pd_writer_finished_round(w);         // after each pass over all rings
 *   pd_writer_auxtrace(w, &ev, bytes, n) // AUX data: record + n bytes (padded to 8)
 *   pd_writer_add_build_id(w, -1, PERF_RECORD_MISC_USER, bid, 20, "/usr/bin/true");
 *   pd_writer_close(w);                  // EVENT_DESC is built from the attrs
 *
 * All functions return 0 (or an index) on success and a negative errno on failure; the
 * first write error sticks (pd_writer_error()) and later calls fail fast.  On ENOSPC the
 * writer gives back the last PD_WRITE_RESERVE bytes of data (cut at a record boundary)
 * so the finalized file still fits; pd_writer_close() then succeeds with a decodable
 * file and pd_writer_truncated() reports the loss. */
#ifndef PD_WRITE_H
#define PD_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "perfdata/pd_format.h"

/* Attrs are stored with this size: perf 6.1 refuses larger ones (PERF_ATTR_SIZE_VER7). */
#define PD_ATTR_SIZE 128
/* Each of the two halves of the attr area between the header and the data (attrs and
 * ids are written there as they are added): the data starts at PD_WRITE_DATA_OFFSET. */
#define PD_WRITE_ATTR_AREA (64 * 1024)
#define PD_WRITE_DATA_OFFSET (104 + 2 * PD_WRITE_ATTR_AREA)
/* Data dropped at the end when the disk fills, to make room for the features (a few KiB:
 * the attrs have their place before the data; pd_writer_finalize() gives back more if
 * that is not enough). */
#define PD_WRITE_RESERVE (64 * 1024)

struct pd_writer;

/* Creates (truncates) `path` and writes a provisional header. */
int pd_writer_create(struct pd_writer **out, const char *path);

/* Adds an event; returns its index (0, 1, ...).  `name` is shown by perf (EVENT_DESC).
 * Bytes of the attr beyond PD_ATTR_SIZE must be zero (-EINVAL otherwise). */
int pd_writer_add_attr(struct pd_writer *w, const struct perf_event_attr *attr, const char *name);
/* Records that kernel event id `id` belongs to attr `idx` (cpu/tid for ID_INDEX, -1 if
 * unknown).  Ids may be added at any time before close. */
int pd_writer_add_id(struct pd_writer *w, int idx, uint64_t id, int cpu, int tid);
/* Number of attrs and the attr of index idx (NULL when out of range). */
int pd_writer_nr_attrs(const struct pd_writer *w);
const struct perf_event_attr *pd_writer_attr(const struct pd_writer *w, int idx);

/* Appends one record; its length is hdr->size (must be a multiple of 8, >= 8). */
int pd_writer_record(struct pd_writer *w, const struct perf_event_header *hdr);
/* Appends a record assembled from two pieces (a record that wrapped in a ring). */
int pd_writer_record2(struct pd_writer *w, const void *a, size_t na, const void *b, size_t nb);
int pd_writer_finished_round(struct pd_writer *w);
/* PERF_RECORD_AUXTRACE: fills ev->header and ev->size (n rounded up to 8), then writes
 * the record followed by the n bytes of `data` and zero padding. */
int pd_writer_auxtrace(struct pd_writer *w, struct pd_auxtrace_event *ev, const void *data,
		       size_t n);
/* Same with the trace in two pieces (AUX area wrap-around). */
int pd_writer_auxtrace2(struct pd_writer *w, struct pd_auxtrace_event *ev, const void *a,
			size_t na, const void *b, size_t nb);
/* PERF_RECORD_AUXTRACE_INFO with `n` private words (e.g. PD_PT_INFO_WORDS for intel_pt). */
int pd_writer_auxtrace_info(struct pd_writer *w, uint32_t type, const uint64_t *priv, size_t n);
/* PERF_RECORD_TIME_CONV (header filled in here). */
int pd_writer_time_conv(struct pd_writer *w, struct pd_time_conv_event *tc);
/* PERF_RECORD_ID_INDEX from every id added so far (perf wants it before the samples). */
int pd_writer_id_index(struct pd_writer *w);
/* PERF_RECORD_FINISHED_INIT: ends the synthesized initial state (perf 5.18+). */
int pd_writer_finished_init(struct pd_writer *w);

/* Any feature: `payload` exactly as it goes to the file; replaces an earlier one. */
int pd_writer_feature(struct pd_writer *w, enum pd_feature feat, const void *payload, size_t size);
/* A string feature (perf's encoding: u32 length padded to 64, NUL-padded text). */
int pd_writer_feat_string(struct pd_writer *w, enum pd_feature feat, const char *s);
/* hostname, osrelease, version, arch, nrcpus, cpudesc, cpuid, total mem of this machine. */
int pd_writer_feat_host(struct pd_writer *w);
int pd_writer_feat_cmdline(struct pd_writer *w, int argc, char *const *argv);
/* HEADER_GROUP_DESC of one event group: attrs leader .. leader + members - 1 (perf
 * report --group, perf evlist -g show it as {a,b}). */
int pd_writer_feat_group(struct pd_writer *w, uint32_t leader, uint32_t members);
int pd_writer_feat_clockid(struct pd_writer *w, uint64_t res_ns);
int pd_writer_feat_sample_time(struct pd_writer *w, uint64_t first, uint64_t last);
/* One HEADER_BUILD_ID entry (misc: PERF_RECORD_MISC_USER or _KERNEL; pid -1 = host). */
int pd_writer_add_build_id(struct pd_writer *w, int32_t pid, uint16_t misc, const uint8_t *bid,
			   size_t bid_size, const char *filename);

/* Bytes of record data written so far, the sticky error, and data given back on ENOSPC. */
uint64_t pd_writer_data_size(const struct pd_writer *w);
int pd_writer_error(const struct pd_writer *w);
uint64_t pd_writer_truncated(const struct pd_writer *w);
/* PERF_RECORD_SAMPLEs in the data: after an ENOSPC cut, those still in the file. */
uint64_t pd_writer_samples(const struct pd_writer *w);
/* Bytes of AUX trace (AUXTRACE payload, without padding) in the data, the same way. */
uint64_t pd_writer_aux_bytes(const struct pd_writer *w);

/* Writes features and attrs and rewrites the header (once; later calls return the same
 * result).  Returns 0 when the file is complete and perf-readable, which after an
 * ENOSPC cut is still the case: check pd_writer_error()/pd_writer_truncated(). */
int pd_writer_finalize(struct pd_writer *w);
void pd_writer_free(struct pd_writer *w);
/* finalize + free; returns the first error (the sticky write error first). */
int pd_writer_close(struct pd_writer *w);

/* perf's string encoding, for feature payloads built by callers: returns the encoded
 * size; writes into buf when it is large enough. */
size_t pd_encode_string(void *buf, size_t bufsize, const char *s);

/* The sample_id trailer a non-sample record carries when attr.sample_id_all is set
 * (TID, TIME, ID, STREAM_ID, CPU, IDENTIFIER, in that order, as sample_type selects),
 * for records synthesized in user space.  Writes at most 48 bytes; returns the size. */
size_t pd_id_sample(void *out, uint64_t sample_type, uint32_t pid, uint32_t tid, uint64_t time,
		    uint64_t id, uint32_t cpu);
/* Byte offset of the TIME field in a PERF_RECORD_SAMPLE of this sample_type, -ENOENT
 * when it has none. */
int pd_sample_time_offset(uint64_t sample_type);

#endif
