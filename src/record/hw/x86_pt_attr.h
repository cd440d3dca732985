/* perf_event_attr for Intel PT, built from the intel_pt PMU's sysfs description: its type,
 * every config bit from the format files (never a hard-coded position) and the caps files that say
 * which values this CPU accepts.
 *
 * Errors go into a caller buffer ("cyc_thresh=20: this CPU accepts 0-13 (caps/...)") so
 * the CLI prints them with its context and tests compare them exactly. */
#ifndef X86_PT_ATTR_H
#define X86_PT_ATTR_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <stdint.h>

#include "probe/pmu.h"

#define X86_PT_FILTER_MAX 1024

/* Options; -1 means "not given": the default below applies. */
struct x86_pt_cfg {
	int cyc, mtc, tsc, noretcomp, branch;
	int64_t cyc_thresh, mtc_period, psb_period;
	int user, kernel;	/* -u/-k; user only when neither is given */
	char filter[X86_PT_FILTER_MAX];	/* kernel syntax for PERF_EVENT_IOC_SET_FILTER */
	unsigned nfilters;
};

void x86_pt_cfg_init(struct x86_pt_cfg *c);

/* Reads the intel_pt PMU under `sysfs_root`.  -ENOENT with the reason in err when the
 * machine has none. */
int x86_pt_probe(const char *sysfs_root, struct pmu *pt, char *err, size_t errlen);

/* Parses `--pt-opts cyc,cyc_thresh=N,mtc,mtc_period=N,tsc,noretcomp,psb_period=N,branch`
 * (a flag may be written NAME=0 to turn a default off).  -EINVAL with a message. */
int x86_pt_opts_parse(const char *s, struct x86_pt_cfg *c, char *err, size_t errlen);

/* Builds the attr: perf's defaults (pt, branch, tsc; mtc with mtc_period=3 and
 * psb_period=3 where caps allow) plus the options, each value checked against caps.
 * Sideband (mmap2, comm, task, switch) rides on this event.  -EINVAL/-ENOENT with a
 * message. */
int x86_pt_attr(const struct pmu *pt, const struct x86_pt_cfg *c, struct perf_event_attr *attr,
		char *err, size_t errlen);

/* Parses `--filter`: comma-separated `filter|start|stop SYM[/SIZE] @ PATH` or
 * `filter|start|stop START[/SIZE]@PATH`; symbols are resolved to file offsets in PATH's
 * ELF (the kernel matches ranges against the mapped file).  Appends to c->filter and
 * checks the total against caps/num_address_ranges. */
int x86_pt_filter_parse(const struct pmu *pt, const char *spec, struct x86_pt_cfg *c,
			char *err, size_t errlen);

/* File offset and size of function `name` in the ELF file `path` (.symtab, else .dynsym):
 * what address filters and uprobes name.  -EINVAL with a message. */
int x86_elf_func_offset(const char *path, const char *name, uint64_t *off, uint64_t *size,
			char *err, size_t errlen);

/* The buffer sizes: data ring pages (2^n + 1 with the header) and AUX area, checked
 * against the kernel's locked-memory budget, perf_event_mlock_kb × online cpus, unless
 * privileged (root or CAP_IPC_LOCK is not limited).  `nr_mmaps`: one per thread or cpu.
 * Sizes in bytes, powers of two of at least one page. */
int x86_pt_check_buffers(uint64_t data_bytes, uint64_t aux_bytes, unsigned nr_mmaps,
			 unsigned ncpus, uint64_t mlock_kb, int privileged, char *err, size_t errlen);

/* perf_event_mlock_kb from <root>/proc/sys/kernel (root "" or NULL: "/"). */
int x86_read_mlock_kb(const char *root, uint64_t *kb);

#endif
