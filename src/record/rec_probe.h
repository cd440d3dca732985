/* `record --probe LIST`: exact entry and return events of chosen functions, recorded as
 * samples next to the sampling event of the sample, lbr and pt modes.
 *
 * LIST is comma separated: SYMBOL (a function of the program), SYMBOL@MODULE (MODULE is
 * a path, or the basename of the program or of a library it maps), and globs (`hot_*`,
 * fnmatch syntax) in place of SYMBOL.  Every matching function gets two events, written
 * to perf.data as the uprobe PMU's: type from sysfs, config1 = the file's path, config2
 * = the function's file offset (symbol vaddr through the PT_LOAD headers), config's
 * `retprobe` field (sysfs format) set for the return.  The events opened are those,
 * or with tracefs the tracepoints of the same uprobes defined there (rec_probe_tfs.h).
 * perf shows them as probe_xptrace:SYM and probe_xptrace:SYM__return (EVENT_DESC).
 *
 * Everything is resolved, and one of the probes opened on xptrace itself, before the
 * trace directory exists or the command runs: a bad list (exit 2), an unknown symbol,
 * a glob matching nothing, a function without a body, a library that cannot be found,
 * or a refused uprobe (exit 1) leave nothing behind.
 *
 * Libraries: a uprobe is placed on a file (inode) and offset, and the kernel arms it in
 * every mapping of that file by the target, also ones made after recording started
 * (dlopen).  So a probe only needs the library's path: a MODULE basename is looked up
 * among the mappings of -p's process, or among the libraries the dynamic loader loads
 * for the command (`ld.so --list`, what ldd prints); a library loaded later with
 * dlopen must be named by path.
 *
 * Threads: with tracefs (rec_probe_tfs.h), a command's probes are tracepoint events
 * opened per cpu on the command's process before its exec, inherited by every thread
 * and process it starts, so the int3 is only in the target's address spaces; a probe
 * armed later is opened on every thread of the target's tree (rec_probes_arm).  With
 * -p and -a, or without tracefs, the events are opened per cpu for every process and
 * the hits filtered to the target's process tree as they are read.
 *
 * Each probe owns its events (struct rec_probe_fn) and is kept for at most
 * --probe-limit entry hits of the target: the collector drops any hit past it and
 * closes the probe's events, which takes the breakpoints out of the target.  When each probe was armed and
 * disarmed, its hits and why it was placed go into the probes feature
 * (perfdata/pd_probes.h), with the calibrated cost of a probed call. */
#ifndef REC_PROBE_H
#define REC_PROBE_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "perfdata/pd_write.h"
#include "probe/pmu.h"
#include "record/rec_rings.h"
#include "session/sym_find.h"
#include "util/xp_map.h"

struct rec;
struct rec_opts;

/* The group of the probe events' names in perf.data (perf's, as perf probe names
 * uprobes: probe_PROGRAM). */
#define PROBE_GROUP "probe_xptrace"

/* One item of LIST. */
struct rec_probe_item {
	char *sym;		/* name or glob */
	char *module;		/* NULL: the program */
	int glob;
};

/* Parses LIST; returns the item count or -EINVAL with the reason in `why`. */
int rec_probe_parse(const char *list, struct rec_probe_item **out, char *why, size_t whylen);
void rec_probe_items_free(struct rec_probe_item *v, int n);

/* The file the command will exec (cmd[0] through PATH, as execvp) or -p's executable;
 * 0 or a negative errno. */
int rec_probe_program(const struct rec_opts *o, char *path, size_t len);
/* The file MODULE names for this target (see above); 0, or a negative errno with the
 * reason in `why`. */
int rec_probe_module(const struct rec_opts *o, const char *program, const char *module,
		     char *path, size_t len, char *why, size_t whylen);

/* A hit costs what the kernel does with the probed instruction: a push it emulates, most
 * others it single-steps out of line, a trap more (4 x on a VM).  Calibrated apart. */
enum { REC_CAL_EMULATED, REC_CAL_STEPPED, REC_CAL_N };

/* A window of a probe that ended: [armed, disarmed] and the entry hits in it. */
struct rec_probe_win {
	uint64_t armed, disarmed, hits;
	uint64_t closed;	/* when its last event was closed (0: unknown) */
	uint64_t unpatched;	/* when its breakpoint left the target (0: at the close) */
	int unpatch_err;	/* why it did not, a negative errno */
};

