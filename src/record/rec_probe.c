/* `record --probe`: resolving, opening and closing the probe events; see rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/rec.h"
#include "record/rec_probe_tfs.h"
#include "session/sym_find.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

struct prep {
	const struct rec_opts *o;
	struct rec_probes *p;
	char program[PATH_MAX];
};

static int name_used(const struct rec_probes *p, const char *name)
{
	for (int i = 0; i < p->nfn; i++)
		if (strcmp(p->fn[i].name, name) == 0)
			return 1;
	return 0;
}

/* perf probe's way with a name that repeats (a function of that name in two files):
 * SYM, SYM_1, SYM_2, ... */
static char *unique_name(const struct rec_probes *p, const char *sym)
{
	char buf[512];

	snprintf(buf, sizeof(buf), "%s", sym);
	for (int k = 1; name_used(p, buf); k++)
		snprintf(buf, sizeof(buf), "%s_%d", sym, k);
	return strdup(buf);
}

/* The class of the instruction at a probe (x86-64): a push of a register (with or
 * without REX), what compiled functions with a frame or callee-saved registers begin
 * with, is emulated by the kernel (Linux 6.11 on: on older kernels the calibration's
 * push is stepped too, and measured so); anything else, and an unreadable file, is
 * taken as stepped. */
static int cal_class(const char *path, uint64_t offset)
{
	unsigned char b[2] = { 0, 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : pread(fd, b, sizeof(b), (off_t)offset);

	if (fd >= 0)
		close(fd);
	if (n == 2 && ((b[0] >= 0x50 && b[0] <= 0x57) ||
		       ((b[0] & 0xf0) == 0x40 && b[1] >= 0x50 && b[1] <= 0x57)))
		return REC_CAL_EMULATED;
	return REC_CAL_STEPPED;
}

/* Adds f of `path` (once: a name and a glob may both list it); returns its index. */
static int add_fn(struct rec_probes *p, const char *path, const struct sym_found *f,
		  const char *reason, int define)
{
	struct rec_probe_fn *fn;
	int i = rec_probes_find(p, path, f->offset);

	if (i >= 0)
		return i;
	if (XP_GROW(p->fn, p->capfn, (size_t)p->nfn + 1) < 0)
		return -ENOMEM;
	fn = &p->fn[p->nfn];
	memset(fn, 0, sizeof(*fn));
	fn->name = unique_name(p, f->name);
	fn->path = strdup(path);
	fn->reason = strdup(reason);
	if (!fn->name || !fn->path || !fn->reason) {
		free(fn->name);
		free(fn->path);
		free(fn->reason);
		return -ENOMEM;
	}
	fn->offset = f->offset;
	fn->cal = cal_class(path, f->offset);
	for (int k = 0; k < 2; k++) {
		struct perf_event_attr *a = &fn->attr[k];
		uint64_t words[PMU_NWORDS] = { 0 };

		pmu_field_put(&p->retprobe, (uint64_t)k, words);
		a->size = sizeof(*a);
		a->type = (uint32_t)p->type;
		a->config = words[PMU_CONFIG];
		a->config1 = (uint64_t)(uintptr_t)fn->path;
		a->config2 = fn->offset;
		a->sample_period = 1;
		a->sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
		a->read_format = PERF_FORMAT_ID;
		a->disabled = 1;
		fn->idx[k] = -1;
	}
	for (int k = 0; k < 2 && define && p->tfs[0]; k++) {
		char ev[64];
		int e;

		rec_tfs_event_name(ev, sizeof(ev), fn->name, p->nfn, k);
		if ((e = rec_tfs_define(p->tfs, p->group, ev, k, fn->path, fn->offset,
					&fn->tp_id[k])) < 0) {
			if (k) {
				rec_tfs_event_name(ev, sizeof(ev), fn->name, p->nfn, 0);
				rec_tfs_undefine(p->tfs, p->group, ev);
			}
			free(fn->name);
			free(fn->path);
			free(fn->reason);
			return e;
		}
	}
	return p->nfn++;
}

int rec_probes_find(const struct rec_probes *p, const char *path, uint64_t offset)
{
	for (int i = 0; i < p->nfn; i++)
		if (p->fn[i].offset == offset && strcmp(p->fn[i].path, path) == 0)
			return i;
	return -ENOENT;
}

const char *rec_probes_unprobeable(const struct sym_found *f)
{
	if (f->ifunc)
		return "is an IFUNC resolver (it picks an implementation at load time and never "
		       "runs at the call)";
	if (f->no_offset)
		return "lies outside every loadable segment of the file";
	if (f->size == 0)
		return "has no size: a label or an alias, too short to hold a probe";
	return NULL;
}

static int resolve_item(struct prep *s, const struct rec_probe_item *it)
{
	char path[PATH_MAX], why[PATH_MAX + 128], item[512];
	struct sym_found *found = NULL;
	int n, placed = 0, rc = 0;
	const char *skip = NULL;

	snprintf(item, sizeof(item), "%s%s%s", it->sym, it->module ? "@" : "",
		 it->module ? it->module : "");
	if (!it->module) {
		snprintf(path, sizeof(path), "%s", s->program);
	} else if (rec_probe_module(s->o, s->program, it->module, path, sizeof(path), why,
				    sizeof(why)) < 0) {
		return xp_err("--probe", s->o->pid ? "name the library by its path: SYM@/path/lib.so" :
			      "name the library by its path, SYM@/path/lib.so: "
			      "the kernel arms it when the program maps it",
			      "%s: %s", item, why);
	}
	n = sym_find_funcs(path, it->sym, it->glob, &found);
	if (n < 0)
		return xp_err("--probe", "probe functions of an ELF program or library",
			      "%s: cannot read the functions of %s: %s", item, path,
			      n == -ENOEXEC ? "not an ELF file" : strerror(-n));
	for (int i = 0; i < n && rc == 0; i++) {
		const char *bad = rec_probes_unprobeable(&found[i]);
		if (bad && !it->glob) {
			rc = xp_err("--probe", found[i].ifunc ? "probe the implementation it picks; "
				    "nm -D on the file lists them" : "probe a function with a body",
				    "%s in %s %s", found[i].name, path, bad);
		} else if (bad) {
			skip = found[i].name;	/* a glob takes what can be probed */
		} else {
			rc = add_fn(s->p, path, &found[i], "listed", 1);
			if (rc < 0)
				rc = xp_err("--probe", "check 'xptrace info'", "cannot define the "
					    "probe on %s in %s in %s: %s", found[i].name, path,
					    s->p->tfs, strerror(-rc));
			rc = rc < 0 ? rc : 0;
			placed++;
		}
	}
	sym_found_free(found, n);
	if (rc == 0 && n == 0)
		rc = xp_err("--probe", it->module ? "check the name with nm on the file" :
			    "check the name with nm on the program, or name its library: SYM@MODULE",
			    it->glob ? "no function matches '%s' in %s" : "no function '%s' in %s",
			    it->sym, path);
	else if (rc == 0 && !placed)
		rc = xp_err("--probe", "probe functions with a body",
			    "'%s' in %s matches only functions that cannot be probed (e.g. %s)",
			    it->sym, path, skip);
	return rc;
}

/* The probes work here: each event opened (disabled) on xptrace itself, before the
 * target is touched. */
static int try_open(struct rec_probes *p)
{
	for (int i = 0; i < p->nfn; i++) {
		for (int k = 0; k < 2; k++) {
			struct perf_event_attr a = rec_probe_live_attr(p, &p->fn[i], k);
			long fd;

			a.inherit = 0;	/* not into the command, forked from xptrace */
			fd = rec_perf_open(&a, 0, -1, -1);
			if (fd < 0) {
				int e = errno;
				return xp_err("--probe", rec_probe_open_hint(e), "cannot place the %s probe on %s in %s: %s",
					      k ? "return" : "entry", p->fn[i].name, p->fn[i].path,
					      strerror(e));
			}
			if (XP_GROW(p->tried, p->captried, (size_t)p->ntried + 1) < 0) {
				close((int)fd);
				return -ENOMEM;
			}
			p->tried[p->ntried++] = (int)fd;
		}
	}
	return 0;
}

static int read_pmu(struct prep *s, struct rec_probes *p)
{
	struct pmu up;
	const struct pmu_field *f;
	int rc = pmu_read(s->o->sysfs_root, "uprobe", &up);

	if (rc < 0)
		return xp_err(s->o->probe ? "--probe" : "--adaptive", "record without --probe, or on a kernel with CONFIG_UPROBE_EVENTS",
			      "no uprobe PMU in sysfs: %s", strerror(-rc));
	f = pmu_field_find(&up, "retprobe");
	rc = up.type < 0 || !f ? -ENOENT : 0;
	if (rc == 0) {
		p->type = up.type;
		p->retprobe = *f;
		p->retprobe.name = NULL;	/* freed with up */
	}
	pmu_free(&up);
	if (rc < 0)
		return xp_err("--probe", "see 'xptrace info'",
			      "the uprobe PMU in sysfs has no type or no format/retprobe");
	return 0;
}

/* Probes in tracefs when it is there (rec_probe_tfs.h), after removing what killed
 * recorders left; else the uprobe PMU's cpu-wide events, said once with their price. */
static void use_tracefs(struct rec_probes *p)
{
	const struct rec_opts *o = p->o;
	char why[300];
	int e = rec_tfs_root(p->tfs, sizeof(p->tfs), why, sizeof(why));

	if (e < 0) {
		p->tfs[0] = 0;
		if (!o->quiet)
			xp_warn("probes: %s: they are cpu-wide uprobe events instead: every process "
				"mapping a probed file traps while they are armed, and record waits "
				"~80 ms per event at the end to close them (%s)", why,
				e == -ENOENT ? "mount tracefs: mount -t tracefs nodev /sys/kernel/tracing"
				: "give this user write access to tracefs");
		return;
	}
	rec_tfs_clean_stale(p->tfs);
	rec_tfs_group(p->group, sizeof(p->group), getpid());
	p->per_task = !o->all_cpus;
}

int rec_probes_prepare(const struct rec_opts *o, struct rec_probes **out)
{
	struct rec_probe_item *items = NULL;
	struct prep s;
	char why[256];
	int n = 0, rc;

	*out = NULL;
	memset(&s, 0, sizeof(s));
	s.o = o;
	if (o->probe && (n = rec_probe_parse(o->probe, &items, why, sizeof(why))) < 0)
		return xp_err("--probe", NULL, "%s", n == -EINVAL ? why : strerror(-n));
	s.p = calloc(1, sizeof(*s.p));
	if (s.p) {
		s.p->o = o;
		s.p->time_off = -1;
		s.p->cal_hold = -1;
		s.p->cal_fd = -1;
		s.p->chain = o->probe != NULL;
	}
	rc = s.p ? read_pmu(&s, s.p) : -ENOMEM;
	if (rc == 0)
		use_tracefs(s.p);
	if (rc == 0 && (rc = rec_probe_program(o, s.program, sizeof(s.program))) < 0)
		rc = xp_err(o->probe ? "--probe" : "--adaptive", "give the program's path", "cannot find the program %s: %s",
			    o->pid ? "of the process" : o->cmd[0], strerror(-rc));
	for (int i = 0; rc == 0 && i < n; i++)
		rc = resolve_item(&s, &items[i]);
	if (rc == 0)
		rc = try_open(s.p);
	rec_probe_items_free(items, n);
	if (rc < 0) {
		rec_probes_free(s.p);
		return rc;
	}
	*out = s.p;
	return 0;
}

int rec_probes_nevents(const struct rec_probes *p)
{
	return p ? 2 * p->nfn : 0;
}

/* Said once the probes are armed: the moment a probed process may go on (-p). */
static void say_armed(const struct rec_probes *p)
{
	const struct rec_opts *o = p->o;

	if (p->nfn && !o->quiet)
		xp_warn("probes armed on %d function%s in %s", p->nfn, p->nfn > 1 ? "s" : "",
			o->all_cpus ? "the whole system" : o->pid ? "the process, its new threads "
			"and child processes" : "the command, its threads and child processes");
}

int rec_probes_add_attrs(struct rec_probes *p, struct rec *r, const struct perf_event_attr *leader)
{
	const struct rec_opts *o = r->opts;
	int e;

	if (!p)
		return 0;
	p->leader = *leader;
	/* a probe hit's fields before TIME are those of the sampling event's */
	p->time_off = pd_sample_time_offset(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
					    PERF_SAMPLE_TID | PERF_SAMPLE_TIME);
	p->root = o->all_cpus ? 0 : r->target;
	for (int i = 0; i < p->nfn; i++)
		if ((e = rec_probes_fn_attrs(p, r, &p->fn[i])) < 0)
			return e;
	return 0;
}

int rec_probes_arm(struct rec_probes *p, const char *path, const struct sym_found *f,
		   const char *reason)
{
	int i = add_fn(p, path, f, reason, 0);

	if (i < 0)
		return xp_err("--adaptive", NULL, "probe %s: %s", f->name, strerror(-i));
	/* its events are opened as they will be in the file; the file gets them once
	 * they are (rec_probe_arm.c) */
	rec_probe_fn_attr_fill(p, &p->fn[i]);
	p->fn[i].arming = 1;
	return i;
}

int rec_probes_rearm(struct rec_probes *p, int i)
{
	struct rec_probe_fn *fn = &p->fn[i];

	/* not before the last window's events are closed: that close's cost is charged
	 * to the budget once it is known, and a new open would wait behind it */
	if (!fn->over_budget || fn->nfds || fn->arming || fn->nwin + 1 >= REC_PROBE_WINDOWS ||
	    (p->o->probe_limit && fn->hits >= p->o->probe_limit) ||
	    fn->charging || (fn->closing && !rec_probe_closed(fn->closing)))
		return 0;
	/* room for the window that ends when the new one begins */
	if (XP_GROW(fn->win, fn->capwin, (size_t)fn->nwin + 1) < 0)
		return -ENOMEM;
	fn->arming = 1;
	return 1;
}

void rec_probes_enable(struct rec_probes *p, int on)
{
	uint64_t t;

	for (int i = 0; p && i < p->nfn; i++)
		rec_probe_fn_enable(&p->fn[i], on);
	t = xp_now_ns();
	for (int i = 0; p && on && i < p->nfn; i++)
		p->fn[i].armed = t;
	if (p && on)
		say_armed(p);
}

/* Before the last closes are left to another process: every armed probe's events
 * disabled, and its int3 written out of each process of the target's tree that still
 * runs (-p's process, a command left running, a child that outlived it), as at a disarm.
 * A process of the tree that maps the file anew before the kernel's unregister (dlopen,
 * an exec of the program) gets an int3 from the kernel again, which traps into a
 * disabled event: its hit is dropped (docs/record.md, "Start and end", measured).
 * 0, or the first unpatch's error: then record closes the events itself. */
static int release_target(struct rec_probes *p)
{
	int e = 0;

	rec_probes_scan_tree(p);
	for (int i = 0; e == 0 && i < p->nfn; i++) {
		if (!p->fn[i].nfds)
			continue;
		rec_probe_fn_enable(&p->fn[i], 0);
		e = rec_probes_unpatch(p, &p->fn[i]);
	}
	if (e < 0 && p->o->verbose)
		xp_warn("probes: a breakpoint could not be taken out of the target (%s): record "
			"closes the probe events itself before it returns", strerror(-e));
	return e;
}

void rec_probes_free(struct rec_probes *p)
{
	if (!p)
		return;
	int *all = NULL, n = 0, defined = 0;
	size_t cap = 0;

	rec_probes_arm_free(p);
	/* the closes of disarmed probes still running hold their counters, and record's
	 * exit would wait for them anyway */
	rec_probes_wait_closes(p);
	/* Cpu-wide events are closed before record returns, in parallel (each uprobe-PMU
	 * close, and each tracefs event's last, takes the kernel up to ~80 ms, and they
	 * still run one after the other): a cpu-wide uprobe puts its breakpoint in every
	 * process that maps the file, also ones started after the target ended, until its
	 * last event is closed, which no unpatch of the target's tree covers.  Per task, so
	 * are they when the target's int3 could not be written out. */
	for (int i = 0; i < p->nfn; i++) {
		for (int k = 0; k < p->fn[i].nfds; k++) {
			if (XP_GROW(all, cap, (size_t)n + 1) == 0)
				all[n++] = p->fn[i].fds[k];
			else
				close(p->fn[i].fds[k]);
		}
	}
	for (int k = 0; k < p->ntried; k++) {
		if (XP_GROW(all, cap, (size_t)n + 1) == 0)
			all[n++] = p->tried[k];
		else
			close(p->tried[k]);
	}
	for (int i = 0; i < p->nfn; i++)
		defined |= p->fn[i].tp_id[0] || p->fn[i].tp_id[1];
	/* Every probe disarmed already (the budget's closes still running): only the
	 * definitions are left, which wait for those closes (EBUSY meanwhile: record
	 * waited 210 ms for them at the end of a 1 s run), so they are left too. */
	if (!n && !defined) {
		/* nothing opened, nothing defined */
	} else if (!p->per_task || (n && release_target(p) < 0) ||
		   XP_GROW(all, cap, (size_t)n + 2) < 0 || rec_probes_close_away(p, all, n, -1, 1) < 0) {
		rec_probes_close_fds(all, n, 1, NULL);
		rec_probes_undefine_all(p);
	} else if (p->o->verbose && p->root) {	/* not before a target: nothing to say */
		xp_warn("probes: the last closes of %d events are left to a detached process "
			"(xptrace-release), which then deletes the tracefs group %s%s", n, p->group,
			n ? "" : " once the disarmed probes' closes are done");
	}
	free(all);
	free(p->tried);
	/* the calibration's child releases its probes now (it is reaped if done, else
	 * init reaps it once xptrace exits) */
	if (p->cal_fd >= 0)
		close(p->cal_fd);
	if (p->cal_hold >= 0)
		close(p->cal_hold);
	if (p->cal_pid > 0)
		waitpid(p->cal_pid, NULL, WNOHANG);
	for (int i = 0; i < p->nfn; i++) {
		free(p->fn[i].fds);
		free(p->fn[i].name);
		free(p->fn[i].path);
		free(p->fn[i].reason);
		xp_map_free(&p->fn[i].entered);
		xp_map_free(&p->fn[i].open);
		free(p->fn[i].win);
		if (p->fn[i].closing && p->fn[i].closing->fd >= 0)
			close(p->fn[i].closing->fd);
		free(p->fn[i].closing);
	}
	xp_map_free(&p->ids);
	xp_map_free(&p->procs);
	xp_map_free(&p->lastof);
	free(p->last);
	free(p->tgt);
	free(p->fn);
	free(p);
}

static int hook_sample(struct rec *r, const struct perf_event_header *h)
{
	return rec_probes_hit(r->probes, h);
}

static void hook_fork(struct rec *r, const struct perf_event_header *h)
{
	rec_probes_fork(r->probes, h);
}

static void hook_stop(struct rec *r)
{
	rec_probes_arm_finish(r->probes, r);
	rec_probes_enable(r->probes, 0);
}

void rec_probes_hook(struct rec *r)
{
	r->hooks.sample = hook_sample;
	r->hooks.fork = hook_fork;
	r->hooks.stop = hook_stop;
	r->hooks.poll_ms = 10;
}
