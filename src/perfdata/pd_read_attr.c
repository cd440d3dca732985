/* The attrs of a perf.data file and the lookups over them: sample ids to attrs, the id
 * and sample_id_all positions an attr's sample_type implies, the attr a record belongs
 * to, and default event names.  Shared by the header reader (pd_read.c) and the record
 * parser (pd_read_rec.c); calls nothing of either. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/pd_read_int.h"

const struct pd_attr *pd_attr_by_id(const struct pd_file *f, uint64_t id)
{
	uint64_t i;

	return id && xp_map_get(&f->ids, id, &i) ? &f->attrs[i] : NULL;
}

/* perf's __perf_evsel__calc_id_pos / calc_is_pos. */
void pd_attr_init_pos(struct pd_attr *a)
{
	uint64_t t = a->attr.sample_type;
	int idx = 0;

	if (t & PERF_SAMPLE_IDENTIFIER) {
		a->id_pos = 0;
		a->is_pos = 1;
	} else if (t & PERF_SAMPLE_ID) {
		if (t & PERF_SAMPLE_IP)
			idx++;
		if (t & PERF_SAMPLE_TID)
			idx++;
		if (t & PERF_SAMPLE_TIME)
			idx++;
		if (t & PERF_SAMPLE_ADDR)
			idx++;
		a->id_pos = idx;
		idx = 1;
		if (t & PERF_SAMPLE_CPU)
			idx++;
		if (t & PERF_SAMPLE_STREAM_ID)
			idx++;
		a->is_pos = idx;
	} else {
		a->id_pos = -1;
		a->is_pos = -1;
	}
	a->sample_size = 8 * (uint32_t)__builtin_popcountll(t & (PERF_SAMPLE_IP | PERF_SAMPLE_TID |
		PERF_SAMPLE_TIME | PERF_SAMPLE_ADDR | PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID |
		PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_IDENTIFIER));
	a->time_pos = a->time_back = -1;
	if (!(t & PERF_SAMPLE_TIME))
		return;
	a->time_pos = __builtin_popcountll(t & (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID));
	/* trailer: TID TIME ID STREAM_ID CPU IDENTIFIER */
	if (a->attr.sample_id_all)
		a->time_back = __builtin_popcountll(t & (PERF_SAMPLE_TIME | PERF_SAMPLE_ID |
			PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER));
}

int pd_add_attr(struct pd_file *f, const void *attr, size_t attr_size, const uint64_t *ids, size_t nids)
{
	struct pd_attr *na, *a;
	int rc;

	if (attr_size < PERF_ATTR_SIZE_VER0 || f->nattrs >= 4096)
		return -EINVAL;
	na = realloc(f->attrs, (f->nattrs + 1) * sizeof(*na));
	if (!na)
		return -ENOMEM;
	f->attrs = na;
	a = &f->attrs[f->nattrs];
	memset(a, 0, sizeof(*a));
	memcpy(&a->attr, attr, attr_size < sizeof(a->attr) ? attr_size : sizeof(a->attr));
	a->index = f->nattrs;
	a->ids = nids ? malloc(nids * sizeof(uint64_t)) : NULL;
	if (nids && !a->ids)
		return -ENOMEM;
	if (nids)
		memcpy(a->ids, ids, nids * sizeof(uint64_t));
	a->nids = (uint32_t)nids;
	pd_attr_init_pos(a);
	f->nattrs++;
	for (size_t i = 0; i < nids; i++)
		if (ids[i] && (rc = xp_map_put(&f->ids, ids[i], a->index)) < 0)
			return rc;
	return 0;
}

const struct pd_attr *pd_rec_attr(struct pd_file *f, const void *raw, size_t size)
{
	const struct perf_event_header *h = raw;
	const struct pd_attr *first = f->nattrs ? &f->attrs[0] : NULL;
	uint64_t id;

	if (!first)
		return NULL;
	if (f->nattrs == 1)
		return first;
	if (h->type == PERF_RECORD_SAMPLE) {
		if (first->id_pos < 0)
			return first;
		size_t off = sizeof(*h) + 8 * (size_t)first->id_pos;
		if (off + 8 > size)
			return NULL;
		memcpy(&id, (const uint8_t *)raw + off, 8);
	} else {
		if (!first->attr.sample_id_all || first->is_pos < 0)
			return first;
		size_t back = 8 * (size_t)first->is_pos;
		if (back + sizeof(*h) > size)
			return NULL;
		memcpy(&id, (const uint8_t *)raw + size - back, 8);
	}
	return pd_attr_by_id(f, id);
}

static const char *generic_name(const struct perf_event_attr *at, char *buf, size_t n)
{
	static const char *const hw[] = { "cycles", "instructions", "cache-references",
		"cache-misses", "branches", "branch-misses", "bus-cycles",
		"stalled-cycles-frontend", "stalled-cycles-backend", "ref-cycles" };
	static const char *const sw[] = { "cpu-clock", "task-clock", "page-faults",
		"context-switches", "cpu-migrations", "minor-faults", "major-faults",
		"alignment-faults", "emulation-faults", "dummy", "bpf-output", "cgroup-switches" };

	if (at->type == PERF_TYPE_HARDWARE && at->config < sizeof(hw) / sizeof(hw[0]))
		return hw[at->config];
	if (at->type == PERF_TYPE_SOFTWARE && at->config < sizeof(sw) / sizeof(sw[0]))
		return sw[at->config];
	snprintf(buf, n, "type%u/config%#llx", at->type, (unsigned long long)at->config);
	return buf;
}

void pd_name_attrs(struct pd_file *f)
{
	char buf[64];

	for (uint32_t i = 0; i < f->nattrs; i++)
		if (!f->attrs[i].name)
			f->attrs[i].name = strdup(generic_name(&f->attrs[i].attr, buf, sizeof(buf)));
}
