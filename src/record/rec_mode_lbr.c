/* Branch-stack collector (--mode lbr): cycles (or the first -e event) sampled with
 * PERF_SAMPLE_BRANCH_STACK, one event per CPU like the sample mode (pid = the command
 * with inherit, the threads of -p, or -1 with -a), each with its data ring.
 *
 * The kernel decides what the branch stack is: Intel LBR (any event, frequency or
 * period), AMD LbrExtV2 (Zen 4) likewise, AMD BRS (Zen 3) only on the "retired taken
 * branches" event in period mode, so on an AMD part a refused cycles event is retried
 * that way.  HW_INDEX (Linux 5.7+) is asked for and dropped when the kernel does not
 * know it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "record/rec.h"
#include "record/rec_rings.h"
#include "record/rec_pfm.h"
#include "record/rec_probe.h"
#include "record/ring.h"
#include "record/hw/x86_lbr_attr.h"
#include "util/xp_err.h"

/* AMD "ex_ret_brn_tkn": the event BRS samples. */
#define AMD_RETIRED_TAKEN_BRANCHES 0xc4
#define AMD_BRS_PERIOD 100003

struct lbr_col {
	struct x86_lbr_info info;
	struct x86_lbr_cfg cfg;
	struct perf_event_attr attr;
	char name[64];
	struct rec_ring *rings;
	int nrings;
	int *fds;
	int nfds;
};

static int build(struct lbr_col *c, const struct rec_opts *o, char *why, size_t whylen)
{
	int rc = x86_lbr_probe(o->sysfs_root, &c->info, why, whylen);

	if (rc)
		return rc;
	memset(&c->cfg, 0, sizeof(c->cfg));
	c->cfg.user = o->user;
	c->cfg.kernel = o->kernel;
	c->cfg.call_stack = o->callgraph == REC_CG_LBR;
	c->cfg.hw_index = 1;
	c->cfg.period = o->period;
	c->cfg.freq = o->freq;
	snprintf(c->name, sizeof(c->name), "cycles");
	if (o->events) {
		struct perf_event_attr ev;
		char first[64];
		size_t n = strcspn(o->events, ",");

		snprintf(first, sizeof(first), "%.*s", (int)n, o->events);
		memset(&ev, 0, sizeof(ev));
		if (rec_pfm_encode(first, &ev, sizeof(ev), why, whylen) < 0)
			return -EINVAL;
		c->cfg.has_event = 1;
		c->cfg.ev_type = ev.type;
		c->cfg.ev_config = ev.config;
		snprintf(c->name, sizeof(c->name), "%s", first);
	}
	return x86_lbr_attr(&c->info, &c->cfg, &c->attr, why, whylen);
}

/* Opens the attr on (pid, cpu), settling HW_INDEX and the AMD BRS form on the first. */
static int open_settled(struct lbr_col *c, pid_t pid, int cpu, char *why, size_t whylen)
{
	int fd = (int)rec_perf_open(&c->attr, pid, cpu, -1);

	if (fd < 0 && (errno == EINVAL || errno == EOPNOTSUPP) && c->cfg.hw_index) {
		c->cfg.hw_index = 0;
		if (x86_lbr_attr(&c->info, &c->cfg, &c->attr, why, whylen) == 0)
			fd = (int)rec_perf_open(&c->attr, pid, cpu, -1);
	}
	if (fd < 0 && errno == EINVAL && !c->info.intel && !c->cfg.has_event) {
		c->cfg.has_event = 1;
		c->cfg.ev_type = PERF_TYPE_RAW;
		c->cfg.ev_config = AMD_RETIRED_TAKEN_BRANCHES;
		c->cfg.period = c->cfg.period ? c->cfg.period : AMD_BRS_PERIOD;
		if (x86_lbr_attr(&c->info, &c->cfg, &c->attr, why, whylen) == 0)
			fd = (int)rec_perf_open(&c->attr, pid, cpu, -1);
		if (fd >= 0)
			snprintf(c->name, sizeof(c->name), "ex_ret_brn_tkn");
	}
	if (fd < 0) {
		int e = errno;	/* the probe reports it */
		snprintf(why, whylen, "the %s PMU lists a %u-entry branch stack but perf_event_open "
			 "with PERF_SAMPLE_BRANCH_STACK fails: %s", c->info.pmu, c->info.depth,
			 strerror(e));
		errno = e;
	}
	return fd;
}

static int probe(const struct rec_opts *o, int *open_err, char *why, size_t whylen)
{
	struct lbr_col c;
	int fd;

	memset(&c, 0, sizeof(c));
	if (build(&c, o, why, whylen))
		return -ENOENT;
	fd = open_settled(&c, 0, -1, why, whylen);
	if (fd < 0) {
		*open_err = errno;
		return -ENOENT;
	}
	close(fd);
	return 0;
}

