/* Intel PT in perf.data (perf's own `-e intel_pt//` files, xptrace's pt and step modes).
 *
 * Pass 1 reads the records in time order: the session takes the sideband, this keeps
 * the AUXTRACE_INFO configuration, the executable mappings of each process, the
 * context switches of each cpu, and appends every AUXTRACE chunk to its queue (one per
 * thread, or per cpu) in an unlinked temporary file, so memory does not grow with the
 * trace.  AUX data that was lost (a jump in the chunk offsets, a truncated AUX record)
 * splits a queue into parts with a gap between them.
 * Pass 2 decodes the queues with one pt_image per address space: file sections for the
 * process's mappings (snapshot files by build-id), and for anything else the session's
 * mapping at the decode time.  Per-cpu queues get their thread from the switch records
 * at the decode time.  With timestamps, all queues are decoded together in time order
 * as perf does (its auxtrace heap): each keeps its decoder open, and the one whose next
 * event is earliest runs until its time passes the next earliest queue's.  So each
 * queue's decode state (thread attribution, time, memory lookups) is its own (struct
 * qdec).  Without timestamps the queues have no order between them: one after the
 * other. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "decode/dec_par.h"
#include "decode/decoder.h"
#include "decoders/pt/dpt.h"
#include "decoders/pt/dpt_plug.h"
#include "session/sb_code.h"
#include "util/xp_err.h"
#include "util/xp_status.h"
#include "util/xp_grow.h"

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
	struct sb_code *mem;
	uint64_t gaps, lost_bytes, insns;
	struct qdec *qd;	/* pass 2: every queue's decoder, for the progress line */
	/* pass 2: bytes of each queue decoded, about (the progress line; apart from the
	 * queues' decoders, which pieces copy while it moves) */
	uint64_t *pos;
	uint64_t total;		/* pass 2: bytes of PT in all queues */
};

#define QIMAGES 8

/* Pass 2 state of one queue: all queues of a timed trace are open at once. */
struct qdec {
	struct dpp *p;
	struct queue *q;
	const uint8_t *buf;	/* the queue's file, mapped */
	struct dpt_image *img;
	struct dpt_options o;
	struct xev_sink sink;
	const struct xev_sink *out;	/* where a per-cpu queue's events go */
	struct dec_par *par;	/* a piece of a parallel decode: the session is shared */
	struct dpt_dec *dec;	/* the part being decoded, NULL between parts */
	/* what the queue's decodes counted (added to the dpp's at the end: with -j a
	 * queue may decode on a thread of its own) */
	uint64_t gaps, lost_bytes, insns;
	size_t next_part;
	bool done;
	int32_t pid;		/* per-thread queue's process, -1 per-cpu */
	uint64_t now;		/* time of the latest event: mappings are looked up then */
	struct swcur read_w, event_w;	/* who runs on a per-cpu queue: for code reads, events */
	uint64_t last_time;	/* of the latest event attributed (event_w is valid) */
	bool known;
	/* per-cpu queue: the images of the processes it ran lately (img is the one in
	 * use), most recent first */
	struct { int32_t pid; struct dpt_image *img; } imgs[QIMAGES];
	unsigned nimgs;
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

/* intel_pt's sysfs format (the same on every part): cyc = config:1, tsc = config:10 */
#define PT_CONFIG_CYC (1ull << 1)
#define PT_CONFIG_TSC (1ull << 10)

/* A PT trace written by software: xptrace's step mode.  Its command line says so, or
 * `xptrace record` chose it (--mode auto) on a machine with no Intel PT: a CPU not
 * made by Intel. */
static bool step_mode(const struct dec_ctx *c)
{
	const char *cmd = pd_feature_str(c->pd, PD_FEAT_CMDLINE);
	const char *cpu = pd_feature_str(c->pd, PD_FEAT_CPUID);

	if (!cmd || !strstr(cmd, "xptrace record"))
		return false;
	if (strstr(cmd, "--mode step") || strstr(cmd, "--mode=step"))
		return true;
	return !strstr(cmd, "--mode") && cpu && *cpu && strncmp(cpu, "GenuineIntel", 12) != 0;
}

static int setup(struct dec_ctx *c)
{
	uint64_t config = 0;

	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++)
		if (is_pt_attr(pd_attr_at(c->pd, i)))
			config |= pd_attr_at(c->pd, i)->attr.config;
	/* ptrace stops between the branches: the times are the traced run's */
	c->traced_time = step_mode(c);
	return dpt_setup_metrics(c, config & PT_CONFIG_TSC ? "time" : NULL, config & PT_CONFIG_CYC);
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
		return -ENOMEM;
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
			return -ENOMEM;
		if (q->size && a->offset > q->next_off && add_part(q, a->offset - q->next_off, "AUX data lost") < 0)
			return -ENOMEM;
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
					return -ENOMEM;
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
		if (XP_GROW(p->maps, p->capmaps, p->nmaps + 1) < 0)
			return -ENOMEM;
		const struct sb_map *sm = sb_find_map(p->c->sb, (int32_t)m->pid, m->start, r->time);
		p->maps[p->nmaps++] = (struct mapping){ (int32_t)m->pid, m->start, m->len, m->pgoff,
							 r->time, sm ? sm->dso : NULL };
		break;
	}
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_SWITCH: {
		if (!r->sid.has_cpu || !r->sid.has_time)
			break;
		if (XP_GROW(p->sws, p->capsw, p->nsw + 1) < 0)
			return -ENOMEM;
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

static void who_runs(const struct dpp *p, struct swcur *w, int32_t cpu, uint64_t time)
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
	struct qdec *d = ctx;
	int32_t pid = d->pid;
	if (d->q->cpu >= 0) {	/* the address space of whoever runs now */
		who_runs(d->p, &d->read_w, d->q->cpu, d->now);
		pid = d->read_w.pid;
	}
	if (d->par)
		d->par->lock(d->par);
	size_t got = sb_code_read(d->p->mem, pid, d->now, addr, buf, n);
	if (d->par)
		d->par->unlock(d->par);
	return got;
}

