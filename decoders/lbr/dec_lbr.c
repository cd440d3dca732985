/* The branch-stack decoder of `xptrace decode`: perf.data samples with
 * PERF_SAMPLE_BRANCH_STACK (xptrace --mode lbr, perf record -b / -j, perf inject
 * --itrace=...l) -> decoders/lbr/dlbr.c -> sampled blocks, branches, calls and the samples
 * themselves.  Ranges are walked in the module snapshots, or the bytes of JIT code
 * (jit.h), (x86_range) for instruction counts, not-taken conditionals and the kinds of
 * branches the entries do not type. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/decoder.h"
#include "decoders/lbr/dlbr.h"
#include "session/sb_code.h"
#include "arch/x86_64/x86_range.h"
#include "util/xp_err.h"
#include "util/xp_hash.h"

/* Ranges repeat (a loop's body, sample after sample) and walking one through capstone
 * costs 10x the rest of its decode: a walk is kept by module and file offsets, in a
 * direct-mapped table of fixed size, when its conditionals fit an entry.  JIT code may
 * change under the same address and is walked each time. */
#define MEMO_BITS 10
#define MEMO_COND 8
struct range_memo {
	uint32_t dso1;		/* the module's id + 1; 0: empty */
	int rc;
	uint32_t ncond;
	uint64_t start, end;	/* file offsets */
	uint64_t insns;
	uint64_t cond_ip[MEMO_COND], cond_next[MEMO_COND];	/* file offsets */
};

struct dlbr_dec {
	struct dec_ctx *c;
	const struct xev_sink *sink;
	struct dlbr d;
	struct x86_dis dis;
	int have_dis;
	struct sb_code *code;	/* module files, mapped once each */
	/* the range being read: its map, or the JIT function holding it (anonymous code) */
	const struct sb_map *map;
	struct jit_sym jit;
	bool in_jit;
	uint64_t bad_code;
	uint64_t last_time;	/* of any record: stands in for samples without TIME */
	struct range_memo *memo;	/* 1 << MEMO_BITS, NULL: not kept */
};

static bool is_branch_attr(const struct pd_attr *a)
{
	return a->attr.sample_type & PERF_SAMPLE_BRANCH_STACK;
}

static bool accepts(struct dec_ctx *c)
{
	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++)
		if (is_branch_attr(pd_attr_at(c->pd, i)))
			return true;
	return false;
}

static int setup(struct dec_ctx *c)
{
	return dec_setup_sampled(c, is_branch_attr);
}

static long read_code(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	struct dlbr_dec *s = ctx;

	if (s->in_jit)
		return (long)jit_sym_read(&s->jit, ip, buf, len);
	return s->map ? (long)sb_code_read_map(s->code, s->map, ip, buf, len) : 0;
}

/* Points the code reader at the module mapped at ip, or the JIT code there; false when
 * there is none. */
static bool select_map(struct dlbr_dec *s, int32_t pid, uint64_t ip, uint64_t time)
{
	const struct sb_map *m = sb_find_map(s->c->sb, pid, ip, time);

	s->map = m;
	s->in_jit = false;
	if (!m || !m->dso || m->dso->anon) {
		s->in_jit = s->c->jit && jit_find(s->c->jit, pid, time, ip, &s->jit) && s->jit.code;
		return s->in_jit;
	}
	return sb_code_path(s->code, m) != NULL;
}

/* The xev kind and flags of an x86 branch class. */
static void branch_kind(enum x86_bclass cls, enum xev_kind *kind, uint32_t *flags)
{
	*flags = 0;
	switch (cls) {
	case X86_BR_COND:
		*kind = XEV_BRANCH, *flags = XEV_F_COND;
		break;
	case X86_BR_CALL:
		*kind = XEV_CALL;
		break;
	case X86_BR_CALL_IND:
		*kind = XEV_CALL, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_RET:
		*kind = XEV_RETURN, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_JMP_IND:
		*kind = XEV_BRANCH, *flags = XEV_F_INDIRECT;
		break;
	case X86_BR_SYSCALL:
	case X86_BR_FAR:
		*kind = XEV_BRANCH, *flags = XEV_F_SYSCALL;
		break;
	case X86_BR_TRAP:
		*kind = XEV_INTERRUPT;
		break;
	default:
		*kind = XEV_BRANCH;
		break;
	}
}

/* x86_range_walk through the memo (a module's code: s->map). */
static int range_memo_walk(struct dlbr_dec *s, uint64_t start, uint64_t end, struct x86_range_info *ri)
{
	uint64_t bias = s->map->start - s->map->pgoff, fs = start - bias, fe = end - bias;
	uint32_t dso1 = s->map->dso->id + 1;
	struct range_memo *m = &s->memo[xp_hash_bits(fs ^ fe << 21 ^ (uint64_t)dso1 << 42, MEMO_BITS)];
	enum x86_bclass cls;

	if (m->dso1 == dso1 && m->start == fs && m->end == fe) {
		ri->insns = m->insns;
		ri->ncond = m->ncond;
		for (uint32_t i = 0; i < m->ncond; i++) {
			ri->cond_ip[i] = m->cond_ip[i] + bias;
			ri->cond_next[i] = m->cond_next[i] + bias;
		}
		return m->rc;
	}
	int rc = x86_range_walk(&s->dis, read_code, s, start, end, ri, &cls);
	if (rc == -EFAULT || (rc == 0 && ri->ncond > MEMO_COND))
		return rc;
	*m = (struct range_memo){ .dso1 = dso1, .rc = rc, .start = fs, .end = fe };
	if (rc == 0) {
		m->insns = ri->insns;
		m->ncond = ri->ncond;
		for (uint32_t i = 0; i < ri->ncond; i++) {
			m->cond_ip[i] = ri->cond_ip[i] - bias;
			m->cond_next[i] = ri->cond_next[i] - bias;
		}
	}
	return rc;
}

