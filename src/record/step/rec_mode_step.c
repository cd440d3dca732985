/* Step collector (--mode step): see col_step.h and docs/mode-step.md. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/step/col_step.h"
#include "record/step/col_step_filter.h"
#include "record/step/col_step_out.h"
#include "record/step/ptw.h"
#include "record/step/stp.h"
#include "record/rec.h"
#include "perfdata/pd_faults.h"
#include "util/xp_err.h"
#include "util/xp_status.h"
#include "util/xp_grow.h"
#include "util/xp_maps.h"

#define STEP_ID_BASE 1000	/* event ids: one per thread, like per-thread perf events */

struct step_thread {
	struct step_col *c;
	pid_t pid, tid;
	uint32_t idx;		/* AUXTRACE queue */
	uint64_t aux_off;	/* bytes of this thread's trace written so far */
	struct ptw w;
};

/* An executable mapping already described by an MMAP2 record. */
struct known_map {
	pid_t pid;
	uint64_t lo, hi, off;
	char *name;
	int seen;
};

struct step_col {
	struct rec *r;
	struct perf_event_attr attr;
	int attr_idx;
	struct step_thread **th;
	uint32_t nth, capth;
	struct known_map *maps;
	size_t nmaps, capmaps;
	uint64_t psb_period;
	uint64_t pt_bytes, chunks;	/* handed to the writer */
	uint64_t pt_ended;	/* encoded by the threads that ended (what reached the file or not) */
	uint64_t nevents;	/* tracer events seen, paces the live status */
	int err;
	/* --filter */
	struct stp *s;
	struct step_filter *filt;
	int nfilt;
	uint64_t ranges[64][2];
	int nranges;
	char exe[4096];		/* the program of the process that exec'd last */
	char *perf_filter;	/* for perf's decoder, in AUXTRACE_INFO */
	struct pd_fault *faults;	/* threads a signal ended, for the faults feature */
	size_t nfaults, capfaults;
	int reported;		/* c->err was explained to the user already */
	int no_proc;		/* the processes are gone (col_step_open): /proc tells nothing */
};

uint64_t col_step_pt_config(uint64_t psb_period)
{
	uint64_t n = 0;

	while ((2048ull << n) < psb_period && n < 15)
		n++;
	/* tsc: TSC packets carry CLOCK_MONOTONIC ns, so perf decodes with timestamps and
	 * orders the trace with the sideband */
	return STEP_PT_CFG_PT | STEP_PT_CFG_TSC | STEP_PT_CFG_NORETCOMP | STEP_PT_CFG_BRANCH |
	       (n << STEP_PT_CFG_PSB_SHIFT);
}

static int fail(struct step_col *c, int e)
{
	if (!c->err)
		c->err = e;
	return e;
}

/* The event id of tid's (per-thread) PT event. */
static uint64_t thread_id(const struct step_col *c, pid_t tid)
{
	for (uint32_t i = c->nth; i-- > 0;)
		if (c->th[i] && c->th[i]->tid == tid)
			return STEP_ID_BASE + i;
	return STEP_ID_BASE;
}

/* A synthesized record: body (after the header) + sample_id trailer. */
static int put(struct step_col *c, uint16_t type, uint16_t misc, const void *body, size_t n,
	       pid_t pid, pid_t tid, uint64_t time)
{
	uint64_t buf[(4096 + 256) / 8];
	struct perf_event_header *h = (void *)buf;
	size_t sz = sizeof(*h) + n;

	if (sz + 48 > sizeof(buf))
		return fail(c, -EINVAL);
	memcpy(h + 1, body, n);
	sz += pd_id_sample((char *)buf + sz, c->attr.sample_type, (uint32_t)pid, (uint32_t)tid,
			   time, thread_id(c, tid), 0);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)sz;
	if (!c->r->first_time)
		c->r->first_time = time;
	c->r->last_time = time;
	int e = rec_record(c->r, h);
	return e < 0 ? fail(c, e) : 0;
}

static int flush_chunk(void *ctx, const uint8_t *data, size_t len)
{
	struct step_thread *t = ctx;
	struct step_col *c = t->c;
	struct pd_auxtrace_event ev;
	struct { uint64_t off, size, flags; } aux;
	int e;

	memset(&ev, 0, sizeof(ev));
	ev.offset = t->aux_off;
	ev.reference = c->r->last_time;	/* perf: the TSC when the chunk was read */
	ev.idx = t->idx;
	ev.tid = (uint32_t)t->tid;
	ev.cpu = (uint32_t)-1;
	/* The kernel's AUX record announces the data, the AUXTRACE record carries it. */
	aux.off = t->aux_off;
	aux.size = len;
	aux.flags = 0;
	if ((e = put(c, PERF_RECORD_AUX, 0, &aux, sizeof(aux), t->pid, t->tid, c->r->last_time)) < 0)
		return e;
	e = pd_writer_auxtrace(c->r->w, &ev, data, len);
	if (e < 0)
		return fail(c, e);
	t->aux_off += len;
	c->pt_bytes += len;
	c->chunks++;
	return 0;
}