static struct dpt_image *image_for(struct qdec *d, int32_t pid);

/* The code a per-cpu queue runs at `time` is the running process's (dpt_options'
 * space_at): its image, with its mappings as file sections, is the decoder's from
 * then on, and the decoder's cached decodings of instructions are kept per process.
 * The last QIMAGES images are kept: processes take turns on a cpu. */
static uint64_t space_at(void *ctx, uint64_t time, struct dpt_image **img)
{
	struct qdec *d = ctx;
	who_runs(d->p, &d->read_w, d->q->cpu, time);
	int32_t pid = d->read_w.pid;
	if (d->nimgs && d->imgs[0].pid == pid)
		return (uint32_t)pid;
	unsigned i = 1;
	while (i < d->nimgs && d->imgs[i].pid != pid)
		i++;
	typeof(d->imgs[0]) e = { pid, NULL };
	if (i < d->nimgs) {
		e = d->imgs[i];
	} else {
		if (d->par)
			d->par->lock(d->par);
		e.img = image_for(d, pid);
		if (d->par)
			d->par->unlock(d->par);
		if (!e.img)	/* out of memory: the image in use reads through the fallback */
			return (uint32_t)pid;
		if (d->nimgs == QIMAGES)
			dpt_image_free(d->imgs[--d->nimgs].img);	/* never imgs[0], in use */
		i = d->nimgs++;
	}
	memmove(&d->imgs[1], &d->imgs[0], i * sizeof(d->imgs[0]));
	d->imgs[0] = e;
	d->img = *img = e.img;
	return (uint32_t)pid;
}

/* Events of a per-cpu queue belong to whichever thread the cpu ran at their time. */
static int cpu_sink_fn(void *ctx, const struct xev *ev)
{
	struct qdec *d = ctx;
	struct dpp *p = d->p;
	if (!d->known || ev->time != d->last_time) {
		who_runs(p, &d->event_w, d->q->cpu, ev->time);
		d->last_time = ev->time;
		d->known = true;
	}
	if (d->event_w.tid >= 0 && !dec_thread_selected(p->c, d->event_w.tid, ev->time))
		return 0;
	struct xev e = *ev;
	e.pid = d->event_w.pid;
	e.tid = d->event_w.tid;
	return xev_emit(d->out, &e);
}

