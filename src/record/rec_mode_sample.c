/* Sampling collector (--mode sample): counter or cpu-clock samples with optional
 * callchains, sideband (mmap2 + build-ids, comm, task, context switches), one data ring
 * per CPU.  Following a process tree needs inherited events; the kernel refuses to mmap
 * an inherited per-task event with cpu == -1, so like perf we open one event per CPU
 * with pid = target and inherit = 1, and start the command only once they exist. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "record/rec.h"
#include "record/rec_rings.h"
#include "probe/pmu.h"
#include "record/rec_events.h"
#include "record/rec_pfm.h"
#include "record/rec_probe.h"
#include "record/ring.h"
#include "record/hw/x86_attr.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

#define MAX_EVENTS 8

struct ev {
	struct perf_event_attr attr;
	char name[96];		/* what the user asked for */
	char why[256];		/* why it was replaced / dropped ("" when used as asked) */
	int dropped;
};

struct sample_col {
	struct ev ev[MAX_EVENTS];
	int nev;
	int *fds;		/* every opened fd */
	int nfds, capfds;
	struct rec_ring *rings;
	int nrings;
	size_t ring_pages;	/* data pages per ring */
	uint64_t freq;		/* samples per second, when no -c */
	/* --off-cpu: context-switches, a sample each time a thread leaves its CPU (its
	 * attr index in the file; -1: not recorded) */
	struct perf_event_attr offcpu;
	int offcpu_idx;
};

static int encode_event(const char *name, struct perf_event_attr *a, char *why, size_t whylen)
{
	if (rec_event_generic(name, a) == 0)
		return 0;
	return rec_pfm_encode(name, a, sizeof(*a), why, whylen);
}

static void cpu_clock_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CPU_CLOCK;
	a->size = sizeof(*a);
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
}

/* -u/-k: which code is sampled (user only unless -k); kernel samples carry the
 * kernel's part of the callchain too. */
static void privilege(struct perf_event_attr *a, const struct rec_opts *o)
{
	bool kernel = o->kernel, user = o->user || !o->kernel;

	a->exclude_kernel = !kernel;
	a->exclude_user = !user;
	a->exclude_hv = 1;
}

/* A machine without a core PMU (our VMs) knows no hardware event names at all. */
static int has_core_pmu(const char *sysfs_root)
{
	struct pmu p;

	if (pmu_read(sysfs_root, "cpu", &p) < 0)
		return 0;
	pmu_free(&p);
	return 1;
}

/* Registers every libpfm4 event name of the -e list (user-level only).  A name this
 * machine cannot know because it has no PMU is not a typo: it is replaced (leader) or
 * dropped (member) like an event that does not open, with the reason. */
static int parse_events(struct sample_col *c, const struct rec_opts *o, const char *list)
{
	char *dup = strdup(list), *s, *tok;
	int r = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &s); tok && r == 0; tok = strtok_r(NULL, ",", &s)) {
		struct ev *e;
		char why[128];

		if (c->nev == MAX_EVENTS) {
			r = xp_err("events", "pass at most 8 events", "too many events in '%s'", list);
			break;
		}
		e = &c->ev[c->nev];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", tok);
		if (encode_event(tok, &e->attr, why, sizeof(why)) < 0) {
			if (has_core_pmu(o->sysfs_root)) {
				r = xp_err("events", "list names with 'perf list' or libpfm4's showevtinfo",
					   "unknown event '%s': %s", tok, why);
				break;
			}
			snprintf(e->why, sizeof(e->why),
				 "%.60s is unknown here (libpfm4: %.100s): no hardware PMU", tok, why);
			if (c->nev == 0)
				cpu_clock_attr(&e->attr);
			else
				e->dropped = 1;
		}
		e->attr.size = sizeof(e->attr);
		privilege(&e->attr, o);
		unsigned mods = rec_event_mods(tok);
		if (mods) {	/* :u, :k on the name: as perf, for this event */
			e->attr.exclude_user = !(mods & REC_EV_U);
			e->attr.exclude_kernel = !(mods & REC_EV_K);
		}
		c->nev++;
	}
	free(dup);
	return r;
}

