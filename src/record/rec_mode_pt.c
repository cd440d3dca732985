/* Intel PT collector (--mode pt).
 *
 * One intel_pt event per CPU: pid = the command (inherited by what it forks), every
 * thread of -p PID, or -1 with -a.  Each CPU has one data ring and one AUX area (events
 * of other threads on that CPU send their output there with PERF_EVENT_IOC_SET_OUTPUT),
 * which is what perf does and what makes the file per_cpu_mmaps.  The sideband (mmap2,
 * comm, task, context switches) rides on the PT event itself.
 *
 * Full trace: each pass copies the data rings (rec_record) and the new AUX bytes as
 * PERF_RECORD_AUXTRACE chunks; the kernel never overwrites unread trace but stops and
 * flags the PERF_RECORD_AUX TRUNCATED when we fall behind, which is counted and told.
 * Snapshot: the AUX area is mapped read-only and overwrites; SIGUSR2, the --trigger
 * uprobe, Ctrl-C and the end of the target each disable the events, dump every AUX ring
 * (ring_aux_snapshot) and enable them again. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/rec_probe.h"
#include "record/col_hw.h"
#include "record/col_pt_info.h"
#include "record/col_pt_pump.h"
#include "record/col_trigger.h"
#include "record/rec.h"
#include "record/rec_rings.h"
#include "record/hw/x86_pt_attr.h"
#include "util/xp_err.h"

struct pt_col {
	struct rec *r;
	struct pmu pmu;
	struct x86_pt_cfg cfg;
	struct perf_event_attr attr;
	struct col_pt_ring *cpus;
	int ncpus;
	int *fds;
	int nfds;
	uint64_t data_bytes, aux_bytes;
	struct col_pt_pump pump;
	struct col_trigger trig;
	struct col_hw_counters cnt;
};

static volatile sig_atomic_t dump_requested;

static void on_usr2(int sig)
{
	(void)sig;
	dump_requested = 1;
}

/* Options -> attr; errors reported with the option they came from. */
static int build(struct pt_col *c, const struct rec_opts *o, char *why, size_t whylen)
{
	int rc = x86_pt_probe(o->sysfs_root, &c->pmu, why, whylen);

	if (rc)
		return rc;
	x86_pt_cfg_init(&c->cfg);
	c->cfg.user = o->user;
	c->cfg.kernel = o->kernel;
	if (o->pt_opts && (rc = x86_pt_opts_parse(o->pt_opts, &c->cfg, why, whylen)))
		goto bad;
	if (o->filter && (rc = x86_pt_filter_parse(&c->pmu, o->filter, &c->cfg, why, whylen)))
		goto bad;
	if ((rc = x86_pt_attr(&c->pmu, &c->cfg, &c->attr, why, whylen)))
		goto bad;
	return 0;
bad:
	pmu_free(&c->pmu);
	return rc;
}

static int probe(const struct rec_opts *o, int *open_err, char *why, size_t whylen)
{
	struct pt_col c;
	int rc, fd;

	memset(&c, 0, sizeof(c));
	rc = build(&c, o, why, whylen);
	if (rc)
		return rc;
	/* sysfs can describe a PMU the kernel will not open for us (hypervisor, paranoid
	 * level, a fixture tree): only a real open says yes. */
	fd = (int)rec_perf_open(&c.attr, 0, -1, -1);
	if (fd < 0) {
		*open_err = errno;
		rc = -errno;
	} else {
		close(fd);
	}
	pmu_free(&c.pmu);
	return rc;
}

static void set_enabled(struct pt_col *c, int on)
{
	for (int i = 0; i < c->nfds; i++)
		ioctl(c->fds[i], on ? PERF_EVENT_IOC_ENABLE : PERF_EVENT_IOC_DISABLE, 0);
}

/* Stops tracing so aux_head is final and the buffer stands still, copies every ring,
 * and (unless the recording ends) starts again. */
static int dump(struct pt_col *c, const char *why, int resume)
{
	int e;

	set_enabled(c, 0);
	e = col_pt_snapshot(&c->pump);
	if (!c->r->opts->quiet)
		xp_warn("snapshot %llu taken (%s)", (unsigned long long)c->pump.dumps, why);
	if (resume && e == 0)
		set_enabled(c, 1);
	return e;
}

