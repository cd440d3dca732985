/* Intel PT in perf.data (perf's own `-e intel_pt//` files, xptrace's pt and step modes).
 *
 * Pass 1 reads the records in time order: the session takes the sideband, this keeps
 * the AUXTRACE_INFO configuration, the executable mappings of each process, the
 * context switches of each cpu, and appends every AUXTRACE chunk to its queue (one per
 * thread, or per cpu) in an unlinked temporary file, so memory does not grow with the
 * trace.  AUX data that was lost (a jump in the chunk offsets, a truncated AUX record)
 * splits a queue into parts with a gap between them.
 * Pass 2 decodes each queue with one pt_image per address space: file sections for the
 * process's mappings (snapshot files by build-id), and for anything else the session's
 * mapping at the decode time.  Per-cpu queues get their thread from the switch records
 * at the decode time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decode.h"
#include "pt.h"
#include "pt_plug.h"
#include "pt_mem.h"
#include "xp_err.h"

struct part {
	uint64_t start, end;	/* byte range of the queue's stream */
	uint64_t lost;		/* bytes lost before this part (0: none) */
	const char *why;
};

struct queue {
	uint32_t idx;
	int32_t tid, cpu;	/* tid -1: per-cpu queue */
	FILE *f;
	uint64_t size;		/* bytes written */
	uint64_t next_off;	/* AUX offset the next chunk should have */
	uint64_t last_off;	/* AUX offset of the last chunk */
	struct part *parts;
	size_t nparts;
};

struct mapping {
	int32_t pid;
	uint64_t start, len, pgoff, time;
	struct sb_dso *dso;
};

struct sw {
	int32_t cpu, pid, tid;
	uint64_t time;
};

/* A walk over the switch records of one cpu: queue times only grow, so each walk
 * passes over them once (two walks: the decoder reads code ahead of the events). */
struct swcur {
	size_t pos;
	uint64_t time;
	int32_t pid, tid;
};

struct dpp {
	struct dec_ctx *c;
	const struct xev_sink *sink;
	uint64_t priv[PD_PT_INFO_WORDS];
	size_t npriv;
	bool have_info;
	uint64_t config;	/* the PT attr's config */
	struct queue *q;
	size_t nq;
	struct mapping *maps;
	size_t nmaps, capmaps;
	struct sw *sws;
	size_t nsw, capsw;
	struct dpt_mem *mem;
	/* pass 2: the queue being decoded */
	struct queue *cur;
	int32_t pid, tid;
	uint64_t now;		/* time of the latest event: mappings are looked up then */
	struct swcur read_w, event_w;	/* who runs: for code reads, for events */
	int32_t cur_cpu;	/* the per-cpu queue being decoded, -1 per-thread */
	uint64_t gaps, lost_bytes, insns;
	int err;
};

static bool is_pt_attr(const struct pd_attr *a)
{
	return a->name && strncmp(a->name, "intel_pt", 8) == 0;
}

static bool accepts(struct dec_ctx *c)
{
	for (uint32_t i = 0; c->pd && i < pd_nattrs(c->pd); i++)
		if (is_pt_attr(pd_attr_at(c->pd, i)))
			return true;
	return false;
}

static int setup(struct dec_ctx *c)
{
	return dpt_setup_metrics(c, true);
}

static struct queue *queue_of(struct dpp *p, const struct pd_auxtrace_event *a)
{
	for (size_t i = 0; i < p->nq; i++)
		if (p->q[i].idx == a->idx && (p->q[i].cpu >= 0 ? p->q[i].cpu == (int32_t)a->cpu :
					      p->q[i].tid == (int32_t)a->tid))
			return &p->q[i];
	struct queue *q = realloc(p->q, (p->nq + 1) * sizeof(*q));
	if (!q)
		return NULL;
	p->q = q;
	q = &p->q[p->nq];
	memset(q, 0, sizeof(*q));
	q->idx = a->idx;
	/* perf writes tid -1 for per-cpu AUX areas and cpu -1 for per-thread ones */
	q->tid = (int32_t)a->tid;
	q->cpu = (int32_t)a->cpu;
	if (q->cpu >= 0 && q->tid > 0)
		q->cpu = -1;	/* a per-thread area that also names its cpu */
	q->f = tmpfile();
	if (!q->f)
		return NULL;
	p->nq++;
	return q;
}

static int add_part(struct queue *q, uint64_t lost, const char *why)
{
	struct part *pt = realloc(q->parts, (q->nparts + 1) * sizeof(*pt));
	if (!pt)
		return -1;
	q->parts = pt;
	if (q->nparts)
		q->parts[q->nparts - 1].end = q->size;
	q->parts[q->nparts++] = (struct part){ q->size, UINT64_MAX, lost, why };
	return 0;
}

