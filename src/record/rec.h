/* Recording: options, the session every mode shares, and the mode table.
 *
 * `xptrace record` (src/cli/cmd_record.c) parses struct rec_opts, creates the trace
 * directory (perf.data writer + module store), launches the command stopped (or checks
 * the -p target), then hands the session to one mode's run().  A mode (collector,
 * src/col_*.c) opens its events, calls rec_target_go() once they are attached, and
 * loops until rec_should_stop(), passing every kernel record to rec_record() (which
 * snapshots executable mappings, counts samples/lost records and writes it).  The
 * command then finalizes the file whatever happened (target exit, crash, SIGKILL,
 * SIGINT/SIGTERM to xptrace, disk full).
 *
 * Adding a mode = one struct rec_mode in the collector and one line in rec_modes[]
 * (src/record/rec_modes.c). */
#ifndef REC_H
#define REC_H

#include <signal.h>
#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include <sys/types.h>
#include <linux/perf_event.h>

#include "perfdata/pd_write.h"
#include "session/ms_store.h"

enum rec_callgraph { REC_CG_NONE, REC_CG_FP, REC_CG_DWARF, REC_CG_LBR };

#define REC_DEFAULT_FREQ 4000
#define REC_DEFAULT_STACK 8192

struct rec_opts {
	const char *outdir;	/* default "xptrace.data" */
	int force;		/* -f: replace, keeping DIR.old */
	const char *mode;	/* "auto" or a rec_modes[] name */
	const char *events;	/* -e list, NULL = the mode's default */
	uint64_t freq;		/* -F, 0 = unset */
	uint64_t period;	/* -c, 0 = unset */
	enum rec_callgraph callgraph;
	uint32_t stack_size;	/* dwarf: bytes of user stack per sample */
	double duration;	/* seconds, 0 = until the target ends / Ctrl-C */
	pid_t pid;		/* -p, 0 = run cmd */
	char **cmd;		/* NULL-terminated command to run */
	int quiet;
	int verbose;		/* -v: why this mode, which events, the mode's counters */
	/* --mode step */
	uint64_t psb_period;	/* --psb-period BYTES, 0 = default */
	int argc;		/* xptrace's own command line, for the CMDLINE feature */
	char **argv;
	/* hardware modes (pt, lbr; src/record/rec_mode_pt.c, src/record/rec_mode_lbr.c) */
	const char *sysfs_root;	/* --sysfs-root: where PMUs are described, NULL = "/" */
	int all_cpus;		/* -a: every CPU, every process */
	const char *cpu_list;	/* -C LIST: only these CPUs (all_cpus set too) */
	int off_cpu;		/* --off-cpu: sched:sched_switch samples (sample mode) */
	int user, kernel;	/* -u/-k: user only when neither is given */
	const char *pt_opts;	/* --pt-opts */
	const char *filter;	/* --filter (address filters) */
	int snapshot;		/* --snapshot: AUX ring dumped on SIGUSR2/trigger/end */
	const char *trigger;	/* --trigger SYM[@PATH] */
	uint64_t aux_size;	/* --aux-size bytes, 0 = default */
	const char *probe;	/* --probe LIST (src/record/rec_probe.h) */
	uint64_t probe_limit;	/* --probe-limit: hits kept per probe, 0 = no limit */
	int adaptive;		/* --adaptive[=K]: functions armed per interval, 0 = off */
	unsigned adaptive_interval_ms;
	int adaptive_depth;	/* levels walked up from a hot function */
	unsigned max_overhead;	/* --max-overhead: % of the target's cpu time the probes
				 * may cost (--adaptive), 0: no budget */
};

struct rec;
struct ring;

/* What --probe and --adaptive add to the ring loop (rec_core.c, rec_rings.c).  The loop
 * sits below them and calls them only through these, set by rec_probes_hook() and
 * rec_adp_hook(); NULL members are not called. */
struct rec_hooks {
	/* a SAMPLE record before it is written: 0 drops it (a probe past --probe-limit) */
	int (*sample)(struct rec *r, const struct perf_event_header *h);
	/* once per pass of the loop, after the rings were drained; < 0 (reported) ends
	 * the recording */
	int (*tick)(struct rec *r);
	/* the loop ends: the extensions' events stop */
	void (*stop)(struct rec *r);
	/* a PERF_RECORD_FORK before it is written (the probes follow new processes) */
	void (*fork)(struct rec *r, const struct perf_event_header *h);
	/* poll timeout of the loop in ms (0: 100): how late a hook hears of the time */
	int poll_ms;
};