static int open_cpu(struct pt_col *c, struct col_pt_ring *pc, const pid_t *pids, int npids,
		    int enable_on_exec, int idx)
{
	long page = sysconf(_SC_PAGESIZE);
	struct perf_event_mmap_page *pg;
	uint64_t id;

	c->attr.enable_on_exec = enable_on_exec;
	/* A command is followed into what it forks; -p opens every thread itself. */
	c->attr.inherit = enable_on_exec;
	pc->fd = -1;
	for (int t = 0; t < npids; t++) {
		int fd = (int)rec_perf_open(&c->attr, pids[t], pc->cpu, -1);

		if (fd < 0)
			return xp_err("open the intel_pt event", "try --mode sample",
				      "cpu %d, pid %d: %s", pc->cpu, (int)pids[t], strerror(errno)),
			       -errno;
		c->fds[c->nfds++] = fd;
		if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0)
			pd_writer_add_id(c->r->w, idx, id, pc->cpu, pids[t]);
		if (c->cfg.nfilters && ioctl(fd, PERF_EVENT_IOC_SET_FILTER, c->cfg.filter) < 0)
			return xp_err("set the address filter", "check --filter",
				      "'%s': %s", c->cfg.filter, strerror(errno)),
			       -errno;
		if (pc->fd < 0) {
			pc->fd = fd;
			continue;
		}
		if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, pc->fd) < 0)
			return xp_err("share the cpu's buffers", NULL, "cpu %d: %s", pc->cpu,
				      strerror(errno)),
			       -errno;
	}
	/* probe hits go to the data ring with the sideband */
	{
		int e = rec_probes_open(c->r->probes, c->r, pc->cpu, pc->fd);
		if (e < 0)
			return e;
	}
	pc->len = (size_t)page + c->data_bytes;
	pc->base = mmap(NULL, pc->len, PROT_READ | PROT_WRITE, MAP_SHARED, pc->fd, 0);
	if (pc->base == MAP_FAILED) {
		pc->base = NULL;
		return xp_err("map the data buffer", "lower --aux-size or run as root",
			      "cpu %d: %s", pc->cpu, strerror(errno)),
		       -errno;
	}
	pg = pc->base;
	pg->aux_offset = pc->len;
	pg->aux_size = c->aux_bytes;
	/* Read-only AUX is the kernel's overwrite (snapshot) mode. */
	pc->aux = mmap(NULL, c->aux_bytes, PROT_READ | (c->r->opts->snapshot ? 0 : PROT_WRITE),
		       MAP_SHARED, pc->fd, (off_t)pg->aux_offset);
	if (pc->aux == MAP_FAILED) {
		pc->aux = NULL;
		return xp_err("map the AUX area", "lower --aux-size or run as root", "cpu %d, %llu KiB: %s",
			      pc->cpu, (unsigned long long)(c->aux_bytes >> 10), strerror(errno)),
		       -errno;
	}
	if (col_pt_ring_init(pc, pc->base, c->data_bytes, pc->aux, c->aux_bytes,
			     c->r->opts->snapshot) < 0)
		return xp_err("set up the buffers", NULL, "cpu %d: unexpected sizes", pc->cpu), -EINVAL;
	return 0;
}

static int write_info(struct pt_col *c)
{
	const struct rec_opts *o = c->r->opts;
	struct col_pt_layout l = { .snapshot = o->snapshot, .per_cpu = 1, .cpu_wide = o->all_cpus,
				   .filter = c->cfg.nfilters ? c->cfg.filter : NULL };
	uint64_t words[PD_PT_INFO_WORDS + X86_PT_FILTER_MAX / 8 + 1];
	struct pd_time_conv_event tc;
	const struct perf_event_mmap_page *pg = c->cpus[0].base;
	int cap = 0, n, e;

	n = col_pt_info_words(o->sysfs_root, &c->pmu, &c->attr, pg, &l, words,
			      sizeof(words) / sizeof(words[0]));
	if (n < 0)
		return n;
	e = pd_writer_auxtrace_info(c->r->w, PD_AUXTRACE_INTEL_PT, words, (size_t)n);
	if (e < 0)
		return e;
	memset(&tc, 0, sizeof(tc));
	if (col_pt_time_conv(pg, &tc.time_shift, &tc.time_mult, &tc.time_zero, &cap) == 0) {
		tc.cap_user_time_zero = 1;
		tc.time_cycles = pg->time_cycles;
		tc.time_mask = pg->time_mask;
		tc.cap_user_time_short = pg->cap_user_time_short;
		e = pd_writer_time_conv(c->r->w, &tc);
	} else if (!o->quiet) {
		xp_warn("the kernel gives no TSC conversion: PT timestamps cannot be turned into "
			"perf time");
	}
	return e;
}