int rec_events_check(const char *list, const char *sysfs_root, char *bad, size_t badlen)
{
	char *dup = strdup(list), *s, *tok;
	int r = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &s); tok && r == 0; tok = strtok_r(NULL, ",", &s)) {
		struct perf_event_attr a;
		char why[128];

		if (encode_event(tok, &a, why, sizeof(why)) == 0)
			continue;
		/* named like a real event of hardware this machine has no PMU for: replaced
		 * or dropped with the reason, as an event that does not open */
		if (!has_core_pmu(sysfs_root) && rec_pfm_known_anywhere(tok))
			continue;
		snprintf(bad, badlen, "%s", tok);
		r = -EINVAL;
	}
	if (!rec_events_syntax_ok(list)) {
		snprintf(bad, badlen, "%s", list);
		r = -EINVAL;
	}
	free(dup);
	return r;
}

int rec_events_ungroup(char *list)
{
	char *close = strrchr(list, '}');
	size_t n;

	if (!strchr(list, '{') && !close)
		return 0;
	if (list[0] != '{' || !close || strchr(list + 1, '{') || strchr(list, '}') != close ||
	    (close[1] && strcmp(close + 1, ":S") != 0))
		return -EINVAL;
	n = (size_t)(close - list) - 1;
	memmove(list, list + 1, n);
	list[n] = 0;
	return 0;
}

static void set_sampling(struct perf_event_attr *a, const struct rec_opts *o, uint64_t freq,
			 int group)
{
	a->disabled = 1;
	a->inherit = 1;
	/* -a: every process on the CPUs, enabled once the sideband is written */
	a->enable_on_exec = o->pid == 0 && !o->all_cpus;
	if (o->period) {
		a->sample_period = o->period;
	} else {
		a->freq = 1;
		a->sample_freq = freq;
	}
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	rec_attr_callgraph(a, o);
	if (!a->exclude_kernel)	/* -k or :k: the kernel's part of the callchain too */
		a->exclude_callchain_kernel = 0;
	a->read_format = PERF_FORMAT_ID;
	if (group) {
		a->sample_type |= PERF_SAMPLE_READ;
		a->read_format |= PERF_FORMAT_GROUP;
	}
	x86_attr_sideband(a);
	a->build_id = 1;
	a->context_switch = 1;
	a->watermark = 1;
	/* the clock of JIT runtimes' jitdump timestamps (perf record -k mono): their
	 * code loads and moves then line up with the samples */
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
}

static void set_member(struct perf_event_attr *a, const struct perf_event_attr *leader)
{
	a->disabled = 0;
	a->inherit = 1;
	a->sample_period = 0;
	a->freq = 0;
	a->sample_type = leader->sample_type;
	a->read_format = leader->read_format;
	a->sample_id_all = 1;
	a->use_clockid = leader->use_clockid;	/* a group has one clock */
	a->clockid = leader->clockid;
}

static int add_fd(struct sample_col *c, int fd)
{
	if (XP_GROW(c->fds, c->capfds, (size_t)c->nfds + 1) < 0)
		return -ENOMEM;
	c->fds[c->nfds++] = fd;
	return 0;
}

/* Tries the leader on one CPU (the events must open, not just encode): a hardware
 * leader that cannot open here becomes cpu-clock; members that cannot open are
 * dropped.  Decides the final event list before anything is recorded. */
