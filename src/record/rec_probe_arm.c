/* Opening probes' events: at the start, and for probes armed while recording on a
 * thread of their own; see rec_probe.h.
 *
 * Defining a probe in tracefs and opening its events both wait for the kernel's
 * machine-wide trace-event mutex, which every close of a uprobe event anywhere holds
 * (~80 ms each: another tool's, a disarmed probe's, another recording's).  Behind such
 * closes an arm took over a second, and a collector waiting there read no ring
 * meanwhile: 169302 records lost while the target ran on, and the counts of every
 * window wrong.  So a probe armed while recording is only queued (fn->arming);
 * rec_probes_arm_step hands the kernel's part to a thread, the collector goes on
 * reading the rings and takes the thread's results on a later poll.  Every event is
 * opened disabled, so none writes a hit before its id is known, and the probe is
 * enabled, its window begun, once all are open. */
#include "record/rec_probe.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "arch/x86_64/x86_regs.h"
#include "record/rec.h"
#include "record/rec_probe_tfs.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

/* The attr perf_event_open gets for probe fn's event k: the uprobe PMU's as in the file,
 * or its tracefs event's, inherited when opened per task. */
struct perf_event_attr rec_probe_live_attr(const struct rec_probes *p, const struct rec_probe_fn *fn,
					   int k)
{
	struct perf_event_attr a = fn->attr[k];

	if (fn->tp_id[k])
		rec_probe_tp_attr(&a, fn->tp_id[k], p->per_task);
	return a;
}

void rec_probe_tp_attr(struct perf_event_attr *a, uint64_t tp_id, int per_task)
{
	a->type = PERF_TYPE_TRACEPOINT;
	a->config = tp_id;
	a->config1 = 0;
	a->config2 = 0;
	a->inherit = per_task;
}

const char *rec_probe_open_hint(int e)
{
	if (e == EACCES || e == EPERM)
		return "uprobes need root or CAP_PERFMON (CAP_SYS_ADMIN before Linux 5.8)";
	if (e == EINVAL)
		return "the kernel refused the offset: check that the file is the one that runs";
	return "see 'xptrace info' for what this machine supports";
}

void rec_probe_attr_retval(struct perf_event_attr *a)
{
	a->sample_type |= PERF_SAMPLE_REGS_USER;
	a->sample_regs_user |= x86_perf_regs_retval_mask();
}

/* The attrs of a probe from the mode's sampling attr. */
void rec_probe_fn_attr_fill(const struct rec_probes *p, struct rec_probe_fn *fn)
{
	const struct perf_event_attr *leader = &p->leader;

	for (int k = 0; k < 2; k++) {
		struct perf_event_attr *a = &fn->attr[k];

		/* cpu-wide (rec_probes_open): no task to inherit or to enable on exec;
		 * opened disabled, enabled once every cpu has them */
		a->disabled = 1;
		a->inherit = 0;
		a->enable_on_exec = 0;
		/* hits are taken in user mode; perf then expects no kernel samples */
		a->exclude_kernel = 1;
		a->exclude_hv = 1;
		a->sample_id_all = leader->sample_id_all;
		/* one clock for the whole file, and the kernel only shares a buffer
		 * between events of one clock */
		a->use_clockid = leader->use_clockid;
		a->clockid = leader->clockid;
		if (p->chain)
			rec_attr_callgraph(a, p->o);
		if (k)
			rec_probe_attr_retval(a);
	}
}

int rec_probes_fn_attrs(struct rec_probes *p, struct rec *r, struct rec_probe_fn *fn)
{
	rec_probe_fn_attr_fill(p, fn);
	for (int k = 0; k < 2; k++) {
		struct perf_event_attr file = fn->attr[k];
		char name[600];

		/* config1 points into xptrace's memory: meaningless in the file */
		file.config1 = 0;
		snprintf(name, sizeof(name), PROBE_GROUP ":%s%s", fn->name, k ? "__return" : "");
		fn->idx[k] = pd_writer_add_attr(r->w, &file, name);
		if (fn->idx[k] < 0)
			return fn->idx[k];
	}
	return 0;
}

/* One step of the kernel's part: the tracefs definition of probe fn's event k, or the
 * opening of that event on one cpu for one thread. */
