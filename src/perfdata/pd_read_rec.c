/* Parsing of individual perf.data records: samples per sample_type, sample_id_all
 * trailers, and the kernel record bodies.  Every field read is bounds-checked against
 * the record size; a record that does not parse is reported as bad, not guessed at. */
#include <errno.h>
#include <string.h>

#include "perfdata/pd_read.h"
#include "perfdata/pd_read_int.h"

struct cur {
	const uint8_t *p, *end;
};

static int take(struct cur *c, void *dst, size_t n)
{
	if ((size_t)(c->end - c->p) < n)
		return -EINVAL;
	if (dst)
		memcpy(dst, c->p, n);
	c->p += n;
	return 0;
}

static int take_u64(struct cur *c, uint64_t *v)
{
	return take(c, v, 8);
}

/* A pointer to n u64s in place (records are 8-byte aligned in mapped files and in
 * our copies; the parse never dereferences through a misaligned pointer). */
static int take_array(struct cur *c, uint64_t n, size_t elem, const void **out)
{
	if (n > (uint64_t)(c->end - c->p) / elem)
		return -EINVAL;
	*out = c->p;
	c->p += n * elem;
	return 0;
}

static int parse_read(struct cur *c, uint64_t fmt, struct pd_sample *s)
{
	uint64_t nr = 1, v;

	if (fmt & PERF_FORMAT_GROUP) {
		if (take_u64(c, &nr) < 0)
			return -EINVAL;
		if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED && take_u64(c, &s->time_enabled) < 0)
			return -EINVAL;
		if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING && take_u64(c, &s->time_running) < 0)
			return -EINVAL;
		for (uint64_t i = 0; i < nr; i++) {
			struct pd_read_value rv = {0};

			if (take_u64(c, &rv.value) < 0)
				return -EINVAL;
			if (fmt & PERF_FORMAT_ID && take_u64(c, &rv.id) < 0)
				return -EINVAL;
			if (fmt & PERF_FORMAT_LOST && take_u64(c, &rv.lost) < 0)
				return -EINVAL;
			if (s->nr_values < PD_MAX_VALUES)
				s->values[s->nr_values++] = rv;
			else
				s->values_dropped++;
		}
		return 0;
	}
	if (take_u64(c, &v) < 0)
		return -EINVAL;
	s->values[0] = (struct pd_read_value){ .value = v };
	s->nr_values = 1;
	if (fmt & PERF_FORMAT_TOTAL_TIME_ENABLED && take_u64(c, &s->time_enabled) < 0)
		return -EINVAL;
	if (fmt & PERF_FORMAT_TOTAL_TIME_RUNNING && take_u64(c, &s->time_running) < 0)
		return -EINVAL;
	if (fmt & PERF_FORMAT_ID && take_u64(c, &s->values[0].id) < 0)
		return -EINVAL;
	if (fmt & PERF_FORMAT_LOST && take_u64(c, &s->values[0].lost) < 0)
		return -EINVAL;
	return 0;
}

static int parse_regs(struct cur *c, uint64_t mask, uint64_t *abi, const uint64_t **regs)
{
	const void *p;

	if (take_u64(c, abi) < 0)
		return -EINVAL;
	if (!*abi)
		return 0;
	if (take_array(c, (uint64_t)__builtin_popcountll(mask), 8, &p) < 0)
		return -EINVAL;
	*regs = p;
	return 0;
}

/* A field the sample_type may leave out: read when present, else 0. */
static int opt_u64(struct cur *c, uint64_t t, uint64_t bit, uint64_t *v)
{
	if (t & bit)
		return take_u64(c, v);
	*v = 0;
	return 0;
}

/* Every field is written, present or not, instead of clearing the struct first: the
 * memset of its ~280 bytes (a `rep stos`) cost more than parsing a whole sample. */
