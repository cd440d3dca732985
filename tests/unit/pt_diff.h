/* Test helper: decodes PT twice, with the packet walker (dpt_fast.c, libipt for the
 * rest) and with libipt's block decoder alone (dpt_options.libipt_only), and compares
 * the two event streams event by event, every field.  Used by test_pt_fast.c and
 * the differential fuzz target (tests/fuzz/fuzz_pt_diff.c). */
#ifndef PT_DIFF_H
#define PT_DIFF_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decoders/pt/dpt.h"

/* The fuzz target's coverage is the decoders'.  Recording and comparing their
 * events is the harness's own work, per event and field: instrumented for the
 * fuzzer (edges and every comparison traced) it was 14 % of the differential
 * harness's time and told the fuzzer nothing about the decoders. */
#if defined(__clang__)
#define PTD_NOCOV __attribute__((no_sanitize("coverage")))
#else
#define PTD_NOCOV
#endif

struct ptd_rec {
	struct xev *ev;
	size_t n, cap;
	int failed;		/* out of memory */
	int discard;		/* events not kept */
	uint32_t ignore;	/* transfers not recorded (dpt_options.ignore: libipt's
				 * block decoder alone gives some all the same) */
};

PTD_NOCOV static inline int ptd_fn(void *ctx, const struct xev *ev)
{
	struct ptd_rec *r = ctx;
	if (r->ignore & (1u << XEV_BRANCH | 1u << XEV_CALL | 1u << XEV_RETURN) & (1u << ev->kind))
		return 0;
	if (r->discard)
		return 0;
	if (r->n == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 1024;
		struct xev *p = realloc(r->ev, cap * sizeof(*p));
		if (!p) {
			r->failed = 1;
			return 1;
		}
		r->ev = p;
		r->cap = cap;
	}
	r->ev[r->n] = *ev;
	r->ev[r->n].bytes = NULL;	/* valid during the call only (none in blocks) */
	r->ev[r->n].stack = NULL;
	r->ev[r->n].values = NULL;
	r->n++;
	return 0;
}

PTD_NOCOV static inline int ptd_same(const struct xev *a, const struct xev *b)
{
	return a->kind == b->kind && a->flags == b->flags && a->time == b->time && a->ip == b->ip &&
	       a->end == b->end && a->addr == b->addr && a->insns == b->insns && a->cycles == b->cycles &&
	       a->pid == b->pid && a->tid == b->tid && a->cpu == b->cpu && a->weight == b->weight &&
	       a->nstack == b->nstack && a->event == b->event && a->nvalues == b->nvalues &&
	       a->lost == b->lost && a->offset == b->offset && a->nbytes == b->nbytes && a->sub == b->sub &&
	       a->arg0 == b->arg0 && a->arg1 == b->arg1 &&
	       (a->reason == b->reason || (a->reason && b->reason && strcmp(a->reason, b->reason) == 0));
}

static inline void ptd_print(FILE *f, const char *who, const struct xev *e)
{
	fprintf(f, "%s: kind %d sub %u flags %#x time %" PRIu64 " ip %#" PRIx64 " end %#" PRIx64
		" addr %#" PRIx64 " insns %" PRIu64 " lost %" PRIu64 " offset %" PRIu64 " %s\n", who,
		(int)e->kind, e->sub, e->flags, e->time, e->ip, e->end, e->addr, e->insns, e->lost,
		e->offset, e->reason ? e->reason : "");
}

/* -1 when the same, else the index of the first difference (told on stderr). */
PTD_NOCOV static inline long ptd_compare(const struct ptd_rec *fast, const struct ptd_rec *lib)
{
	size_t n = fast->n < lib->n ? fast->n : lib->n;
	for (size_t i = 0; i < n; i++)
		if (!ptd_same(&fast->ev[i], &lib->ev[i])) {
			fprintf(stderr, "pt_diff: event %zu of %zu/%zu differs\n", i, fast->n, lib->n);
			for (size_t k = i > 3 ? i - 3 : 0; k < i; k++)
				ptd_print(stderr, "  both  ", &lib->ev[k]);
			ptd_print(stderr, "  fast  ", &fast->ev[i]);
			ptd_print(stderr, "  libipt", &lib->ev[i]);
			return (long)i;
		}
	if (fast->n != lib->n) {
		fprintf(stderr, "pt_diff: %zu events (walker) vs %zu (libipt)\n", fast->n, lib->n);
		if (n < fast->n)
			ptd_print(stderr, "  fast  ", &fast->ev[n]);
		if (n < lib->n)
			ptd_print(stderr, "  libipt", &lib->ev[n]);
		return (long)n;
	}
	return -1;
}

/* One decode of buf: in time slices of `slice` (dpt_run with a limit that many time
 * units past the next event's, as queues decoded together run) or whole (0). */