/* The PT config has the TSC bit: the trace has timestamps. */
static bool tsc_on(const struct dpp *p)
{
	uint64_t tsc_bit = p->npriv > PD_PT_TSC_BIT ? p->priv[PD_PT_TSC_BIT] : 0;
	return p->have_info && (p->config & tsc_bit);
}

/* A word of AUXTRACE_INFO that must fit the field it goes to: a file can claim any
 * value, and a shift of 64 or more is undefined in C (perf's tsc_to_perf_time). */
static int info_word_fits(const struct dpp *p, const char *name, uint64_t v, uint64_t max)
{
	if (v <= max)
		return 0;
	return xp_err_code(-EINVAL, p->c->perf_data, "the file is damaged",
			   "AUXTRACE_INFO %s %llu is out of range (at most %llu)", name, (unsigned long long)v,
			   (unsigned long long)max);
}

static int options_from_info(const struct dpp *p, struct dpt_options *o)
{
	dpt_options_init(o);
	if (tsc_on(p) && p->priv[PD_PT_TIME_MULT]) {
		if (info_word_fits(p, "time_shift", p->priv[PD_PT_TIME_SHIFT], 63) ||
		    info_word_fits(p, "time_mult", p->priv[PD_PT_TIME_MULT], UINT32_MAX))
			return -EINVAL;
		o->have_time_conv = 1;
		o->time_shift = (uint16_t)p->priv[PD_PT_TIME_SHIFT];
		o->time_mult = (uint32_t)p->priv[PD_PT_TIME_MULT];
		o->time_zero = p->priv[PD_PT_TIME_ZERO];
	}
	if (p->npriv > PD_PT_MAX_NONTURBO_RATIO) {
		if (info_word_fits(p, "max_nonturbo_ratio", p->priv[PD_PT_MAX_NONTURBO_RATIO], UINT8_MAX))
			return -EINVAL;
		o->nom_freq = (uint8_t)p->priv[PD_PT_MAX_NONTURBO_RATIO];
	}
	if (p->npriv > PD_PT_TSC_CTC_D) {
		if (info_word_fits(p, "tsc_ctc_ratio_d", p->priv[PD_PT_TSC_CTC_D], UINT32_MAX) ||
		    info_word_fits(p, "tsc_ctc_ratio_n", p->priv[PD_PT_TSC_CTC_N], UINT32_MAX))
			return -EINVAL;
		o->cpuid_0x15_eax = (uint32_t)p->priv[PD_PT_TSC_CTC_D];
		o->cpuid_0x15_ebx = (uint32_t)p->priv[PD_PT_TSC_CTC_N];
	}
	if (p->npriv > PD_PT_MTC_FREQ_BITS && p->priv[PD_PT_MTC_FREQ_BITS]) {
		uint64_t bits = p->priv[PD_PT_MTC_FREQ_BITS];
		int shift = __builtin_ctzll(bits);
		/* MTCFreq is a 4-bit field of RTIT_CTL */
		if (info_word_fits(p, "mtc_freq", (p->config & bits) >> shift, 15))
			return -EINVAL;
		o->mtc_freq = (uint8_t)((p->config & bits) >> shift);
	}
	return 0;
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

static struct dpt_image *image_for(struct qdec *d, int32_t pid)
{
	struct dpp *p = d->p;
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
	dpt_image_set_fallback(img, fallback, d);
	return img;
}

/* The live status (on only when the command turned it on, on a terminal): how much
 * of the PT data of all queues was decoded. */
static void show_progress(struct dpp *p)
{
	uint64_t done = 0;

	if (!xp_status_due() || !p->total)
		return;
	for (size_t i = 0; i < p->nq; i++)	/* (a queue's own thread may be moving it) */
		done += __atomic_load_n(&p->qd[i].done, __ATOMIC_RELAXED) ? p->q[i].size :
			__atomic_load_n(&p->pos[i], __ATOMIC_RELAXED);
	xp_status_show("decode: %.0f%% of %.1f MB of Intel PT, %.1f s", 100.0 * (double)done / (double)p->total,
		       (double)p->total / 1e6, xp_status_elapsed());
}

static void qdec_progress(void *ctx, const uint8_t *at)
{
	struct qdec *d = ctx;

	d->p->pos[d->q - d->p->q] = (uint64_t)(at - d->buf);
	show_progress(d->p);
}

/* The same on a queue's own thread (decode_streams): the decode's thread shows it. */
static void qdec_progress_quiet(void *ctx, const uint8_t *at)
{
	struct qdec *d = ctx;

	__atomic_store_n(&d->p->pos[d->q - d->p->q], (uint64_t)(at - d->buf), __ATOMIC_RELAXED);
}

/* Maps the queue and sets its decoding up from the trace's options `base`; a queue
 * with nothing to decode (empty, or a thread not selected) is done at once. */
static int qdec_open(struct dpp *p, struct queue *q, const struct dpt_options *base, struct qdec *d)
{
	*d = (struct qdec){ .p = p, .q = q, .pid = -1, .done = true, .out = p->sink };
	d->read_w = d->event_w = (struct swcur){ 0, 0, -1, -1 };
	if (!q->size)
		return 0;
	if (q->cpu >= 0) {
		d->sink = (struct xev_sink){ cpu_sink_fn, d, NULL };
	} else {
		const struct sb_thread *t = sb_thread(p->c->sb, q->tid);
		if (!dec_thread_selected(p->c, q->tid, 0))
			return 0;
		d->pid = t ? t->pid : q->tid;
		d->sink = *p->sink;
	}
	fflush(q->f);
	d->buf = mmap(NULL, q->size, PROT_READ, MAP_PRIVATE, fileno(q->f), 0);
	if (d->buf == MAP_FAILED) {
		d->buf = NULL;
		return xp_err("decode", NULL, "cannot map the PT trace: %s", strerror(errno));
	}
	d->o = *base;
	d->o.cpu_nr = q->cpu;
	d->o.pid = d->pid;
	d->o.tid = q->cpu >= 0 ? -1 : q->tid;
	d->o.time_out = &d->now;
	d->o.progress = qdec_progress;
	d->o.progress_ctx = d;
	if (q->cpu >= 0) {
		d->o.space_at = space_at;
		d->o.space_ctx = d;
	}
	d->img = image_for(d, d->pid);
	if (!d->img)
		return xp_err("decode", NULL, "out of memory");
	d->imgs[0].pid = d->pid;
	d->imgs[0].img = d->img;
	d->nimgs = 1;
	d->done = false;
	return 0;
}

/* Ends the decoder of the current part, its counts going to the totals. */
static void qdec_end_part(struct qdec *d)
{
	const struct dpt_stats *st = dpt_dec_stats(d->dec);
	d->gaps += st->gaps;
	d->lost_bytes += st->lost_bytes;
	d->insns += st->insns;
	dpt_close(d->dec);
	d->dec = NULL;
}

static void qdec_close(struct qdec *d)
{
	if (d->dec)
		qdec_end_part(d);
	for (unsigned i = 0; i < d->nimgs; i++)
		dpt_image_free(d->imgs[i].img);
	d->nimgs = 0;
	d->img = NULL;
	if (d->buf)
		munmap((void *)d->buf, d->q->size);
	d->buf = NULL;
	__atomic_store_n(&d->done, true, __ATOMIC_RELAXED);
}

/* Time of the queue's next event: where it paused, or before it starts a part, the
 * latest time it reached (the part's gap is emitted at that time). */
static uint64_t qdec_time(const struct qdec *d)
{
	return d->done ? UINT64_MAX : d->dec ? dpt_time(d->dec) : d->now;
}

/* Decodes the queue's parts until its next event is later than `limit`. */
static int qdec_run(struct qdec *d, uint64_t limit)
{
	struct queue *q = d->q;
	for (;;) {
		if (!d->dec) {
			if (d->next_part == q->nparts) {
				qdec_close(d);
				return 0;
			}
			const struct part *pt = &q->parts[d->next_part++];
			uint64_t end = pt->end == UINT64_MAX ? q->size : pt->end;
			if (pt->why) {
				struct xev gap = { .kind = XEV_GAP, .pid = d->o.pid, .tid = d->o.tid,
						   .cpu = d->o.cpu_nr, .time = d->now,
						   .cycles = XEV_CYCLES_UNKNOWN, .reason = pt->why,
						   .lost = pt->lost, .offset = pt->start };
				d->gaps++;
				d->lost_bytes += pt->lost;
				int r = xev_emit(&d->sink, &gap);
				if (r)
					return r;
			}
			d->o.base_offset = pt->start;
			int r = dpt_open(&d->dec, d->buf + pt->start, end - pt->start, d->img, &d->o);
			if (r < 0) {
				d->dec = NULL;
				return xp_err("decode", NULL, "cannot start the PT decoder: %s", strerror(-r));
			}
		}
		int r = dpt_run(d->dec, &d->sink, limit);
		if (r)
			return r;
		if (dpt_time(d->dec) != UINT64_MAX)
			return 0;	/* paused at the limit */
		qdec_end_part(d);
	}
}

/* ---- -j (decode/dec_par.h): the queues one after the other (a trace without
 * timestamps, or with one queue: the order one thread decodes them in), each part of
 * each queue cut into pieces between PSBs ---- */

struct qpiece {
	size_t q, part, split, k;	/* queue, part, its dpt_split, piece of that */
};

struct ppar {
	struct dpp *p;
	struct qdec *qd;	/* the queues, opened: what a piece starts from */
	struct dpt_split *splits;	/* one per part of each queue */
	size_t *first;		/* per split: its first piece */
	size_t nsplits;
	struct qpiece *pc;
	size_t npc;
	struct dpt_stats *st;	/* per piece */
	/* per piece: the bytes of its queue it decoded (with those of the pieces it
	 * decoded through), counted on the decode's thread once its events went out: the
	 * progress line (workers never touch it) */
	uint64_t *bytes;
};

#define PIECE_MIN (256u << 10)
/* and no larger than this: a running piece keeps up to about its size of the trace
 * mapped (decode release_behind), so memory stays N times this whatever the trace */
#define PIECE_MAX (2u << 20)

static int qpiece_run(void *arg, unsigned w, size_t i, const struct xev_sink *sink, size_t *next)
{
	struct ppar *pp = arg;
	const struct qpiece *pc = &pp->pc[i];
	struct dec_par *par = pp->p->c->par;
	struct qdec d = pp->qd[pc->q];	/* the queue's setup; state of its own */
	const struct part *pt = &d.q->parts[pc->part];
	const struct dpt_split *s = &pp->splits[pc->split];
	uint64_t end = pt->end == UINT64_MAX ? d.q->size : pt->end;
	int r = 0;

	(void)w;
	d.read_w = d.event_w = (struct swcur){ 0, 0, -1, -1 };
	d.known = false;
	d.now = 0;
	d.dec = NULL;
	d.par = par;
	d.out = sink;
	d.sink = d.q->cpu >= 0 ? (struct xev_sink){ cpu_sink_fn, &d, NULL } : *sink;
	par->lock(par);
	d.img = image_for(&d, d.pid);
	par->unlock(par);
	if (!d.img)
		return xp_err("decode", NULL, "out of memory");
	d.imgs[0].pid = d.pid;
	d.imgs[0].img = d.img;
	d.nimgs = 1;
	struct dpt_options o = d.o;
	o.progress = NULL;
	uint64_t off = dpt_split_piece(s, pc->k, &o);
	o.base_offset = pt->start + off;
	o.time_out = &d.now;
	if (d.q->cpu >= 0)
		o.space_ctx = &d;
	struct dpt_stats gap = { 0 };
	if (pc->k == 0 && pt->why) {	/* (no timestamps: a part's gap is at time 0) */
		struct xev ev = { .kind = XEV_GAP, .pid = o.pid, .tid = o.tid, .cpu = o.cpu_nr,
				  .cycles = XEV_CYCLES_UNKNOWN, .reason = pt->why, .lost = pt->lost,
				  .offset = pt->start };
		gap.gaps = 1;
		gap.lost_bytes = pt->lost;
		r = xev_emit(&d.sink, &ev);
	}
	if (!r)
		r = dpt_decode(d.buf + pt->start + off, end - pt->start - off, d.img, &o, &d.sink, &pp->st[i]);
	pp->st[i].gaps += gap.gaps;
	pp->st[i].lost_bytes += gap.lost_bytes;
	size_t nk = dpt_split_next(s, pc->k, &pp->st[i]);
	*next = pp->first[pc->split] + nk;
	uint64_t to = nk < s->npieces ? s->psbs[s->start[nk]] : end - pt->start;
	pp->bytes[i] = to - off;
	dpt_split_release(d.buf + pt->start, off, to);
	for (unsigned k = 0; k < d.nimgs; k++)
		dpt_image_free(d.imgs[k].img);
	return r;
}

static void qpiece_done(void *arg, size_t i)
{
	struct ppar *pp = arg;
	pp->p->gaps += pp->st[i].gaps;
	pp->p->lost_bytes += pp->st[i].lost_bytes;
	pp->p->insns += pp->st[i].insns;
	pp->p->pos[pp->pc[i].q] += pp->bytes[i];
	show_progress(pp->p);
}

/* *ran false: not a trace for pieces (several queues in time order, a thread name to
 * look up per event) or not worth it; the caller decodes on this thread. */
static int decode_par(struct dpp *p, struct qdec *qd, bool timed, bool *ran)
{
	struct dec_par *par = p->c->par;
	struct ppar pp = { .p = p, .qd = qd };
	size_t nopen = 0, nparts = 0;
	uint64_t size = p->total / (8 * (uint64_t)par->jobs);
	int rc = 0;

	*ran = false;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			nopen++;
			nparts += p->q[i].nparts;
			/* a part's gap takes the time the one before ended at */
			if (timed && p->q[i].nparts > 1)
				return 0;
		}
	if (size < PIECE_MIN)
		size = PIECE_MIN;
	if (size > PIECE_MAX)
		size = PIECE_MAX;
	if (par->piece_size)
		size = par->piece_size;
	if ((timed && nopen > 1) || p->c->opts->comm || p->total < 2 * size)
		return 0;
	pp.splits = calloc(nparts ? nparts : 1, sizeof(*pp.splits));
	pp.first = calloc(nparts ? nparts : 1, sizeof(*pp.first));
	if (!pp.splits || !pp.first)
		goto nomem;
	for (size_t i = 0; i < p->nq; i++) {
		const struct qdec *d = &qd[i];
		for (size_t j = 0; !d->done && j < p->q[i].nparts; j++) {
			const struct part *pt = &p->q[i].parts[j];
			uint64_t end = pt->end == UINT64_MAX ? p->q[i].size : pt->end;
			const uint8_t *b = d->buf + pt->start;
			struct dpt_split *s = &pp.splits[pp.nsplits];
			/* a decode counting cycles cannot end a piece early: one piece */
			if ((rc = dpt_split(b, end - pt->start, dpt_counts_cycles(b, end - pt->start, &d->o) ?
					    UINT64_MAX : size, true, s)) < 0)
				goto nomem;
			pp.first[pp.nsplits++] = pp.npc;
			struct qpiece *pc = realloc(pp.pc, (pp.npc + s->npieces) * sizeof(*pc));
			if (!pc)
				goto nomem;
			pp.pc = pc;
			for (size_t k = 0; k < s->npieces; k++)
				pp.pc[pp.npc++] = (struct qpiece){ i, j, pp.nsplits - 1, k };
		}
	}
	if (pp.npc < 2)
		goto out;
	pp.st = calloc(pp.npc, sizeof(*pp.st));
	pp.bytes = calloc(pp.npc, sizeof(*pp.bytes));
	if (!pp.st || !pp.bytes)
		goto nomem;
	*ran = true;
	rc = par->run(par, pp.npc, qpiece_run, qpiece_done, &pp, p->sink);
	goto out;
nomem:
	rc = xp_err("decode", NULL, "out of memory");
out:
	for (size_t i = 0; i < pp.nsplits; i++)
		dpt_split_free(&pp.splits[i]);
	free(pp.splits);
	free(pp.first);
	free(pp.pc);
	free(pp.st);
	free(pp.bytes);
	return rc;
}

