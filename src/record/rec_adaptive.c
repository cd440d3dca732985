/* `record --adaptive`: ranking sampled functions and arming probes; see rec_adaptive.h. */
#include "record/rec_adaptive.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perfdata/pd_read.h"
#include "record/rec.h"
#include "record/rec_probe.h"
#include "session/sym_find.h"
#include "util/xp_clock.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"
#include "util/xp_maps.h"

#define HOT_MIN_SAMPLES 4
#define HOT_MIN_PERCENT 1
#define CALLER_MIN_PERCENT 10
#define NO_PROBE (-1)
#define CANNOT_PROBE (-2)

struct adp_file {
	char *path;
	struct sym_found *f;	/* sorted by file offset */
	int n;
};

struct adp_map {
	uint64_t start, end, pgoff;
	int file;
};

struct adp_fn {
	int file, sym;
	uint64_t samples;
	int probe;		/* rec_probes index, NO_PROBE yet, or CANNOT_PROBE */
	int level;		/* 0: hot, n: n callers above a hot function */
	int walked;
	unsigned armed_tick;
	/* callers: adp_fn index -> count, from return hits (exact) and from the frame above
	 * in samples (a leaf without a frame of its own shows its caller's caller there) */
	struct xp_map callers[2];
	uint64_t evidence[2];
};

struct rec_adp {
	struct adp_file *files;
	size_t nfiles, capfiles;
	struct adp_map *maps;
	size_t nmaps, capmaps;
	int maps_fresh;		/* reread in this interval */
	struct adp_fn *fn;
	size_t nfn, capfn;
	struct xp_map by_sym;	/* file << 32 | sym -> adp_fn index */
	struct xp_map by_probe;	/* rec_probes index -> adp_fn index */
	uint64_t total;		/* samples of the target */
	uint64_t next_tick;
	unsigned tick;
	uint64_t room;		/* ns of the --max-overhead budget not spent, at the last check */
	struct pd_attr sattr;	/* the sampling event's layout */
	int have_sattr;
};

int rec_adp_new(struct rec_adp **out)
{
	struct rec_adp *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	*out = a;
	return 0;
}

static int by_offset(const void *x, const void *y)
{
	const struct sym_found *a = x, *b = y;

	return a->offset < b->offset ? -1 : a->offset > b->offset;
}

static int file_index(struct rec_adp *a, const char *path)
{
	struct adp_file *f;
	int n;

	for (size_t i = 0; i < a->nfiles; i++)
		if (strcmp(a->files[i].path, path) == 0)
			return (int)i;
	if (XP_GROW(a->files, a->capfiles, a->nfiles + 1) < 0)
		return -ENOMEM;
	f = &a->files[a->nfiles];
	memset(f, 0, sizeof(*f));
	if (!(f->path = strdup(path)))
		return -ENOMEM;
	/* a file without symbols (or not ELF) has no function to rank: n stays 0 */
	n = sym_find_funcs(path, "*", 1, &f->f);
	if (n > 0) {
		f->n = n;
		qsort(f->f, (size_t)n, sizeof(*f->f), by_offset);
	}
	return (int)a->nfiles++;
}

/* The executable file mappings of the target, now. */
static void read_maps(struct rec_adp *a, pid_t pid)
{
	struct xp_maps it;
	struct xp_maps_line m;

	a->maps_fresh = 1;
	if (xp_maps_open(&it, pid) < 0)
		return;
	a->nmaps = 0;
	while (xp_maps_next(&it, &m)) {
		int fi;

		if (m.perms[2] != 'x' || m.path[0] != '/')
			continue;
		fi = file_index(a, m.path);
		if (fi < 0 || XP_GROW(a->maps, a->capmaps, a->nmaps + 1) < 0)
			break;
		a->maps[a->nmaps++] = (struct adp_map){ m.start, m.end, m.pgoff, fi };
	}
	xp_maps_close(&it);
}

static const struct adp_map *find_map(const struct rec_adp *a, uint64_t ip)
{
	for (size_t i = 0; i < a->nmaps; i++)
		if (ip >= a->maps[i].start && ip < a->maps[i].end)
			return &a->maps[i];
	return NULL;
}

/* The adp_fn of the function holding ip in the target: its index, -ENOENT when no
 * function holds it, -ENOMEM. */
