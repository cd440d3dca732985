/* `--probe-limit`: counting each probe's hits as they are written, dropping those past
 * the limit and disarming the probe at it; see rec_probe.h. */
#include "record/rec_probe.h"

#include <dirent.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "record/rec.h"
#include "util/xp_clock.h"
#include "util/xp_grow.h"

int rec_probes_which(const struct rec_probes *p, const struct perf_event_header *h, int *fn,
		     int *ret)
{
	uint64_t id, v;

	/* every attr of a recording with probes has PERF_SAMPLE_IDENTIFIER: the id comes
	 * first */
	if (h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) + 8)
		return -ENOENT;
	memcpy(&id, h + 1, 8);
	if (!xp_map_get(&p->ids, id, &v))
		return -ENOENT;
	*fn = (int)((uint32_t)v / 2);
	*ret = (int)(v % 2);
	return 0;
}

/* Whether a hit is a further copy's report of the call the thread's previous hit
 * reported (rec_probes.lastof): same probe event, IP and cpu, from an owner that has
 * not reported it yet.  Copies of one event report a call one after the other in that
 * cpu's ring; the next call's first report comes from an owner that has. */
static int copy_of_last(struct rec_probes *p, const struct perf_event_header *h, uint32_t tid)
{
	uint64_t id, ip, v, at;
	uint32_t cpu = 0, owner;
	struct rec_probe_last *l;
	int fk;

	if (!p->per_task || h->size < sizeof(*h) + 40)
		return 0;
	/* IDENTIFIER, IP, TID, TIME, CPU (rec_probe.c's sample_type) */
	memcpy(&id, h + 1, 8);
	memcpy(&ip, (const char *)(h + 1) + 8, 8);
	memcpy(&cpu, (const char *)(h + 1) + 32, 4);
	if (!xp_map_get(&p->ids, id, &v))
		return 0;
	owner = (uint32_t)(v >> 32);
	fk = (int)(uint32_t)v;
	if (!xp_map_get(&p->lastof, tid, &at)) {
		if (XP_GROW(p->last, p->caplast, (size_t)p->nlast + 1) < 0 ||
		    xp_map_put(&p->lastof, tid, (uint64_t)p->nlast) < 0)
			return 0;
		at = (uint64_t)p->nlast++;
		p->last[at].fk = -1;
	}
	l = &p->last[at];
	if (l->fk == fk && l->ip == ip && l->cpu == cpu && l->nown < 8) {
		int seen = 0;
		for (int k = 0; k < l->nown; k++)
			seen |= l->own[k] == owner;
		if (!seen) {
			l->own[l->nown++] = owner;
			return 1;
		}
	}
	*l = (struct rec_probe_last){ ip, cpu, fk, 1, { owner } };
	return 0;
}

/* Closing the events (not only disabling them) unregisters the uprobe from the target:
 * a disabled uprobe event still traps at its breakpoint, at several microseconds a
 * call.  Left to threads: the kernel takes ~80 ms per uprobe-PMU close here (it waits
 * for RCU grace periods; a tracefs event's last close 15-35 ms), during which the rings
 * would wait; the breakpoint is taken out of the
 * target before (rec_probes_unpatch), else it traps until the closes are done. */
static void disarm(struct rec_probes *p, struct rec_probe_fn *fn, uint64_t t)
{
	for (int k = 0; k < fn->nfds; k++)
		ioctl(fn->fds[k], PERF_EVENT_IOC_DISABLE, 0);
	fn->unpatch_err = rec_probes_unpatch(p, fn);
	fn->unpatched = fn->unpatch_err ? 0 : xp_now_ns();
	if (!fn->closing && (fn->closing = calloc(1, sizeof(*fn->closing))))
		fn->closing->fd = -1;
	if (!fn->closing || !p->per_task || rec_probe_fn_close_away(p, fn) < 0)
		rec_probes_close_fds(fn->fds, fn->nfds, 0, fn->closing);
	fn->charging = fn->closing != NULL;
	fn->nfds = 0;
	fn->disarmed = t ? t : 1;
}