/* ---- -j on a trace with timestamps in several queues (per-cpu): each queue decodes
 * on a thread of its own, pausing wherever its time moves on (XEV_ST_TIME says to
 * what), and this thread interleaves them exactly as decode_queues' loop does: the
 * queue with the lowest time runs until its time passes the next lowest.  The stream
 * is then the one -j1 gives, as long as where a decode pauses changes nothing in it
 * (not with split_at_pause).  More queues than this decode on one thread: */
#define STREAMS_MAX 256

struct qstreams {
	struct dpp *p;
	size_t *idx;		/* stream -> queue */
};

static int qstream_run(void *arg, size_t i, const struct xev_sink *sink)
{
	struct qstreams *qs = arg;
	struct qdec *d = &qs->p->qd[qs->idx[i]];

	if (d->q->cpu >= 0)
		d->out = sink;
	else
		d->sink = *sink;
	for (;;) {
		uint64_t t = qdec_time(d);
		if (t == UINT64_MAX)
			return 0;
		int r = qdec_run(d, t);
		if (r)
			return r;
		uint64_t nt = qdec_time(d);
		if (nt == UINT64_MAX)
			return 0;
		struct xev mark = { .kind = XEV_STITCH, .sub = XEV_ST_TIME, .time = nt };
		if ((r = xev_emit(sink, &mark)))
			return r;
	}
}