struct arm_op {
	int fn, k, define;
	char ev[64];		/* define: the event's name */
	const char *path;	/* define: the file (fn->path, which never moves) */
	uint64_t offset;
	uint64_t tp_id;		/* define: its id */
	pid_t tid;		/* open: the thread, -1 every task */
	struct rec_probe_tgt tgt;
	struct perf_event_attr a;
	int fd;			/* open: -1 until opened */
	uint64_t id;
	int err;		/* errno of the step that failed, 0 */
	const char *step;	/* that step */
};

/* An event of the batch opened, its id for perf.data once the batch is complete. */
struct arm_id {
	int fn, k, cpu;
	uint64_t id;
};

struct rec_probe_arming {
	pthread_t th;
	int running;		/* ops handed out and not taken back */
	int joinable;		/* they run on th (else they ran in place) */
	_Atomic int done;
	const char *tfs, *group;	/* p's, which never move */
	int per_task;
	struct arm_op *ops;
	size_t nops, capops;
	struct arm_id *ids;
	size_t nids, capids;
	int passes;		/* opening passes of the batch */
	struct xp_map seen;	/* per task: the threads the batch is opened on */
};

static void run_op(const char *tfs, const char *group, struct arm_op *op)
{
	long fd;

	if (op->define) {
		op->step = "define";
		op->err = -rec_tfs_define(tfs, group, op->ev, op->k, op->path, op->offset, &op->tp_id);
		return;
	}
	op->step = "open";
	fd = rec_perf_open(&op->a, op->tid, op->tgt.cpu, -1);
	if (fd < 0) {
		op->err = errno;
		return;
	}
	op->fd = (int)fd;
	op->step = "id";
	if (ioctl(op->fd, PERF_EVENT_IOC_ID, &op->id) < 0) {
		op->err = errno;
		return;
	}
	op->step = "output";
	if (ioctl(op->fd, PERF_EVENT_IOC_SET_OUTPUT, op->tgt.ring_fd) < 0)
		op->err = errno;
}

/* A thread that ended before its event was opened is no failure. */
static int gone(const struct arm_op *op)
{
	return !op->define && op->err == ESRCH && op->tid > 0 && op->fd < 0;
}

static void *arm_thread(void *arg)
{
	struct rec_probe_arming *a = arg;

	for (size_t i = 0; i < a->nops; i++) {
		const struct arm_op *op = &a->ops[i];

		run_op(a->tfs, a->group, &a->ops[i]);
		if (op->err && !gone(op))
			break;	/* the rest is not run: reported once taken */
		/* the event's openings, queued after it, open what it defined */
		for (size_t j = i + 1; op->define && j < a->nops; j++)
			if (!a->ops[j].define && a->ops[j].fn == op->fn && a->ops[j].k == op->k)
				rec_probe_tp_attr(&a->ops[j].a, op->tp_id, a->per_task);
	}
	atomic_store(&a->done, 1);
	return NULL;
}

static struct arm_op open_op(const struct rec_probes *p, int i, int k,
			     const struct rec_probe_tgt *t, pid_t tid)
{
	return (struct arm_op){ .fn = i, .k = k, .tid = tid, .tgt = *t,
				.a = rec_probe_live_attr(p, &p->fn[i], k), .fd = -1 };
}

static int fn_add_fd(struct rec_probe_fn *fn, int fd)
{
	if (XP_GROW(fn->fds, fn->capfds, (size_t)fn->nfds + 1) < 0)
		return -ENOMEM;
	fn->fds[fn->nfds++] = fd;
	return 0;
}

/* The failure of op, reported. */
static int op_error(const struct rec_probes *p, const struct arm_op *op)
{
	const struct rec_probe_fn *fn = &p->fn[op->fn];
	const char *what = op->k ? "return" : "entry";

	if (op->define)
		return xp_err("--adaptive", "check 'xptrace info'", "cannot define the %s probe "
			      "on %s in %s in %s: %s", what, fn->name, fn->path, p->tfs,
			      strerror(op->err));
	if (strcmp(op->step, "open") == 0)
		return xp_err("--probe", rec_probe_open_hint(op->err), "cannot place the %s probe "
			      "on %s in %s (cpu %d): %s", what, fn->name, fn->path, op->tgt.cpu,
			      strerror(op->err));
	if (strcmp(op->step, "id") == 0)
		return xp_err("read the event id", NULL, "%s", strerror(op->err));
	return xp_err("share the sample buffer", NULL, "probe %s, cpu %d: %s", fn->name,
		      op->tgt.cpu, strerror(op->err));
}

