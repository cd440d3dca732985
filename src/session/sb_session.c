/* Session state: address spaces with history, threads with their names over time. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session/sb.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

struct aspace {
	int32_t pid;
	struct sb_map *live;	/* sorted by start, non-overlapping */
	uint32_t nlive, caplive;
	struct sb_map *dead;	/* retired mappings, with their end time */
	uint32_t ndead, capdead;
	uint32_t last;		/* index of the last hit in live */
};

struct sb_session {
	struct xp_map as;	/* pid -> struct aspace * */
	struct aspace kernel;
	struct sb_thread **threads;	/* in order of appearance */
	uint32_t nthreads, capthreads;
	struct xp_map tids;	/* tid -> index in threads */
	struct sb_dso **dsos;
	uint32_t ndsos, capdsos;
	struct pd_build_id *bids;
	size_t nbids;
	uint64_t gen;
};

uint64_t sb_generation(const struct sb_session *s) { return s->gen; }

struct sb_session *sb_new(void)
{
	struct sb_session *s = calloc(1, sizeof(*s));

	if (s)
		s->kernel.pid = SB_PID_KERNEL;
	return s;
}

static void as_free(struct aspace *a)
{
	free(a->live);
	free(a->dead);
}

void sb_free(struct sb_session *s)
{
	if (!s)
		return;
	uint64_t pid, a;
	for (size_t it = 0; xp_map_next(&s->as, &it, &pid, &a);) {
		as_free((struct aspace *)(uintptr_t)a);
		free((struct aspace *)(uintptr_t)a);
	}
	xp_map_free(&s->as);
	as_free(&s->kernel);
	for (uint32_t i = 0; i < s->nthreads; i++) {
		for (uint32_t j = 0; j < s->threads[i]->ncomms; j++)
			free(s->threads[i]->comms[j].comm);
		free(s->threads[i]->comms);
		free(s->threads[i]);
	}
	free(s->threads);
	xp_map_free(&s->tids);
	for (uint32_t i = 0; i < s->ndsos; i++) {
		free(s->dsos[i]->path);
		free(s->dsos[i]);
	}
	free(s->dsos);
	free(s->bids);
	free(s);
}

/* ---- dsos ---- */

static bool is_anon(const char *p)
{
	return p[0] != '/' && strncmp(p, "[vdso]", 6) != 0 && strncmp(p, "[kernel", 7) != 0;
}

struct sb_dso *sb_dso_get(struct sb_session *s, const char *path, const uint8_t *bid, uint8_t bid_size)
{
	/* perf names the kernel map after its relocation symbol ("[kernel.kallsyms]_text") */
	if (strncmp(path, "[kernel.kallsyms]", 17) == 0)
		path = "[kernel.kallsyms]";
	for (uint32_t i = 0; i < s->ndsos; i++) {
		struct sb_dso *d = s->dsos[i];
		if (strcmp(d->path, path) != 0)
			continue;
		if (!bid_size || !d->bid_size ||
		    (d->bid_size == bid_size && memcmp(d->build_id, bid, bid_size) == 0)) {
			if (!d->bid_size && bid_size) {
				memcpy(d->build_id, bid, bid_size);
				d->bid_size = bid_size;
			}
			return d;
		}
	}
	if (XP_GROW(s->dsos, s->capdsos, s->ndsos + 1) < 0)
		return NULL;
	struct sb_dso *d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return NULL;
	}
	if (bid_size) {
		memcpy(d->build_id, bid, bid_size);
		d->bid_size = bid_size;
	} else {
		for (size_t i = 0; i < s->nbids; i++)
			if (strcmp(s->bids[i].filename, path) == 0) {
				memcpy(d->build_id, s->bids[i].build_id, s->bids[i].size);
				d->bid_size = s->bids[i].size;
				break;
			}
	}
	d->kernel = strncmp(path, "[kernel", 7) == 0 || (path[0] == '/' && strstr(path, ".ko"));
	d->anon = is_anon(path);
	d->id = s->ndsos;
	s->dsos[s->ndsos++] = d;
	return d;
}