static void report(struct pt_col *c)
{
	const struct rec_opts *o = c->r->opts;

	const struct ring_aux_stats *st = &c->pump.st;

	if (st->truncated)
		xp_warn("Intel PT: %llu AUX records were TRUNCATED (the reader fell behind; trace "
			"is missing there: use a larger --aux-size or --snapshot)",
			(unsigned long long)st->truncated);
	if (st->collision || st->partial)
		xp_warn("Intel PT: %llu AUX records flagged partial, %llu collision (the trace has "
			"gaps there)", (unsigned long long)st->partial,
			(unsigned long long)st->collision);
	if (!o->quiet)
		fprintf(stderr, "xptrace: Intel PT: %.2f MB of trace in %llu AUX records%s\n",
			c->pump.aux_written / 1e6, (unsigned long long)st->records,
			o->snapshot ? " (snapshot mode)" : "");
	col_hw_counters_report(&c->cnt, o->quiet);
}

static int setup(struct pt_col *c, pid_t **pids, int *npids)
{
	struct rec *r = c->r;
	const struct rec_opts *o = r->opts;
	int *cpus = NULL, idx, e = 0;
	char why[512];
	uint64_t mlock_kb = 516;

	*npids = rec_targets(r, o->all_cpus, &cpus, &c->ncpus, pids);
	if (*npids < 0)
		return *npids;
	c->cpus = calloc((size_t)c->ncpus, sizeof(*c->cpus));
	c->fds = calloc((size_t)c->ncpus * (size_t)*npids, sizeof(*c->fds));
	if (!c->cpus || !c->fds) {
		free(cpus);
		return -ENOMEM;
	}
	for (int i = 0; i < c->ncpus; i++) {
		c->cpus[i].cpu = cpus[i];
		c->cpus[i].fd = -1;
	}
	free(cpus);

	c->data_bytes = 256 << 10;
	c->aux_bytes = o->aux_size ? o->aux_size : geteuid() == 0 ? 4 << 20 : 128 << 10;
	x86_read_mlock_kb(NULL, &mlock_kb);
	if (x86_pt_check_buffers(c->data_bytes, c->aux_bytes, (unsigned)c->ncpus, (unsigned)c->ncpus,
				 mlock_kb, geteuid() == 0, why, sizeof(why)))
		return xp_err("record --mode pt", "lower --aux-size, or raise "
			      "/proc/sys/kernel/perf_event_mlock_kb, or run as root", "%s", why);

	idx = pd_writer_add_attr(r->w, &c->attr, c->attr.exclude_kernel ? "intel_pt//u" :
				 c->attr.exclude_user ? "intel_pt//k" : "intel_pt//");
	if (idx < 0)
		return idx;
	if ((e = rec_probes_add_attrs(r->probes, r, &c->attr)) < 0)
		return e;
	/* A command is traced from its exec; -p and -a from now. */
	for (int i = 0; e == 0 && i < c->ncpus; i++)
		e = open_cpu(c, &c->cpus[i], *pids, *npids, !o->pid && !o->all_cpus, idx);
	if (e)
		return e;
	{
		uint64_t id = 0;
		ioctl(c->cpus[0].fd, PERF_EVENT_IOC_ID, &id);
		rec_set_sample_layout(r, &c->attr, id);
	}
	c->pump = (struct col_pt_pump){ .r = r, .rings = c->cpus, .n = c->ncpus,
					.snapshot = o->snapshot };
	if ((e = write_info(c)) < 0)
		return xp_err(r->data_path, NULL, "cannot write AUXTRACE_INFO: %s", strerror(-e));
	if (o->events && (e = col_hw_counters_open(&c->cnt, o->events, *pids, *npids,
						   !o->pid && !o->all_cpus)) < 0)
		return e;
	return 0;
}

