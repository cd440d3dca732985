/* What this machine can record: facts are gathered (live probes, or a probe file for
 * tests), then one pure function concludes, from sysfs PMU facts plus probe facts, which
 * recording modes are available and, for each one that is not, the exact reason and
 * what to use instead.  Gathering and concluding are separate so the conclusions are
 * unit-tested on fixture trees with injected probe results.
 */
#ifndef PROBE_H
#define PROBE_H

#include <limits.h>
#include <stddef.h>

#include "probe/pmu.h"

#define PROBE_UNKNOWN INT_MIN	/* an integer fact that could not be read */

enum probe_status { PROBE_NOT_RUN, PROBE_OK, PROBE_FAIL };

/* One "does it actually open/work" check. */
struct probe_check {
	enum probe_status status;
	int err;		/* errno when PROBE_FAIL */
	char note[96];		/* why it was not run, when PROBE_NOT_RUN */
};

struct probe_facts {
	char source[160];	/* "this machine", "probe file FILE" */
	char kernel[65];	/* uname release, "" when unknown */
	char machine[65];	/* uname machine, "" when unknown */
	int paranoid;		/* /proc/sys/kernel/perf_event_paranoid */
	int mlock_kb;		/* /proc/sys/kernel/perf_event_mlock_kb */
	int yama_scope;		/* /proc/sys/kernel/yama/ptrace_scope; -1: no Yama */
	int euid;
	int cap_perfmon, cap_sys_admin, cap_sys_ptrace;	/* effective; 0/1 or PROBE_UNKNOWN */
	struct probe_check hw_cycles;		/* PERF_TYPE_HARDWARE cycles counter on self */
	struct probe_check hw_instructions;	/* ... instructions */
	struct probe_check lbr;		/* cycles sampling + PERF_SAMPLE_BRANCH_STACK ANY|USER */
	struct probe_check cpu_clock;	/* cpu-clock sampling on self */
	struct probe_check pt;		/* an intel_pt event on self (only with live sysfs) */
	struct probe_check ptrace;	/* fork, PTRACE_TRACEME, stop, one PTRACE_SINGLESTEP */
	struct probe_check uprobe;	/* entry and return uprobes on a function of this
					 * program fire once each (record --probe) */
	struct probe_check pfm;		/* pfm_initialize() */
	char pfm_pmus[512];	/* libpfm4 PMUs with is_present, space separated */
};

/* Sets every fact to unknown / not run, with `note` on each check. */
void probe_facts_init(struct probe_facts *f, const char *note);

/* Gathers facts from this machine.  Hardware open probes (cycles, instructions, LBR, PT)
 * run only when `hw` is set; PT only when `pt_type` >= 0 (the live intel_pt type); the
 * uprobe check only with this machine's `uprobe` PMU (NULL: none or not live). */
void probe_live(struct probe_facts *f, int hw, int pt_type, const struct pmu *uprobe);

/* Reads facts from a key=value file (format in docs/info.md).  Keys that are absent stay
 * unknown / not run.  Returns 0, or -errno / -EINVAL with *line set to the bad line. */
int probe_file_read(const char *path, struct probe_facts *f, int *line);

enum probe_mode_id { PROBE_MODE_PT, PROBE_MODE_LBR, PROBE_MODE_SAMPLE, PROBE_MODE_STEP,
		     PROBE_NMODES };

struct probe_mode {
	const char *name;	/* "pt", "lbr", "sample", "step" */
	int available;
	int verified;		/* a live open/attach confirmed it (not only sysfs) */
	char reason[320];	/* when unavailable: the exact reason */
	char detail[320];	/* when available: how it will record */
	const char *instead;	/* when unavailable: best available mode, or NULL */
};

/* Intel PT features as the intel_pt caps describe them (-1: unknown). */
struct probe_pt {
	int present;
	int type;
	int cyc;		/* caps/psb_cyc: cycle-accurate mode (CYC packets) */
	int addr_filters;	/* caps/ip_filtering ? caps/num_address_ranges : 0 */
	int mtc;
	int ptwrite;
	int power_event_trace;
	int cr3_filtering;
};

struct probe_conclusion {
	struct probe_mode mode[PROBE_NMODES];
	struct probe_pt pt;
	char core_pmu[64];	/* "cpu", "cpu_core", or "": no hardware PMU in sysfs */
	int lbr_depth;		/* caps/branches of the core PMU, -1 unknown */
	int perf_allowed;	/* perf_event_open allowed for this user (root/caps/paranoid) */
	const char *best;	/* first available of pt, lbr, sample, step; NULL if none */
};

/* The pure decision: `sysfs_label` names where `pmus` came from (for messages). */
void probe_conclude(const struct pmu_list *pmus, const char *sysfs_label,
		    const struct probe_facts *f, struct probe_conclusion *out);

/* Everything `xptrace info` does without printing: reads the PMUs under sysfs_root,
 * probes this machine (hardware open probes only when sysfs_root is this machine's),
 * concludes.  For record's mode checks and --mode auto, so they give info's reasons.
 * `uprobe`: run the uprobe check too (info).  No mode depends on it, and it costs
 * ~160 ms here (the kernel waits for RCU grace periods when a uprobe event is closed),
 * so record leaves it out: its probes are tried on the real functions anyway.
 * `pmus` and `f` may be NULL when the caller does not need them (else free pmus with
 * pmu_list_free).  Returns 0, or the -errno of reading the PMU directory; `out` is
 * filled either way (an unreadable PMU directory counts as "no PMUs"). */
int probe_machine(const char *sysfs_root, struct pmu_list *pmus, struct probe_facts *f,
		  struct probe_conclusion *out, int uprobe);

/* Record found a mode the conclusion called available refused when it opened the real
 * event with the user's options (errno `err`): that is a probe fact, so it goes into `f`
 * and the conclusion is redone over `pmus` (read from sysfs_root), and `out` words the
 * reason as info would on a machine where that probe failed. */
void probe_refute(const char *sysfs_root, const struct pmu_list *pmus, struct probe_facts *f,
		  enum probe_mode_id mode, int err, struct probe_conclusion *out);

/* Where PMUs under sysfs_root are read from, as the conclusions name it in reasons. */
void probe_sysfs_label(const char *sysfs_root, char *label, size_t size);

/* Whether sysfs_root (NULL/"" = "/") is this machine's root, so live probes describe it. */
int probe_sysfs_is_live(const char *sysfs_root);

/* "ENOENT", "EOPNOTSUPP", ... or NULL for errno values we do not name. */
const char *probe_errno_name(int err);
/* Inverse of probe_errno_name, also accepts decimal numbers; -EINVAL when unknown. */
int probe_errno_parse(const char *s);

#endif
