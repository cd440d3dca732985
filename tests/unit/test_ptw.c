/* The PT writer against libipt's own decoders: packet sequence and sizes (packet
 * decoder), and what a decoder reconstructs (query decoder): TNT bit order, IP
 * compression against the last IP, PSB+ contents, chunking on packet boundaries. */
#include "xp_test.h"

#include <intel-pt.h>

#include "record/step/ptw.h"

struct sink {
	uint8_t buf[1 << 20];
	size_t len;
	size_t cuts[256];	/* chunk ends */
	int ncuts;
};

static int collect(void *ctx, const uint8_t *data, size_t len)
{
	struct sink *s = ctx;

	assert_true(s->len + len <= sizeof(s->buf));
	memcpy(s->buf + s->len, data, len);
	s->len += len;
	if (s->ncuts < 256)
		s->cuts[s->ncuts++] = s->len;
	return 0;
}

static struct pt_packet_decoder *pkt_dec(struct sink *s)
{
	struct pt_config cfg;
	struct pt_packet_decoder *d;

	pt_config_init(&cfg);
	cfg.begin = s->buf;
	cfg.end = s->buf + s->len;
	d = pt_pkt_alloc_decoder(&cfg);
	assert_non_null(d);
	assert_int_equal(pt_pkt_sync_set(d, 0), 0);
	return d;
}

struct want_packet {
	enum pt_packet_type type;
	int size;
};

/* The stream in s is exactly these packets. */
static void check_packets(struct sink *s, const struct want_packet *want, int nwant)
{
	struct pt_packet_decoder *d = pkt_dec(s);
	struct pt_packet p;
	int n = 0, err;

	while ((err = pt_pkt_next(d, &p, sizeof(p))) > 0) {
		if (n >= nwant)
			fail_msg("extra packet %d of type %d", n, p.type);
		if (p.type != want[n].type || p.size != want[n].size)
			fail_msg("packet %d: type %d size %d, want type %d size %d", n, p.type,
				 p.size, want[n].type, want[n].size);
		n++;
	}
	assert_int_equal(err, -pte_eos);
	assert_int_equal(n, nwant);
	pt_pkt_free_decoder(d);
}

static void test_packets(void **state)
{
	static struct sink s;
	struct ptw w;
	struct ptw_opts o = { .psb_period = 1 << 20 };
	static const struct want_packet want[] = {
		/* begin writes nothing; the first enable: PSB+ with the IP */
		{ ppt_psb, 16 }, { ppt_mode, 2 }, { ppt_tsc, 8 }, { ppt_fup, 7 }, { ppt_psbend, 2 },
		{ ppt_tnt_8, 1 },							/* 3 bits */
		{ ppt_tip, 3 },								/* update_16 */
		{ ppt_tnt_64, 8 },							/* 10 bits */
		{ ppt_tip, 5 },								/* update_32 */
		{ ppt_tip_pgd, 1 },							/* suppressed */
		{ ppt_mode, 2 }, { ppt_tsc, 8 }, { ppt_tip_pge, 3 },			/* enable */
		{ ppt_tsc, 8 }, { ppt_fup, 3 }, { ppt_tip, 7 },				/* async */
	};

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(ptw_init(&w, &o, collect, &s), 0);
	assert_int_equal(ptw_begin(&w, 1000), 0);
	assert_int_equal(ptw_enable(&w, 0x401000, 1001), 0);
	for (int i = 0; i < 3; i++)
		assert_int_equal(ptw_tnt(&w, 0x401000 + i, i & 1, 1002), 0);
	assert_int_equal(ptw_tip(&w, 0x401100, 0x401234, 1003), 0);
	for (int i = 0; i < 10; i++)
		assert_int_equal(ptw_tnt(&w, 0x401234, i % 3 == 0, 1004), 0);
	assert_int_equal(ptw_tip(&w, 0x401300, 0x12345678, 1005), 0);
	assert_int_equal(ptw_disable(&w, 0x12345690, 0, 1006), 0);
	assert_int_equal(ptw_enable(&w, 0x12345692, 1007), 0);
	assert_int_equal(ptw_async(&w, 0x12345700, 0x7fffffff0000ull, 1000000), 0);
	assert_int_equal(ptw_flush(&w), 0);
	check_packets(&s, want, (int)(sizeof(want) / sizeof(want[0])));
	assert_int_equal(w.n_tnt_bits, 13);
	ptw_fini(&w);
}