/* Sideband goes after the trace that precedes it in time. */
static int flush_all(struct step_col *c)
{
	for (uint32_t i = 0; i < c->nth; i++) {
		int e = c->th[i] ? ptw_flush(&c->th[i]->w) : 0;
		if (e < 0)
			return fail(c, e);
	}
	return 0;
}

static int put_comm(struct step_col *c, pid_t pid, pid_t tid, const char *comm, int exec,
		    uint64_t time)
{
	struct { uint32_t pid, tid; char comm[24]; } b;
	size_t n = strlen(comm) + 1;

	memset(&b, 0, sizeof(b));
	if (n > 16)
		n = 16;
	b.pid = (uint32_t)pid;
	b.tid = (uint32_t)tid;
	memcpy(b.comm, comm, n - 1);
	return put(c, PERF_RECORD_COMM, exec ? PERF_RECORD_MISC_COMM_EXEC : 0, &b,
		   8 + ((n + 7) & ~(size_t)7), pid, tid, time);
}

static int put_task(struct step_col *c, uint16_t type, pid_t pid, pid_t ppid, pid_t tid,
		    pid_t ptid, uint64_t time)
{
	struct { uint32_t pid, ppid, tid, ptid; uint64_t time; } b = {
		(uint32_t)pid, (uint32_t)ppid, (uint32_t)tid, (uint32_t)ptid, time
	};

	return put(c, type, 0, &b, sizeof(b), pid, tid, time);
}

static int put_mmap2(struct step_col *c, pid_t pid, uint64_t lo, uint64_t hi, uint64_t off,
		     const char *perms, unsigned maj, unsigned min, uint64_t ino,
		     const char *name, uint64_t time)
{
	uint8_t b[64 + 4096];
	uint32_t u;
	uint16_t misc = PERF_RECORD_MISC_USER;
	uint8_t bid[MS_BUILD_ID_MAX];
	size_t bsz = 0, nlen = strlen(name) + 1;
	uint32_t prot = PROT_EXEC | (perms[0] == 'r' ? PROT_READ : 0) |
			(perms[1] == 'w' ? PROT_WRITE : 0);
	uint32_t flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
	uint64_t v[3] = { lo, hi - lo, off };

	if (nlen > 4096)
		return 0;
	memset(b, 0, 64 + ((nlen + 7) & ~(size_t)7));
	if (strcmp(name, "[vdso]") == 0) {
		const void *img;
		size_t size;

		if (ms_vdso_self(&img, &size) == 0 && ms_build_id_mem(img, size, bid, &bsz) == 0)
			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else {
		char src[96];

		snprintf(src, sizeof(src), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, lo, hi);
		if (ms_build_id_file(src, bid, &bsz) == 0 || ms_build_id_file(name, bid, &bsz) == 0)
			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	}
	u = (uint32_t)pid;
	memcpy(b, &u, 4);
	memcpy(b + 4, &u, 4);
	memcpy(b + 8, v, 24);
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		b[32] = (uint8_t)bsz;
		memcpy(b + 36, bid, bsz);
	} else {
		uint32_t mm[2] = { maj, min };
		uint64_t in[2] = { ino, 0 };

		memcpy(b + 32, mm, 8);
		memcpy(b + 40, in, 16);
	}
	memcpy(b + 56, &prot, 4);
	memcpy(b + 60, &flags, 4);
	memcpy(b + 64, name, nlen);
	return put(c, PERF_RECORD_MMAP2, misc, b, 64 + ((nlen + 7) & ~(size_t)7), pid, pid, time);
}

/* --filter ranges a new mapping resolves, handed to the tracer. */
static int resolve_filters(struct step_col *c, uint64_t lo, uint64_t hi, uint64_t off,
			   const char *name)
{
	struct stp_range r[64];
	char why[512];
	int n;

	n = col_step_filter_resolve(c->filt, c->nfilt, lo, hi, off, name,
				    strcmp(name, c->exe) == 0, c->ranges, 64, &c->nranges, why,
				    sizeof(why));
	if (n < 0) {
		xp_err("--filter", "check the names with nm or objdump", "%s", why);
		c->reported = 1;
		return fail(c, n);
	}
	if (n == 0)
		return 0;
	for (int i = 0; i < c->nranges; i++) {
		r[i].start = c->ranges[i][0];
		r[i].end = c->ranges[i][1];
	}
	return stp_set_ranges(c->s, r, (unsigned)c->nranges) < 0 ? fail(c, -ENOMEM) : 0;
}