static int symbolize(struct rec_adp *a, struct rec *r, uint64_t ip)
{
	const struct adp_map *m = find_map(a, ip);
	const struct adp_file *file;
	struct adp_fn *fn;
	uint64_t off, key, v;
	int lo, hi, sym = -1;

	if (!m && !a->maps_fresh) {
		read_maps(a, r->target);
		m = find_map(a, ip);
	}
	if (!m)
		return -ENOENT;
	file = &a->files[m->file];
	off = ip - m->start + m->pgoff;
	for (lo = 0, hi = file->n - 1; lo <= hi;) {
		int mid = lo + (hi - lo) / 2;
		if (file->f[mid].offset <= off) {
			sym = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	if (sym < 0 || off >= file->f[sym].offset + file->f[sym].size)
		return -ENOENT;
	key = (uint64_t)m->file << 32 | (uint64_t)sym;
	if (xp_map_get(&a->by_sym, key, &v))
		return (int)v;
	if (XP_GROW(a->fn, a->capfn, a->nfn + 1) < 0 || xp_map_put(&a->by_sym, key, a->nfn) < 0)
		return -ENOMEM;
	fn = &a->fn[a->nfn];
	memset(fn, 0, sizeof(*fn));
	fn->file = m->file;
	fn->sym = sym;
	fn->probe = rec_probes_find(r->probes, file->path, file->f[sym].offset);
	if (fn->probe < 0)
		fn->probe = NO_PROBE;
	/* a function listed with --probe is probed already: no walk starts there */
	fn->walked = fn->probe >= 0;
	if (fn->probe >= 0)
		xp_map_put(&a->by_probe, (uint64_t)fn->probe, a->nfn);
	return (int)a->nfn++;
}

/* kind 0: a return hit, 1: a sample's callchain */
static void evidence(struct rec_adp *a, int callee, int caller, int kind)
{
	struct adp_fn *fn;
	uint64_t v = 0;

	if (callee < 0 || caller < 0 || callee == caller)
		return;
	fn = &a->fn[callee];
	xp_map_get(&fn->callers[kind], (uint64_t)caller, &v);
	if (xp_map_put(&fn->callers[kind], (uint64_t)caller, v + 1) == 0)
		fn->evidence[kind]++;
}

void rec_adp_sample(struct rec_adp *a, struct rec *r, const struct perf_event_header *h)
{
	struct pd_sample s;
	int pi, ret, f;
	uint64_t v;

	if (rec_probes_which(r->probes, h, &pi, &ret) == 0) {
		/* a return hit's IP is the return address in the caller */
		uint64_t ip;
		uint32_t pid;

		if (!ret || h->size < sizeof(*h) + 24 || !xp_map_get(&a->by_probe, (uint64_t)pi, &v))
			return;
		memcpy(&ip, (const char *)(h + 1) + 8, 8);
		memcpy(&pid, (const char *)(h + 1) + 16, 4);
		if ((pid_t)pid == r->target)
			evidence(a, (int)v, symbolize(a, r, ip - 1), 0);
		return;
	}
	if (!a->have_sattr) {
		const struct perf_event_attr *at = pd_writer_attr(r->w, 0);
		if (!at)
			return;
		a->sattr.attr = *at;
		pd_attr_init_pos(&a->sattr);
		a->have_sattr = 1;
	}
	if (pd_parse_sample(&a->sattr, h, h->size, &s) < 0 || (pid_t)s.pid != r->target)
		return;
	f = symbolize(a, r, s.ip);
	if (f < 0)
		return;
	a->fn[f].samples++;
	a->total++;
	/* the frame above: the first user address after the sample's own */
	for (uint64_t i = 0, user = 0; i < s.nr_callchain; i++) {
		if (s.callchain[i] >= PERF_CONTEXT_MAX)
			continue;
		if (user++ == 1) {
			int c = symbolize(a, r, s.callchain[i] - 1);
			evidence(a, f, c, 1);
			break;
		}
	}
}

static const char *fn_name(const struct rec_adp *a, const struct adp_fn *fn)
{
	return a->files[fn->file].f[fn->sym].name;
}

static int arm(struct rec_adp *a, struct rec *r, int i, int level, const char *reason)
{
	struct adp_fn *fn = &a->fn[i];
	const struct adp_file *file = &a->files[fn->file];
	int pi;

	if (rec_probes_unprobeable(&file->f[fn->sym])) {
		fn->probe = CANNOT_PROBE;
		return 0;
	}
	pi = rec_probes_arm(r->probes, file->path, &file->f[fn->sym], reason);
	if (pi < 0)
		return pi;
	fn = &a->fn[i];
	fn->probe = pi;
	fn->level = level;
	fn->armed_tick = a->tick;
	return xp_map_put(&a->by_probe, (uint64_t)pi, (uint64_t)i);
}

struct rank {
	uint64_t n;
	int fn;
};

static int by_count(const void *x, const void *y)
{
	const struct rank *a = x, *b = y;

	return a->n > b->n ? -1 : a->n < b->n ? 1 : a->fn - b->fn;
}

/* Callers of fn with at least CALLER_MIN_PERCENT of its evidence, most first: its
 * return hits when it returned, else the callchains of its samples. */
static int walk_up(struct rec_adp *a, struct rec *r, int i)
{
	const struct rec_opts *o = r->opts;
	struct adp_fn *fn = &a->fn[i];
	int kind = fn->evidence[0] ? 0 : 1;
	size_t n = xp_map_count(&fn->callers[kind]), k = 0, it = 0;
	struct rank *v = calloc(n ? n : 1, sizeof(*v));
	uint64_t key, val, ev = fn->evidence[kind];
	int level = fn->level + 1, e = 0, armed = 0;
	char reason[512];

	if (!v)
		return -ENOMEM;
	while (xp_map_next(&fn->callers[kind], &it, &key, &val))
		v[k++] = (struct rank){ val, (int)key };
	qsort(v, k, sizeof(*v), by_count);
	snprintf(reason, sizeof(reason), "caller of %s", fn_name(a, fn));
	fn->walked = 1;
	for (size_t j = 0; j < k && e == 0 && armed < o->adaptive; j++) {
		if (v[j].n * 100 < ev * CALLER_MIN_PERCENT)
			break;
		if (a->fn[v[j].fn].probe != NO_PROBE)
			continue;	/* probed already (or cannot be): the walk stops there */
		e = arm(a, r, v[j].fn, level, reason);
		armed++;
	}
	free(v);
	return e;
}

static int arm_hot(struct rec_adp *a, struct rec *r)
{
	struct rank *v = calloc(a->nfn ? a->nfn : 1, sizeof(*v));
	size_t k = 0;
	int e = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < a->nfn; i++)
		if (a->fn[i].probe == NO_PROBE && a->fn[i].samples >= HOT_MIN_SAMPLES &&
		    a->fn[i].samples * 100 >= a->total * HOT_MIN_PERCENT)
			v[k++] = (struct rank){ a->fn[i].samples, (int)i };
	qsort(v, k, sizeof(*v), by_count);
	for (size_t j = 0; j < k && j < (size_t)r->opts->adaptive && e == 0; j++) {
		char reason[64];
		snprintf(reason, sizeof(reason), "hot %" PRIu64 " samples", v[j].n);
		e = arm(a, r, v[j].fn, 0, reason);
	}
	free(v);
	return e;
}

/* The cpu time the target's process has taken (its threads and waited-for children),
 * in ns; 0 when /proc cannot tell. */
static uint64_t target_cpu_ns(pid_t pid)
{
	char path[64], buf[1024], *rp;
	unsigned long long ut = 0, st = 0, cut = 0, cst = 0;
	long hz = sysconf(_SC_CLK_TCK);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return 0;
	/* the command name may hold spaces and parentheses: the fields follow the last ')' */
	if (!fgets(buf, sizeof(buf), f) || !(rp = strrchr(buf, ')')) ||
	    sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu",
		   &ut, &st, &cut, &cst) != 4)
		ut = st = cut = cst = 0;
	fclose(f);
	return hz > 0 ? (ut + st + cut + cst) * (1000000000ull / (uint64_t)hz) : 0;
}