int pd_parse_sample(const struct pd_attr *a, const void *rec, size_t size, struct pd_sample *s)
{
	const struct perf_event_attr *at = &a->attr;
	uint64_t t = at->sample_type, v;
	struct cur c = { (const uint8_t *)rec + sizeof(struct perf_event_header),
			 (const uint8_t *)rec + size };
	const void *p;

	s->type = t;
	if (size < sizeof(struct perf_event_header))
		return -EINVAL;
	if (opt_u64(&c, t, PERF_SAMPLE_IDENTIFIER, &s->id) < 0 || opt_u64(&c, t, PERF_SAMPLE_IP, &s->ip) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_TID, &v) < 0)
		return -EINVAL;
	s->pid = (uint32_t)v;
	s->tid = (uint32_t)(v >> 32);
	if (opt_u64(&c, t, PERF_SAMPLE_TIME, &s->time) < 0 || opt_u64(&c, t, PERF_SAMPLE_ADDR, &s->addr) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_ID && take_u64(&c, &s->id) < 0)
		return -EINVAL;
	if (opt_u64(&c, t, PERF_SAMPLE_STREAM_ID, &s->stream_id) < 0 || opt_u64(&c, t, PERF_SAMPLE_CPU, &v) < 0)
		return -EINVAL;
	s->cpu = (uint32_t)v;
	if (opt_u64(&c, t, PERF_SAMPLE_PERIOD, &s->period) < 0)
		return -EINVAL;
	s->time_enabled = s->time_running = 0;
	s->nr_values = s->values_dropped = 0;
	if (t & PERF_SAMPLE_READ && parse_read(&c, at->read_format, s) < 0)
		return -EINVAL;
	s->callchain = NULL;
	if (opt_u64(&c, t, PERF_SAMPLE_CALLCHAIN, &s->nr_callchain) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_CALLCHAIN) {
		if (take_array(&c, s->nr_callchain, 8, &p) < 0)
			return -EINVAL;
		s->callchain = p;
	}
	s->raw_size = 0;
	s->raw = NULL;
	if (t & PERF_SAMPLE_RAW) {
		uint32_t sz;

		if (take(&c, &sz, 4) < 0 || sz > (size_t)(c.end - c.p))
			return -EINVAL;
		s->raw_size = sz;
		s->raw = c.p;
		c.p += sz;
		/* u32 size + data are padded together to 8 bytes. */
		size_t pad = (8 - ((4 + (size_t)sz) & 7)) & 7;
		if (take(&c, NULL, pad) < 0)
			return -EINVAL;
	}
	s->branch_hw_idx = UINT64_MAX;
	s->branch = NULL;
	if (opt_u64(&c, t, PERF_SAMPLE_BRANCH_STACK, &s->nr_branch) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_BRANCH_STACK) {
		if (at->branch_sample_type & PERF_SAMPLE_BRANCH_HW_INDEX &&
		    take_u64(&c, &s->branch_hw_idx) < 0)
			return -EINVAL;
		if (take_array(&c, s->nr_branch, sizeof(struct perf_branch_entry), &p) < 0)
			return -EINVAL;
		s->branch = p;
	}
	s->user_abi = s->user_regs_mask = 0;
	s->user_regs = NULL;
	if (t & PERF_SAMPLE_REGS_USER) {
		if (parse_regs(&c, at->sample_regs_user, &s->user_abi, &s->user_regs) < 0)
			return -EINVAL;
		s->user_regs_mask = s->user_abi ? at->sample_regs_user : 0;
	}
	s->user_stack = NULL;
	s->user_stack_dyn_size = 0;
	if (opt_u64(&c, t, PERF_SAMPLE_STACK_USER, &s->user_stack_size) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_STACK_USER) {
		if (take_array(&c, s->user_stack_size, 1, &p) < 0)
			return -EINVAL;
		s->user_stack = p;
		if (s->user_stack_size) {
			if (take_u64(&c, &s->user_stack_dyn_size) < 0)
				return -EINVAL;
			if (s->user_stack_dyn_size > s->user_stack_size)
				s->user_stack_dyn_size = s->user_stack_size;
		}
	}
	if (opt_u64(&c, t, PERF_SAMPLE_WEIGHT | PERF_SAMPLE_WEIGHT_STRUCT, &s->weight) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_DATA_SRC, &s->data_src) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_TRANSACTION, &s->transaction) < 0)
		return -EINVAL;
	s->intr_abi = s->intr_regs_mask = 0;
	s->intr_regs = NULL;
	if (t & PERF_SAMPLE_REGS_INTR) {
		if (parse_regs(&c, at->sample_regs_intr, &s->intr_abi, &s->intr_regs) < 0)
			return -EINVAL;
		s->intr_regs_mask = s->intr_abi ? at->sample_regs_intr : 0;
	}
	if (opt_u64(&c, t, PERF_SAMPLE_PHYS_ADDR, &s->phys_addr) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_CGROUP, &s->cgroup) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_DATA_PAGE_SIZE, &s->data_page_size) < 0 ||
	    opt_u64(&c, t, PERF_SAMPLE_CODE_PAGE_SIZE, &s->code_page_size) < 0)
		return -EINVAL;
	s->aux = NULL;
	if (opt_u64(&c, t, PERF_SAMPLE_AUX, &s->aux_size) < 0 ||
	    (t & PERF_SAMPLE_AUX && take_array(&c, s->aux_size, 1, &s->aux) < 0))
		return -EINVAL;
	return 0;
}