/* Windows of one probe at most: re-arming backs off (rec_adaptive.c), this bounds the
 * memory whatever the trace's length. */
#define REC_PROBE_WINDOWS 16

/* One probed function: its entry (0) and return (1) events. */
struct rec_probe_fn {
	char *name;		/* unique event name part: SYM, or SYM_N when SYM repeats */
	char *path;		/* the file, canonical (config1 points here) */
	uint64_t offset;
	struct perf_event_attr attr[2];	/* as written to perf.data (uprobe PMU) */
	uint64_t tp_id[2];	/* its tracefs events' ids (rec_probe_tfs.h), 0: none */
	int idx[2];		/* attr indexes in perf.data, -1 before its attrs are added */
	char *reason;		/* why it was placed (the probes feature's REASON) */
	uint64_t armed, disarmed;	/* the current window, trace clock; disarmed 0: armed to the end */
	uint64_t hits, rets;	/* entry and return hits written to the file */
	uint64_t win_hits, win_rets;	/* hits and rets when the current window began */
	struct rec_probe_win *win;	/* the windows before the current one */
	int nwin, capwin;
	int cal;		/* its calibration class: REC_CAL_EMULATED or REC_CAL_STEPPED */
	int over_budget;	/* disarmed by --max-overhead (else by --probe-limit) */
	/* the threads with an entry in the current window (their returns are kept) */
	struct xp_map entered;
	struct xp_map open;	/* tid -> the window's entries kept less returns kept */
	int *fds;		/* its open events, closed when it is disarmed */
	int nfds, capfds;
	/* After a disarm the target still traps until its breakpoint is written out
	 * (rec_probes_unpatch), or where that fails until the kernel has closed every
	 * event of the probe (uprobe PMU: ~80 ms each, one after the other machine-wide;
	 * tracefs: 15-35 ms, the last close of each event): that cost,
	 * which no hit shows, is estimated from the window's rate of hits over that time,
	 * and charged to the budget (rec_probes_cost). */
	struct rec_probe_closing *closing;	/* NULL before the first disarm */
	int charging;		/* the last window's close not charged yet */
	uint64_t hidden_ns;	/* charged so far */
	/* At the last disarm (rec_probes_unpatch): CLOCK_MONOTONIC when the breakpoint left
	 * every process of the target, 0 when it stays until the close, and why. */
	uint64_t unpatched;
	int unpatch_err;
	uint64_t last_cost;	/* the last window's, its close's traps included, once charged */
	/* armed (or re-armed) while recording: 1 queued, 2 its events being defined and
	 * opened (rec_probe_arm.c), 0 done */
	int arming;
};

/* The closes of one disarm, watched from the collector (the closing threads hold it). */
struct rec_probe_closing {
	_Atomic int left;		/* events not closed yet */
	_Atomic uint64_t end;		/* CLOCK_MONOTONIC when the last was */
	_Atomic int done;		/* set last: the threads are done with it */
	/* >= 0: closed by a process of their own instead (rec_probes_close_away), which
	 * writes `end` into this pipe; read by rec_probe_closed */
	int fd;
};

/* Where probes are opened: a cpu, for every process (pid -1), writing into the mode's
 * ring of that cpu. */
struct rec_probe_tgt {
	int cpu, ring_fd;
};

/* The probe hits of one thread in a row that are one call seen by several copies of an
 * event (rec_probes_hit). */
struct rec_probe_last {
	uint64_t ip;
	uint32_t cpu;
	int fk;			/* fn index * 2 + (1 for return), -1: none yet */
	int nown;
	uint32_t own[8];	/* the owners whose copy has reported the call */
};