/* --max-overhead: the probes' calibrated cost against the target's cpu time without
 * it.  Over the budget every armed probe is disarmed now (its window ends: the counts
 * in it stay exact) and none is armed, nor re-armed (rearm), until the target's work
 * has made room again.
 * Returns whether the recording is over budget; a->room is what is left of it. */
static int over_budget(struct rec_adp *a, struct rec *r)
{
	struct rec_probes *p = r->probes;
	uint64_t cost, cpu, budget;

	a->room = UINT64_MAX;
	rec_probes_calibrated(p, 0);	/* no budget before the costs are known */
	if (!r->opts->max_overhead || !p->cal_runs)
		return 0;
	cost = rec_probes_cost(p, xp_now_ns());
	cpu = target_cpu_ns(r->target);
	budget = (uint64_t)r->opts->max_overhead * (cpu > cost ? cpu - cost : 0) / 100;
	a->room = budget > cost ? budget - cost : 0;
	if (cost <= budget)
		return 0;
	for (int i = 0; i < p->nfn; i++)
		rec_probes_disarm(p, i, xp_now_ns());
	return 1;
}

/* Probes the budget disarmed are armed again once it has room for what the last window
 * cost (its hits and the traps until its breakpoint left the target), each after a
 * pause that doubles with its windows (one interval, then two, four...): a function
 * whose probe costs more than its work gets short windows further and further apart,
 * exact counts in each, and at most REC_PROBE_WINDOWS of them. */
