/* A disarmed probe's breakpoint taken out of the target's processes at once; see
 * rec_probe.h (rec_probes_unpatch). */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/xp_maps.h"

#define INT3 0xcc

/* The probed instruction's first byte, from the file (what the kernel put back). */
static int file_byte(struct rec_probe_fn *fn, dev_t *dev, ino_t *ino)
{
	struct stat st;
	unsigned char b;
	int fd = open(fn->path, O_RDONLY | O_CLOEXEC), e = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = -errno;
	else if (pread(fd, &b, 1, (off_t)fn->offset) != 1)
		e = -EIO;
	close(fd);
	if (e)
		return e;
	*dev = st.st_dev;
	*ino = st.st_ino;
	return b;
}

/* Writes `orig` over the breakpoint at every executable mapping of the file's offset in
 * process pid.  0 (done, or nothing to do: no mapping, no breakpoint, the process gone),
 * or a negative errno. */
static int unpatch_pid(pid_t pid, dev_t dev, ino_t ino, uint64_t offset, unsigned char orig)
{
	struct xp_maps it;
	struct xp_maps_line m;
	char path[64];
	int mem = -1, e;

	if ((e = xp_maps_open(&it, pid)) < 0)
		return e == -ENOENT || e == -ESRCH ? 0 : e;
	e = 0;
	while (e == 0 && xp_maps_next(&it, &m)) {
		uint64_t addr;
		unsigned char b;

		if (m.perms[2] != 'x' || m.inode != ino || m.major != major(dev) ||
		    m.minor != minor(dev) || offset < m.pgoff || offset - m.pgoff >= m.end - m.start)
			continue;
		addr = m.start + (offset - m.pgoff);
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
		if (mem < 0 && (mem = open(path, O_RDWR | O_CLOEXEC)) < 0) {
			e = errno == ENOENT || errno == ESRCH ? 0 : -errno;
			break;
		}
		/* only our int3: the kernel's write of it, not anything else there */
		if (pread(mem, &b, 1, (off_t)addr) != 1)
			e = -EIO;
		else if (b == INT3 && pwrite(mem, &orig, 1, (off_t)addr) != 1)
			e = -EIO;
	}
	if (mem >= 0)
		close(mem);
	xp_maps_close(&it);
	return e;
}

int rec_probes_unpatch(struct rec_probes *p, struct rec_probe_fn *fn)
{
	dev_t dev = 0;
	ino_t ino = 0;
	uint64_t pid, v;
	size_t it = 0;
	int b, e;

	if (!p->root)
		return -EPERM;	/* -a: other processes' code is not ours to write */
	if ((b = file_byte(fn, &dev, &ino)) < 0)
		return b;
	if (b == INT3)
		return -EINVAL;
	e = unpatch_pid(p->root, dev, ino, fn->offset, (unsigned char)b);
	while (e == 0 && xp_map_next(&p->procs, &it, &pid, &v))
		if (v == 1 && (pid_t)pid != p->root)
			e = unpatch_pid((pid_t)pid, dev, ino, fn->offset, (unsigned char)b);
	return e;
}