/* An opened event becomes probe fn's: closed with it, and its hits known by id.  Its
 * id goes into perf.data now (a NULL), else once a's batch is complete. */
static int take_open(struct rec_probes *p, struct rec *r, const struct arm_op *op,
		     struct rec_probe_arming *a)
{
	struct rec_probe_fn *fn = &p->fn[op->fn];
	uint64_t owner = op->tid > 0 ? (uint64_t)op->tid : 0;
	int e;

	if (op->fd >= 0 && (e = fn_add_fd(fn, op->fd)) < 0) {
		close(op->fd);
		return e;
	}
	if (gone(op))
		return 0;
	if (op->err)
		return op_error(p, op);
	if (op->fd < 0)
		return 0;	/* not run: an earlier op failed */
	if (!a)
		pd_writer_add_id(r->w, fn->idx[op->k], op->id, op->tgt.cpu, -1);
	else if (XP_GROW(a->ids, a->capids, a->nids + 1) == 0)
		a->ids[a->nids++] = (struct arm_id){ op->fn, op->k, op->tgt.cpu, op->id };
	else
		return -ENOMEM;
	return xp_map_put(&p->ids, op->id, owner << 32 | ((uint64_t)op->fn * 2 + (uint64_t)op->k));
}

/* Opens probe i's events on one cpu, disabled, for thread tid (and what it starts)
 * or every task (-1), now. */
static int fn_open(struct rec_probes *p, struct rec *r, int i, const struct rec_probe_tgt *t,
		   pid_t tid)
{
	for (int k = 0; k < 2; k++) {
		struct arm_op op = open_op(p, i, k, t, tid);
		int e;

		run_op(NULL, NULL, &op);
		if ((e = take_open(p, r, &op, NULL)) < 0)
			return e;
		if (gone(&op))
			return 0;
	}
	/* No kernel hit limit (PERF_EVENT_IOC_REFRESH): a cpu-wide event counts the hits
	 * of every process running the probed code, which would stop it for the target
	 * too; the collector keeps --probe-limit and disarms. */
	return 0;
}

/* Adds to *tids the threads of process pid not in `seen` (and puts them there). */
static int proc_threads(pid_t pid, struct xp_map *seen, pid_t **tids, size_t *n, size_t *cap)
{
	char dir[64];
	struct dirent *d;
	DIR *td;
	int e = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
	if (!(td = opendir(dir)))
		return 0;	/* ended */
	while (e == 0 && (d = readdir(td))) {
		pid_t tid = (pid_t)atoi(d->d_name);
		if (tid <= 0 || xp_map_get(seen, (uint64_t)tid, NULL))
			continue;
		if ((e = xp_map_put(seen, (uint64_t)tid, 1)) < 0 ||
		    (e = XP_GROW(*tids, *cap, *n + 1)) < 0)
			break;
		(*tids)[(*n)++] = tid;
	}
	closedir(td);
	return e;
}

/* The threads of the target's tree (its processes: those the sampling event's FORK
 * records, or hits, put in it, and the descendants in /proc) not in `seen`.  A thread
 * cloned by one whose event was not open yet has no copy of it, so openings go on
 * until a scan finds no new thread; one cloned by a thread that had it holds an
 * inherited copy, and gets its own event too: rec_probes_hit keeps one hit per call. */
static int tree_threads(struct rec_probes *p, struct xp_map *seen, pid_t **tids, size_t *n,
			size_t *cap)
{
	uint64_t pid, v;
	size_t it = 0;
	int e;

	*n = 0;
	rec_probes_scan_tree(p);
	e = proc_threads(p->root, seen, tids, n, cap);
	while (e == 0 && xp_map_next(&p->procs, &it, &pid, &v))
		if (v == 1 && (pid_t)pid != p->root)
			e = proc_threads((pid_t)pid, seen, tids, n, cap);
	return e;
}