struct rec {
	const struct rec_opts *opts;
	char *dir;
	char *data_path;	/* DIR/perf.data */
	struct pd_writer *w;
	struct ms_store *ms;
	pid_t child;		/* launched command (0 with -p) */
	int go_fd;		/* write end: the child execs when it gets a byte */
	int exec_err_fd;	/* read end: errno from a failed exec */
	pid_t target;		/* the process recorded (child or -p) */
	int target_status;	/* waitpid status once the child ended */
	int target_done;
	int stopped_by_us;	/* the command got xptrace's SIGTERM (--duration, an error) */
	int exec_failed;	/* the command never ran: nothing worth keeping */
	int stop_signal;	/* SIGINT/SIGTERM that stopped xptrace, 0 if none */
	int write_err;		/* first perf.data write error */
	/* what the run captured */
	uint64_t samples, lost, lost_samples, records, switches;
	uint64_t probe_hits;	/* of the samples written, the probes' (entry and return) */
	char sampled[96];	/* the sampling event used (summary: "N cpu-clock samples") */
	char recorded[160];	/* what a mode without samples recorded (step: branches) */
	uint64_t aux_traced;	/* bytes of AUX trace the mode made (step: its PT), of which a
				 * full disk keeps pd_writer_aux_bytes() */
	uint64_t first_time, last_time;
	uint64_t snapshot_fail;
	/* sample layout of the sampling attr, for times and synthesized records */
	uint64_t sample_type;
	int time_off;		/* byte offset of TIME in a SAMPLE record, < 0 none */
	/* TIME is CLOCK_MONOTONIC: a round holds back the samples written after it began,
	 * for the next (rec_take_round), until the events are disabled (rings_final) */
	int hold;
	int rings_final;
	uint64_t heads_taken;	/* when the last round had taken every ring's head */
	struct rec_held {
		uint8_t *buf;	/* whole SAMPLE records, in time order */
		size_t len, cap;
	} held;
	uint64_t synth_id;	/* event id put in synthesized records' sample_id */
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC, 0 none */
	struct rec_jit *jit;	/* JIT files to keep (src/record/rec_jit.c) */
	/* --probe: resolved before the run; modes add their attrs and open them next to
	 * their own event on each cpu (src/record/rec_probe.h) */
	struct rec_probes *probes;
	/* --adaptive: the policy that arms probes on hot functions and their callers
	 * (src/record/rec_adaptive.h) */
	struct rec_adp *adaptive;
	struct rec_hooks hooks;
	char **exec_argv;	/* what the child execs, NULL: opts->cmd (rec_mode.prepare) */
};

struct rec_mode {
	const char *name;
	const char *summary;
	/* Opens this mode's event with the options, once the conclusions of `xptrace info`
	 * found the mode available: 0 when it records here, else a negative code and
	 * either *open_err set to the errno of a refused perf_event_open (the caller words
	 * it as info would) or the reason in `why` (an option the PMU cannot honour).
	 * NULL: nothing to open beforehand. */
	int (*probe)(const struct rec_opts *o, int *open_err, char *why, size_t whylen);
	/* Checks the mode's own options before anything is created, reporting what is
	 * wrong: -EINVAL for a usage error, another negative code for a failure.  NULL:
	 * nothing to check. */
	int (*check)(const struct rec_opts *o);
	/* Records until rec_should_stop(); errors are reported here (xp_err) and returned
	 * negative.  The command finalizes the file afterwards in every case. */
	int (*run)(struct rec *r);
	/* Before the command is started: may set r->exec_argv (the command under a
	 * wrapper, --mode dbt's valgrind); errors are reported and returned negative.
	 * NULL: nothing to do. */
	int (*prepare)(struct rec *r);
	int no_auto;		/* 1: --mode auto never picks it (the program would see a
				 * different CPU: --mode dbt) */
};

/* NULL-terminated, in --mode auto's order of preference (best first). */
extern const struct rec_mode *const rec_modes[];
const struct rec_mode *rec_mode_find(const char *name);
/* 1 when `name` is "auto" or a mode; `names` gets the list ("auto, pt, ...") for a
 * usage error. */
int rec_mode_known(const char *name, char *names, size_t len);

/* What --mode resolved to, in words: one line naming the mode and why (with `verbose`,
 * each mode auto skipped and info's reason), "\n"-terminated lines without the
 * "xptrace: " prefix, for the caller to print once the recording can start. */
struct rec_choice {
	int verbose;
	char notes[2048];
};
/* Resolves "auto" (the first usable mode) or a name; NULL with the error reported
 * when nothing fits. */
const struct rec_mode *rec_mode_resolve(const struct rec_opts *o, struct rec_choice *ch);

/* -e LIST: 0 when every name is an event (generic, libpfm4 here, or a real event of
 * hardware this machine lacks), else -EINVAL with the first unknown name in `bad`. */
int rec_events_check(const char *list, const char *sysfs_root, char *bad, size_t badlen);
/* perf's group syntax, -e '{a,b}' or '{a,b}:S' (the leader samples, the members are
 * read with it), is what a plain list records: the braces are taken off `list` in
 * place.  -EINVAL for what one group cannot be (two groups, an event outside it,
 * modifiers other than :S on it). */
int rec_events_ungroup(char *list);

/* --- session services for modes --- */

/* Sample layout of the main sampling attr: sets time_off and the synthesized id. */
void rec_set_sample_layout(struct rec *r, const struct perf_event_attr *attr, uint64_t id);
/* Lets the launched child exec (no-op with -p).  Returns the negative errno
 * (reported) if exec failed. */
