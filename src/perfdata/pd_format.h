/* perf.data on-disk layout (tools/perf/util/header.h and event.h of the kernel tree):
 * shared by the writer (pd_write*) and the reader (pd_read*).  Kernel record types and
 * perf_event_attr come from <linux/perf_event.h>; this adds what only the file has. */
#ifndef PD_FORMAT_H
#define PD_FORMAT_H

#include <linux/perf_event.h>
#include <stdint.h>

#define PD_MAGIC2 0x32454c4946524550ULL	/* "PERFILE2" little-endian */
#define PD_MAGIC2_SWAPPED 0x504552464c453200ULL /* written by a big-endian host */

struct pd_section {
	uint64_t offset;
	uint64_t size;
};

#define PD_FEAT_BITS 256

struct pd_file_header {
	uint64_t magic;
	uint64_t size;		/* sizeof(struct pd_file_header) */
	uint64_t attr_size;	/* sizeof(struct pd_file_attr) as written */
	struct pd_section attrs;
	struct pd_section data;
	struct pd_section event_types;	/* unused since perf 3.x, kept zero */
	uint64_t features[PD_FEAT_BITS / 64];
};

/* Pipe mode: only magic and size (16) precede the record stream. */
struct pd_pipe_header {
	uint64_t magic;
	uint64_t size;
};

/* In the attrs section each attr is followed by the section of its sample ids. */
struct pd_file_attr_ids {
	struct pd_section ids;
};

/* Feature sections: after the data section come one pd_section per set feature bit
 * (in bit order), then the feature payloads. */
enum pd_feature {
	PD_FEAT_TRACING_DATA = 1,
	PD_FEAT_BUILD_ID = 2,
	PD_FEAT_HOSTNAME = 3,
	PD_FEAT_OSRELEASE = 4,
	PD_FEAT_VERSION = 5,
	PD_FEAT_ARCH = 6,
	PD_FEAT_NRCPUS = 7,
	PD_FEAT_CPUDESC = 8,
	PD_FEAT_CPUID = 9,
	PD_FEAT_TOTAL_MEM = 10,
	PD_FEAT_CMDLINE = 11,
	PD_FEAT_EVENT_DESC = 12,
	PD_FEAT_CPU_TOPOLOGY = 13,
	PD_FEAT_NUMA_TOPOLOGY = 14,
	PD_FEAT_BRANCH_STACK = 15,
	PD_FEAT_PMU_MAPPINGS = 16,
	PD_FEAT_GROUP_DESC = 17,
	PD_FEAT_AUXTRACE = 18,
	PD_FEAT_STAT = 19,
	PD_FEAT_CACHE = 20,
	PD_FEAT_SAMPLE_TIME = 21,
	PD_FEAT_MEM_TOPOLOGY = 22,
	PD_FEAT_CLOCKID = 23,
	PD_FEAT_DIR_FORMAT = 24,
	PD_FEAT_BPF_PROG_INFO = 25,
	PD_FEAT_BPF_BTF = 26,
	PD_FEAT_COMPRESSED = 27,
	PD_FEAT_CPU_PMU_CAPS = 28,
	PD_FEAT_CLOCK_DATA = 29,
	PD_FEAT_HYBRID_TOPOLOGY = 30,
	PD_FEAT_PMU_CAPS = 31,
	/* xptrace's own, a bit far above perf's (perf reads only the bits it knows, and
	 * the sections of those come first): a string, see perfdata/pd_probes.h */
	PD_FEAT_XPTRACE_PROBES = 200,
	PD_FEAT_XPTRACE_FAULTS = 201,	/* a string, see perfdata/pd_faults.h */
	/* a string: "xptrace-losses 1", then one line per loss the recording knew of,
	 * a sentence every reader repeats (pd_read) */
	PD_FEAT_XPTRACE_LOSSES = 202,
	/* a string: "xptrace-engine 1", the engine that ran the program ("valgrind-3.19.0
	 * (VEX, --mode dbt)"), "cpu " and what the program saw of the CPU */
	PD_FEAT_XPTRACE_ENGINE = 203,
};