static int on_rec(void *arg, const struct pd_rec *r)
{
	struct dpp *p = arg;

	switch (r->type) {
	case PD_RECORD_AUXTRACE_INFO: {
		const struct pd_auxtrace_info_event *ai = r->u.auxtrace_info;
		if (ai->type != PD_AUXTRACE_INTEL_PT)
			break;
		size_t n = (r->size - sizeof(*ai)) / 8;
		p->npriv = n < PD_PT_INFO_WORDS ? n : PD_PT_INFO_WORDS;
		memcpy(p->priv, (const uint8_t *)r->raw + sizeof(*ai), p->npriv * 8);
		p->have_info = true;
		break;
	}
	case PD_RECORD_AUXTRACE: {
		const struct pd_auxtrace_event *a = r->u.auxtrace;
		struct queue *q = queue_of(p, a);
		if (!q)
			return xp_err("decode", "set TMPDIR to a writable directory",
				      "cannot keep the PT trace: %s", strerror(errno));
		if (!q->nparts && add_part(q, 0, NULL) < 0)
			return -1;
		if (q->size && a->offset > q->next_off && add_part(q, a->offset - q->next_off, "AUX data lost") < 0)
			return -1;
		/* perf pads each chunk to 8 bytes and counts the padding in its size; the next
		 * chunk's offset says where the trace really went on: drop the padding, which
		 * could otherwise land inside a packet split across the two chunks */
		if (q->size && a->offset >= q->last_off && a->offset < q->next_off &&
		    q->next_off - a->offset < 8) {
			uint64_t pad = q->next_off - a->offset;
			if (fflush(q->f) != 0 || ftruncate(fileno(q->f), (off_t)(q->size - pad)) < 0 ||
			    fseeko(q->f, (off_t)(q->size - pad), SEEK_SET) < 0)
				return xp_err("decode", NULL, "cannot keep the PT trace: %s", strerror(errno));
			q->size -= pad;
		}
		if (fwrite(r->aux, 1, r->aux_size, q->f) != r->aux_size)
			return xp_err("decode", "free disk space in TMPDIR", "cannot keep the PT trace: %s",
				      strerror(errno));
		q->size += r->aux_size;
		q->last_off = a->offset;
		q->next_off = a->offset + r->aux_size;
		break;
	}
	case PERF_RECORD_AUX:
		/* the kernel dropped trace: what follows in that area is not continuous */
		if (r->u.auxrec.flags & PERF_AUX_FLAG_TRUNCATED) {
			for (size_t i = 0; i < p->nq; i++) {
				struct queue *q = &p->q[i];
				bool mine = q->cpu >= 0 ? r->sid.has_cpu && q->cpu == (int32_t)r->sid.cpu :
					r->sid.has_tid && q->tid == (int32_t)r->sid.tid;
				if (mine && q->size && add_part(q, 0, "AUX area truncated") < 0)
					return -1;
			}
		}
		break;
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2: {
		const struct pd_mmap *m = &r->u.mmap;
		if (r->type == PERF_RECORD_MMAP2 && !(m->prot & PROT_EXEC))
			break;
		if (r->misc & PERF_RECORD_MISC_MMAP_DATA)
			break;
		if (p->nmaps == p->capmaps) {
			size_t cap = p->capmaps ? 2 * p->capmaps : 64;
			struct mapping *mm = realloc(p->maps, cap * sizeof(*mm));
			if (!mm)
				return -1;
			p->maps = mm;
			p->capmaps = cap;
		}
		const struct sb_map *sm = sb_find_map(p->c->sb, (int32_t)m->pid, m->start, r->time);
		p->maps[p->nmaps++] = (struct mapping){ (int32_t)m->pid, m->start, m->len, m->pgoff,
							 r->time, sm ? sm->dso : NULL };
		break;
	}
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_SWITCH: {
		if (!r->sid.has_cpu || !r->sid.has_time)
			break;
		if (p->nsw == p->capsw) {
			size_t cap = p->capsw ? 2 * p->capsw : 256;
			struct sw *s = realloc(p->sws, cap * sizeof(*s));
			if (!s)
				return -1;
			p->sws = s;
			p->capsw = cap;
		}
		/* from this time on the cpu runs: the task switched in, or after a switch out
		 * the next task (cpu-wide records name it) */
		struct sw s = { (int32_t)r->sid.cpu, (int32_t)r->sid.pid, (int32_t)r->sid.tid, r->sid.time };
		if (r->u.sw.out) {
			if (r->type != PERF_RECORD_SWITCH_CPU_WIDE)
				break;
			s.pid = (int32_t)r->u.sw.next_prev_pid;
			s.tid = (int32_t)r->u.sw.next_prev_tid;
		}
		p->sws[p->nsw++] = s;
		break;
	}
	default:
		break;
	}
	return 0;
}

