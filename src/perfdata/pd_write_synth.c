/* Pieces of records synthesized in user space (perf's synthetic-events.c conventions). */
#include "perfdata/pd_write.h"

#include <errno.h>
#include <string.h>

size_t pd_id_sample(void *out, uint64_t sample_type, uint32_t pid, uint32_t tid, uint64_t time,
		    uint64_t id, uint32_t cpu)
{
	uint64_t v[6];
	size_t n = 0;

	if (sample_type & PERF_SAMPLE_TID)
		v[n++] = (uint64_t)pid | ((uint64_t)tid << 32);
	if (sample_type & PERF_SAMPLE_TIME)
		v[n++] = time;
	if (sample_type & PERF_SAMPLE_ID)
		v[n++] = id;
	if (sample_type & PERF_SAMPLE_STREAM_ID)
		v[n++] = id;
	if (sample_type & PERF_SAMPLE_CPU)
		v[n++] = cpu;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		v[n++] = id;
	memcpy(out, v, n * 8);
	return n * 8;
}

int pd_sample_time_offset(uint64_t sample_type)
{
	int off = (int)sizeof(struct perf_event_header);

	if (!(sample_type & PERF_SAMPLE_TIME))
		return -ENOENT;
	if (sample_type & PERF_SAMPLE_IDENTIFIER)
		off += 8;
	if (sample_type & PERF_SAMPLE_IP)
		off += 8;
	if (sample_type & PERF_SAMPLE_TID)
		off += 8;
	return off;
}
