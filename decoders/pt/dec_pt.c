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

#include "decoders/pt/dec_pt_int.h"
#include "decoders/pt/dpt_plug.h"
#include "session/sb_code.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

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
 * made by Intel.  A recording killed before its end has no command line: its
 * AUXTRACE_INFO says step mode, whose TSC packets hold the perf clock itself (time
 * conversion 1:1 from 0) and which has no CPU ratios, as no hardware clock does. */
static bool step_mode(const struct dec_ctx *c)
{
	const char *cmd = pd_feature_str(c->pd, PD_FEAT_CMDLINE);
	const char *cpu = pd_feature_str(c->pd, PD_FEAT_CPUID);
	const uint64_t *w;

	if (!pd_finalized(c->pd) && pd_pt_info(c->pd, &w) > PD_PT_MAX_NONTURBO_RATIO)
		return w[PD_PT_TIME_SHIFT] == 0 && w[PD_PT_TIME_MULT] == 1 && w[PD_PT_TIME_ZERO] == 0 &&
		       w[PD_PT_TSC_CTC_N] == 0 && w[PD_PT_TSC_CTC_D] == 0 && w[PD_PT_MAX_NONTURBO_RATIO] == 0;
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
	case PERF_RECORD_COMM:
		if (!(r->misc & PERF_RECORD_MISC_COMM_EXEC) || !r->time)
			break;
		if (XP_GROW(p->execs, p->capexecs, p->nexecs + 1) < 0)
			return -ENOMEM;
		p->execs[p->nexecs].pid = (int32_t)r->u.comm.pid;
		p->execs[p->nexecs++].time = r->time;
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
	if ((rc = dpt_plug_decoder(p->c, &base.libipt_only)) < 0) {
		free(d);
		return rc;
	}
	base.release_behind = 1;
	base.ignore = ~p->c->wants & DEC_WANT_ALL;
	/* the instruction listing shows the order across queues; tallies keep blocks whole */
	base.split_at_pause = (p->c->wants & DEC_WANT_FINE_ORDER) != 0;
	p->qd = d;
	for (size_t i = 0; i < p->nq; i++)
		p->total += p->q[i].size;
	for (size_t i = 0; i < p->nq && !rc; i++)
		rc = dec_pt_qopen(p, &p->q[i], &base, &d[i]);
	bool ran = false, ordered = (p->c->wants & DEC_WANT_FINE_ORDER) != 0;
	for (size_t i = 0; i < p->nq && ordered && !rc; i++)	/* (dpt_walkable, dpt.h) */
		ordered = !d[i].buf || dpt_walkable(d[i].buf, p->q[i].size < (1u << 20) ? p->q[i].size : (1u << 20),
						    &d[i].o);
	if (!rc && p->c->par && p->c->par->jobs > 1 && !ordered)
		rc = dec_pt_pieces(p, d, timed, &ran);
	if (!rc && !ran && timed && p->c->par && p->c->par->jobs > 1)
		rc = dec_pt_streams(p, d, &ran);
	while (!rc && !ran) {
		size_t best = SIZE_MAX;
		uint64_t t0 = UINT64_MAX, t1 = UINT64_MAX;
		for (size_t i = 0; i < p->nq; i++) {
			uint64_t t = dec_pt_qtime(&d[i]);
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
		rc = dec_pt_qrun(&d[best], timed ? t1 : UINT64_MAX);
	}
	for (size_t i = 0; i < p->nq; i++) {
		if (d[i].p)
			dec_pt_qclose(&d[i]);
		p->gaps += d[i].gaps;
		p->nocode += d[i].nocode;
		p->nocode_bytes += d[i].nocode_bytes;
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
	/* code missing is not trace damaged: the warnings on module files say which; the
	 * [uprobes] page has no file to warn about */
	if (p.nocode && p.xol_at)
		xp_warn("%s: %llu gaps where the code that ran was not available (%sthe kernel's "
			"[uprobes] page at %#llx: the out-of-line slots and return trampoline of "
			"another tool's uprobes, code no file holds; not damage in the PT trace), "
			"%llu bytes of trace skipped", c->perf_data, (unsigned long long)p.nocode,
			p.nocode_other ? "a module without a usable file, see above, and " : "",
			(unsigned long long)p.xol_at, (unsigned long long)p.nocode_bytes);
	else if (p.nocode)
		xp_warn("%s: %llu gaps where the code that ran was not available (a module without a "
			"usable file, see above; not damage in the PT trace), %llu bytes of trace "
			"skipped", c->perf_data, (unsigned long long)p.nocode,
			(unsigned long long)p.nocode_bytes);
	if (p.gaps > p.nocode)
		xp_warn("%s: %llu gaps in the PT trace, %llu bytes of trace lost", c->perf_data,
			(unsigned long long)(p.gaps - p.nocode),
			(unsigned long long)(p.lost_bytes - p.nocode_bytes));
	if (rc == 0 && !p.nq)
		xp_warn("%s: the trace holds no PT data", c->perf_data);
	for (size_t i = 0; i < p.nq; i++) {
		if (p.q[i].f)
			fclose(p.q[i].f);
		free(p.q[i].parts);
	}
	free(p.q);
	free(p.maps);
	free(p.execs);
	free(p.sws);
	sb_code_free(p.mem);
	return rc;
}

static const struct dec_option options[] = {
	DPT_PLUG_DECODER_OPTION,
	{ NULL, NULL, NULL },
};

const struct dec_decoder dec_pt = {
	.name = "pt",
	.default_view = "functions",
	.options = options,
	.accepts = accepts,
	.setup = setup,
	.run = run,
};
