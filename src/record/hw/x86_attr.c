/* What the Intel PT and LBR perf_event_attr builders share; see x86_attr.h. */
#include "record/hw/x86_attr.h"

#include <stdarg.h>
#include <stdio.h>

int x86_attr_fail(char *err, size_t len, int rc, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return rc;
}

void x86_attr_sideband(struct perf_event_attr *attr)
{
	attr->disabled = 1;
	attr->exclude_hv = 1;
	attr->sample_id_all = 1;
	attr->mmap = 1;
	attr->mmap2 = 1;
	attr->comm = 1;
	attr->comm_exec = 1;
	attr->task = 1;
}