/* Writes MMAP2 for executable mappings of pid not described yet; forgets the gone ones.
 * `fresh`: a new address space (exec), nothing of pid is known any more. */
static int sync_maps(struct step_col *c, pid_t pid, uint64_t time, int fresh)
{
	char name[4096];
	struct xp_maps it;
	struct xp_maps_line m;
	size_t i, j;
	int e = 0;

	if (c->no_proc)
		return 0;
	for (i = 0; i < c->nmaps; i++)
		if (c->maps[i].pid == pid)
			c->maps[i].seen = fresh ? -1 : 0;
	if (xp_maps_open(&it, pid) < 0)
		return 0;	/* the process is gone */
	while (e == 0 && xp_maps_next(&it, &m)) {
		uint64_t lo = m.start, hi = m.end, off = m.pgoff;

		if (m.perms[2] != 'x')
			continue;
		snprintf(name, sizeof(name), "%s", m.path[0] ? m.path : "//anon");
		/* [vsyscall]: not the process's code; [uprobes] (another tool's uprobes run
		 * there) is, as perf's sideband has it, though no file holds it */
		if (name[0] == '[' && strcmp(name, "[vdso]") != 0 && strcmp(name, "[uprobes]") != 0)
			continue;
		for (i = 0; i < c->nmaps; i++) {
			struct known_map *k = &c->maps[i];

			if (k->pid == pid && k->seen == 0 && k->lo == lo && k->hi == hi &&
			    k->off == off && strcmp(k->name, name) == 0) {
				k->seen = 1;
				break;
			}
		}
		if (i < c->nmaps)
			continue;
		if (XP_GROW(c->maps, c->capmaps, c->nmaps + 1) < 0) {
			e = -ENOMEM;
			break;
		}
		c->maps[c->nmaps] = (struct known_map){ pid, lo, hi, off, strdup(name), 1 };
		if (!c->maps[c->nmaps].name) {
			e = -ENOMEM;
			break;
		}
		c->nmaps++;
		e = put_mmap2(c, pid, lo, hi, off, m.perms, m.major, m.minor, m.inode, name, time);
		if (e == 0 && c->nfilt && name[0] == '/')
			e = resolve_filters(c, lo, hi, off, name);
	}
	xp_maps_close(&it);
	for (i = j = 0; i < c->nmaps; i++) {
		if (c->maps[i].pid == pid && c->maps[i].seen != 1) {
			free(c->maps[i].name);
			continue;
		}
		c->maps[j++] = c->maps[i];
	}
	c->nmaps = j;
	return e;
}

/* A forked child starts with its parent's mappings (perf copies them on FORK). */
static int inherit_maps(struct step_col *c, pid_t parent, pid_t child)
{
	size_t n = c->nmaps;

	for (size_t i = 0; i < n; i++) {
		struct known_map k = c->maps[i];

		if (k.pid != parent)
			continue;
		if (XP_GROW(c->maps, c->capmaps, c->nmaps + 1) < 0)
			return -ENOMEM;
		k.pid = child;
		k.name = strdup(k.name);
		if (!k.name)
			return -ENOMEM;
		c->maps[c->nmaps++] = k;
	}
	return 0;
}

static struct step_thread *new_thread(struct step_col *c, pid_t pid, pid_t tid)
{
	struct step_thread *t = calloc(1, sizeof(*t));
	/* a chunk at the first PSB+ past 16 KiB: the trace reaches the file as it is
	 * made (a killed recorder keeps it), and each chunk starts at a PSB */
	struct ptw_opts po = { .psb_period = c->psb_period, .psb_flush = 16 * 1024,
			       .psb_at_sync = c->no_proc };

	if (!t)
		return NULL;
	if (XP_GROW(c->th, c->capth, c->nth + 1) < 0) {
		free(t);
		return NULL;
	}
	t->c = c;
	t->pid = pid;
	t->tid = tid;
	t->idx = c->nth;
	if (ptw_init(&t->w, &po, flush_chunk, t) < 0) {
		free(t);
		return NULL;
	}
	c->th[c->nth++] = t;
	/* perf synthesizes samples only for a PT event that has ids (one per thread's
	 * event in a --per-thread recording) */
	if (pd_writer_add_id(c->r->w, c->attr_idx, STEP_ID_BASE + t->idx, -1, tid) < 0) {
		ptw_fini(&t->w);
		c->th[--c->nth] = NULL;
		free(t);
		return NULL;
	}
	return t;
}

