/* What the Intel PT and LBR perf_event_attr builders share. */
#ifndef X86_ATTR_H
#define X86_ATTR_H

#include <linux/perf_event.h>
#include <stddef.h>

/* Formats the reason into err and returns rc: the builders' error convention. */
int x86_attr_fail(char *err, size_t len, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* The bits every recording event of ours carries: created disabled, no hypervisor,
 * and the sideband decode needs (mmap/mmap2, comm with exec, task) with sample_id_all. */
void x86_attr_sideband(struct perf_event_attr *attr);

#endif
