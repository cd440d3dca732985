/* LBR decoder on hand-made branch stacks: the expected events are worked out by hand from
 * the stack (newest first) -> ranges [e[i+1].to, e[i].from], oldest first. */
#include "xp_test.h"

#include <errno.h>

#include "decoders/lbr/dlbr.h"

struct rec {
	struct xev ev[64];
	uint64_t chain[64][8];
	int n;
	int stop_at;
};

static int record(void *ctx, const struct xev *ev)
{
	struct rec *r = ctx;

	assert_true(r->n < 64);
	r->ev[r->n] = *ev;
	for (uint32_t i = 0; i < ev->nstack && i < 8; i++)
		r->chain[r->n][i] = ev->stack[i];
	r->n++;
	return r->stop_at && r->n == r->stop_at ? 42 : 0;
}

static struct perf_branch_entry br(uint64_t from, uint64_t to, unsigned cycles, unsigned type)
{
	struct perf_branch_entry e;

	memset(&e, 0, sizeof(e));
	e.from = from;
	e.to = to;
	e.cycles = cycles;
	e.type = type;
	return e;
}

static void assert_ev(const struct xev *ev, enum xev_kind kind, uint32_t flags, uint64_t ip,
		      uint64_t end_or_addr, uint64_t cycles)
{
	assert_int_equal(ev->kind, kind);
	assert_int_equal(ev->flags, flags | XEV_F_SAMPLED);
	assert_int_equal(ev->ip, ip);
	if (kind == XEV_BLOCK) {
		assert_int_equal(ev->end, end_or_addr);
		assert_int_equal(ev->cycles, cycles);
		assert_int_equal(ev->weight, 1);
	} else {
		assert_int_equal(ev->addr, end_or_addr);
	}
	assert_int_equal(ev->pid, 100);
	assert_int_equal(ev->tid, 101);
	assert_int_equal(ev->time, 5000);
}

static const struct dlbr_sample base = { .pid = 100, .tid = 101, .cpu = 1, .time = 5000,
					 .ip = 0x2004, .period = 1000 };

static void test_ranges_and_edges(void **state)
{
	static struct rec r;
	struct dlbr d;
	struct dlbr_opts o = { .emit_sample = 1 };
	struct xev_sink sink = { record, &r, NULL };
	struct perf_branch_entry e[3] = {
		br(0x1050, 0x2000, 10, PERF_BR_CALL),	/* newest */
		br(0x1020, 0x1040, 5, PERF_BR_COND),
		br(0x3010, 0x1000, 0, PERF_BR_RET),	/* oldest */
	};
	struct dlbr_sample s = base;

	(void)state;
	memset(&r, 0, sizeof(r));
	s.br = e;
	s.nr = 3;
	dlbr_init(&d, &o, NULL);
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	assert_int_equal(r.n, 6);
	assert_ev(&r.ev[0], XEV_RETURN, XEV_F_TAKEN | XEV_F_INDIRECT, 0x3010, 0x1000, 0);
	assert_ev(&r.ev[1], XEV_BLOCK, 0, 0x1000, 0x1020, 5);
	assert_int_equal(r.ev[1].insns, 0);	/* no code reader: unknown */
	assert_ev(&r.ev[2], XEV_BRANCH, XEV_F_TAKEN | XEV_F_COND, 0x1020, 0x1040, 0);
	assert_ev(&r.ev[3], XEV_BLOCK, 0, 0x1040, 0x1050, 10);
	assert_ev(&r.ev[4], XEV_CALL, XEV_F_TAKEN, 0x1050, 0x2000, 0);
	assert_ev(&r.ev[5], XEV_SAMPLE, 0, 0x2004, 0, 0);
	assert_int_equal(r.ev[5].weight, 1000);
	assert_int_equal(r.ev[5].cpu, 1);
	assert_int_equal(d.st.ranges, 2);
	assert_int_equal(d.st.cycles_known, 2);
	assert_int_equal(d.st.calls, 1);
	assert_int_equal(d.st.returns, 1);
	assert_int_equal(d.st.branches, 1);
	assert_int_equal(d.st.entries, 3);
}