static void who_runs(struct dpp *p, struct swcur *w, int32_t cpu, uint64_t time)
{
	if (time < w->time)	/* a resync went back: start over */
		*w = (struct swcur){ 0, 0, -1, -1 };
	w->time = time;
	for (; w->pos < p->nsw && p->sws[w->pos].time <= time; w->pos++)
		if (p->sws[w->pos].cpu == cpu) {
			w->pid = p->sws[w->pos].pid;
			w->tid = p->sws[w->pos].tid;
		}
}

static size_t fallback(void *ctx, uint64_t addr, uint8_t *buf, size_t n)
{
	struct dpp *p = ctx;
	int32_t pid = p->pid;
	if (p->cur_cpu >= 0) {	/* the address space of whoever runs now */
		who_runs(p, &p->read_w, p->cur_cpu, p->now);
		pid = p->read_w.pid;
	}
	return dpt_mem_read(p->mem, pid, p->now, addr, buf, n);
}

/* Events of a per-cpu queue belong to whichever thread the cpu ran at their time. */
struct cpu_sink {
	struct dpp *p;
	int32_t cpu;
	uint64_t last_time;
	bool known;
};

static int cpu_sink_fn(void *ctx, const struct xev *ev)
{
	struct cpu_sink *s = ctx;
	struct dpp *p = s->p;
	if (!s->known || ev->time != s->last_time) {
		who_runs(p, &p->event_w, s->cpu, ev->time);
		s->last_time = ev->time;
		s->known = true;
	}
	if (p->event_w.tid >= 0 && !dec_thread_selected(p->c, p->event_w.tid, ev->time))
		return 0;
	struct xev e = *ev;
	e.pid = p->event_w.pid;
	e.tid = p->event_w.tid;
	return xev_emit(p->sink, &e);
}

static void options_from_info(const struct dpp *p, struct dpt_options *o)
{
	dpt_options_init(o);
	uint64_t tsc_bit = p->npriv > PD_PT_TSC_BIT ? p->priv[PD_PT_TSC_BIT] : 0;
	if (p->have_info && (p->config & tsc_bit) && p->priv[PD_PT_TIME_MULT]) {
		o->have_time_conv = 1;
		o->time_shift = (uint16_t)p->priv[PD_PT_TIME_SHIFT];
		o->time_mult = (uint32_t)p->priv[PD_PT_TIME_MULT];
		o->time_zero = p->priv[PD_PT_TIME_ZERO];
	}
	if (p->npriv > PD_PT_MAX_NONTURBO_RATIO)
		o->nom_freq = (uint8_t)p->priv[PD_PT_MAX_NONTURBO_RATIO];
	if (p->npriv > PD_PT_TSC_CTC_D) {
		o->cpuid_0x15_eax = (uint32_t)p->priv[PD_PT_TSC_CTC_D];
		o->cpuid_0x15_ebx = (uint32_t)p->priv[PD_PT_TSC_CTC_N];
	}
	if (p->npriv > PD_PT_MTC_FREQ_BITS && p->priv[PD_PT_MTC_FREQ_BITS]) {
		uint64_t bits = p->priv[PD_PT_MTC_FREQ_BITS];
		int shift = __builtin_ctzll(bits);
		o->mtc_freq = (uint8_t)((p->config & bits) >> shift);
	}
}

/* The errata of the cpu in the CPUID feature ("GenuineIntel,6,158,10"). */
static void cpu_from_header(struct dec_ctx *c, struct dpt_options *o)
{
	const char *s = pd_feature_str(c->pd, PD_FEAT_CPUID);
	unsigned fam, model, step = 0;
	if (s && strncmp(s, "GenuineIntel,", 13) == 0 && sscanf(s + 13, "%u,%u,%u", &fam, &model, &step) >= 2) {
		o->cpu.vendor = pcv_intel;
		o->cpu.family = (uint16_t)fam;
		o->cpu.model = (uint8_t)model;
		o->cpu.stepping = (uint8_t)step;
	}
}