/* Queries the stream in s with libipt up to its disable (ip suppressed), laid out as
 * test_query and test_sync_runs write it: enabled at 0x555555554000, 20000 conditional
 * branches, bit i = (i*7)%5 < 2, after every 50th a TIP to a far or near address
 * naming branch `nbits - tip_lag`.  psb_fups: a PSB+'s FUP may come where a branch is
 * asked (a bad query: its events follow). */
static void query_stream(struct sink *s, int tip_lag, bool psb_fups)
{
	struct pt_config cfg;
	struct pt_query_decoder *q;
	struct pt_event ev;
	uint64_t ip;
	int status, taken, nbits = 0, ntips = 0;

	pt_config_init(&cfg);
	cfg.begin = s->buf;
	cfg.end = s->buf + s->len;
	q = pt_qry_alloc_decoder(&cfg);
	assert_non_null(q);
	status = pt_qry_sync_forward(q, &ip);
	assert_true(status >= 0);
	for (;;) {
		while (status & pts_event_pending) {
			status = pt_qry_event(q, &ev, sizeof(ev));
			assert_true(status >= 0);
			if (ev.type == ptev_enabled && nbits == 0)
				assert_int_equal(ev.variant.enabled.ip, 0x555555554000ull);
			if (ev.type == ptev_disabled) {
				assert_int_equal(ev.ip_suppressed, 1);
				goto done;
			}
		}
		if (nbits > 0 && nbits % 50 == 0 && ntips < nbits / 50) {
			int i = nbits - tip_lag;

			status = pt_qry_indirect_branch(q, &ip);
			assert_true(status >= 0);
			assert_int_equal(ip, (i & 64) ? 0x7ffff7dd3000ull + i : 0x555555560000ull + i);
			ntips++;
			continue;
		}
		status = pt_qry_cond_branch(q, &taken);
		if (psb_fups && status == -pte_bad_query)
			continue;
		assert_true(status >= 0);
		if (taken != ((nbits * 7) % 5 < 2))
			fail_msg("branch %d: taken %d", nbits, taken);
		nbits++;
	}
done:
	assert_int_equal(nbits, 20000);
	assert_int_equal(ntips, 400);
	pt_qry_free_decoder(q);
}

static void test_query(void **state)
{
	static struct sink s;
	struct ptw w;
	struct ptw_opts o = { .psb_period = 2048, .chunk = 4096 };

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(ptw_init(&w, &o, collect, &s), 0);
	assert_int_equal(ptw_begin(&w, 5), 0);
	assert_int_equal(ptw_enable(&w, 0x555555554000ull, 6), 0);
	/* enough branches for several PSBs and chunks: bit i = (i*7)%5 < 2, and a TIP
	 * to a far address every 50 branches */
	for (int i = 0; i < 20000; i++) {
		assert_int_equal(ptw_tnt(&w, 0x555555554000ull + i, (i * 7) % 5 < 2, 10 + i), 0);
		if (i % 50 == 49)
			assert_int_equal(ptw_tip(&w, 0x555555554000ull + i,
						 (i & 64) ? 0x7ffff7dd3000ull + i : 0x555555560000ull + i,
						 10 + i), 0);
	}
	assert_int_equal(ptw_disable(&w, 0x555555555000ull, 0, 30000), 0);
	assert_int_equal(ptw_flush(&w), 0);
	assert_true(w.n_psb >= 3);
	assert_true(s.ncuts >= 2);
	/* every chunk ends on a packet boundary */
	{
		struct pt_packet_decoder *d = pkt_dec(&s);
		struct pt_packet p;
		uint64_t off;
		int c = 0;

		for (;;) {
			assert_int_equal(pt_pkt_get_offset(d, &off), 0);
			while (c < s.ncuts && s.cuts[c] < off)
				fail_msg("chunk end %zu inside a packet", s.cuts[c]);
			if (c < s.ncuts && s.cuts[c] == off)
				c++;
			if (pt_pkt_next(d, &p, sizeof(p)) <= 0)
				break;
		}
		assert_int_equal(c, s.ncuts);
		pt_pkt_free_decoder(d);
	}
	query_stream(&s, 1, true);
	ptw_fini(&w);
}