static int end_thread(struct step_col *c, struct step_thread *t)
{
	int e = ptw_flush(&t->w);

	c->pt_ended += t->w.total;
	ptw_fini(&t->w);
	c->th[t->idx] = NULL;
	free(t);
	return e < 0 ? fail(c, e) : 0;
}

/* The program pid runs (empty when it is gone): 0 or -ENOENT. */
static int read_exe(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, len - 1);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? 0 : -ENOENT;
}

static int on_event(void *ctx, const struct stp_event *ev)
{
	struct step_col *c = ctx;
	struct step_thread *t = *ev->user;
	int e = 0;

	if (c->err)
		return c->err;
	if ((++c->nevents & 1023) == 0 && c->s && xp_status_due()) {
		const struct stp_stats *st = stp_stats(c->s);
		xp_status_show("step: %" PRIu64 " branches, %" PRIu64 " stops, %.1f MB of PT, %.1f s",
			       st->cond + st->indirect + st->ret, st->stops, c->pt_bytes / 1e6,
			       xp_status_elapsed());
	}
	switch (ev->kind) {
	case STP_THREAD:
		if (flush_all(c) < 0)
			return c->err;
		if (ev->attached) {
			/* what perf synthesizes for a thread running before the recording */
			if (ev->tid != ev->pid &&
			    (e = put_task(c, PERF_RECORD_FORK, ev->pid, ev->pid, ev->tid, ev->pid,
					  ev->time)) < 0)
				return e;
			if (ev->tid != ev->pid &&
			    (e = put_comm(c, ev->pid, ev->tid, ev->comm, 0, ev->time)) < 0)
				return e;
		} else if (!ev->ptid) {
			/* the command before its exec, as perf announces its workload: perf
			 * must know the thread before the trace of it starts */
			if ((e = put_comm(c, ev->pid, ev->tid, "xptrace", 0, ev->time)) < 0)
				return e;
		} else {
			if (ev->fork && inherit_maps(c, ev->ppid, ev->pid) < 0)
				return fail(c, -ENOMEM);
			if ((e = put_task(c, PERF_RECORD_FORK, ev->pid, ev->ppid, ev->tid, ev->ptid,
					  ev->time)) < 0)
				return e;
		}
		t = new_thread(c, ev->pid, ev->tid);
		if (!t)
			return fail(c, -ENOMEM);
		*ev->user = t;
		{
			struct { uint32_t pid, tid; } b = { (uint32_t)ev->pid, (uint32_t)ev->tid };

			if ((e = put(c, PERF_RECORD_ITRACE_START, 0, &b, sizeof(b), ev->pid, ev->tid,
				     ev->time)) < 0)
				return e;
		}
		e = ptw_begin(&t->w, ev->time);
		if (e == 0 && ev->ip)
			e = ptw_enable(&t->w, ev->ip, ev->time);
		break;
	case STP_EXEC:
	case STP_ATTACH:
		/* a new program, or a process seized running: its name and mappings as
		 * /proc has them now (an exec's COMM says so) */
		if (flush_all(c) < 0)
			return c->err;
		if (c->no_proc)
			c->exe[0] = 0;
		else
			read_exe(ev->pid, c->exe, sizeof(c->exe));
		if ((e = put_comm(c, ev->pid, ev->tid, ev->comm, ev->kind == STP_EXEC, ev->time)) < 0)
			return e;
		return (e = sync_maps(c, ev->pid, ev->time, 1)) < 0 ? fail(c, e) : 0;
	case STP_COMM:
		/* what the kernel writes when a task is renamed: not an exec */
		if (flush_all(c) < 0)
			return c->err;
		return put_comm(c, ev->pid, ev->tid, ev->comm, 0, ev->time);
	case STP_MAPS:
		if (flush_all(c) < 0)
			return c->err;
		return (e = sync_maps(c, ev->pid, ev->time, 0)) < 0 ? fail(c, e) : 0;
	case STP_TNT:
		e = ptw_tnt(&t->w, ev->ip, ev->taken, ev->time);
		break;
	case STP_TIP:
		e = ptw_tip(&t->w, ev->ip, ev->to, ev->time);
		if (e == 0 && c->no_proc)
			e = ptw_sync(&t->w, ev->to, ev->time);
		break;
	case STP_DISABLE:
		e = ev->taken ? ptw_async_disable(&t->w, ev->ip, ev->time)
			      : ptw_disable(&t->w, ev->ip, ev->to, ev->time);
		break;
	case STP_ENABLE:
		e = ptw_enable(&t->w, ev->to, ev->time);
		break;
	case STP_ASYNC:
		e = ptw_async(&t->w, ev->ip, ev->to, ev->time);
		if (e == 0 && c->no_proc)
			e = ptw_sync(&t->w, ev->to, ev->time);
		break;
	case STP_MMAP:
		if (flush_all(c) < 0)
			return c->err;
		{
			const char *name = ev->comm && ev->comm[0] ? ev->comm : "//anon";

			if (XP_GROW(c->maps, c->capmaps, c->nmaps + 1) < 0)
				return fail(c, -ENOMEM);
			c->maps[c->nmaps] = (struct known_map){ ev->pid, ev->ip, ev->to, ev->pgoff,
								strdup(name), 1 };
			if (!c->maps[c->nmaps].name)
				return fail(c, -ENOMEM);
			c->nmaps++;
			e = put_mmap2(c, ev->pid, ev->ip, ev->to, ev->pgoff, "r-xp", 0, 0, 0, name,
				      ev->time);
		}
		break;
	case STP_LOSS:
		e = ptw_overflow(&t->w, ev->time);
		break;
	case STP_FATAL:
		if (XP_GROW(c->faults, c->capfaults, c->nfaults + 1) < 0)
			return fail(c, -ENOMEM);
		c->faults[c->nfaults++] = (struct pd_fault){
			.tid = ev->tid, .pid = ev->pid, .time = ev->time, .ip = ev->ip,
			.signo = ev->sig, .code = ev->code, .addr = ev->to, .fault = (uint8_t)ev->taken,
		};
		return 0;
	case STP_EXIT:
		if (!t)
			return 0;
		if (end_thread(c, t) < 0 || flush_all(c) < 0)
			return c->err;
		*ev->user = NULL;
		return put_task(c, PERF_RECORD_EXIT, ev->pid, ev->pid, ev->tid, ev->tid, ev->time);
	}
	return e < 0 ? fail(c, e) : 0;
}

