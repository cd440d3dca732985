/* Cutting a PT buffer into pieces for a parallel decode (dpt.h, decode/dec_par.h).
 *
 * A PSB+ restates what a decoder needs to start (the IP in its FUP, the mode, the
 * time), so a piece may start at any PSB whose PSB+ holds an IP and is not inside a
 * transaction (the outcome of a transaction begun before it would be unknown).  Every
 * PSB is listed: a piece decoding past the start of the next one tells which PSB it
 * stopped at, and must not take a PSB+ in the middle of a piece for the end of its
 * own. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decoders/pt/dpt.h"
#include "util/xp_grow.h"

/* At most this many packets between PSB and PSBEND in a PSB+ taken as a start. */
#define PSB_HEADER_MAX 32

/* A PSB+ a decode can start from: complete, with an IP, outside a transaction. */
static bool good_start(struct pt_packet_decoder *pd, uint64_t off)
{
	struct pt_packet p;
	bool fup = false;

	if (pt_pkt_sync_set(pd, off) < 0 || pt_pkt_next(pd, &p, sizeof(p)) < 0 || p.type != ppt_psb)
		return false;
	for (int n = 0; n < PSB_HEADER_MAX; n++) {
		if (pt_pkt_next(pd, &p, sizeof(p)) < 0)
			return false;
		switch (p.type) {
		case ppt_psbend:
			return fup;
		case ppt_fup:
			fup = p.payload.ip.ipc != pt_ipc_suppressed;
			break;
		case ppt_mode:
			if (p.payload.mode.leaf == pt_mol_tsx && p.payload.mode.bits.tsx.intx)
				return false;
			break;
		case ppt_ovf:
		case ppt_psb:
			return false;
		default:
			break;
		}
	}
	return false;
}

/* The scan gives back the pages it read every this many bytes (release). */
#define SCAN_RELEASE (4u << 20)
/* A read of one byte of a file mapping may map this much around it (large page-cache
 * folios, tmpfs huge pages): what a look at a PSB+ gives back. */
#define FOLIO_MAX (2u << 20)

int dpt_split(const uint8_t *buf, size_t len, uint64_t piece_size, bool release, struct dpt_split *s)
{
	uint64_t released = 0;
	struct pt_config cfg;
	size_t cap = 0, capstart = 0;
	uint64_t off;

	memset(s, 0, sizeof(*s));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + len;
	struct pt_packet_decoder *pd = pt_pkt_alloc_decoder(&cfg);
	if (!pd)
		return -ENOMEM;
	while (pt_pkt_sync_forward(pd) >= 0 && pt_pkt_get_sync_offset(pd, &off) >= 0) {
		if (XP_GROW(s->psbs, cap, s->npsbs + 1) < 0)
			goto nomem;
		s->psbs[s->npsbs++] = off;
		if (release && off - released >= SCAN_RELEASE) {	/* memory flat in the trace's size */
			dpt_split_release(buf, released, off);
			released = off;
		}
	}
	s->stop = calloc(s->npsbs ? s->npsbs : 1, 1);
	if (!s->stop || XP_GROW(s->start, capstart, 1) < 0)
		goto nomem;
	s->start[s->npieces++] = SIZE_MAX;	/* the first piece: from the buffer's start */
	uint64_t from = 0;
	for (size_t i = 0; i < s->npsbs; i++) {
		if (s->psbs[i] - from < piece_size || len - s->psbs[i] < piece_size / 2)
			continue;
		bool good = good_start(pd, s->psbs[i]);
		if (release)
			dpt_split_release(buf, s->psbs[i] > FOLIO_MAX ? s->psbs[i] - FOLIO_MAX : 0,
					  len - s->psbs[i] > 2 * FOLIO_MAX ? s->psbs[i] + 2 * FOLIO_MAX : len);
		if (!good)
			continue;
		if (XP_GROW(s->start, capstart, s->npieces + 1) < 0)
			goto nomem;
		s->stop[i] = 1;
		s->start[s->npieces++] = i;
		from = s->psbs[i];
	}
	pt_pkt_free_decoder(pd);
	if (release)
		dpt_split_release(buf, released, len);
	return 0;
nomem:
	pt_pkt_free_decoder(pd);
	dpt_split_free(s);
	return -ENOMEM;
}

void dpt_split_free(struct dpt_split *s)
{
	free(s->psbs);
	free(s->stop);
	free(s->start);
	memset(s, 0, sizeof(*s));
}

uint64_t dpt_split_piece(const struct dpt_split *s, size_t i, struct dpt_options *o)
{
	uint64_t off = s->start[i] == SIZE_MAX ? 0 : s->psbs[s->start[i]];
	o->cont = i > 0;
	o->psbs = s->psbs;
	o->stop = s->stop;
	o->npsbs = s->npsbs;
	o->psb_base = off;
	o->stop_from = i + 1 < s->npieces ? s->psbs[s->start[i + 1]] : UINT64_MAX;
	o->progress = NULL;	/* the status line is the decode thread's */
	return off;
}

size_t dpt_split_next(const struct dpt_split *s, size_t i, const struct dpt_stats *st)
{
	if (st->stopped_at == SIZE_MAX)
		return s->npieces;
	size_t lo = i + 1, hi = s->npieces;
	while (lo < hi) {	/* the piece starting at that PSB */
		size_t mid = lo + (hi - lo) / 2;
		if (s->start[mid] < st->stopped_at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

void dpt_split_release(const uint8_t *buf, uint64_t from, uint64_t to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)buf + from + page - 1) & ~(page - 1);
	uintptr_t b = ((uintptr_t)buf + to) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}