struct rec_probes {
	const struct rec_opts *o;
	/* tracefs (rec_probe_tfs.h): its directory and this recording's group; "" when the
	 * probes are uprobe-PMU events (no tracefs) */
	char tfs[256], group[32];
	/* events per task, inherited (a command with tracefs); else cpu-wide (pid -1) */
	int per_task;
	/* per_task, probes armed while recording: an event is opened on every thread of the
	 * tree, and a thread cloned meanwhile by one holding it also holds an inherited copy:
	 * every copy reports each call, one after the other in the cpu's ring; kept: the
	 * first of such a run (tid -> index into last) */
	struct xp_map lastof;
	struct rec_probe_last *last;
	int nlast, caplast;
	struct rec_probe_fn *fn;
	int nfn, capfn;
	int type;			/* the uprobe PMU's attr.type */
	struct pmu_field retprobe;
	struct perf_event_attr leader;	/* the mode's sampling attr, for probes armed later */
	int time_off;			/* TIME in a probe hit, < 0 none */
	/* hits carry the recording's callchain (-g): with --probe, as perf probe's do;
	 * not when only --adaptive places probes: nothing reads them (the walk reads
	 * return hits' IPs and the samples' callchains) and the callchain walk is ~40 %
	 * of a hit's cost (2.5 us against 4.0 here); an 8 KiB stack copy with dwarf */
	int chain;
	/* kernel event id -> the tid it was opened on (0: every task) << 32 | fn index * 2
	 * + (1 for return); an inherited copy reports its original's id */
	struct xp_map ids;
	struct rec_probe_tgt *tgt;
	int ntgt, captgt;
	uint64_t t0;			/* CLOCK_MONOTONIC at the start, for the printed times */
	/* what a probed call costs here (rec_calib.c), per class; cal_runs 0: not
	 * calibrated */
	uint64_t cal_caller_ns[REC_CAL_N], cal_callee_ns[REC_CAL_N], cal_runs;
	pid_t cal_pid;			/* the calibration's child, 0 once reaped */
	int cal_fd;			/* its result, -1 once taken */
	int cal_hold;			/* its events are held until this fd is closed */
	/* the events tried on xptrace itself (rec_probes_prepare): harmless (they match
	 * no other process), so they are closed with the rest at the end, not at ~80 ms
	 * each before the command starts */
	int *tried, ntried, captried;
	/* The process tree whose hits are kept (0: every process, -a): the target, and
	 * the processes it starts (rec_probes_fork, else their parent chain in /proc). */
	pid_t root;
	struct xp_map procs;		/* pid -> 1 in the tree, 2 not */
	struct rec_probe_arming *arming;	/* the thread opening probes armed late */
};

/* Resolves opts->probe (already checked by rec_probe_parse; NULL: none, for probes
 * placed later by --adaptive) for the target and tries the events of each probe on
 * xptrace itself; 0 with *out set, or a negative errno (reported).  Call before
 * anything is created. */
int rec_probes_prepare(const struct rec_opts *o, struct rec_probes **out);
/* Number of events to open per (pid, cpu). */
int rec_probes_nevents(const struct rec_probes *p);
/* A return probe's hits take the return value's register (--calls shows it). */
void rec_probe_attr_retval(struct perf_event_attr *a);
/* Completes the attrs from the mode's sampling attr (clock, enable-on-exec, sideband id,
 * callchain) and adds them to perf.data.  0 or a negative errno. */
int rec_probes_add_attrs(struct rec_probes *p, struct rec *r, const struct perf_event_attr *leader);
/* Opens every probe on cpu, writing into ring_fd's buffer (the mode's event on that
 * cpu), and remembers the cpu for probes armed later; a second call for a cpu does
 * nothing.  Per task (p->per_task): on the target, inherited by what it starts.  Else
 * for every process: every thread and process the target starts is probed from its
 * first instruction; the hits of other processes running the probed code are dropped
 * (rec_probes_hit), though they trap too: a probe in a library slows every process on
 * the machine that calls it, and their hits fill the rings before they are dropped.
 * Errors are reported; returns 0 or negative. */
int rec_probes_open(struct rec_probes *p, struct rec *r, int cpu, int ring_fd);
/* The events start disabled: enabling says they are armed (unless -q); call it before
 * the command starts, or when a waiting -p process may go on. */
void rec_probes_enable(struct rec_probes *p, int on);
/* Returns once the events of every disarmed probe are closed (their threads are done). */
void rec_probes_wait_closes(const struct rec_probes *p);
/* Closes every event, deletes the tracefs definitions, and frees (NULL is fine).  Per
 * task, the int3s are written out of the target's running processes and the closes and
 * deletions left to a detached process (rec_probe_close.c,
 * rec_probes_close_away); cpu-wide, record waits for them. */