static int rearm(struct rec_adp *a, struct rec *r, uint64_t now)
{
	struct rec_probes *p = r->probes;
	uint64_t iv = (uint64_t)r->opts->adaptive_interval_ms * 1000000ull;
	int e = 0;

	for (int i = 0; i < p->nfn && e >= 0; i++) {
		const struct rec_probe_fn *fn = &p->fn[i];
		if (!fn->over_budget || !fn->disarmed || now < fn->disarmed + (iv << fn->nwin) ||
		    fn->charging || fn->last_cost > a->room)
			continue;
		/* none once the target has ended, for nothing; the main loop then stops */
		if (rec_should_stop(r))
			break;
		e = rec_probes_rearm(p, i);
		if (e > 0)
			a->room -= fn->last_cost;
	}
	return e < 0 ? e : 0;
}

int rec_adp_tick(struct rec_adp *a, struct rec *r)
{
	const struct rec_opts *o = r->opts;
	uint64_t now = xp_now_ns(), iv = (uint64_t)o->adaptive_interval_ms * 1000000ull;
	size_t n = a->nfn;
	int e = 0, over = over_budget(a, r), arming = rec_probes_arm_step(r->probes, r);

	if (arming < 0)
		return arming;
	/* The next interval starts once the probes are armed: arming one can wait behind
	 * the kernel's closes of uprobe events anywhere (rec_probe_arm.c), and a probe
	 * armed late must still get a whole interval of hits before it is walked. */
	if (!a->next_tick || arming == 2)
		a->next_tick = now + iv;
	if (arming || now < a->next_tick || rec_should_stop(r))
		return 0;
	/* Nothing is armed over the budget, nor before it is known (the calibration runs
	 * beside the command), nor while a disarm's closes run: each holds the kernel's
	 * mutex ~15-80 ms, and arming waited behind them, up to when the target ended and
	 * record waited for it (~100 ms at the end of a 1 s run, 10 % of its time). */
	if (over) {
		a->next_tick = now + iv;
		return 0;
	}
	if ((o->max_overhead && r->probes->cal_fd >= 0) || rec_probes_closing(r->probes))
		return 0;	/* looked at again at the next poll */
	a->maps_fresh = 0;
	a->tick++;
	/* one level per interval: only probes armed in an earlier one are walked */
	for (size_t i = 0; i < n && e == 0; i++) {
		const struct adp_fn *fn = &a->fn[i];
		/* a function entered since it was armed returns soon with exact evidence:
		 * the callchains are for one that was never entered (running since before) */
		if (fn->probe >= 0 && !fn->walked && fn->armed_tick < a->tick &&
		    fn->level < o->adaptive_depth && !r->probes->fn[fn->probe].arming &&
		    (fn->evidence[0] || (fn->evidence[1] && !r->probes->fn[fn->probe].hits)))
			e = walk_up(a, r, (int)i);
	}
	if (e == 0)
		e = arm_hot(a, r);
	if (e == 0)
		e = rearm(a, r, now);
	if (e == 0 && (e = rec_probes_arm_step(r->probes, r)) > 0)
		e = 0;
	a->next_tick = xp_now_ns() + iv;
	return e;
}

void rec_adp_free(struct rec_adp *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfiles; i++) {
		sym_found_free(a->files[i].f, a->files[i].n);
		free(a->files[i].path);
	}
	for (size_t i = 0; i < a->nfn; i++) {
		xp_map_free(&a->fn[i].callers[0]);
		xp_map_free(&a->fn[i].callers[1]);
	}
	xp_map_free(&a->by_sym);
	xp_map_free(&a->by_probe);
	free(a->files);
	free(a->maps);
	free(a->fn);
	free(a);
}

static int hook_sample(struct rec *r, const struct perf_event_header *h)
{
	if (!rec_probes_hit(r->probes, h))
		return 0;
	rec_adp_sample(r->adaptive, r, h);
	return 1;
}

static int hook_tick(struct rec *r)
{
	return rec_adp_tick(r->adaptive, r);
}

void rec_adp_hook(struct rec *r)
{
	r->hooks.sample = hook_sample;
	r->hooks.tick = hook_tick;
}