static int write_header_records(struct step_col *c)
{
	uint64_t priv[PD_PT_INFO_WORDS] = { 0 };
	struct pd_time_conv_event tc;
	int idx;

	memset(&c->attr, 0, sizeof(c->attr));
	c->attr.type = STEP_PT_PMU_TYPE;
	c->attr.size = PD_ATTR_SIZE;
	c->attr.config = col_step_pt_config(c->psb_period);
	/* perf script checks the fields it prints against the PT event's sample_type */
	c->attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			      PERF_SAMPLE_ADDR | PERF_SAMPLE_CPU | PERF_SAMPLE_IDENTIFIER;
	c->attr.sample_period = 1;
	c->attr.exclude_kernel = 1;
	c->attr.exclude_hv = 1;
	c->attr.sample_id_all = 1;
	c->attr.mmap = 1;
	c->attr.mmap2 = 1;
	c->attr.comm = 1;
	c->attr.comm_exec = 1;
	c->attr.task = 1;
	c->attr.inherit = 1;
	idx = pd_writer_add_attr(c->r->w, &c->attr, "intel_pt//u");
	if (idx < 0)
		return idx;
	c->attr_idx = idx;
	rec_set_sample_layout(c->r, &c->attr, 0);

	priv[PD_PT_PMU_TYPE] = STEP_PT_PMU_TYPE;
	/* TSC packets carry CLOCK_MONOTONIC ns, the clock of every record: identity. */
	priv[PD_PT_TIME_SHIFT] = 0;
	priv[PD_PT_TIME_MULT] = 1;
	priv[PD_PT_TIME_ZERO] = 0;
	priv[PD_PT_CAP_USER_TIME_ZERO] = 1;
	priv[PD_PT_TSC_BIT] = STEP_PT_CFG_TSC;
	priv[PD_PT_NORETCOMP_BIT] = STEP_PT_CFG_NORETCOMP;
	priv[PD_PT_HAVE_SCHED_SWITCH] = 0;
	priv[PD_PT_SNAPSHOT_MODE] = 0;
	priv[PD_PT_PER_CPU_MMAPS] = 0;
	priv[PD_PT_MTC_BIT] = 1ull << 9;
	priv[PD_PT_MTC_FREQ_BITS] = 14;
	priv[PD_PT_TSC_CTC_N] = 0;
	priv[PD_PT_TSC_CTC_D] = 0;
	priv[PD_PT_CYC_BIT] = 1ull << 1;
	priv[PD_PT_MAX_NONTURBO_RATIO] = 0;
	priv[PD_PT_FILTER_STR_LEN] = 0;
	{
		/* the filter string follows the words, NUL-padded to 8 bytes */
		size_t flen = c->perf_filter ? strlen(c->perf_filter) : 0;
		size_t words = PD_PT_INFO_WORDS + (flen ? (flen + 1 + 7) / 8 : 0);
		uint64_t *info = calloc(words, 8);
		int e;

		if (!info)
			return -ENOMEM;
		memcpy(info, priv, sizeof(priv));
		info[PD_PT_FILTER_STR_LEN] = flen;
		if (flen)
			memcpy(info + PD_PT_INFO_WORDS, c->perf_filter, flen);
		e = pd_writer_auxtrace_info(c->r->w, PD_AUXTRACE_INTEL_PT, info, words);
		free(info);
		if (e < 0)
			return e;
	}
	memset(&tc, 0, sizeof(tc));
	tc.time_shift = 0;
	tc.time_mult = 1;
	tc.time_zero = 0;
	tc.cap_user_time_zero = 1;
	return pd_writer_time_conv(c->r->w, &tc);
}