static int open_all(struct lbr_col *c, struct rec *r, const pid_t *pids, int npids,
		    const int *cpus, int ncpus, int enable_on_exec)
{
	char why[512];
	int idx = -1;

	c->rings = calloc((size_t)ncpus, sizeof(*c->rings));
	c->fds = calloc((size_t)(ncpus * npids), sizeof(*c->fds));
	if (!c->rings || !c->fds)
		return -ENOMEM;
	for (int k = 0; k < ncpus; k++) {
		int ring_fd = -1, e;

		for (int p = 0; p < npids; p++) {
			uint64_t id;
			int fd;

			c->attr.enable_on_exec = enable_on_exec;
			c->attr.inherit = pids[p] > 0 && enable_on_exec;
			fd = open_settled(c, pids[p], cpus[k], why, sizeof(why));
			if (fd < 0)
				return xp_err("open the branch-stack event", "try --mode sample", "cpu %d: %s",
					      cpus[k], why),
				       -EIO;
			if (idx < 0) {
				idx = pd_writer_add_attr(r->w, &c->attr, c->name);
				e = idx < 0 ? idx : rec_probes_add_attrs(r->probes, r, &c->attr);
				if (e < 0) {
					close(fd);
					return e;
				}
			}
			c->fds[c->nfds++] = fd;
			if (ioctl(fd, PERF_EVENT_IOC_ID, &id) == 0) {
				pd_writer_add_id(r->w, idx, id, cpus[k], pids[p]);
				if (c->nfds == 1)
					rec_set_sample_layout(r, &c->attr, id);
			}
			if (ring_fd < 0)
				ring_fd = fd;
			else if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) < 0)
				return xp_err("share the cpu's buffer", NULL, "cpu %d: %s", cpus[k],
					      strerror(errno)),
				       -errno;
			if ((e = rec_probes_open(r->probes, r, cpus[k], ring_fd)) < 0)
				return e;
		}
		if ((e = rec_ring_map(&c->rings[c->nrings], ring_fd, cpus[k], 128)) < 0)
			return xp_err("map the sample buffer", "run as root or raise "
				      "/proc/sys/kernel/perf_event_mlock_kb", "cpu %d: %s", cpus[k],
				      strerror(-e)),
			       e;
		c->nrings++;
	}
	return 0;
}

static int run(struct rec *r)
{
	const struct rec_opts *o = r->opts;
	struct lbr_col c;
	pid_t *pids = NULL;
	int npids, *cpus = NULL, ncpus, e;
	char why[512];

	memset(&c, 0, sizeof(c));
	if (build(&c, o, why, sizeof(why)))
		return xp_err("record --mode lbr", NULL, "%s", why);
	npids = rec_targets(r, o->all_cpus, &cpus, &ncpus, &pids);
	if (npids < 0)
		return npids;
	/* The branch stack is in every sample; perf marks such files for its branch views. */
	pd_writer_feature(r->w, PD_FEAT_BRANCH_STACK, "", 0);
	e = open_all(&c, r, pids, npids, cpus, ncpus, !o->pid && !o->all_cpus);
	snprintf(r->sampled, sizeof(r->sampled), "%s", c.name);
	if (e == 0 && o->verbose && !o->quiet)
		xp_warn("sampling %s with %u-entry branch stacks (%s%s)", c.name, c.info.depth,
			c.cfg.call_stack ? "call-stack mode" : "any branch",
			c.cfg.hw_index ? ", hw_index" : "");
	if (e == 0 && o->pid) {
		e = rec_synthesize(r, o->pid);
		if (e < 0)
			xp_err("read the target's threads and mappings", NULL, "%s", strerror(-e));
	}
	for (int i = 0; e == 0 && (o->pid || o->all_cpus) && i < c.nfds; i++)
		ioctl(c.fds[i], PERF_EVENT_IOC_ENABLE, 0);
	if (e == 0 && (o->pid || o->all_cpus))
		rec_started(r);
	if (e == 0)
		rec_probes_enable(r->probes, 1);
	e = rec_rings_run(r, c.rings, c.nrings, c.fds, c.nfds, e);
	free(c.rings);
	free(c.fds);
	free(pids);
	free(cpus);
	return e;
}

const struct rec_mode rec_mode_lbr = {
	.name = "lbr",
	.summary = "cycles sampled with LBR/BRS branch stacks: hot paths and basic-block counts",
	.probe = probe,
	.run = run,
};