static int settle_events(struct sample_col *c, const struct rec_opts *o, pid_t pid, int cpu)
{
	int group = c->nev > 1;
	long fd;

	set_sampling(&c->ev[0].attr, o, c->freq, group);
	fd = rec_perf_open(&c->ev[0].attr, pid, cpu, -1);
	if (fd < 0 && c->ev[0].attr.type != PERF_TYPE_SOFTWARE) {
		int e = errno;
		snprintf(c->ev[0].why, sizeof(c->ev[0].why), "%s cannot be opened here (%s%s)",
			 c->ev[0].name, strerror(e),
			 e == ENOENT || e == EOPNOTSUPP || e == ENODEV ? ": no hardware PMU" : "");
		cpu_clock_attr(&c->ev[0].attr);
		privilege(&c->ev[0].attr, o);
		set_sampling(&c->ev[0].attr, o, c->freq, group);
		fd = rec_perf_open(&c->ev[0].attr, pid, cpu, -1);
	}
	if (fd < 0 && group && errno == EINVAL) {
		/* Older kernels refuse PERF_SAMPLE_READ with inherit: keep the leader only. */
		for (int i = 1; i < c->nev; i++) {
			c->ev[i].dropped = 1;
			snprintf(c->ev[i].why, sizeof(c->ev[i].why),
				 "the kernel cannot read a group in inherited samples");
		}
		group = 0;
		set_sampling(&c->ev[0].attr, o, c->freq, 0);
		fd = rec_perf_open(&c->ev[0].attr, pid, cpu, -1);
	}
	if (fd < 0 && (errno == EACCES || errno == EPERM)) {
		int en = errno, level = -9;
		FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
		if (f) {
			if (fscanf(f, "%d", &level) != 1)
				level = -9;
			fclose(f);
		}
		/* what each level lets an unprivileged user do (perf_event_open(2)) */
		bool kernel = !c->ev[0].attr.exclude_kernel;
		int need = o->all_cpus ? 0 : kernel ? 1 : 2;
		const char *what = o->all_cpus ? "-a/-C (every process on a CPU)" : kernel ?
			"-k or :k (kernel code)" : "sampling a process of yours";
		char hint[200];
		snprintf(hint, sizeof(hint), "run as root (or with CAP_PERFMON), or sysctl "
			 "kernel.perf_event_paranoid=%d%s", need,
			 need < 2 ? "; or record without it" : "");
		return xp_err("open the sampling event", hint, "%s: %s: %s needs kernel.perf_event_paranoid "
			      "%d or less, and it is %d", c->ev[0].name, strerror(en), what, need, level);
	}
	if (fd < 0)
		return xp_err("open the sampling event", "see 'xptrace info' for what this machine supports",
			      "%s: %s", c->ev[0].name, strerror(errno));
	for (int i = 1; i < c->nev; i++) {
		long m;
		if (c->ev[i].dropped)
			continue;
		set_member(&c->ev[i].attr, &c->ev[0].attr);
		m = rec_perf_open(&c->ev[i].attr, pid, cpu, (int)fd);
		if (m < 0) {
			c->ev[i].dropped = 1;
			int en = errno;
			snprintf(c->ev[i].why, sizeof(c->ev[i].why), "cannot be opened here (%s%s)",
				 strerror(en),
				 en == ENOENT || en == EOPNOTSUPP || en == ENODEV ? ": no hardware PMU" : "");
		} else {
			close((int)m);
		}
	}
	close((int)fd);
	/* Compact: dropped members leave the list (the group read follows the kept ones). */
	{
		int k = 1, kept = 1;
		for (int i = 1; i < c->nev; i++)
			kept += !c->ev[i].dropped;
		if (kept == 1 && group) {
			set_sampling(&c->ev[0].attr, o, c->freq, 0);
		}
		for (int i = 1; i < c->nev; i++) {
			if (c->ev[i].dropped && !o->quiet)
				xp_warn("event %s dropped: %s", c->ev[i].name, c->ev[i].why);
			if (!c->ev[i].dropped)
				c->ev[k++] = c->ev[i];
		}
		c->nev = k;
	}
	return 0;
}

/* The events line: with -v, or when -e named an event that was replaced (the leader
 * fell back to cpu-clock); the default event's fallback on a PMU-less machine is the
 * summary's "N cpu-clock samples".  Dropped members are said in settle_events. */
static void print_events(const struct sample_col *c, struct rec *r)
{
	const struct rec_opts *o = r->opts;
	char list[512] = "";
	size_t n = 0;

	for (int i = 0; i < c->nev; i++)
		n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", i ? "," : "",
				      c->ev[i].why[0] ? "cpu-clock" : c->ev[i].name);
	snprintf(r->sampled, sizeof(r->sampled), "%s", c->ev[0].why[0] ? "cpu-clock" : c->ev[0].name);
	if (o->quiet || !(o->verbose || (o->events && c->ev[0].why[0])))
		return;
	if (c->ev[0].why[0])
		xp_warn("events: %s (%s; fell back to cpu-clock)", list, c->ev[0].why);
	else
		xp_warn("events: %s", list);
}

/* Opens the group on every CPU for each of `pids` (one pid = the command's tree; -p =
 * every thread), one ring per CPU shared by all of that CPU's events. */