static void step_col_free(struct step_col *c)
{
	for (int i = 0; i < c->nfilt && !c->reported; i++)
		if (!c->filt[i].resolved)
			xp_warn("--filter: %s%s%s was never mapped: nothing of it was traced",
				c->filt[i].sym ? c->filt[i].sym : "range", c->filt[i].module ? "@" : "",
				c->filt[i].module ? c->filt[i].module : "");
	col_step_filter_free(c->filt, c->nfilt);
	free(c->perf_filter);
	free(c->faults);
	for (size_t i = 0; i < c->nmaps; i++)
		free(c->maps[i].name);
	free(c->maps);
	for (uint32_t i = 0; i < c->nth; i++)
		if (c->th[i]) {
			ptw_fini(&c->th[i]->w);
			free(c->th[i]);
		}
	free(c->th);
}

/* Code the tracer could not decode ran untraced: said once more at the end and stored
 * in the trace, whose every reader repeats it (a recording that exits 0 is not whole). */
static void report_undecodable(struct rec *r, const struct stp_stats *st)
{
	const size_t keep = sizeof(st->undecodable_at) / sizeof(st->undecodable_at[0]);
	char line[256], text[300];
	int n;

	n = snprintf(line, sizeof(line), "step: %" PRIu64 " code path%s could not be decoded (at",
		     st->undecodable, st->undecodable == 1 ? "" : "s");
	for (size_t i = 0; i < st->undecodable && i < keep; i++)
		n += snprintf(line + n, sizeof(line) - (size_t)n, "%s%#" PRIx64, i ? ", " : " ",
			      st->undecodable_at[i]);
	snprintf(line + n, sizeof(line) - (size_t)n, "%s): what ran there is missing from the trace",
		 st->undecodable > keep ? ", ..." : "");
	xp_warn("%s; the trace is marked (decode says it too)", line);
	snprintf(text, sizeof(text), "xptrace-losses 1\n%s\n", line);
	if (pd_writer_feat_string(r->w, PD_FEAT_XPTRACE_LOSSES, text) < 0)
		xp_warn("step: the loss could not be marked in the trace: decode will not say it");
}

static void print_summary(const struct step_col *c, const struct stp *s)
{
	const struct stp_stats *st = stp_stats(s);
	uint64_t br = st->cond + st->indirect + st->ret;
	struct stp_blocker top[12];
	size_t ntop = stp_top_blockers(s, top, sizeof(top) / sizeof(top[0]));

	fprintf(stderr,
		"xptrace: step: %" PRIu64 " process%s, %" PRIu64 " threads, %" PRIu64 " branches (%" PRIu64 " cond, %" PRIu64
		" indirect, %" PRIu64 " ret), %" PRIu64 " stops (%.3f per branch), %" PRIu64
		" syscalls, %" PRIu64 " signals, %" PRIu64 " blocks, %.2f MB of PT (no CYC: "
		"stepping has no cycle timing)\n",
		st->processes, st->processes == 1 ? "" : "es", st->threads, br, st->cond, st->indirect, st->ret, st->stops,
		br ? (double)st->stops / (double)br : 0.0, st->syscalls, st->signals, st->blocks,
		c->pt_bytes / 1e6);
	fprintf(stderr, "xptrace: step: %" PRIu64 " breakpoint stops, %" PRIu64 " branches chained "
		"without a stop, %" PRIu64 " instructions emulated; stops ended by:",
		st->bp_stops, st->chained, st->emulated);
	for (int e = 0; e < STP_END_N; e++)
		if (st->end[e])
			fprintf(stderr, " %s %" PRIu64, stp_end_name((enum stp_end)e), st->end[e]);
	fprintf(stderr, "\n");
	if (ntop) {
		fprintf(stderr, "xptrace: step: instructions that ended stops:");
		for (size_t i = 0; i < ntop; i++)
			fprintf(stderr, " %s %" PRIu64, top[i].name, top[i].count);
		fprintf(stderr, "\n");
	}
}