static inline int ptd_decode(const uint8_t *buf, size_t len, struct dpt_image *img,
			     const struct dpt_options *opt, uint64_t slice, struct ptd_rec *out,
			     struct dpt_stats *st)
{
	struct dpt_dec *d;
	struct xev_sink sink = { ptd_fn, out, NULL };
	out->ignore = opt->ignore;
	int r = dpt_open(&d, buf, len, img, opt);
	if (r < 0)
		return r;
	if (!slice) {
		r = dpt_run(d, &sink, UINT64_MAX);
	} else {
		uint64_t t;
		while (!r && (t = dpt_time(d)) != UINT64_MAX)
			r = dpt_run(d, &sink, t > UINT64_MAX - slice ? UINT64_MAX : t + slice);
	}
	if (st)
		*st = *dpt_dec_stats(d);
	dpt_close(d);
	return r;
}

/* Both decoders on buf with `opt`: -1 when they made the same events and returned
 * the same, else the index of the first difference.  *walked: stretches the walker
 * took. */
PTD_NOCOV static inline long ptd_both(const uint8_t *buf, size_t len, struct dpt_image *img,
			    const struct dpt_options *opt, uint64_t slice, uint64_t *walked)
{
	/* kept from call to call (a fuzzer's inputs): a fresh array per decode was a
	 * third of a small input's time in page faults */
	static struct ptd_rec a, b;
	struct ptd_rec warm = { .discard = 1 };
	struct dpt_stats sa, sb;
	a.n = b.n = 0;
	a.failed = b.failed = 0;
	memset(&sa, 0, sizeof(sa));
	memset(&sb, 0, sizeof(sb));
	struct dpt_options o = *opt;
	/* libipt's block cache lives in the image's sections: a decode after the first
	 * may cut blocks of code that does not decode (a TIP into the middle of an
	 * instruction) otherwise, libipt alone too.  Both compared decodes come after one. */
	o.libipt_only = 1;
	ptd_decode(buf, len, img, &o, slice, &warm, NULL);
	o.libipt_only = 0;
	int ra = ptd_decode(buf, len, img, &o, slice, &a, &sa);
	o.libipt_only = 1;
	int rb = ptd_decode(buf, len, img, &o, slice, &b, &sb);
	long d = ptd_compare(&a, &b);
	/* A return compressed (a TNT bit) against a call made before the last PSB: the
	 * hardware never writes one (it starts compressing afresh at a PSB, perf's decoder
	 * clears its stack there), libipt keeps its stack across PSBs.  A decoder started
	 * at a PSB (where the walker gives libipt a stretch back) finds no call for it;
	 * such input is no trace, and not compared further. */
	bool no_trace = d >= 0 && (size_t)d < a.n && a.ev[d].kind == XEV_GAP && a.ev[d].reason &&
		strcmp(a.ev[d].reason, pt_errstr(pte_retstack_empty)) == 0;
	if (no_trace)
		d = -1;
	if (d < 0 && !no_trace && (ra != rb || sa.insns != sb.insns || sa.blocks != sb.blocks || sa.gaps != sb.gaps ||
		      sa.lost_bytes != sb.lost_bytes || sa.overflows != sb.overflows ||
		      sa.first_error != sb.first_error || sa.first_error_offset != sb.first_error_offset ||
		      sa.stopped_at != sb.stopped_at)) {
		fprintf(stderr, "pt_diff: same events, other results: return %d/%d insns %" PRIu64 "/%" PRIu64
			" blocks %" PRIu64 "/%" PRIu64 " gaps %" PRIu64 "/%" PRIu64 " error %d/%d stopped %zu/%zu\n",
			ra, rb, sa.insns, sb.insns, sa.blocks, sb.blocks, sa.gaps, sb.gaps, sa.first_error,
			sb.first_error, sa.stopped_at, sb.stopped_at);
		d = (long)a.n;
	}
	if (walked)
		*walked = sa.walked;
	if (a.failed || b.failed)
		d = -1;	/* out of memory: nothing compared */
	return d;
}

/* The same on the pieces of a parallel decode (dpt_split into `piece_size` bytes):
 * each piece decoded alone by both, its stitch events included. */
static inline long ptd_pieces(const uint8_t *buf, size_t len, struct dpt_image *img,
			      const struct dpt_options *opt, uint64_t piece_size, uint64_t *walked)
{
	struct dpt_split s;
	long d = -1;
	if (walked)
		*walked = 0;
	if (dpt_split(buf, len, piece_size, false, &s) < 0)
		return -1;
	for (size_t i = 0; i < s.npieces && d < 0; i++) {
		struct dpt_options o = *opt;
		uint64_t w = 0, at = dpt_split_piece(&s, i, &o);
		o.base_offset += at;
		d = ptd_both(buf + at, len - at, img, &o, 0, &w);
		if (walked)
			*walked += w;
	}
	dpt_split_free(&s);
	return d;
}

#endif