void rec_probes_free(struct rec_probes *p);

/* --- probes placed while recording (--adaptive) --- */

/* The probe on `offset` of `path`: its index, or -ENOENT. */
int rec_probes_find(const struct rec_probes *p, const char *path, uint64_t offset);
/* Adds function f of `path` (not yet probed, probeable) and queues it to be armed on
 * every place rec_probes_open saw (rec_probes_arm_step).  Returns its index, or a
 * negative errno (reported). */
int rec_probes_arm(struct rec_probes *p, const char *path, const struct sym_found *f,
		   const char *reason);
/* Queues probe i, disarmed by the budget (rec_probes_disarm), to be armed again: a new
 * window begins once its events are open and enabled.  1 when queued, 0 when it cannot
 * be (disarmed by --probe-limit, its last close not done, queued already, or
 * REC_PROBE_WINDOWS reached), or -ENOMEM. */
int rec_probes_rearm(struct rec_probes *p, int i);
/* Arms the queued probes without making the collector wait for the kernel
 * (rec_probe_arm.c says why): their tracefs definitions and events are made on a
 * thread of their own, taken back here, and once every event is open the probes'
 * attrs and ids go into perf.data, their events are enabled and their windows begin.
 * Call it at every poll: 1 while probes are being armed, 2 when a batch was just armed,
 * 0 when none is queued; a negative errno (reported) when one failed. */
int rec_probes_arm_step(struct rec_probes *p, struct rec *r);
/* At the end: waits for the arming thread; the probes it armed are enabled now (a
 * window that sees nothing), whose events were all being opened. */
void rec_probes_arm_finish(struct rec_probes *p, struct rec *r);
/* Why function f cannot be probed, NULL when it can. */
const char *rec_probes_unprobeable(const struct sym_found *f);

/* --- within the module --- */

/* The attr perf_event_open gets for probe fn's event k: the uprobe PMU's as in the file,
 * or its tracefs event's, inherited when opened per task. */
struct perf_event_attr rec_probe_live_attr(const struct rec_probes *p,
					   const struct rec_probe_fn *fn, int k);
/* a becomes the attr of tracefs event tp_id (same sample fields), inherited per task. */
void rec_probe_tp_attr(struct perf_event_attr *a, uint64_t tp_id, int per_task);
/* What to do when opening a probe event failed with errno e. */
const char *rec_probe_open_hint(int e);
/* The attrs of fn from the mode's sampling attr (rec_probes_add_attrs), added to perf.data. */
int rec_probes_fn_attrs(struct rec_probes *p, struct rec *r, struct rec_probe_fn *fn);
/* Completes fn's attrs from the mode's sampling attr (rec_probes_add_attrs): what its
 * events are opened with, before the file gets them. */
void rec_probe_fn_attr_fill(const struct rec_probes *p, struct rec_probe_fn *fn);
/* Closes fn's events in a process of its own (rec_probes_close_away), which writes the
 * time it was done into fn->closing's pipe.  0, or a negative errno (nothing closed). */
int rec_probe_fn_close_away(const struct rec_probes *p, struct rec_probe_fn *fn);
/* Deletes the tracefs definitions once no event of theirs is open, waiting up to 5 s
 * for closes that other processes still run. */
void rec_probes_undefine_all(const struct rec_probes *p);
/* Enables (disables) every event of fn, in the order that loses no return. */
void rec_probe_fn_enable(struct rec_probe_fn *fn, int on);
/* Probe i's (new) window begins at t: a re-armed probe's last one is kept. */
void rec_probes_window_begin(struct rec_probes *p, int i, uint64_t t);
/* Joins the arming thread and closes what it opened that was not taken. */
void rec_probes_arm_free(struct rec_probes *p);

/* --- hits (rec_probe_limit.c) --- */

/* The probe and event (0 entry, 1 return) a SAMPLE record comes from: 0, or -ENOENT
 * for a sample of another event. */
int rec_probes_which(const struct rec_probes *p, const struct perf_event_header *h, int *fn,
		     int *ret);
/* Counts a SAMPLE of a probe: 1 to write it, 0 to drop it (a process outside the
 * target's tree, or past --probe-limit: the kernel's limit is per cpu, this one per
 * probe of the target).  The N-th entry hit
 * disarms the probe: its events are closed, so the breakpoints leave the target. */