int sb_set_build_ids(struct sb_session *s, const struct pd_build_id *bids, size_t n)
{
	/* a copy: the reader's list moves when a HEADER_BUILD_ID record adds to it */
	struct pd_build_id *copy = n ? malloc(n * sizeof(*copy)) : NULL;

	if (n && !copy)
		return -ENOMEM;
	if (n)
		memcpy(copy, bids, n * sizeof(*copy));
	free(s->bids);
	s->bids = copy;
	s->nbids = n;
	for (uint32_t i = 0; i < s->ndsos; i++) {
		struct sb_dso *d = s->dsos[i];
		for (size_t j = 0; !d->bid_size && j < n; j++)
			if (strcmp(bids[j].filename, d->path) == 0) {
				memcpy(d->build_id, bids[j].build_id, bids[j].size);
				d->bid_size = bids[j].size;
			}
	}
	return 0;
}

uint32_t sb_ndsos(const struct sb_session *s) { return s->ndsos; }
struct sb_dso *sb_dso_at(struct sb_session *s, uint32_t i) { return i < s->ndsos ? s->dsos[i] : NULL; }

/* ---- address spaces ---- */

static struct aspace *as_find(struct sb_session *s, int32_t pid, bool create)
{
	if (pid == SB_PID_KERNEL)
		return &s->kernel;
	uint64_t found;
	if (xp_map_get(&s->as, (uint32_t)pid, &found))
		return (struct aspace *)(uintptr_t)found;
	if (!create)
		return NULL;
	struct aspace *a = calloc(1, sizeof(*a));
	if (!a || xp_map_put(&s->as, (uint32_t)pid, (uintptr_t)a) < 0) {
		free(a);
		return NULL;
	}
	a->pid = pid;
	return a;
}

static int push_dead(struct aspace *a, const struct sb_map *m, uint64_t t)
{
	if (XP_GROW(a->dead, a->capdead, a->ndead + 1) < 0)
		return -ENOMEM;
	a->dead[a->ndead] = *m;
	a->dead[a->ndead].time_to = t;
	a->ndead++;
	return 0;
}

static int live_reserve(struct aspace *a, uint32_t extra)
{
	return XP_GROW(a->live, a->caplive, (size_t)a->nlive + extra) < 0 ? -ENOMEM : 0;
}