static void test_unknown_cycles_and_bad_ranges(void **state)
{
	static struct rec r;
	struct dlbr d;
	struct xev_sink sink = { record, &r, NULL };
	struct perf_branch_entry e[5] = {
		/* each comment: the range ending at this entry's source */
		br(0x5000, 0x6000, 0, PERF_BR_UNCOND),		/* 0x4000..0x5000: good */
		br(0xffffffff81000000ULL, 0x4000, 3, PERF_BR_SYSRET),	/* crosses user/kernel */
		br(0x1000, 0x2000, 0, PERF_BR_UNKNOWN),		/* 0x9000..0x1000: backwards */
		br(0x8000, 0x9000, 7, PERF_BR_UNKNOWN),		/* 0x100..0x8000: > 16 KiB */
		br(0x50, 0x100, 0, PERF_BR_UNKNOWN),
	};
	struct dlbr_sample s = base;

	(void)state;
	memset(&r, 0, sizeof(r));
	s.br = e;
	s.nr = 5;
	dlbr_init(&d, NULL, NULL);
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	/* 5 branches, 1 good range: [0x4000, 0x5000] with unknown cycles. */
	assert_int_equal(d.st.ranges, 1);
	assert_int_equal(d.st.bad_ranges, 3);
	assert_int_equal(r.n, 6);
	assert_ev(&r.ev[4], XEV_BLOCK, 0, 0x4000, 0x5000, XEV_CYCLES_UNKNOWN);
	assert_ev(&r.ev[3], XEV_BRANCH, XEV_F_TAKEN | XEV_F_SYSCALL, 0xffffffff81000000ULL, 0x4000, 0);
	assert_ev(&r.ev[0], XEV_BRANCH, XEV_F_TAKEN, 0x50, 0x100, 0);
	/* The 16 KiB limit is a parameter. */
	dlbr_init(&d, &(struct dlbr_opts){ .max_range = 0x10000 }, NULL);
	memset(&r, 0, sizeof(r));
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	assert_int_equal(d.st.ranges, 2);
	assert_ev(&r.ev[1], XEV_BLOCK, 0, 0x100, 0x8000, 7);
}

/* A code reader: instructions are 2 bytes; a conditional branch every 0x10 bytes. */
static int fake_range(void *ctx, int32_t pid, uint64_t time, uint64_t start, uint64_t end,
		      struct x86_range_info *ri)
{
	(void)ctx;
	assert_int_equal(pid, 100);
	assert_int_equal(time, 5000);
	if (start >= 0x7000)
		return -ENOENT;
	ri->insns = (end - start) / 2 + 1;
	for (uint64_t a = (start + 0xf) & ~0xfULL; a < end; a += 0x10) {
		ri->cond_ip[ri->ncond] = a;
		ri->cond_next[ri->ncond++] = a + 2;
	}
	return 0;
}

static int fake_classify(void *ctx, int32_t pid, uint64_t time, uint64_t ip, enum xev_kind *kind,
			 uint32_t *flags)
{
	(void)ctx, (void)pid, (void)time;
	if (ip == 0x1030) {
		*kind = XEV_CALL;
		*flags = XEV_F_INDIRECT;
		return 0;
	}
	return -1;
}

static void test_code_reader(void **state)
{
	static struct rec r;
	struct dlbr d;
	struct dlbr_code code = { fake_range, fake_classify, NULL };
	struct xev_sink sink = { record, &r, NULL };
	struct perf_branch_entry e[3] = {
		br(0x7010, 0x7100, 0, 0),
		br(0x1030, 0x7000, 4, 0),
		br(0x0f00, 0x1008, 0, 0),
	};
	struct dlbr_sample s = base;

	(void)state;
	memset(&r, 0, sizeof(r));
	s.br = e;
	s.nr = 3;
	dlbr_init(&d, NULL, &code);
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	/* branch, block [0x1008,0x1030] 21 insns with not-taken conds at 0x1010 and 0x1020,
	 * classified indirect call, block [0x7000,0x7010] without code, branch. */
	assert_int_equal(r.n, 7);
	assert_ev(&r.ev[0], XEV_BRANCH, XEV_F_TAKEN, 0x0f00, 0x1008, 0);
	assert_ev(&r.ev[1], XEV_BLOCK, 0, 0x1008, 0x1030, 4);
	assert_int_equal(r.ev[1].insns, 21);
	assert_ev(&r.ev[2], XEV_BRANCH, XEV_F_COND, 0x1010, 0x1012, 0);
	assert_ev(&r.ev[3], XEV_BRANCH, XEV_F_COND, 0x1020, 0x1022, 0);
	assert_ev(&r.ev[4], XEV_CALL, XEV_F_TAKEN | XEV_F_INDIRECT, 0x1030, 0x7000, 0);
	assert_ev(&r.ev[5], XEV_BLOCK, 0, 0x7000, 0x7010, XEV_CYCLES_UNKNOWN);
	assert_int_equal(r.ev[5].insns, 0);
	assert_ev(&r.ev[6], XEV_BRANCH, XEV_F_TAKEN, 0x7010, 0x7100, 0);
	assert_int_equal(d.st.no_code, 1);
	/* A sink that stops the decoder gets its value back. */
	memset(&r, 0, sizeof(r));
	r.stop_at = 2;
	assert_int_equal(dlbr_sample(&d, &s, &sink), 42);
	assert_int_equal(r.n, 2);
}