int rec_probes_hit(struct rec_probes *p, const struct perf_event_header *h);
/* Puts the target's descendants now in /proc into the tree (and the others out). */
void rec_probes_scan_tree(struct rec_probes *p);
/* A PERF_RECORD_FORK of the sampled target: a new process joins the tree. */
void rec_probes_fork(struct rec_probes *p, const struct perf_event_header *h);
/* Puts the probes into r's ring loop (r->hooks): hits counted against the limit, the
 * target's new processes followed, the probes disabled at the end, a 10 ms poll so that a
 * probe at its limit loses its breakpoints soon.  r->probes is set. */
void rec_probes_hook(struct rec *r);
/* Disarms probe i at trace time t (its events closed; hits after t dropped but the
 * returns of the calls kept), over the --max-overhead budget: its window ends. */
void rec_probes_disarm(struct rec_probes *p, int i, uint64_t t);
/* What the probes cost the target so far: each probed call (entry and return) written
 * at its class's calibrated cost, and the traps between each disarm and the breakpoint
 * leaving the target (unpatched, else its events closed) at the same cost, as many as
 * the window's rate of hits over that time; in ns, 0 uncalibrated.  `now`:
 * CLOCK_MONOTONIC. */
uint64_t rec_probes_cost(struct rec_probes *p, uint64_t now);
/* Writes the file's first byte of fn back over its breakpoint in every process of the
 * target's tree, as a debugger takes out its own: the kernel's close of a probe's
 * uprobe-PMU events takes ~80 ms each, one after the other machine-wide (RCU grace
 * periods under a global mutex; tracefs events wait at their last close only), and the
 * breakpoint stays in the target until the last one, which traps at every call
 * meanwhile (hundreds of ms: more than most budget windows last).
 * Only an int3 at that address is replaced; the kernel's unregister then finds no
 * breakpoint there and leaves the page as it is.  The events must be disabled first.
 * 0, or a negative errno: -EPERM without a target tree (-a), or the failing step's. */
int rec_probes_unpatch(struct rec_probes *p, struct rec_probe_fn *fn);
/* Closes probe events in parallel threads (`wait`: returns once all are closed;
 * `cl`, if not NULL, counts them down and takes the time of the last). */
void rec_probes_close_fds(const int *fds, int n, int wait, struct rec_probe_closing *cl);
/* Closes fds in a process of its own that record does not wait for (a double fork, its
 * own session, no stdio, no other fd of record's), once record has closed its own
 * copies, so that its closes are the last: the kernel's unregister of a uprobe (RCU
 * grace periods under a machine-wide mutex, ~80 ms an event) happens there.  Then it
 * writes the CLOCK_MONOTONIC time it was done into done_fd (if >= 0), and deletes the
 * tracefs definitions if `undefine`.  fds needs room for n + 2.  0 once it runs and
 * record's copies are closed; else a negative errno, nothing closed. */
int rec_probes_close_away(const struct rec_probes *p, int *fds, int n, int done_fd, int undefine);
/* Whether a disarm's closes are done (reads a closing process's time, if it is one). */
int rec_probe_closed(struct rec_probe_closing *cl);
/* Whether the closes of some disarm are still running. */
int rec_probes_closing(const struct rec_probes *p);

/* --- at the end (rec_probe_report.c) --- */

/* The probes feature (perfdata/pd_probes.h) into perf.data, and one line per probe on
 * stderr unless -q; r->probe_hits set.  0 or a negative errno. */
int rec_probes_report(struct rec_probes *p, struct rec *r);

/* --- what a probed call costs (rec_calib.c) --- */

/* Starts a helper child that probes an empty routine of xptrace and times probed
 * against unprobed calls; the recording may go on meanwhile (rec_probes_calibrated
 * takes the result).  The child holds its probe events until rec_probes_free (see
 * rec_calib.c). */
void rec_probes_calibrate(struct rec_probes *p);
/* Takes the child's result once it is there (`wait`: waits for it): sets cal_* (left 0
 * with a note when it could not measure); nothing when taken already. */
void rec_probes_calibrated(struct rec_probes *p, int wait);

#endif