/* Opens probe i, now, on every thread of the target's tree, on the cpus from tfrom on. */
static int open_tree(struct rec_probes *p, struct rec *r, int i, int tfrom)
{
	struct xp_map seen = { 0 };
	pid_t *tids = NULL;
	size_t n = 1, cap = 0;
	int e = 0;

	while (e == 0 && n && (e = tree_threads(p, &seen, &tids, &n, &cap)) == 0)
		for (size_t j = 0; e == 0 && j < n; j++)
			for (int t = tfrom; e == 0 && t < p->ntgt; t++)
				e = fn_open(p, r, i, &p->tgt[t], tids[j]);
	free(tids);
	xp_map_free(&seen);
	return e;
}

int rec_probes_open(struct rec_probes *p, struct rec *r, int cpu, int ring_fd)
{
	struct rec_probe_tgt t = { cpu, ring_fd };
	int e;

	if (!p)
		return 0;
	for (int i = 0; i < p->ntgt; i++)
		if (p->tgt[i].cpu == cpu)
			return 0;	/* opened with the cpu's first thread */
	if (XP_GROW(p->tgt, p->captgt, (size_t)p->ntgt + 1) < 0)
		return -ENOMEM;
	p->tgt[p->ntgt++] = t;
	for (int i = 0; i < p->nfn; i++) {
		e = p->per_task ? open_tree(p, r, i, p->ntgt - 1) : fn_open(p, r, i, &t, -1);
		if (e < 0)
			return e;
	}
	return 0;
}

/* Enables (or disables) every event of fn, the returns first.  A return is recorded
 * only by a return event enabled on the cpu where the call returns, and enabling each
 * event as it was opened once let a window's entries run for tens of ms before its
 * return events existed (2091 entries, 130 returns).  fds hold each cpu's entry, then
 * its return. */
void rec_probe_fn_enable(struct rec_probe_fn *fn, int on)
{
	unsigned long req = on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE;

	/* off: the entries first, so that calls in flight still return into the file */
	for (int k = on; k < fn->nfds; k += 2)
		ioctl(fn->fds[k], req, 0);
	for (int k = !on; k < fn->nfds; k += 2)
		ioctl(fn->fds[k], req, 0);
}

static int push(struct rec_probe_arming *a, struct arm_op op)
{
	if (XP_GROW(a->ops, a->capops, a->nops + 1) < 0)
		return -ENOMEM;
	a->ops[a->nops++] = op;
	return 0;
}

/* The batch's next openings: every thread of the tree the batch is not opened on yet
 * (per task), or every cpu once (cpu-wide). */
static int queue_opens(struct rec_probes *p, struct rec_probe_arming *a)
{
	pid_t *tids = NULL, all = -1;
	size_t n = 0, cap = 0;
	int e = 0;

	if (p->per_task)
		e = tree_threads(p, &a->seen, &tids, &n, &cap);
	else if (a->passes == 0)
		n = 1;
	a->passes++;
	for (size_t j = 0; e == 0 && j < n; j++)
		for (int t = 0; t < p->ntgt; t++)
			for (int i = 0; e == 0 && i < p->nfn; i++)
				for (int k = 0; e == 0 && p->fn[i].arming == 2 && k < 2; k++)
					e = push(a, open_op(p, i, k, &p->tgt[t], tids ? tids[j] : all));
	free(tids);
	return e;
}

/* The batch's definitions in tracefs, for its probes not defined yet, before their
 * openings. */
static int queue_defines(struct rec_probes *p, struct rec_probe_arming *a)
{
	int e = 0;

	for (int i = 0; e == 0 && p->tfs[0] && i < p->nfn; i++) {
		const struct rec_probe_fn *fn = &p->fn[i];
		for (int k = 0; e == 0 && fn->arming == 2 && k < 2; k++) {
			struct arm_op op = { .fn = i, .k = k, .define = 1, .path = fn->path,
					     .offset = fn->offset, .fd = -1 };
			if (fn->tp_id[k])
				continue;
			rec_tfs_event_name(op.ev, sizeof(op.ev), fn->name, i, k);
			e = push(a, op);
		}
	}
	return e;
}

static void start(struct rec_probe_arming *a)
{
	sigset_t all, old;

	atomic_store(&a->done, 0);
	a->running = 1;
	/* signals stay the collector's (its ppoll waits for them) */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	a->joinable = pthread_create(&a->th, NULL, arm_thread, a) == 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (!a->joinable)
		arm_thread(a);	/* no thread: the collector waits, as it did before */
}