static void on_alarm(int sig)
{
	(void)sig;	/* interrupts the tracer's waitpid: it then sees the deadline */
}

/* --duration: SIGALRM at the deadline and every 100 ms after it (one that lands just
 * before waitpid blocks must not be the last), without SA_RESTART. */
static void arm_deadline(uint64_t deadline_ns)
{
	struct sigaction sa;
	struct itimerval it = { .it_interval = { 0, 100000 } };
	struct timespec ts;
	uint64_t now, left;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	left = deadline_ns > now ? deadline_ns - now : 1000;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	it.it_value.tv_sec = (time_t)(left / 1000000000u);
	it.it_value.tv_usec = (suseconds_t)(left % 1000000000u / 1000u);
	if (!it.it_value.tv_sec && !it.it_value.tv_usec)
		it.it_value.tv_usec = 1;
	setitimer(ITIMER_REAL, &it, NULL);
}

static void disarm_deadline(void)
{
	struct itimerval it = { 0 };

	setitimer(ITIMER_REAL, &it, NULL);
	signal(SIGALRM, SIG_DFL);
}

/* -p: why the process could not be seized, and what to do. */
static void attach_error(pid_t pid, int e)
{
	if (e == -EPERM && rec_check_untraced(pid) < 0)
		return;
	if (e == -EPERM)
		xp_err("attach", "check /proc/sys/kernel/yama/ptrace_scope, or record as root",
		       "process %d: ptrace refused: %s", (int)pid, strerror(-e));
	else
		xp_err("attach", "check the pid", "process %d: %s", (int)pid, strerror(-e));
}

/* --filter parsed and checked (col_step_filter_check), said when wrong: -EINVAL for
 * its syntax. */
static int load_filters(const struct rec_opts *o, struct step_filter **f, int *n, char *exe,
			size_t exelen)
{
	char why[512];
	int e;

	if (col_step_filter_parse(o->filter, f, n, why, sizeof(why)) < 0)
		return xp_usage_error("record", "--filter: %s", why), -EINVAL;
	if (o->pid ? read_exe(o->pid, exe, exelen) < 0
		   : !o->cmd || rec_exec_path(o->cmd[0], exe, exelen) < 0)
		*exe = 0;
	e = col_step_filter_check(*f, *n, *exe ? exe : NULL, why, sizeof(why));
	if (e < 0) {
		col_step_filter_free(*f, *n);
		*f = NULL;
		*n = 0;
		return e == -ENOMEM ? xp_err("--filter", NULL, "out of memory"), e :
		       xp_err("--filter", "check the names with nm or objdump", "%s", why), e;
	}
	return 0;
}

/* Before the trace directory exists: a filter that cannot work leaves nothing. */
static int step_check(const struct rec_opts *o)
{
	struct step_filter *f = NULL;
	char exe[4096];
	int n = 0, e;

	if (!o->filter)
		return 0;
	e = load_filters(o, &f, &n, exe, sizeof(exe));
	col_step_filter_free(f, n);
	return e;
}