/* A loss (step mode: code it cannot decode): OVF, then the next event's FUP, whole (a
 * decoder forgets the last IP at OVF), which libipt reports as the overflow's end. */
static void test_overflow(void **state)
{
	static struct sink s;
	struct ptw w;
	struct ptw_opts o = { .psb_period = 1 << 20 };
	struct pt_query_decoder *q;
	struct pt_config cfg;
	struct pt_event ev;
	static const struct want_packet want[] = {
		{ ppt_psb, 16 }, { ppt_mode, 2 }, { ppt_tsc, 8 }, { ppt_fup, 7 }, { ppt_psbend, 2 },
		{ ppt_tnt_8, 1 }, { ppt_tip, 3 },		/* two bits, a TIP (update_16) */
		{ ppt_ovf, 2 }, { ppt_tsc, 8 }, { ppt_fup, 7 },	/* not update_16: whole */
		{ ppt_tnt_8, 1 }, { ppt_tip_pgd, 1 },
	};
	uint64_t ip;
	int status, taken, overflows = 0;

	(void)state;
	memset(&s, 0, sizeof(s));
	assert_int_equal(ptw_init(&w, &o, collect, &s), 0);
	assert_int_equal(ptw_begin(&w, 1000), 0);
	assert_int_equal(ptw_enable(&w, 0x555555554000ull, 1001), 0);
	assert_int_equal(ptw_tnt(&w, 0x555555554010ull, 1, 1002), 0);
	assert_int_equal(ptw_tnt(&w, 0x555555554020ull, 0, 1002), 0);
	assert_int_equal(ptw_tip(&w, 0x555555554030ull, 0x555555554800ull, 1003), 0);
	assert_int_equal(ptw_overflow(&w, 1004), 0);
	assert_int_equal(ptw_tnt(&w, 0x555555554900ull, 1, 1005), 0);
	assert_int_equal(ptw_disable(&w, 0x555555554a00ull, 0, 1006), 0);
	assert_int_equal(ptw_flush(&w), 0);
	assert_int_equal(w.n_ovf, 1);
	check_packets(&s, want, (int)(sizeof(want) / sizeof(want[0])));

	pt_config_init(&cfg);
	cfg.begin = s.buf;
	cfg.end = s.buf + s.len;
	q = pt_qry_alloc_decoder(&cfg);
	assert_non_null(q);
	status = pt_qry_sync_forward(q, &ip);
	assert_true(status >= 0);
	assert_int_equal(ip, 0x555555554000ull);
	while (status & pts_event_pending)	/* the PSB+'s */
		assert_true((status = pt_qry_event(q, &ev, sizeof(ev))) >= 0);
	assert_true(pt_qry_cond_branch(q, &taken) >= 0);
	assert_int_equal(taken, 1);
	assert_true(pt_qry_cond_branch(q, &taken) >= 0);
	assert_int_equal(taken, 0);
	status = pt_qry_indirect_branch(q, &ip);
	assert_true(status >= 0);
	assert_int_equal(ip, 0x555555554800ull);
	/* the loss: libipt's overflow event, decoding resumes at the branch after it */
	while (status & pts_event_pending) {
		status = pt_qry_event(q, &ev, sizeof(ev));
		assert_true(status >= 0);
		if (ev.type == ptev_overflow) {
			overflows++;
			assert_int_equal(ev.variant.overflow.ip, 0x555555554900ull);
		}
	}
	assert_int_equal(overflows, 1);
	assert_true(pt_qry_cond_branch(q, &taken) >= 0);
	assert_int_equal(taken, 1);
	pt_qry_free_decoder(q);
	ptw_fini(&w);
}