/* The parent of pid from /proc (0 when it is gone). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *rp;
	int ppid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* the command name may hold spaces and parentheses: the fields follow the last ')' */
	if (fgets(buf, sizeof(buf), f) && (rp = strrchr(buf, ')')) && sscanf(rp + 1, " %*c %d", &ppid) != 1)
		ppid = 0;
	fclose(f);
	return (pid_t)ppid;
}

/* Whether process pid is the target or one it started: a FORK record of the sampling
 * event said so, else its parent chain now (a hit may be read before the FORK record
 * in another cpu's ring). */
static int in_tree(struct rec_probes *p, pid_t pid)
{
	uint64_t v;
	pid_t q = pid;
	int in = 0;

	if (!p->root || pid == p->root)
		return 1;
	if (xp_map_get(&p->procs, (uint64_t)pid, &v))
		return v == 1;
	for (int depth = 0; q > 1 && depth < 64 && !in; depth++) {
		q = parent_of(q);
		in = q == p->root || (xp_map_get(&p->procs, (uint64_t)q, &v) && v == 1);
	}
	xp_map_put(&p->procs, (uint64_t)pid, in ? 1 : 2);
	return in;
}

void rec_probes_scan_tree(struct rec_probes *p)
{
	struct dirent *d;
	DIR *dir;

	if (!p->root || !(dir = opendir("/proc")))
		return;
	while ((d = readdir(dir)))
		if (d->d_name[0] >= '1' && d->d_name[0] <= '9')
			in_tree(p, (pid_t)atoi(d->d_name));
	closedir(dir);
}

void rec_probes_fork(struct rec_probes *p, const struct perf_event_header *h)
{
	uint32_t pid, ppid;

	if (h->size < sizeof(*h) + 8)
		return;
	memcpy(&pid, h + 1, 4);
	memcpy(&ppid, (const char *)(h + 1) + 4, 4);
	if (pid != ppid && p->root && in_tree(p, (pid_t)ppid))
		xp_map_put(&p->procs, pid, 1);
}

void rec_probes_disarm(struct rec_probes *p, int i, uint64_t t)
{
	struct rec_probe_fn *fn = &p->fn[i];

	/* one being armed is disarmed at the next check once it is */
	if (fn->disarmed || !fn->nfds || fn->arming)
		return;
	disarm(p, fn, t);
	fn->over_budget = 1;
}

/* The traps of fn's last window between its disarm and `end` (its breakpoint out of the
 * target, or its events closed), at `call` ns each. */
static uint64_t close_cost(const struct rec_probe_fn *fn, uint64_t end, uint64_t call)
{
	uint64_t win = fn->disarmed > fn->armed ? fn->disarmed - fn->armed : 0;
	unsigned __int128 traps;

	if (!win || end <= fn->disarmed)
		return 0;
	traps = (unsigned __int128)(fn->hits - fn->win_hits) * (end - fn->disarmed) / win;
	return (uint64_t)(traps * call);
}

uint64_t rec_probes_cost(struct rec_probes *p, uint64_t now)
{
	uint64_t ns = 0;

	for (int i = 0; i < p->nfn; i++) {
		struct rec_probe_fn *fn = &p->fn[i];
		uint64_t call = p->cal_caller_ns[fn->cal] + p->cal_callee_ns[fn->cal], end;

		ns += fn->hits * call;
		if (fn->charging) {
			/* still trapping: charged up to now; no longer (the breakpoint out, or
			 * the events closed): once, up to then */
			end = fn->unpatched ? fn->unpatched
			      : rec_probe_closed(fn->closing) ? atomic_load(&fn->closing->end) : 0;
			if (end) {
				uint64_t traps = close_cost(fn, end, call);
				fn->hidden_ns += traps;
				fn->last_cost = (fn->hits - fn->win_hits) * call + traps;
				fn->charging = 0;
			} else {
				ns += close_cost(fn, now, call);
			}
		}
		ns += fn->hidden_ns;
	}
	return ns;
}

/* Whether a hit at time t of thread tid belongs to the current window.  A probe's events
 * are enabled one cpu after the other, so a hit before `armed` (once all are enabled)
 * may have a twin on a cpu not yet enabled: dropped.  A call entered before the window
 * and returning in it (one per thread, for a function that does not recurse) has its
 * return recorded, its entry not: the kernel diverts the return of every call made
 * while the return event is open, enabled or not.  So a return is kept once its thread
 * had an entry in the window, and only when it came after that entry (entered holds
 * its time): the rings' samples come in time order within a round (rec_take_round),
 * but a collector preempted between taking two rings' heads can read a thread's next
 * entry, on the cpu it moved to, a round before that call's return (seen under load:
 * 47174 entries, 47175 returns). */