/* First live index whose end > addr. */
static uint32_t live_lower(const struct aspace *a, uint64_t addr)
{
	uint32_t lo = 0, hi = a->nlive;

	while (lo < hi) {
		uint32_t mid = (lo + hi) / 2;
		if (a->live[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Inserts m, retiring (at m->time_from) whatever part of older mappings it covers. */
static int as_insert(struct aspace *a, const struct sb_map *m)
{
	uint64_t t = m->time_from;
	uint32_t i = live_lower(a, m->start);

	if (live_reserve(a, 2) < 0)
		return -ENOMEM;
	/* retire overlapped mappings, keeping the parts outside [start, end) */
	while (i < a->nlive && a->live[i].start < m->end) {
		struct sb_map old = a->live[i];
		if (push_dead(a, &old, t) < 0)
			return -ENOMEM;
		memmove(&a->live[i], &a->live[i + 1], (a->nlive - i - 1) * sizeof(old));
		a->nlive--;
		if (old.start < m->start) {
			struct sb_map left = old;
			left.end = m->start;
			memmove(&a->live[i + 1], &a->live[i], (a->nlive - i) * sizeof(old));
			a->live[i++] = left;
			a->nlive++;
		}
		if (old.end > m->end) {
			struct sb_map right = old;
			right.pgoff += m->end - old.start;
			right.start = m->end;
			memmove(&a->live[i + 1], &a->live[i], (a->nlive - i) * sizeof(old));
			a->live[i] = right;
			a->nlive++;
			break;
		}
	}
	i = live_lower(a, m->start);
	memmove(&a->live[i + 1], &a->live[i], (a->nlive - i) * sizeof(*m));
	a->live[i] = *m;
	a->nlive++;
	a->last = i;
	return 0;
}

/* exec or exit: every live mapping ends at t. */
static int as_retire_all(struct aspace *a, uint64_t t)
{
	for (uint32_t i = 0; i < a->nlive; i++)
		if (push_dead(a, &a->live[i], t) < 0)
			return -ENOMEM;
	a->nlive = 0;
	a->last = 0;
	return 0;
}

/* exec at t: the mappings made before it end there.  Those of the new program are
 * made at t or later; they are live already when the COMM reaches the session after
 * them (written after its MMAP2s at the same time, as the step tracer does, or
 * delivered out of time order) and stay.  Without times (t 0) the order decides. */
static int as_retire_exec(struct aspace *a, uint64_t t)
{
	uint32_t k = 0;

	if (!t)
		return as_retire_all(a, t);
	for (uint32_t i = 0; i < a->nlive; i++) {
		if (a->live[i].time_from >= t)
			a->live[k++] = a->live[i];
		else if (push_dead(a, &a->live[i], t) < 0)
			return -ENOMEM;
	}
	a->nlive = k;
	a->last = 0;
	return 0;
}

int sb_add_map(struct sb_session *s, int32_t pid, uint64_t start, uint64_t len, uint64_t pgoff,
	       uint32_t prot, const char *path, const uint8_t *bid, uint8_t bid_size, uint64_t time)
{
	struct aspace *a = as_find(s, pid, true);
	struct sb_dso *d = sb_dso_get(s, path, bid, bid_size);

	if (start + len < start)
		return -EINVAL;
	if (!a || !d)
		return -ENOMEM;
	s->gen++;
	struct sb_map m = { .start = start, .end = start + len, .pgoff = pgoff, .time_from = time,
			    .time_to = UINT64_MAX, .prot = prot, .dso = d };
	return as_insert(a, &m);
}

static const struct sb_map *as_lookup(struct aspace *a, uint64_t addr, uint64_t time)
{
	const struct sb_map *best = NULL;

	if (a->last < a->nlive) {
		const struct sb_map *m = &a->live[a->last];
		if (addr >= m->start && addr < m->end && (!time || m->time_from <= time))
			return m;
	}
	uint32_t i = live_lower(a, addr);
	if (i < a->nlive && a->live[i].start <= addr) {
		if (!time || a->live[i].time_from <= time) {
			a->last = i;
			return &a->live[i];
		}
		best = &a->live[i];	/* fallback when no history covers `time` */
	}
	const struct sb_map *hist = NULL;
	for (uint32_t k = 0; k < a->ndead; k++) {
		const struct sb_map *m = &a->dead[k];
		if (addr >= m->start && addr < m->end && (!time || (m->time_from <= time && time < m->time_to)) &&
		    (!hist || m->time_from >= hist->time_from))
			hist = m;
	}
	return hist ? hist : best;
}

const struct sb_map *sb_find_map(struct sb_session *s, int32_t pid, uint64_t addr, uint64_t time)
{
	struct aspace *a;

	if (addr >> 63)
		return as_lookup(&s->kernel, addr, time);
	a = as_find(s, pid, false);
	return a ? as_lookup(a, addr, time) : NULL;
}

uint32_t sb_maps(struct sb_session *s, int32_t pid, const struct sb_map **maps)
{
	struct aspace *a = as_find(s, pid, false);

	*maps = a ? a->live : NULL;
	return a ? a->nlive : 0;
}

/* ---- threads ---- */

struct sb_thread *sb_thread(struct sb_session *s, int32_t tid)
{
	uint64_t i;

	return xp_map_get(&s->tids, (uint32_t)tid, &i) ? s->threads[i] : NULL;
}

/* A thread whose tid was reused gets a fresh entry (it replaces the old one in the
 * map); the old one stays for reports. */
static struct sb_thread *thread_new(struct sb_session *s, int32_t pid, int32_t tid)
{
	if (XP_GROW(s->threads, s->capthreads, s->nthreads + 1) < 0)
		return NULL;
	struct sb_thread *t = calloc(1, sizeof(*t));
	if (!t || xp_map_put(&s->tids, (uint32_t)tid, s->nthreads) < 0) {
		free(t);
		return NULL;
	}
	t->pid = pid;
	t->tid = tid;
	t->ppid = -1;
	s->threads[s->nthreads++] = t;
	return t;
}

struct sb_thread *sb_thread_get(struct sb_session *s, int32_t pid, int32_t tid)
{
	struct sb_thread *t = sb_thread(s, tid);

	return t ? t : thread_new(s, pid, tid);
}

static int add_comm(struct sb_thread *t, uint64_t time, const char *comm)
{
	if (t->ncomms && strcmp(t->comms[t->ncomms - 1].comm, comm) == 0)
		return 0;
	void *nc = realloc(t->comms, (t->ncomms + 1) * sizeof(*t->comms));
	if (!nc)
		return -ENOMEM;
	t->comms = nc;
	t->comms[t->ncomms].time = time;
	t->comms[t->ncomms].comm = strdup(comm);
	if (!t->comms[t->ncomms].comm)
		return -ENOMEM;
	t->ncomms++;
	return 0;
}

const char *sb_comm_at(struct sb_session *s, int32_t tid, uint64_t time)
{
	static __thread char buf[24];
	struct sb_thread *t = sb_thread(s, tid);

	if (!t || !t->ncomms) {
		snprintf(buf, sizeof(buf), ":%d", tid);
		return buf;
	}
	uint32_t i = 0;
	if (time)
		while (i + 1 < t->ncomms && t->comms[i + 1].time <= time)
			i++;
	else
		i = t->ncomms - 1;
	return t->comms[i].comm;
}

uint32_t sb_nthreads(const struct sb_session *s) { return s->nthreads; }
struct sb_thread *sb_thread_at(struct sb_session *s, uint32_t i) { return i < s->nthreads ? s->threads[i] : NULL; }

/* ---- records ---- */

static int on_mmap(struct sb_session *s, const struct pd_rec *r)
{
	const struct pd_mmap *m = &r->u.mmap;
	int32_t pid = (int32_t)m->pid;

	/* perf marks kernel maps with pid -1 and cpumode kernel */
	if ((r->misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL)
		pid = SB_PID_KERNEL;
	if (m->len == 0)
		return 0;
	uint64_t len = m->len;
	/* the kernel text map is written with a huge length; clamp to the address space */
	if (m->start + len < m->start)
		len = UINT64_MAX - m->start;
	uint32_t prot = m->prot;
	if (r->type == PERF_RECORD_MMAP)
		prot = (r->misc & PERF_RECORD_MISC_MMAP_DATA) ? 1 : 5;
	return sb_add_map(s, pid, m->start, len, m->pgoff, prot, m->filename, m->build_id,
			  m->build_id_size, r->time);
}

static int on_fork(struct sb_session *s, const struct pd_rec *r)
{
	const struct pd_task *k = &r->u.task;
	struct sb_thread *parent = sb_thread(s, (int32_t)k->ptid);
	struct sb_thread *t = thread_new(s, (int32_t)k->pid, (int32_t)k->tid);

	if (!t)
		return -ENOMEM;
	t->ppid = (int32_t)k->ppid;
	t->start_time = k->time;
	if (parent && parent->ncomms && add_comm(t, k->time, parent->comms[parent->ncomms - 1].comm) < 0)
		return -ENOMEM;
	if (k->pid != k->ppid) {	/* a new process: copy the parent's address space */
		struct aspace *pa = as_find(s, (int32_t)k->ppid, false);
		struct aspace *ca = as_find(s, (int32_t)k->pid, true);
		if (!ca)
			return -ENOMEM;
		if (pa && pa != ca) {
			s->gen++;
			as_retire_all(ca, k->time);
			if (live_reserve(ca, pa->nlive) < 0)
				return -ENOMEM;
			for (uint32_t i = 0; i < pa->nlive; i++) {
				ca->live[i] = pa->live[i];
				ca->live[i].time_from = k->time;
			}
			ca->nlive = pa->nlive;
		}
	}
	return 0;
}

int sb_feed(struct sb_session *s, const struct pd_rec *r)
{
	switch (r->type) {
	case PERF_RECORD_MMAP:
	case PERF_RECORD_MMAP2:
		return on_mmap(s, r);
	case PERF_RECORD_COMM: {
		struct sb_thread *t = sb_thread_get(s, (int32_t)r->u.comm.pid, (int32_t)r->u.comm.tid);
		if (!t)
			return -ENOMEM;
		if (r->u.comm.exec) {
			struct aspace *a = as_find(s, (int32_t)r->u.comm.pid, false);
			s->gen++;
			if (a && as_retire_exec(a, r->time) < 0)
				return -ENOMEM;
		}
		return add_comm(t, r->time, r->u.comm.comm);
	}
	case PERF_RECORD_FORK:
		return on_fork(s, r);
	case PERF_RECORD_EXIT: {
		struct sb_thread *t = sb_thread(s, (int32_t)r->u.task.tid);
		if (t)
			t->exit_time = r->u.task.time;
		return 0;
	}
	default:
		return 0;
	}
}
