/* Data path of the Intel PT collector; see col_pt_pump.h. */
#include "record/col_pt_pump.h"

#include <errno.h>
#include <string.h>

int col_pt_ring_init(struct col_pt_ring *pr, void *base, size_t data_bytes, void *aux,
		     uint64_t aux_bytes, int snapshot)
{
	pr->base = base;
	pr->aux = aux;
	if (ring_init(&pr->ring, base, data_bytes) < 0 ||
	    ring_aux_init(&pr->ra, base, aux, aux_bytes, snapshot) < 0)
		return -EINVAL;
	return 0;
}

struct chunk_ctx {
	struct col_pt_pump *p;
	int idx;
};

static int write_chunk(void *ctx, const struct ring_aux_chunk *ch)
{
	struct chunk_ctx *x = ctx;
	struct col_pt_pump *p = x->p;
	struct pd_auxtrace_event ev;
	int e;

	memset(&ev, 0, sizeof(ev));
	ev.offset = ch->offset;
	/* perf tells snapshots apart by reference (it uses the TSC); ours count them. */
	ev.reference = ch->snapshot ? p->dumps : 0;
	ev.idx = (uint32_t)x->idx;
	ev.tid = (uint32_t)-1;	/* per-CPU buffers: the thread comes from the sideband */
	ev.cpu = (uint32_t)p->rings[x->idx].cpu;
	e = pd_writer_auxtrace2(p->r->w, &ev, ch->p[0], ch->n[0], ch->p[1], ch->n[1]);
	if (e < 0) {
		p->write_err = e;
		return e;
	}
	p->aux_written += ch->size;
	return 0;
}

static void note_aux(void *st, const struct perf_event_header *h)
{
	ring_aux_note_record(st, h, h->size);
}

int col_pt_drain_data(struct col_pt_pump *p)
{
	int e = p->n ? rec_take_round(p->r, &p->rings[0].ring, sizeof(*p->rings), p->n, note_aux,
				      &p->st) : 0;

	return e < 0 ? -EIO : 0;
}

int col_pt_drain(struct col_pt_pump *p)
{
	int e = col_pt_drain_data(p);

	for (int i = 0; e == 0 && !p->snapshot && i < p->n; i++) {
		struct chunk_ctx x = { p, i };
		e = ring_aux_read(&p->rings[i].ra, 0, write_chunk, &x, NULL);
	}
	return e ? e : rec_round(p->r);
}

int col_pt_snapshot(struct col_pt_pump *p)
{
	int e;

	p->dumps++;
	e = col_pt_drain_data(p);
	for (int i = 0; e == 0 && i < p->n; i++) {
		struct chunk_ctx x = { p, i };
		e = ring_aux_snapshot(&p->rings[i].ra, write_chunk, &x, NULL);
	}
	return e ? e : rec_round(p->r);
}