/* Records perf itself synthesizes (never produced by the kernel). */
enum pd_user_record {
	PD_RECORD_HEADER_ATTR = 64,
	PD_RECORD_HEADER_EVENT_TYPE = 65,
	PD_RECORD_HEADER_TRACING_DATA = 66,
	PD_RECORD_HEADER_BUILD_ID = 67,
	PD_RECORD_FINISHED_ROUND = 68,
	PD_RECORD_ID_INDEX = 69,
	PD_RECORD_AUXTRACE_INFO = 70,
	PD_RECORD_AUXTRACE = 71,
	PD_RECORD_AUXTRACE_ERROR = 72,
	PD_RECORD_THREAD_MAP = 73,
	PD_RECORD_CPU_MAP = 74,
	PD_RECORD_STAT_CONFIG = 75,
	PD_RECORD_STAT = 76,
	PD_RECORD_STAT_ROUND = 77,
	PD_RECORD_EVENT_UPDATE = 78,
	PD_RECORD_TIME_CONV = 79,
	PD_RECORD_HEADER_FEATURE = 80,
	PD_RECORD_COMPRESSED = 81,
	PD_RECORD_FINISHED_INIT = 82,
};

/* HEADER_BUILD_ID feature entry; the filename (NUL padded to 8) follows. */
#define PD_MISC_BUILD_ID_SIZE (1 << 15)	/* header.misc: build_id_size is valid */
struct pd_build_id_event {
	struct perf_event_header header;
	int32_t pid;
	uint8_t build_id[20];
	uint8_t build_id_size;
	uint8_t reserved[3];
	/* char filename[]; */
};

struct pd_id_index_entry {
	uint64_t id, idx, cpu, tid;
};

/* PERF_RECORD_AUXTRACE: `size` bytes of trace follow the record (not in header.size). */
struct pd_auxtrace_event {
	struct perf_event_header header;
	uint64_t size;
	uint64_t offset;
	uint64_t reference;
	uint32_t idx;
	uint32_t tid;
	uint32_t cpu;
	uint32_t reserved;
};

/* PERF_RECORD_AUXTRACE_INFO: type, then private u64 words (layout per type). */
#define PD_AUXTRACE_INTEL_PT 1
struct pd_auxtrace_info_event {
	struct perf_event_header header;
	uint32_t type;
	uint32_t reserved;
	/* uint64_t priv[]; */
};

/* Private words of an intel_pt AUXTRACE_INFO (tools/perf/arch/x86/util/intel-pt.c). */
enum pd_intel_pt_info {
	PD_PT_PMU_TYPE,
	PD_PT_TIME_SHIFT,
	PD_PT_TIME_MULT,
	PD_PT_TIME_ZERO,
	PD_PT_CAP_USER_TIME_ZERO,
	PD_PT_TSC_BIT,
	PD_PT_NORETCOMP_BIT,
	PD_PT_HAVE_SCHED_SWITCH,
	PD_PT_SNAPSHOT_MODE,
	PD_PT_PER_CPU_MMAPS,
	PD_PT_INFO_BASE_WORDS,	/* 10: the words every perf version reads */
	PD_PT_MTC_BIT = PD_PT_INFO_BASE_WORDS,
	PD_PT_MTC_FREQ_BITS,
	PD_PT_TSC_CTC_N,
	PD_PT_TSC_CTC_D,
	PD_PT_CYC_BIT,
	PD_PT_MAX_NONTURBO_RATIO,
	PD_PT_FILTER_STR_LEN,
	PD_PT_INFO_WORDS,
};

struct pd_time_conv_event {
	struct perf_event_header header;
	uint64_t time_shift;
	uint64_t time_mult;
	uint64_t time_zero;
	uint64_t time_cycles;
	uint64_t time_mask;
	uint8_t cap_user_time_zero;
	uint8_t cap_user_time_short;
	uint8_t reserved[6];
};

#endif