/* Stacks made from PT mark tracing off/on with address 0 (TIP.PGD / TIP.PGE). */
static void test_trace_off_markers(void **state)
{
	static struct rec r;
	struct dlbr d;
	struct xev_sink sink = { record, &r, NULL };
	struct perf_branch_entry e[4] = {
		br(0x1010, 0x1020, 0, 0),
		br(0, 0x1000, 0, 0),		/* tracing back on at 0x1000 */
		br(0x2008, 0, 0, 0),		/* tracing off after 0x2008 */
		br(0, 0, 0, 0),			/* empty slot */
	};
	struct dlbr_sample s = base;

	(void)state;
	memset(&r, 0, sizeof(r));
	s.br = e;
	s.nr = 4;
	dlbr_init(&d, NULL, NULL);
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	/* disable at 0x2008, enable at 0x1000, the range [0x1000, 0x1010], the branch. */
	assert_int_equal(r.n, 4);
	assert_ev(&r.ev[0], XEV_DISABLE, 0, 0x2008, 0, 0);
	assert_ev(&r.ev[1], XEV_ENABLE, 0, 0x1000, 0, 0);
	assert_ev(&r.ev[2], XEV_BLOCK, 0, 0x1000, 0x1010, XEV_CYCLES_UNKNOWN);
	assert_ev(&r.ev[3], XEV_BRANCH, XEV_F_TAKEN, 0x1010, 0x1020, 0);
	assert_int_equal(d.st.ranges, 1);
	assert_int_equal(d.st.bad_ranges, 0);
}

static void test_call_stack_mode(void **state)
{
	static struct rec r;
	struct dlbr d;
	struct xev_sink sink = { record, &r, NULL };
	/* -g lbr: main+0x10 called f, f+0x8 called g; the sample is in g. */
	struct perf_branch_entry e[3] = {
		br(0x1108, 0x1200, 0, 0),
		br(0x1010, 0x1100, 0, 0),
		br(0, 0, 0, 0),		/* unused slot */
	};
	struct dlbr_sample s = base;

	(void)state;
	memset(&r, 0, sizeof(r));
	s.ip = 0x1204;
	s.br = e;
	s.nr = 3;
	dlbr_init(&d, &(struct dlbr_opts){ .call_stack = 1 }, NULL);
	assert_int_equal(dlbr_sample(&d, &s, &sink), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.ev[0].kind, XEV_SAMPLE);
	assert_int_equal(r.ev[0].nstack, 3);
	assert_int_equal(r.chain[0][0], 0x1204);
	assert_int_equal(r.chain[0][1], 0x1108);
	assert_int_equal(r.chain[0][2], 0x1010);
	assert_int_equal(d.st.ranges, 0);
}

static void test_parse_stack(void **state)
{
	uint64_t buf[2 + 3 * 3] = { 0 };
	const struct perf_branch_entry *b;
	uint32_t nr;
	uint64_t hw;

	(void)state;
	buf[0] = 3;
	buf[1] = 7;		/* hw_idx */
	buf[2] = 0x1000;	/* e[0].from */
	buf[3] = 0x2000;
	assert_int_equal(dlbr_parse_stack(buf, sizeof(buf), 1, &b, &nr, &hw), sizeof(buf));
	assert_int_equal(nr, 3);
	assert_int_equal(hw, 7);
	assert_int_equal(b[0].from, 0x1000);
	assert_int_equal(b[0].to, 0x2000);
	/* Without hw_idx the entries start right after nr. */
	assert_int_equal(dlbr_parse_stack(buf, sizeof(buf), 0, &b, &nr, &hw), 8 + 3 * 24);
	assert_int_equal(hw, UINT64_MAX);
	assert_int_equal(b[0].from, 7);
	/* nr larger than the record: refused. */
	assert_int_equal(dlbr_parse_stack(buf, sizeof(buf) - 8, 1, &b, &nr, &hw), -EINVAL);
	buf[0] = UINT64_MAX / 2;
	assert_int_equal(dlbr_parse_stack(buf, sizeof(buf), 0, &b, &nr, &hw), -EINVAL);
	assert_int_equal(dlbr_parse_stack(buf, 4, 0, &b, &nr, &hw), -EINVAL);
	assert_int_equal(dlbr_parse_stack(buf, 8, 1, &b, &nr, &hw), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ranges_and_edges),
		cmocka_unit_test(test_unknown_cycles_and_bad_ranges),
		cmocka_unit_test(test_code_reader),
		cmocka_unit_test(test_trace_off_markers),
		cmocka_unit_test(test_call_stack_mode),
		cmocka_unit_test(test_parse_stack),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