/* Events of stream `i` up to the first time mark past `limit`: *time is then that
 * mark's (UINT64_MAX at the stream's end). */
static int stream_turn(struct dpp *p, struct dec_streams *s, size_t i, uint64_t limit, uint64_t *time)
{
	struct dec_par *par = p->c->par;
	for (;;) {
		const struct xev *ev;
		int rc = 0;
		size_t n = par->streams_get(s, i, &ev, &rc);
		if (!n) {
			*time = UINT64_MAX;
			return rc;
		}
		size_t k = 0;
		while (k < n && !(ev[k].kind == XEV_STITCH && ev[k].sub == XEV_ST_TIME))
			k++;
		if (k) {
			par->lock(par);	/* the view takes them while no producer reads the session */
			rc = xev_emit_batch(p->sink, ev, k);
			par->unlock(par);
			par->streams_take(s, i, k);
			if (rc)
				return rc;
		}
		if (k < n) {
			*time = ev[k].time;
			par->streams_take(s, i, 1);
			if (*time > limit)
				return 0;
		}
	}
}

/* *ran false: not such a trace (or a view wanting the instructions' exact order);
 * the caller decodes on this thread. */
static int decode_streams(struct dpp *p, struct qdec *qd, bool *ran)
{
	struct dec_par *par = p->c->par;
	struct qstreams qs = { .p = p };
	struct dec_streams *s = NULL;
	uint64_t *cur = NULL;
	size_t n = 0;
	int rc = 0;

	*ran = false;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			n++;
			if (p->q[i].nparts > 1)	/* a part's gap takes the time the one before ended at */
				return 0;
			if (dpt_counts_cycles(qd[i].buf, p->q[i].size, &qd[i].o))	/* a pause per CYC */
				return 0;
		}
	/* the view takes every event on this thread: it needs a core of its own, the
	 * queues at least two more (on 2 cores, 3 threads were slower than one: measured) */
	if (n < 2 || n > STREAMS_MAX || par->jobs < 3 || (p->c->wants & DEC_WANT_FINE_ORDER) ||
	    p->c->opts->comm)
		return 0;
	qs.idx = calloc(n, sizeof(*qs.idx));
	cur = calloc(n, sizeof(*cur));
	if (!qs.idx || !cur) {
		rc = xp_err("decode", NULL, "out of memory");
		goto out;
	}
	n = 0;
	for (size_t i = 0; i < p->nq; i++)
		if (!qd[i].done) {
			qd[i].par = par;	/* code reads lock the session */
			qd[i].o.progress = qdec_progress_quiet;
			qs.idx[n++] = i;
		}
	if ((rc = par->streams_open(par, n, qstream_run, &qs, &s)) < 0)
		goto out;
	*ran = true;
	while (!rc) {
		size_t best = SIZE_MAX;
		uint64_t t0 = UINT64_MAX, t1 = UINT64_MAX;
		for (size_t i = 0; i < n; i++) {
			if (cur[i] == UINT64_MAX)
				continue;
			if (best == SIZE_MAX || cur[i] < t0) {
				t1 = t0;
				t0 = cur[i];
				best = i;
			} else if (cur[i] < t1) {
				t1 = cur[i];
			}
		}
		if (best == SIZE_MAX)
			break;
		rc = stream_turn(p, s, best, t1, &cur[best]);
		show_progress(p);
	}
	par->streams_close(s);