static int run(struct rec *r)
{
	const struct rec_opts *o = r->opts;
	struct pt_col c;
	pid_t *pids = NULL;
	int npids = 0, e, npfd;
	struct pollfd *pfd = NULL;
	struct sigaction sa, old_usr2;
	char why[512];

	memset(&c, 0, sizeof(c));
	c.r = r;
	c.trig.fd = -1;
	/* rec_mode_resolve() probed the mode already. */
	if (build(&c, o, why, sizeof(why)))
		return xp_err("record --mode pt", NULL, "%s", why);
	e = setup(&c, &pids, &npids);
	if (e == 0 && o->trigger) {
		e = col_trigger_open(&c.trig, o->sysfs_root, o->trigger,
				     o->cmd ? o->cmd[0] : NULL, pids[0] > 0 ? pids[0] : r->target,
				     why, sizeof(why));
		if (e)
			xp_err("--trigger", "give SYM@/path/to/binary", "%s", why);
	}
	if (e == 0 && o->pid) {
		e = rec_synthesize(r, o->pid);
		if (e < 0)
			xp_err("read the target's threads and mappings", NULL, "%s", strerror(-e));
	}
	if (e == 0 && (o->pid || o->all_cpus))
		set_enabled(&c, 1);
	if (e == 0 && (o->pid || o->all_cpus))
		rec_started(r);
	if (e == 0)
		rec_probes_enable(r->probes, 1);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr2;
	sigemptyset(&sa.sa_mask);
	dump_requested = 0;
	sigaction(SIGUSR2, &sa, &old_usr2);
	if (e == 0)
		e = rec_target_go(r);
	npfd = c.ncpus + 1;
	if (e == 0 && !(pfd = calloc((size_t)npfd, sizeof(*pfd))))
		e = -ENOMEM;
	for (int i = 0; e == 0 && i < c.ncpus; i++) {
		pfd[i].fd = c.cpus[i].fd;
		pfd[i].events = POLLIN;
	}
	if (pfd) {
		pfd[c.ncpus].fd = c.trig.fd;
		pfd[c.ncpus].events = POLLIN;
	}
	while (e == 0 && !rec_should_stop(r)) {
		rec_wait(pfd, (unsigned long)npfd, 100);
		e = col_pt_drain(&c.pump);
		if (e == 0 && o->snapshot && dump_requested) {
			dump_requested = 0;
			e = dump(&c, "SIGUSR2", 1);
		}
		if (e == 0 && o->snapshot && col_trigger_hits(&c.trig))
			e = dump(&c, o->trigger, 1);
	}
	set_enabled(&c, 0);
	rec_probes_enable(r->probes, 0);
	col_hw_counters_read(&c.cnt);
	if (!r->write_err) {
		if (o->snapshot)
			dump(&c, rec_stop_requested ? "stopped" : "end of the target", 0);
		else
			col_pt_drain(&c.pump);
	}
	sigaction(SIGUSR2, &old_usr2, NULL);
	if (c.ncpus && c.cpus)
		report(&c);
	for (int i = 0; c.cpus && i < c.ncpus; i++) {
		if (c.cpus[i].aux)
			munmap(c.cpus[i].aux, c.aux_bytes);
		if (c.cpus[i].base)
			munmap(c.cpus[i].base, c.cpus[i].len);
	}
	for (int i = 0; i < c.nfds; i++)
		close(c.fds[i]);
	col_trigger_close(&c.trig);
	col_hw_counters_close(&c.cnt);
	pmu_free(&c.pmu);
	free(c.cpus);
	free(c.fds);
	free(pfd);
	free(pids);
	return e ? e : c.pump.write_err;
}

const struct rec_mode rec_mode_pt = {
	.name = "pt",
	.summary = "Intel PT: every branch, near-zero overhead (Intel CPUs, bare metal or PT passthrough)",
	.probe = probe,
	.run = run,
};