static int in_window(struct rec_probe_fn *fn, uint64_t t, int ret, uint32_t tid)
{
	uint64_t first;

	if (!t)
		return 1;
	if (t < fn->armed)
		return 0;
	if (!xp_map_get(&fn->entered, tid, &first))
		return !ret && xp_map_put(&fn->entered, tid, t) == 0;
	return !ret || t >= first;
}

/* Whether a return has a kept entry of its thread to pair with (entries kept less
 * returns kept, per thread, counted here): a return is never kept without one, whatever
 * order the hits came in, so a window's returns never outnumber its entries. */
static int pairs(struct rec_probe_fn *fn, int ret, uint32_t tid)
{
	uint64_t n = 0;

	xp_map_get(&fn->open, tid, &n);
	if (ret && !n)
		return 0;
	return xp_map_put(&fn->open, tid, ret ? n - 1 : n + 1) == 0;
}

int rec_probes_hit(struct rec_probes *p, const struct perf_event_header *h)
{
	uint64_t limit = p->o->probe_limit, t = 0;
	struct rec_probe_fn *fn;
	uint32_t pid, tid;
	int i, ret;

	if (rec_probes_which(p, h, &i, &ret) < 0)
		return 1;
	/* IDENTIFIER, IP, then TID's pid (rec_probe.c's sample_type) */
	if (h->size < sizeof(*h) + 24)
		return 0;
	memcpy(&pid, (const char *)(h + 1) + 16, 4);
	memcpy(&tid, (const char *)(h + 1) + 20, 4);
	if (!in_tree(p, (pid_t)pid) || copy_of_last(p, h, tid))
		return 0;
	fn = &p->fn[i];
	if (p->time_off >= 0 && (size_t)p->time_off + 8 <= h->size)
		memcpy(&t, (const char *)h + p->time_off, 8);
	if (!in_window(fn, t, ret, tid))
		return 0;
	/* disarmed over budget at a time: its window ends there; a return read after it
	 * is kept while it pairs an entry kept (the call in flight when the events were
	 * disabled has none) */
	if (fn->over_budget && t > fn->disarmed) {
		if (ret && fn->rets - fn->win_rets < fn->hits - fn->win_hits && pairs(fn, 1, tid)) {
			fn->rets++;
			return 1;
		}
		return 0;
	}
	/* A return is kept while returns do not outnumber the limit: for a function that
	 * does not recurse, exactly the returns of the activations whose entry was kept. */
	if (ret) {
		if ((limit && fn->rets >= limit) || !pairs(fn, 1, tid))
			return 0;
		fn->rets++;
		return 1;
	}
	if (limit && fn->hits >= limit)
		return 0;
	pairs(fn, 0, tid);
	fn->hits++;
	/* the limit ends the probe for good: also one the budget disarmed already, whose
	 * entries before that disarm are read after it (it was re-armed, every hit of its
	 * new window dropped past the limit while its int3 trapped: +75 % of a 20 s run) */
	if (limit && fn->hits == limit) {
		if (!fn->disarmed)
			disarm(p, fn, t);
		fn->over_budget = 0;
	}
	return 1;
}

void rec_probes_window_begin(struct rec_probes *p, int i, uint64_t t)
{
	struct rec_probe_fn *fn = &p->fn[i];

	if (fn->disarmed) {
		fn->win[fn->nwin++] = (struct rec_probe_win){
			fn->armed, fn->disarmed, fn->hits - fn->win_hits,
			fn->closing ? atomic_load(&fn->closing->end) : 0, fn->unpatched,
			fn->unpatch_err };
		fn->disarmed = 0;
		fn->over_budget = 0;
		fn->win_hits = fn->hits;
		fn->win_rets = fn->rets;
		xp_map_free(&fn->entered);
		xp_map_free(&fn->open);
	}
	fn->armed = t;
}
