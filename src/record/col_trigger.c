/* Snapshot trigger through a uprobe; see col_trigger.h. */
#include "record/col_trigger.h"

#include <errno.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "probe/pmu.h"
#include "record/hw/x86_pt_attr.h"

int col_trigger_open(struct col_trigger *t, const char *sysfs_root, const char *spec,
		     const char *default_path, pid_t pid, char *err, size_t errlen)
{
	struct perf_event_attr a;
	struct pmu up;
	char sym[256];
	const char *at = strchr(spec, '@');
	const char *path = at ? at + 1 : default_path;
	size_t symlen = at ? (size_t)(at - spec) : strlen(spec);
	uint64_t size;
	long page = sysconf(_SC_PAGESIZE);
	int rc;

	memset(t, 0, sizeof(*t));
	t->fd = -1;
	if (!symlen || symlen >= sizeof(sym) || !path || !*path) {
		snprintf(err, errlen, "'%s': expected SYM or SYM@/path", spec);
		return -EINVAL;
	}
	memcpy(sym, spec, symlen);
	sym[symlen] = 0;
	if (!realpath(path, t->path)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -ENOENT;
	}
	rc = x86_elf_func_offset(t->path, sym, &t->offset, &size, err, errlen);
	if (rc)
		return rc;
	rc = pmu_read(sysfs_root, "uprobe", &up);
	if (rc) {
		snprintf(err, errlen, "no uprobe PMU in sysfs (kernel without CONFIG_UPROBE_EVENTS)");
		return rc;
	}
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = (uint32_t)up.type;
	pmu_free(&up);
	/* config1/config2 of the uprobe PMU: path pointer and file offset (probe_offset). */
	a.config1 = (uint64_t)(uintptr_t)t->path;
	a.config2 = t->offset;
	a.sample_period = 1;
	a.wakeup_events = 1;
	a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a.read_format = 0;
	t->fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	if (t->fd < 0) {
		rc = -errno;
		snprintf(err, errlen, "uprobe on %s in %s: perf_event_open: %s", sym, t->path,
			 strerror(errno));
		return rc;
	}
	/* A ring is needed for poll() to wake on hits; its records are not read. */
	t->len = 2 * (size_t)page;
	t->base = mmap(NULL, t->len, PROT_READ | PROT_WRITE, MAP_SHARED, t->fd, 0);
	if (t->base == MAP_FAILED) {
		rc = -errno;
		snprintf(err, errlen, "uprobe ring: mmap: %s", strerror(errno));
		close(t->fd);
		t->fd = -1;
		t->base = NULL;
		return rc;
	}
	return 0;
}

uint64_t col_trigger_hits(struct col_trigger *t)
{
	struct perf_event_mmap_page *pg = t->base;
	uint64_t count = 0, n;

	if (t->fd < 0)
		return 0;
	if (read(t->fd, &count, sizeof(count)) != sizeof(count))
		return 0;
	if (pg)
		__atomic_store_n(&pg->data_tail, __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE),
				 __ATOMIC_RELEASE);
	n = count > t->seen ? count - t->seen : 0;
	t->seen = count;
	return n;
}

void col_trigger_close(struct col_trigger *t)
{
	if (t->base)
		munmap(t->base, t->len);
	if (t->fd >= 0)
		close(t->fd);
	t->base = NULL;
	t->fd = -1;
}