static int step_run(struct rec *r)
{
	struct step_col c = { .r = r };
	struct stp_opts xo = { .fn = on_event, .ctx = &c, .stop = &rec_stop_requested,
			       .deadline_ns = r->deadline_ns };
	struct stp *s = NULL;
	int e, rc;

	if (r->opts->filter) {
		char prog[4096];
		int unnamed, unsayable;

		if (load_filters(r->opts, &c.filt, &c.nfilt, prog, sizeof(prog)) < 0)
			return -EINVAL;
		c.perf_filter = col_step_filter_perf_string(c.filt, c.nfilt, *prog ? prog : NULL, &unnamed,
							    &unsayable);
		if (unnamed && !r->opts->quiet)
			xp_warn("--filter: give modules as paths (SYMBOL@/path/lib.so) so perf knows "
				"the ranges too; without, perf may decode a few instructions past a "
				"direct call out of them");
		if (unsayable && !r->opts->quiet)
			xp_warn("--filter: perf's filter syntax cannot name a file whose path has a "
				"space or a comma: perf is not told those ranges, and may decode a few "
				"instructions past a direct call out of them (xptrace decode is exact)");
	}
	xo.filtered = c.nfilt > 0;
	c.psb_period = r->opts->psb_period ? r->opts->psb_period : STEP_DEFAULT_PSB_PERIOD;
	if ((rc = write_header_records(&c)) < 0) {
		xp_err("record", NULL, "cannot write perf.data: %s", strerror(-rc));
		goto out;
	}
	if (r->opts->pid) {
		if ((rc = stp_seize(&s, &xo, r->opts->pid)) < 0) {
			attach_error(r->opts->pid, rc);
			goto out;
		}
	} else if ((rc = stp_attach(&s, &xo, r->child)) < 0) {
		xp_err("trace the command", "check /proc/sys/kernel/yama/ptrace_scope", "ptrace: %s",
		       strerror(-rc));
		goto out;
	}
	c.s = s;
	if ((rc = rec_target_go(r)) < 0)
		goto out;
	if (r->deadline_ns)
		arm_deadline(r->deadline_ns);
	/* the live status: a traced command runs hundreds of times slower than alone */
	xp_status_start(!r->opts->quiet, 500);
	e = stp_run(s);
	if (r->deadline_ns)
		disarm_deadline();
	if (r->opts->pid) {
		if (!r->opts->quiet && stp_detached(s))
			xp_warn("step: detached from PID %d: it runs on untraced, as before the attach",
				(int)r->opts->pid);
		if (!r->opts->quiet && stp_stats(s)->threads)
			xp_warn("step: the trace starts where each thread was at the attach: the calls "
				"already active there are not in it (a return out of one ends at the "
				"thread's outermost traced level)");
	} else if (e == 0 && stp_detached(s)) {
		/* still running, untraced: it gets SIGTERM as in the other modes */
		if (!r->opts->quiet)
			xp_warn("step: --duration reached: tracing stopped, the command was detached");
	} else {
		r->target_status = stp_exit_status(s);
		r->target_done = 1;	/* the tracer reaped it */
	}
	for (uint32_t i = 0; i < c.nth; i++)
		if (c.th[i])
			end_thread(&c, c.th[i]);
	if (c.nfaults) {
		char *text = pd_faults_format(c.faults, c.nfaults);

		if (!text || pd_writer_feat_string(r->w, PD_FEAT_XPTRACE_FAULTS, text) < 0)
			xp_warn("step: the fatal signals could not be stored: decode will not show them");
		free(text);
	}
	if (stp_stats(s)->undecodable)
		report_undecodable(r, stp_stats(s));
	r->aux_traced = c.pt_ended;
	if (e < 0 && e != -EINTR && !c.err)
		xp_err("trace the command", NULL, "%s", strerror(-e));
	else if (c.err && !c.reported && c.err != pd_writer_error(r->w))
		xp_err("record", NULL, "cannot write the trace: %s", strerror(-c.err));
	xp_status_stop();
	{
		const struct stp_stats *st = stp_stats(s);
		snprintf(r->recorded, sizeof(r->recorded), "%" PRIu64 " branches as Intel PT (%" PRIu64
			 " ptrace stops, %" PRIu64 " process%s, %" PRIu64 " thread%s)",
			 st->cond + st->indirect + st->ret, st->stops, st->processes,
			 st->processes == 1 ? "" : "es", st->threads, st->threads == 1 ? "" : "s");
	}
	if (r->opts->verbose && !r->opts->quiet)
		print_summary(&c, s);
	rc = e < 0 && e != -EINTR ? e : c.err;	/* c.err: 0 or the trace's write error */
out:
	stp_free(s);
	step_col_free(&c);
	return rc;
}

struct step_col *col_step_open(struct rec *r, uint64_t psb_period, int *err)
{
	struct step_col *c = calloc(1, sizeof(*c));

	if (!c) {
		*err = -ENOMEM;
		return NULL;
	}
	c->r = r;
	c->no_proc = 1;
	c->psb_period = psb_period ? psb_period : STEP_DEFAULT_PSB_PERIOD;
	if ((*err = write_header_records(c)) < 0) {
		free(c);
		return NULL;
	}
	return c;
}

int col_step_event(struct step_col *c, const struct stp_event *ev)
{
	return on_event(c, ev);
}

int col_step_tnt_run(struct step_col *c, void *user, const uint8_t *bits, size_t n,
		     uint64_t time)
{
	struct step_thread *t = user;
	int e;

	if (c->err)
		return c->err;
	e = ptw_tnt_run(&t->w, bits, n, time);
	return e < 0 ? fail(c, e) : 0;
}

uint64_t col_step_pt_bytes(const struct step_col *c)
{
	return c->pt_bytes;
}

int col_step_close(struct step_col *c)
{
	int e;

	for (uint32_t i = 0; i < c->nth; i++)
		if (c->th[i])
			end_thread(c, c->th[i]);
	c->r->aux_traced = c->pt_ended;
	e = c->err;
	step_col_free(c);
	free(c);
	return e;
}

const struct rec_mode rec_mode_step = {
	.name = "step",
	.summary = "ptrace branch tracer, any x86-64 CPU: exact instruction stream as Intel PT "
		   "(slow: the command stops under ptrace at branches)",
	.probe = NULL,
	.check = step_check,
	.run = step_run,
};