static int code_range(void *ctx, int32_t pid, uint64_t time, uint64_t start, uint64_t end,
		      struct x86_range_info *ri)
{
	struct dlbr_dec *s = ctx;
	enum x86_bclass cls;
	int rc;

	if (!s->have_dis || !select_map(s, pid, start, time))
		return -ENOENT;
	if (s->in_jit ? end - s->jit.start >= s->jit.size : end >= s->map->end)
		return -ENOENT;
	if (s->in_jit || !s->memo)
		rc = x86_range_walk(&s->dis, read_code, s, start, end, ri, &cls);
	else
		rc = range_memo_walk(s, start, end, ri);
	if (rc == -EINVAL)
		s->bad_code++;
	return rc;
}

static int code_classify(void *ctx, int32_t pid, uint64_t time, uint64_t ip, enum xev_kind *kind,
			 uint32_t *flags)
{
	struct dlbr_dec *s = ctx;
	struct x86_instr in;
	uint8_t buf[X86_MAX_INSN];
	long n;

	if (!s->have_dis || !select_map(s, pid, ip, time))
		return -ENOENT;
	n = read_code(s, ip, buf, sizeof(buf));
	if (n <= 0 || x86_dis_one(&s->dis, buf, (size_t)n, ip, &in) < 0)
		return -EINVAL;
	branch_kind(in.br.cls, kind, flags);
	return 0;
}

static int on_rec(void *arg, const struct pd_rec *r)
{
	struct dlbr_dec *s = arg;
	const struct pd_sample *sm;
	struct dlbr_sample ds;

	if (r->time)
		s->last_time = r->time;
	if (r->type != PERF_RECORD_SAMPLE || !r->attr || !is_branch_attr(r->attr))
		return 0;
	sm = &r->u.sample;
	if (!dec_thread_selected(s->c, (int32_t)sm->tid, sm->type & PERF_SAMPLE_TIME ? sm->time :
				 s->last_time))
		return 0;
	memset(&ds, 0, sizeof(ds));
	ds.pid = (int32_t)sm->pid;
	ds.tid = (int32_t)sm->tid;
	ds.cpu = sm->type & PERF_SAMPLE_CPU ? (int32_t)sm->cpu : -1;
	/* perf inject's samples carry no TIME: they happened after the sideband read so far
	 * (mappings are looked up by time). */
	ds.time = sm->type & PERF_SAMPLE_TIME ? sm->time : s->last_time;
	ds.ip = sm->ip;
	ds.period = sm->type & PERF_SAMPLE_PERIOD ? sm->period :
		    (r->attr->attr.freq ? 1 : r->attr->attr.sample_period);
	ds.event = r->attr->index;
	ds.br = sm->branch;
	ds.nr = (uint32_t)sm->nr_branch;
	s->d.o.call_stack = (r->attr->attr.branch_sample_type & PERF_SAMPLE_BRANCH_CALL_STACK) != 0;
	return dlbr_sample(&s->d, &ds, s->sink);
}

static int run(struct dec_ctx *c, const struct xev_sink *sink)
{
	struct dlbr_dec s = { .c = c, .sink = sink };
	struct dlbr_opts o = { .emit_sample = 1 };
	struct dlbr_code code = { code_range, code_classify, &s };
	int rc;

	s.code = sb_code_new(c->sb, c->sym, c->jit);
	if (!s.code)
		return -ENOMEM;
	s.have_dis = x86_dis_init(&s.dis) == 0;
	s.memo = calloc(1u << MEMO_BITS, sizeof(*s.memo));	/* without it: every walk made */
	dlbr_init(&s.d, &o, &code);
	rc = dec_read(c, on_rec, &s);
	if (s.d.st.bad_ranges)
		xp_warn("lbr: %llu of %llu ranges dropped (backwards, over %u bytes, or crossing "
			"user/kernel)", (unsigned long long)s.d.st.bad_ranges,
			(unsigned long long)(s.d.st.bad_ranges + s.d.st.ranges), DLBR_MAX_RANGE);
	if (s.bad_code)
		xp_warn("lbr: %llu ranges contradict the code in the snapshots (counted without "
			"instructions)", (unsigned long long)s.bad_code);
	sb_code_free(s.code);
	free(s.memo);
	if (s.have_dis)
		x86_dis_fini(&s.dis);
	return rc;
}

const struct dec_decoder dec_lbr = {
	.name = "lbr",
	.default_view = "functions",
	.accepts = accepts,
	.setup = setup,
	.run = run,
};