out:
	free(qs.idx);
	free(cur);
	return rc;
}

/* Like perf's auxtrace heap: the queue whose next event is earliest decodes until its
 * time passes the next earliest queue's, so events come out in global time order
 * (ties: the first queue).  Without timestamps there
 * is no order between queues: each decodes to its end in turn. */
static int decode_queues(struct dpp *p, bool timed)
{
	struct qdec *d = calloc(p->nq ? p->nq : 1, sizeof(*d));
	p->pos = calloc(p->nq ? p->nq : 1, sizeof(*p->pos));
	if (!d || !p->pos) {
		free(d);
		free(p->pos);
		return xp_err("decode", NULL, "out of memory");
	}
	struct dpt_options base;
	int rc = options_from_info(p, &base);
	if (rc) {
		free(d);
		free(p->pos);
		return rc;
	}
	cpu_from_header(p->c, &base);
	base.release_behind = 1;
	base.ignore = ~p->c->wants & DEC_WANT_ALL;
	/* the instruction listing shows the order across queues; tallies keep blocks whole */
	base.split_at_pause = (p->c->wants & DEC_WANT_FINE_ORDER) != 0;
	p->qd = d;
	for (size_t i = 0; i < p->nq; i++)
		p->total += p->q[i].size;
	for (size_t i = 0; i < p->nq && !rc; i++)
		rc = qdec_open(p, &p->q[i], &base, &d[i]);
	bool ran = false;
	if (!rc && p->c->par && p->c->par->jobs > 1)
		rc = decode_par(p, d, timed, &ran);
	if (!rc && !ran && timed && p->c->par && p->c->par->jobs > 1)
		rc = decode_streams(p, d, &ran);
	while (!rc && !ran) {
		size_t best = SIZE_MAX;
		uint64_t t0 = UINT64_MAX, t1 = UINT64_MAX;
		for (size_t i = 0; i < p->nq; i++) {
			uint64_t t = qdec_time(&d[i]);
			if (t == UINT64_MAX)
				continue;
			if (best == SIZE_MAX || t < t0) {
				t1 = t0;
				t0 = t;
				best = i;
			} else if (t < t1) {
				t1 = t;
			}
		}
		if (best == SIZE_MAX)
			break;
		rc = qdec_run(&d[best], timed ? t1 : UINT64_MAX);
	}
	for (size_t i = 0; i < p->nq; i++) {
		if (d[i].p)
			qdec_close(&d[i]);
		p->gaps += d[i].gaps;
		p->lost_bytes += d[i].lost_bytes;
		p->insns += d[i].insns;
	}
	free(d);
	free(p->pos);
	return rc;
}

static int run(struct dec_ctx *c, const struct xev_sink *sink)
{
	struct dpp p = { .c = c, .sink = sink };
	int rc;

	for (uint32_t i = 0; i < pd_nattrs(c->pd); i++)
		if (is_pt_attr(pd_attr_at(c->pd, i)))
			p.config = pd_attr_at(c->pd, i)->attr.config;
	p.mem = sb_code_new(c->sb, c->sym, c->jit);
	if (!p.mem)
		return -ENOMEM;
	rc = dec_read(c, on_rec, &p);
	if (rc == 0 && !p.have_info)
		xp_warn("%s: no AUXTRACE_INFO record: decoding with default PT settings", c->perf_data);
	if (rc == 0)
		rc = decode_queues(&p, tsc_on(&p));
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
	sb_code_free(p.mem);
	return rc;
}

const struct dec_decoder dec_pt = {
	.name = "pt",
	.default_view = "functions",
	.accepts = accepts,
	.setup = setup,
	.run = run,
};