/* Size of the sample_id_all trailer of non-sample records for this attr. */
static size_t sid_size(const struct perf_event_attr *at)
{
	uint64_t t = at->sample_type;

	if (!at->sample_id_all)
		return 0;
	return 8 * (size_t)__builtin_popcountll(t & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
		PERF_SAMPLE_ID | PERF_SAMPLE_STREAM_ID | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER));
}

static int parse_sid(const struct perf_event_attr *at, const uint8_t *p, size_t n, struct pd_sid *sid)
{
	uint64_t t = at->sample_type, v;
	struct cur c = { p, p + n };

	if (t & PERF_SAMPLE_TID) {
		if (take_u64(&c, &v) < 0)
			return -EINVAL;
		sid->has_tid = true;
		sid->pid = (uint32_t)v;
		sid->tid = (uint32_t)(v >> 32);
	}
	if (t & PERF_SAMPLE_TIME) {
		if (take_u64(&c, &sid->time) < 0)
			return -EINVAL;
		sid->has_time = true;
	}
	if (t & PERF_SAMPLE_ID) {
		if (take_u64(&c, &sid->id) < 0)
			return -EINVAL;
		sid->has_id = true;
	}
	if (t & PERF_SAMPLE_STREAM_ID && take_u64(&c, NULL) < 0)
		return -EINVAL;
	if (t & PERF_SAMPLE_CPU) {
		if (take_u64(&c, &v) < 0)
			return -EINVAL;
		sid->has_cpu = true;
		sid->cpu = (uint32_t)v;
	}
	if (t & PERF_SAMPLE_IDENTIFIER) {
		if (take_u64(&c, &sid->id) < 0)
			return -EINVAL;
		sid->has_id = true;
	}
	return 0;
}

/* A NUL-terminated string inside [p, end). */
static const char *str_in(const uint8_t *p, const uint8_t *end)
{
	if (p >= end || !memchr(p, 0, (size_t)(end - p)))
		return NULL;
	return (const char *)p;
}