/* Takes what the thread did: definitions' ids, opened events. */
static void join(struct rec_probe_arming *a)
{
	if (a->joinable)
		pthread_join(a->th, NULL);
	a->joinable = 0;
	a->running = 0;
}

static int take(struct rec_probes *p, struct rec *r, struct rec_probe_arming *a)
{
	int e = 0, e1;

	join(a);
	for (size_t i = 0; i < a->nops; i++) {
		struct arm_op *op = &a->ops[i];

		if (op->define && !op->err && op->tp_id)
			p->fn[op->fn].tp_id[op->k] = op->tp_id;
		else if (op->define && op->err && e == 0)
			e = op_error(p, op);
		else if (!op->define && (e1 = take_open(p, r, op, a)) < 0 && e == 0)
			e = e1;
	}
	a->nops = 0;
	return e;
}

/* The batch's probes armed: their attrs and ids in perf.data, their events enabled,
 * their windows begun now. */
static int complete(struct rec_probes *p, struct rec *r, struct rec_probe_arming *a)
{
	uint64_t t;
	int e = 0;

	for (int i = 0; e == 0 && i < p->nfn; i++)
		if (p->fn[i].arming == 2 && p->fn[i].idx[0] < 0)
			e = rec_probes_fn_attrs(p, r, &p->fn[i]);
	for (size_t j = 0; e == 0 && j < a->nids; j++)
		pd_writer_add_id(r->w, p->fn[a->ids[j].fn].idx[a->ids[j].k], a->ids[j].id,
				 a->ids[j].cpu, -1);
	a->nids = 0;
	a->passes = 0;
	xp_map_free(&a->seen);
	if (e < 0)
		return e;
	for (int i = 0; i < p->nfn; i++)
		if (p->fn[i].arming == 2)
			rec_probe_fn_enable(&p->fn[i], 1);
	/* once every event is enabled: the window's counts are exact from here, and the
	 * hits before it are dropped (rec_probes_hit) */
	t = xp_now_ns();
	for (int i = 0; i < p->nfn; i++) {
		if (p->fn[i].arming != 2)
			continue;
		rec_probes_window_begin(p, i, t);
		p->fn[i].arming = 0;
	}
	return 0;
}

int rec_probes_arm_step(struct rec_probes *p, struct rec *r)
{
	struct rec_probe_arming *a = p->arming;
	int e, queued = 0;

	if (a && a->running) {
		if (!atomic_load(&a->done))
			return 1;
		if ((e = take(p, r, a)) < 0 || (e = queue_opens(p, a)) < 0)
			return e;
	} else {
		for (int i = 0; i < p->nfn; i++)
			queued += p->fn[i].arming != 0;
		if (!queued)
			return 0;
		if (!a && !(a = p->arming = calloc(1, sizeof(*a))))
			return -ENOMEM;
		a->tfs = p->tfs;
		a->group = p->group;
		a->per_task = p->per_task;
		for (int i = 0; i < p->nfn; i++)
			if (p->fn[i].arming)
				p->fn[i].arming = 2;
		if ((e = queue_defines(p, a)) < 0 || (e = queue_opens(p, a)) < 0)
			return e;
	}
	if (!a->nops)
		return (e = complete(p, r, a)) < 0 ? e : 2;
	start(a);
	return 1;
}

void rec_probes_arm_finish(struct rec_probes *p, struct rec *r)
{
	struct rec_probe_arming *a = p->arming;

	/* the target has ended: the events opened are enabled for nothing, but the
	 * window says when they were */
	if (a && a->running && take(p, r, a) == 0)
		complete(p, r, a);
}

void rec_probes_arm_free(struct rec_probes *p)
{
	struct rec_probe_arming *a = p->arming;

	if (!a)
		return;
	join(a);
	for (size_t i = 0; i < a->nops; i++)
		if (a->ops[i].fd >= 0)
			close(a->ops[i].fd);
	for (size_t i = 0; i < a->nops; i++)
		if (a->ops[i].define && a->ops[i].tp_id)
			p->fn[a->ops[i].fn].tp_id[a->ops[i].k] = a->ops[i].tp_id;
	free(a->ops);
	free(a->ids);
	xp_map_free(&a->seen);
	free(a);
	p->arming = NULL;
}
