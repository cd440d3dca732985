/* Another tool's breakpoints in the code the step tracer reads (see stp_int.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "record/step/stp_int.h"
#include "session/sym_find.h"
#include "util/xp_err.h"
#include "util/xp_maps.h"

/* fb_at values: the file's byte under a foreign int3, or a 0xcc that is the file's own */
#define FB_FOREIGN 0x100u
#define FB_OWN 0x200u
#define SAY_MAX 8	/* a probe on every function of a library would fill the screen */

/* The byte at a (mem in memory, fb in the file of mapping l) when it is a 0xcc not
 * known yet. */
static void settle(struct stp_mm *m, uint64_t a, uint8_t mem, uint8_t fb,
		   const struct xp_maps_line *l)
{
	char fn[160];

	if (mem != X86_ISA_BP_BYTE || xp_map_get(&m->fb_at, a, NULL))
		return;
	if (fb == X86_ISA_BP_BYTE) {
		xp_map_put(&m->fb_at, a, FB_OWN);
		return;
	}
	xp_map_put(&m->fb_at, a, FB_FOREIGN | fb);
	if (++m->foreign_said > SAY_MAX) {
		if (m->foreign_said == SAY_MAX + 1)
			xp_warn("step: more breakpoints of other tools in process %d (not listed), "
				"traced through like those", (int)m->pid);
		return;
	}
	sym_func_at(l->path, l->pgoff + (a - l->start), fn, sizeof(fn));
	xp_warn("step: another tool's breakpoint (a uprobe) at %#llx (%s in %s): the trace "
		"holds the program's own instruction there, single-stepped through the kernel's "
		"uprobe (the other tool still counts its hits and keeps its probe; each pass "
		"costs the tracer a stop)", (unsigned long long)a, fn, l->path);
}

/* Settles every 0xcc of buf (code at ip) not known yet: one look at the maps and one
 * read of the file for the whole buffer. */
static void classify(struct stp_mm *m, uint64_t ip, const uint8_t *buf, size_t n)
{
	struct xp_maps it;
	struct xp_maps_line l;
	uint8_t file[256];

	if (xp_maps_open(&it, m->pid) < 0)
		return;
	while (xp_maps_next(&it, &l)) {
		char mf[96];
		int fd;

		if (l.end <= ip || l.start >= ip + n || l.perms[2] != 'x' || l.path[0] != '/')
			continue;	/* only a file-backed executable mapping can hold a uprobe */
		/* the mapped file itself (the path may name a newer one), else the path */
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx", (int)m->pid,
			 (unsigned long long)l.start, (unsigned long long)l.end);
		if ((fd = open(mf, O_RDONLY | O_CLOEXEC)) < 0 && (fd = open(l.path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		for (uint64_t lo = ip > l.start ? ip : l.start; lo < ip + n && lo < l.end; lo += sizeof(file)) {
			uint64_t hi = lo + sizeof(file);
			ssize_t got;

			hi = hi < ip + n ? hi : ip + n;
			hi = hi < l.end ? hi : l.end;
			got = pread(fd, file, hi - lo, (off_t)(l.pgoff + (lo - l.start)));
			for (uint64_t a = lo; got > 0 && a < lo + (uint64_t)got; a++)
				settle(m, a, buf[a - ip], file[a - lo], &l);
		}
		close(fd);
	}
	xp_maps_close(&it);
	/* the rest is no file's (anonymous code, a file gone): the program's own int3s */
	for (size_t i = 0; i < n; i++)
		if (buf[i] == X86_ISA_BP_BYTE && !xp_map_get(&m->fb_at, ip + i, NULL))
			xp_map_put(&m->fb_at, ip + i, FB_OWN);
}

void stp_foreign_fix(struct stp_mm *m, uint64_t ip, uint8_t *buf, size_t n)
{
	int asked = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t v;

		if (buf[i] != X86_ISA_BP_BYTE)
			continue;
		if (!xp_map_get(&m->fb_at, ip + i, &v)) {
			if (asked++)
				continue;
			classify(m, ip, buf, n);
			if (!xp_map_get(&m->fb_at, ip + i, &v))
				continue;
		}
		if (v & FB_FOREIGN)
			buf[i] = (uint8_t)v;
	}
}

bool stp_foreign_at(const struct stp_mm *m, uint64_t addr)
{
	uint64_t v;

	return xp_map_get(&m->fb_at, addr, &v) && (v & FB_FOREIGN);
}

void stp_foreign_forget(struct stp_mm *m, uint64_t addr, uint64_t len)
{
	uint64_t gone[64], k, v;
	size_t n;

	do {	/* a deletion may move entries the iteration has not seen yet */
		size_t it = 0;

		n = 0;
		while (n < 64 && xp_map_next(&m->fb_at, &it, &k, &v))
			if (k >= addr && k - addr < len)
				gone[n++] = k;
		for (size_t i = 0; i < n; i++)
			xp_map_del(&m->fb_at, gone[i]);
	} while (n == 64);
}

void stp_foreign_xol(struct stp *s, struct stp_mm *m)
{
	struct xp_maps it;
	struct xp_maps_line l;

	if (m->xol_known || xp_maps_open(&it, m->pid) < 0)
		return;
	while (xp_maps_next(&it, &l))
		if (strcmp(l.path, "[uprobes]") == 0) {
			m->xol_known = 1;
			for (unsigned i = 0; i < s->nxol; i++)
				if (s->xol[i].start == l.start)
					goto out;
			if (s->nxol < sizeof(s->xol) / sizeof(s->xol[0]))
				s->xol[s->nxol++] = (struct stp_range){ l.start, l.end };
			break;
		}
out:
	xp_maps_close(&it);
}