static struct dpt_image *image_for(struct dpp *p, int32_t pid)
{
	struct dpt_image *img = dpt_image_new("perf.data");
	if (!img)
		return NULL;
	/* the process's executable mappings as file sections (libipt's fast path), in
	 * record order: a later mapping at the same place replaces an earlier one */
	for (size_t i = 0; pid >= 0 && i < p->nmaps; i++) {
		const struct mapping *m = &p->maps[i];
		if (m->pid != pid || !m->dso || m->dso->anon || m->dso->kernel)
			continue;
		const char *path = sym_dso_file(p->c->sym, m->dso);
		if (path)
			dpt_image_add_file(img, path, m->pgoff, m->len, m->start);
	}
	dpt_image_set_fallback(img, fallback, p);
	return img;
}

static int decode_queue(struct dpp *p, struct queue *q)
{
	if (!q->size)
		return 0;
	fflush(q->f);
	const uint8_t *buf = mmap(NULL, q->size, PROT_READ, MAP_PRIVATE, fileno(q->f), 0);
	if (buf == MAP_FAILED)
		return xp_err("decode", NULL, "cannot map the PT trace: %s", strerror(errno));
	struct dpt_options o;
	options_from_info(p, &o);
	cpu_from_header(p->c, &o);
	o.release_behind = 1;
	o.ignore = dpt_view_ignores(p->c);
	struct cpu_sink cs = { p, q->cpu, 0, false };
	struct xev_sink sink;
	int32_t pid = -1;
	if (q->cpu >= 0) {
		sink = (struct xev_sink){ cpu_sink_fn, &cs, NULL };
		o.cpu_nr = q->cpu;
	} else {
		const struct sb_thread *t = sb_thread(p->c->sb, q->tid);
		pid = t ? t->pid : q->tid;
		if (!dec_thread_selected(p->c, q->tid, 0)) {
			munmap((void *)buf, q->size);
			return 0;
		}
		sink = *p->sink;
		o.pid = pid;
		o.tid = q->tid;
	}
	p->pid = pid;
	p->tid = q->tid;
	p->now = 0;
	o.time_out = &p->now;
	p->cur_cpu = q->cpu;
	p->read_w = p->event_w = (struct swcur){ 0, 0, -1, -1 };
	struct dpt_image *img = image_for(p, pid);
	int ret = img ? 0 : -1;
	for (size_t i = 0; img && i < q->nparts && !ret; i++) {
		const struct part *pt = &q->parts[i];
		uint64_t end = pt->end == UINT64_MAX ? q->size : pt->end;
		if (pt->why) {
			struct xev gap = { .kind = XEV_GAP, .pid = o.pid, .tid = o.tid, .cpu = o.cpu_nr,
					   .cycles = XEV_CYCLES_UNKNOWN, .reason = pt->why, .lost = pt->lost,
					   .offset = pt->start };
			p->gaps++;
			p->lost_bytes += pt->lost;
			ret = xev_emit(&sink, &gap);
			if (ret)
				break;
		}
		struct dpt_stats st;
		o.base_offset = pt->start;
		ret = dpt_decode(buf + pt->start, end - pt->start, img, &o, &sink, &st);
		p->gaps += st.gaps;
		p->lost_bytes += st.lost_bytes;
		p->insns += st.insns;
	}
	dpt_image_free(img);
	munmap((void *)buf, q->size);
	return ret;
}

static int run(struct dec_ctx *c, const struct xev_sink *sink)
{
	struct dpp p = { .c = c, .sink = sink };
	int rc;

	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++)
		if (is_pt_attr(pd_attr_at(c->pd, i)))
			p.config = pd_attr_at(c->pd, i)->attr.config;
	p.mem = dpt_mem_new(c->sb, c->sym);
	if (!p.mem)
		return -1;
	rc = dec_read(c, on_rec, &p);
	if (rc == 0 && !p.have_info)
		xp_warn("%s: no AUXTRACE_INFO record: decoding with default PT settings", c->perf_data);
	for (size_t i = 0; rc == 0 && i < p.nq; i++)
		rc = decode_queue(&p, &p.q[i]);
	if (p.gaps)
		xp_warn("%s: %llu gaps in the PT trace, %llu bytes of trace lost", c->perf_data,
			(unsigned long long)p.gaps, (unsigned long long)p.lost_bytes);
	if (rc == 0 && !p.nq)
		xp_warn("%s: the trace holds no PT data", c->perf_data);
	for (size_t i = 0; i < p.nq; i++) {
		if (p.q[i].f)
			fclose(p.q[i].f);
		free(p.q[i].parts);
	}
	free(p.q);
	free(p.maps);
	free(p.sws);
	dpt_mem_free(p.mem);
	return rc;
}

const struct dec_decoder dec_pt = {
	.name = "pt",
	.default_view = "calltree",
	.accepts = accepts,
	.setup = setup,
	.run = run,
};