static int open_all(struct sample_col *c, struct rec *r, const pid_t *pids, int npids,
		    const int *cpus, int ncpus)
{
	int e;

	c->rings = calloc((size_t)ncpus, sizeof(*c->rings));
	if (!c->rings)
		return -ENOMEM;
	for (int ci = 0; ci < ncpus; ci++) {
		int ring_fd = -1;
		for (int pi = 0; pi < npids; pi++) {
			long lfd = rec_perf_open(&c->ev[0].attr, pids[pi], cpus[ci], -1);
			uint64_t id;
			if (lfd < 0) {
				if (errno == ESRCH)
					continue;	/* the thread ended meanwhile */
				return xp_err("open the sampling event", NULL, "%s on cpu %d: %s",
					      c->ev[0].name, cpus[ci], strerror(errno));
			}
			if ((e = add_fd(c, (int)lfd)) < 0)
				return e;
			if (ioctl((int)lfd, PERF_EVENT_IOC_ID, &id) < 0)
				return xp_err("read the event id", NULL, "%s", strerror(errno));
			pd_writer_add_id(r->w, 0, id, cpus[ci], npids > 1 ? pids[pi] : -1);
			if (!r->synth_id)
				rec_set_sample_layout(r, &c->ev[0].attr, id);
			for (int i = 1; i < c->nev; i++) {
				long m = rec_perf_open(&c->ev[i].attr, pids[pi], cpus[ci], (int)lfd);
				if (m < 0)
					return xp_err("open a group event", NULL, "%s on cpu %d: %s",
						      c->ev[i].name, cpus[ci], strerror(errno));
				if ((e = add_fd(c, (int)m)) < 0)
					return e;
				if (ioctl((int)m, PERF_EVENT_IOC_ID, &id) < 0)
					return xp_err("read the event id", NULL, "%s", strerror(errno));
				pd_writer_add_id(r->w, i, id, cpus[ci], npids > 1 ? pids[pi] : -1);
			}
			if (ring_fd < 0) {
				ring_fd = (int)lfd;
				if ((e = rec_ring_map(&c->rings[c->nrings], ring_fd, cpus[ci], c->ring_pages)) < 0)
					return xp_err("map the sample buffer", "raise 'ulimit -l' or perf_event_mlock_kb",
						      "%s", strerror(-e));
				c->nrings++;
			} else if (ioctl((int)lfd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0) {
				return xp_err("share the sample buffer", NULL, "%s", strerror(errno));
			}
			if ((e = rec_probes_open(r->probes, r, cpus[ci], ring_fd)) < 0)
				return e;
			if (c->offcpu_idx >= 0) {
				long t = rec_perf_open(&c->offcpu, pids[pi], cpus[ci], -1);
				if (t < 0)
					return xp_err("open context-switches (--off-cpu)", errno == EACCES ||
						      errno == EPERM ? "run as root (or with CAP_PERFMON), or "
						      "sysctl kernel.perf_event_paranoid=1" : NULL,
						      "cpu %d: %s: it samples in the scheduler, kernel code",
						      cpus[ci], strerror(errno));
				if ((e = add_fd(c, (int)t)) < 0)
					return e;
				if (ioctl((int)t, PERF_EVENT_IOC_ID, &id) < 0 ||
				    ioctl((int)t, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0)
					return xp_err("--off-cpu", NULL, "%s", strerror(errno));
				pd_writer_add_id(r->w, (uint32_t)c->offcpu_idx, id, cpus[ci],
						 npids > 1 ? pids[pi] : -1);
			}
		}
	}
	if (!c->nfds)
		return xp_err("open the sampling event", NULL, "the target has no thread left");
	return 0;
}

/* --off-cpu: the context-switches software event, sampled each time a traced thread
 * leaves its CPU, with its user callchain (where it waits): perf reads it as `-e cs`
 * (a tracepoint would need the tracing-data header perf insists on).  It fires in the
 * scheduler, kernel code: kernel.perf_event_paranoid 1 or root. */
static void offcpu_attr(struct sample_col *c, const struct rec_opts *o)
{
	struct perf_event_attr *a = &c->offcpu;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_CONTEXT_SWITCHES;
	a->sample_period = 1;
	a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			 PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD | PERF_SAMPLE_CALLCHAIN;
	a->exclude_callchain_kernel = !o->kernel;	/* the user code that waits */
	a->exclude_hv = 1;
	a->read_format = PERF_FORMAT_ID;
	a->disabled = 1;
	a->inherit = 1;
	a->enable_on_exec = c->ev[0].attr.enable_on_exec;
	a->sample_id_all = 1;
	a->use_clockid = c->ev[0].attr.use_clockid;
	a->clockid = c->ev[0].attr.clockid;
}

/* The kernel refuses frequencies above perf_event_max_sample_rate (which it also
 * lowers by itself when sampling interrupts take too long) with a bare EINVAL. */
static int check_freq(const struct rec_opts *o, uint64_t *freq)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_max_sample_rate", "re");
	unsigned long long max = 0;
	uint64_t want = o->freq ? o->freq : REC_DEFAULT_FREQ;
	int n;

	*freq = want;
	if (!f)
		return 0;
	n = fscanf(f, "%llu", &max);
	fclose(f);
	if (n != 1 || o->period || want <= max)
		return 0;
	if (!o->freq) {
		if (!o->quiet)
			xp_warn("sampling at %llu Hz, the kernel's current limit "
				"(kernel.perf_event_max_sample_rate)", max);
		*freq = max;
		return 0;
	}
	return xp_err("sampling frequency", "lower -F, or raise kernel.perf_event_max_sample_rate",
		      "-F %llu is above the kernel's limit of %llu Hz", (unsigned long long)want, max);
}

static int run(struct rec *r)
{
	const struct rec_opts *o = r->opts;
	struct sample_col c;
	pid_t *pids = NULL;
	int npids, *cpus = NULL, ncpus, e;

	memset(&c, 0, sizeof(c));
	/* probes on hot functions write a sample per call: room for bursts */
	c.ring_pages = o->callgraph == REC_CG_DWARF || r->probes ? 512 : 128;
	e = check_freq(o, &c.freq);
	if (e < 0)
		return e;
	e = parse_events(&c, o, o->events ? o->events : "cycles");
	if (e < 0)
		return e;
	npids = rec_targets(r, o->all_cpus, &cpus, &ncpus, &pids);
	if (npids < 0)
		return npids;
	{
		/* -p on a process with many threads needs threads x CPUs x events fds. */
		struct rlimit rl;
		rlim_t need = (rlim_t)npids * (rlim_t)ncpus *
			      (MAX_EVENTS + (rlim_t)rec_probes_nevents(r->probes)) + 64;
		if (o->adaptive)	/* probes come and go while recording */
			need = RLIM_INFINITY;
		if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < need) {
			rl.rlim_cur = need < rl.rlim_max ? need : rl.rlim_max;
			setrlimit(RLIMIT_NOFILE, &rl);
		}
	}
	e = settle_events(&c, o, pids[0], cpus[0]);
	if (e == 0) {
		int leader = -1;
		print_events(&c, r);
		for (int i = 0; i < c.nev && e == 0; i++) {
			int idx = pd_writer_add_attr(r->w, &c.ev[i].attr,
						     c.ev[i].why[0] ? "cpu-clock" : c.ev[i].name);
			e = idx < 0 ? idx : 0;
			if (i == 0)
				leader = idx;
		}
		/* the events are one group (the leader samples, the others are read) */
		if (e == 0 && c.nev > 1)
			e = pd_writer_feat_group(r->w, (uint32_t)leader, (uint32_t)c.nev);
	}
	c.offcpu_idx = -1;
	if (e == 0 && o->off_cpu) {
		offcpu_attr(&c, o);
		int idx = pd_writer_add_attr(r->w, &c.offcpu, "context-switches");
		e = idx < 0 ? idx : 0;
		c.offcpu_idx = idx;
	}
	if (e == 0)
		e = rec_probes_add_attrs(r->probes, r, &c.ev[0].attr);
	if (e == 0)
		e = open_all(&c, r, pids, npids, cpus, ncpus);
	if (e == 0 && !c.ev[0].attr.exclude_kernel)
		e = rec_synthesize_kernel(r);
	if (e == 0 && (o->pid || o->all_cpus)) {
		/* -a: the processes running already, as perf record -a writes them */
		e = o->all_cpus ? rec_synthesize_all(r) : rec_synthesize(r, o->pid);
		if (e < 0)
			xp_err("read the target's threads and mappings", NULL, "%s", strerror(-e));
		for (int i = 0; i < c.nfds && e == 0; i++)
			ioctl(c.fds[i], PERF_EVENT_IOC_ENABLE, 0);
	}
	if (e == 0 && (o->pid || o->all_cpus))
		rec_started(r);
	if (e == 0)
		rec_probes_enable(r->probes, 1);
	e = rec_rings_run(r, c.rings, c.nrings, c.fds, c.nfds, e);
	free(c.fds);
	free(c.rings);
	free(pids);
	free(cpus);
	return e;
}

const struct rec_mode rec_mode_sample = {
	.name = "sample",
	.summary = "counter or cpu-clock sampling with callchains (works everywhere)",
	.probe = NULL,
	.run = run,
};