int pd_parse_rec(struct pd_file *f, const void *raw, size_t size, struct pd_rec *r)
{
	const struct perf_event_header *h = raw;
	const uint8_t *body = (const uint8_t *)raw + sizeof(*h), *end = (const uint8_t *)raw + size;

	r->type = h->type;
	r->misc = h->misc;
	r->size = h->size;
	r->raw = raw;
	r->time = 0;
	r->attr = NULL;
	memset(&r->sid, 0, sizeof(r->sid));
	if (h->type >= PD_RECORD_HEADER_ATTR)
		return 0;	/* user records: parsed by the reader itself */
	r->attr = pd_rec_attr(f, raw, size);
	if (h->type == PERF_RECORD_SAMPLE) {
		if (!r->attr)
			return -EINVAL;
		if (pd_parse_sample(r->attr, raw, size, &r->u.sample) < 0)
			return -EINVAL;
		r->time = r->u.sample.time;
		return 0;
	}
	if (r->attr && r->attr->attr.sample_id_all) {
		size_t n = sid_size(&r->attr->attr);

		if (n > (size_t)(end - body))
			return -EINVAL;
		end -= n;
		if (parse_sid(&r->attr->attr, end, n, &r->sid) < 0)
			return -EINVAL;
		if (r->sid.has_time)
			r->time = r->sid.time;
	}
	struct cur c = { body, end };
	switch (h->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		struct pd_mmap *m = &r->u.mmap;
		uint32_t pt[2];

		memset(m, 0, sizeof(*m));
		if (take(&c, pt, 8) < 0 || take_u64(&c, &m->start) < 0 || take_u64(&c, &m->len) < 0 ||
		    take_u64(&c, &m->pgoff) < 0)
			return -EINVAL;
		m->pid = pt[0];
		m->tid = pt[1];
		if (h->type == PERF_RECORD_MMAP2) {
			uint8_t u[24];

			if (take(&c, u, 24) < 0)
				return -EINVAL;
			if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
				m->build_id_size = u[0] <= 20 ? u[0] : 20;
				memcpy(m->build_id, u + 4, 20);
			} else {
				memcpy(&m->maj, u, 4);
				memcpy(&m->min, u + 4, 4);
				memcpy(&m->ino, u + 8, 8);
				memcpy(&m->ino_generation, u + 16, 8);
			}
			if (take(&c, &m->prot, 4) < 0 || take(&c, &m->flags, 4) < 0)
				return -EINVAL;
		} else {
			m->prot = (h->misc & PERF_RECORD_MISC_MMAP_DATA) ? 1 : 5; /* R / R|X */
		}
		m->filename = str_in(c.p, c.end);
		return m->filename ? 0 : -EINVAL;
	}
	case PERF_RECORD_COMM: {
		uint32_t pt[2];

		if (take(&c, pt, 8) < 0)
			return -EINVAL;
		r->u.comm.pid = pt[0];
		r->u.comm.tid = pt[1];
		r->u.comm.exec = (h->misc & PERF_RECORD_MISC_COMM_EXEC) != 0;
		r->u.comm.comm = str_in(c.p, c.end);
		return r->u.comm.comm ? 0 : -EINVAL;
	}
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT: {
		uint32_t v[4];

		if (take(&c, v, 16) < 0 || take_u64(&c, &r->u.task.time) < 0)
			return -EINVAL;
		r->u.task.pid = v[0];
		r->u.task.ppid = v[1];
		r->u.task.tid = v[2];
		r->u.task.ptid = v[3];
		if (!r->time)
			r->time = r->u.task.time;
		return 0;
	}
	case PERF_RECORD_LOST:
		return take_u64(&c, &r->u.lost.id) < 0 || take_u64(&c, &r->u.lost.lost) < 0 ? -EINVAL : 0;
	case PERF_RECORD_LOST_SAMPLES:
		r->u.lost.id = r->sid.id;
		return take_u64(&c, &r->u.lost.lost);
	case PERF_RECORD_AUX:
		return take_u64(&c, &r->u.auxrec.offset) < 0 || take_u64(&c, &r->u.auxrec.size) < 0 ||
		       take_u64(&c, &r->u.auxrec.flags) < 0 ? -EINVAL : 0;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE: {
		uint32_t v[2] = {0, 0};

		if (h->type == PERF_RECORD_SWITCH_CPU_WIDE && take(&c, v, 8) < 0)
			return -EINVAL;
		r->u.sw.out = (h->misc & PERF_RECORD_MISC_SWITCH_OUT) != 0;
		r->u.sw.preempt = (h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) != 0;
		r->u.sw.next_prev_pid = v[0];
		r->u.sw.next_prev_tid = v[1];
		return 0;
	}
	default:
		/* THROTTLE, READ, ITRACE_START, NAMESPACES, KSYMBOL, BPF_EVENT, CGROUP,
		 * TEXT_POKE, ...: delivered raw with their sample_id_all fields. */
		return 0;
	}
}