/* A writer that knows outcomes but not addresses (--mode dbt): runs of outcomes in one
 * call, a PSB+ only right after a TIP, its FUP that TIP's target; libipt's query
 * decoder gets every bit and target back. */
static void test_sync_runs(void **state)
{
	static struct sink s;
	static uint8_t bits[20000];
	struct ptw w;
	struct ptw_opts o = { .psb_period = 512, .psb_at_sync = 1 };
	struct pt_packet_decoder *d;
	struct pt_packet p, prev = { .type = ppt_invalid };
	uint64_t last_tip = 0, last_ip = 0;
	int npsb = 0, err;

	(void)state;
	memset(&s, 0, sizeof(s));
	for (int i = 0; i < 20000; i++)
		bits[i] = (i * 7) % 5 < 2;
	assert_int_equal(ptw_init(&w, &o, collect, &s), 0);
	assert_int_equal(ptw_begin(&w, 5), 0);
	assert_int_equal(ptw_enable(&w, 0x555555554000ull, 6), 0);
	for (int i = 0; i < 20000; i += 50) {
		uint64_t to = (i & 64) ? 0x7ffff7dd3000ull + i : 0x555555560000ull + i;

		assert_int_equal(ptw_tnt_run(&w, bits + i, 50, 10 + i), 0);
		assert_int_equal(ptw_tip(&w, 0, to, 10 + i), 0);
		assert_int_equal(ptw_sync(&w, to, 10 + i), 0);
	}
	assert_int_equal(ptw_disable(&w, 0, 0, 30000), 0);
	assert_int_equal(ptw_flush(&w), 0);
	assert_int_equal(w.n_tnt_bits, 20000);
	/* every PSB but the first follows a TIP; its FUP is the TIP's target */
	d = pkt_dec(&s);
	while ((err = pt_pkt_next(d, &p, sizeof(p))) > 0) {
		uint64_t full = p.payload.ip.ip;

		/* the IP a packet names, from the last one (the compression of ip_packet) */
		if (p.type == ppt_tip || p.type == ppt_fup || p.type == ppt_tip_pge) {
			if (p.payload.ip.ipc == pt_ipc_update_16)
				full |= last_ip & ~0xffffull;
			else if (p.payload.ip.ipc == pt_ipc_update_32)
				full |= last_ip & ~0xffffffffull;
			if (p.payload.ip.ipc != pt_ipc_suppressed)
				last_ip = full;
		}
		if (p.type == ppt_tip)
			last_tip = full;
		if (p.type == ppt_psb && npsb++ > 0 && prev.type != ppt_tip)
			fail_msg("PSB %d after packet type %d, not a TIP", npsb, prev.type);
		if (p.type == ppt_fup && prev.type == ppt_tsc && npsb > 1 &&
		    (full & 0xffffffffffffull) != (last_tip & 0xffffffffffffull))
			fail_msg("PSB %d: FUP %#llx, the TIP before went to %#llx", npsb,
				 (unsigned long long)full, (unsigned long long)last_tip);
		prev = p;
	}
	assert_int_equal(err, -pte_eos);
	assert_true(npsb >= 5);
	pt_pkt_free_decoder(d);
	query_stream(&s, 50, false);
	ptw_fini(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_packets),
		cmocka_unit_test(test_query),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_sync_runs),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