int rec_target_go(struct rec *r);
/* The events of -p/-a are enabled (after the sideband of what runs already, which
 * takes seconds on a loaded machine): --duration counts from here, and without a
 * command the user is told that recording runs now. */
void rec_started(struct rec *r);
/* 1 when recording should end: SIGINT/SIGTERM, --duration, the command ended, or a
 * write error.  Reaps the child. */
int rec_should_stop(struct rec *r);
/* One kernel record from a ring: snapshot for executable MMAP2, counters, written. */
int rec_record(struct rec *r, const struct perf_event_header *h);
/* One pass over rings 0..n-1 (ring_at(first, stride, i): the collectors' per-cpu
 * structs), each to its head as taken now: every record but the samples ring by ring
 * (each also handed to `note`, when not NULL), then the samples of all in the order of
 * their times, through rec_record().  1 when a ring had data, 0 when none, or the first
 * error (negative). */
int rec_take_round(struct rec *r, struct ring *first, size_t stride, int n,
		   void (*note)(void *ctx, const struct perf_event_header *h), void *ctx);
/* Ends a pass over every ring (PERF_RECORD_FINISHED_ROUND when something was written). */
int rec_round(struct rec *r);
/* Snapshots the mapping an MMAP2 record describes when it is executable. */
void rec_snapshot_mmap2(struct rec *r, const struct perf_event_header *h);

/* JIT files (jit.h): an executable mapping of process pid (`anon`: anonymous code)
 * that may name a jitdump or call for the process's perf map; returns 1 when it does
 * (nothing else to snapshot).  rec_jit_keep copies them into DIR/jit/ once the JIT is
 * done writing them and returns how many. */
int rec_jit_note_mmap(struct rec *r, int32_t pid, const char *name, int anon);
size_t rec_jit_keep(struct rec *r);
void rec_jit_free(struct rec *r);

/* The file execvp() runs for `cmd` into path (size n): cmd itself when it holds a '/',
 * else the first executable of that name in PATH.  0, -ENOENT or -ENAMETOOLONG. */
int rec_exec_path(const char *cmd, char *path, size_t n);

/* 1 when exec'ing `cmd` (found as execvp finds it) makes the process not dumpable for
 * us: setuid or setgid to another user or group, or, unprivileged, file capabilities
 * or a file we cannot read.  The kernel then detaches our events at exec: no samples.
 * `why` says which. */
int rec_secure_exec(const char *cmd, char *why, size_t n);

/* -p in step mode: 0 when no process traces `pid` (ptrace: gdb, strace, another step
 * recording), else the error, said (which tracer). */
int rec_check_untraced(pid_t pid);
/* -p: threads of `pid` (sorted); returns the count or a negative errno. */
int rec_list_threads(pid_t pid, pid_t **tids);
/* -p: synthesizes COMM, FORK and MMAP2 (executable mappings, with build-ids) from /proc
 * for every thread, then FINISHED_INIT; snapshots the mappings. */
int rec_synthesize(struct rec *r, pid_t pid);

/* Online CPUs (sysfs list); returns the count or a negative errno. */
int rec_online_cpus(int **cpus);
/* Where a collector opens its events: every online CPU (*cpus, *ncpus) and the pids:
 * -p's threads, -1 with -a (when the mode honours `all_cpus`), else the command.
 * Returns the number of pids, or a negative code (reported, nothing to free). */
int rec_targets(struct rec *r, int all_cpus, int **cpus, int *ncpus, pid_t **pids);
/* Parses a sysfs CPU list ("0-3,5,7-8\n"); returns the count or -EINVAL. */
/* The kernel's map as perf writes it ([kernel.kallsyms]_text at _text, -k): its
 * addresses are named then; nothing when kallsyms hides them. */
int rec_synthesize_kernel(struct rec *r);
/* rec_synthesize of every process running (-a), those that end meanwhile skipped. */
int rec_synthesize_all(struct rec *r);
int rec_parse_cpu_list(const char *list, int **cpus);

/* Waits up to timeout_ms for data on `pfd` or a signal that may end the recording
 * (SIGINT/SIGTERM/SIGHUP to xptrace, SIGCHLD of the command).  Unlike a plain poll(),
 * a signal that arrived since the last call returns at once: none is missed between
 * rec_should_stop() and the wait. */
int rec_wait(struct pollfd *pfd, unsigned long n, int timeout_ms);

/* Set by the signal handlers installed by cmd_record. */
extern volatile sig_atomic_t rec_stop_requested;
extern volatile sig_atomic_t rec_signalled;

/* perf_event_open(2), close-on-exec. */
long rec_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group);
/* The callchain a sampling event records for -g / --call-graph (frame pointers:
 * CALLCHAIN; dwarf: user registers and stack too), user space only. */
void rec_attr_callgraph(struct perf_event_attr *a, const struct rec_opts *o);

#endif
