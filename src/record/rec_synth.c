/* The initial state of an already running process (-p), synthesized from /proc as
 * perf does: FORK + COMM per thread, MMAP2 (with build-id) per executable mapping. */
#include "record/rec.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

int rec_list_threads(pid_t pid, pid_t **tids)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	pid_t *v = NULL;
	int n = 0, cap = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		if (XP_GROW(v, cap, (size_t)n + 1) < 0) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v[n++] = (pid_t)atoi(de->d_name);
	}
	closedir(d);
	if (n)	/* (the process ended meanwhile: no array, and qsort's is declared non-null) */
		qsort(v, (size_t)n, sizeof(*v), cmp_pid);
	*tids = v;
	return n;
}

static int tracer_pid(pid_t pid)
{
	char path[64], line[256];
	int tracer = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %d", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}

int rec_check_untraced(pid_t pid)
{
	int tracer = tracer_pid(pid);

	if (tracer <= 0)
		return 0;
	return xp_err_code(-EBUSY, "attach", "end or detach that tracer (gdb, strace, another xptrace) first",
			   "process %d is traced already, by PID %d: a process has one tracer at a "
			   "time", (int)pid, tracer);
}

static int emit(struct rec *r, void *buf, size_t body, uint32_t pid, uint32_t tid,
		uint16_t type, uint16_t misc)
{
	struct perf_event_header *h = buf;
	size_t n = body;

	n += pd_id_sample((char *)buf + n, r->sample_type, pid, tid, 0, r->synth_id, 0);
	h->type = type;
	h->misc = misc;
	h->size = (uint16_t)n;
	return rec_record(r, h);
}

static int synth_thread(struct rec *r, pid_t pid, pid_t tid)
{
	char path[96], comm[32] = "";
	uint64_t buf[64];
	FILE *f;
	int e;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return 0;	/* the thread ended meanwhile */
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = 0;
	fclose(f);
	comm[strcspn(comm, "\n")] = 0;

	/* FORK: pid, ppid, tid, ptid, time (the thread as a child of the main thread). */
	memset(buf, 0, sizeof(buf));
	{
		uint32_t *u = (uint32_t *)(buf + 1);
		u[0] = (uint32_t)pid;
		u[1] = (uint32_t)pid;
		u[2] = (uint32_t)tid;
		u[3] = (uint32_t)pid;
		buf[3] = 0;
	}
	if (tid != pid && (e = emit(r, buf, 32, (uint32_t)pid, (uint32_t)tid, PERF_RECORD_FORK, 0)) < 0)
		return e;
	/* COMM: pid, tid, comm padded to 8. */
	memset(buf, 0, sizeof(buf));
	{
		uint32_t *u = (uint32_t *)(buf + 1);
		size_t clen = strlen(comm) + 1, plen = (clen + 7) & ~(size_t)7;
		u[0] = (uint32_t)pid;
		u[1] = (uint32_t)tid;
		memcpy(buf + 2, comm, clen);
		return emit(r, buf, 16 + plen, (uint32_t)pid, (uint32_t)tid, PERF_RECORD_COMM, 0);
	}
}

/* One line of /proc/PID/maps -> MMAP2 when executable. */
static int synth_mapping(struct rec *r, pid_t pid, const char *line)
{
	unsigned long lo, hi, off, ino;
	unsigned maj, min;
	char perms[8], name[4096] = "";
	uint64_t buf[(4096 + 200) / 8];
	struct perf_event_header *h = (void *)buf;
	uint8_t *p = (uint8_t *)(h + 1);
	size_t nlen, plen, body;
	uint32_t prot = 0, flags, u32;
	uint8_t bid[MS_BUILD_ID_MAX];
	size_t bsz = 0;
	uint16_t misc = PERF_RECORD_MISC_USER;
	int n;

	if (sscanf(line, "%lx-%lx %7s %lx %x:%x %lu %n", &lo, &hi, perms, &off, &maj, &min, &ino,
		   &n) < 7)
		return 0;
	if (perms[2] != 'x')
		return 0;
	snprintf(name, sizeof(name), "%s", line + n);
	name[strcspn(name, "\n")] = 0;
	if (!name[0])
		snprintf(name, sizeof(name), "//anon");
	prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
	flags = perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;

	if (strcmp(name, "[vdso]") == 0) {
		const void *img;
		size_t size;
		if (ms_vdso_self(&img, &size) == 0 && ms_build_id_mem(img, size, bid, &bsz) == 0)
			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else if (name[0] == '/') {
		char src[96];
		snprintf(src, sizeof(src), "/proc/%d/map_files/%lx-%lx", (int)pid, lo, hi);
		if (ms_build_id_file(src, bid, &bsz) == 0 || ms_build_id_file(name, bid, &bsz) == 0)
			misc |= PERF_RECORD_MISC_MMAP_BUILD_ID;
	} else if (name[0] == '[') {
		return 0;	/* [vsyscall] and friends: no code of the process */
	}

	nlen = strlen(name) + 1;
	plen = (nlen + 7) & ~(size_t)7;
	memset(buf, 0, sizeof(buf));
	u32 = (uint32_t)pid;
	memcpy(p, &u32, 4);
	memcpy(p + 4, &u32, 4);
	{
		uint64_t v[3] = { lo, hi - lo, off };
		memcpy(p + 8, v, 24);
	}
	if (misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		p[32] = (uint8_t)bsz;
		memcpy(p + 36, bid, bsz);
	} else {
		uint32_t mm[2] = { maj, min };
		uint64_t in[2] = { ino, 0 };
		memcpy(p + 32, mm, 8);
		memcpy(p + 40, in, 16);
	}
	memcpy(p + 56, &prot, 4);
	memcpy(p + 60, &flags, 4);
	memcpy(p + 64, name, nlen);
	body = sizeof(*h) + 64 + plen;
	return emit(r, buf, body, (uint32_t)pid, (uint32_t)pid, PERF_RECORD_MMAP2, misc);
}

int rec_synthesize(struct rec *r, pid_t pid)
{
	pid_t *tids = NULL;
	char path[64], line[4600];
	FILE *f;
	int n, e = 0;

	n = rec_list_threads(pid, &tids);
	if (n < 0)
		return n;
	for (int i = 0; i < n && e == 0; i++)
		e = synth_thread(r, pid, tids[i]);
	free(tids);
	if (e < 0)
		return e;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (e == 0 && fgets(line, sizeof(line), f))
		e = synth_mapping(r, pid, line);
	fclose(f);
	if (e == 0)
		e = pd_writer_finished_init(r->w);
	return e;
}

int rec_parse_cpu_list(const char *list, int **cpus)
{
	char buf[1024], *s, *tok;
	int *v = NULL, n = 0, cap = 0;

	if (snprintf(buf, sizeof(buf), "%s", list) >= (int)sizeof(buf))
		return -EINVAL;
	for (tok = strtok_r(buf, ",\n", &s); tok; tok = strtok_r(NULL, ",\n", &s)) {
		int a, b, k;
		if (sscanf(tok, "%d-%d%n", &a, &b, &k) == 2 && tok[k] == 0) {
		} else if (sscanf(tok, "%d%n", &a, &k) == 1 && tok[k] == 0) {
			b = a;
		} else {
			free(v);
			return -EINVAL;
		}
		if (a < 0 || b < a || b > 65535) {
			free(v);
			return -EINVAL;
		}
		for (int c = a; c <= b; c++) {
			if (XP_GROW(v, cap, (size_t)n + 1) < 0) {
				free(v);
				return -ENOMEM;
			}
			v[n++] = c;
		}
	}
	if (!n)
		return -EINVAL;
	*cpus = v;
	return n;
}

int rec_online_cpus(int **cpus)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "re");
	char buf[1024];

	if (!f)
		return -ENOENT;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -ENOENT;
	}
	fclose(f);
	return rec_parse_cpu_list(buf, cpus);
}

int rec_targets(struct rec *r, int all_cpus, int **cpus, int *ncpus, pid_t **pids)
{
	const struct rec_opts *o = r->opts;
	int n;

	*cpus = NULL;
	*pids = NULL;
	*ncpus = rec_online_cpus(cpus);
	if (*ncpus <= 0)
		return xp_err("list CPUs", NULL, "cannot read /sys/devices/system/cpu/online");
	if (o->pid && !all_cpus) {
		n = rec_list_threads(o->pid, pids);
		if (n > 0)
			return n;
		free(*cpus);
		*cpus = NULL;
		return xp_err("attach", "check the pid", "process %d: %s", (int)o->pid,
			      n < 0 ? strerror(-n) : "no threads");
	}
	*pids = malloc(sizeof(**pids));
	if (!*pids) {
		free(*cpus);
		*cpus = NULL;
		return -ENOMEM;
	}
	(*pids)[0] = all_cpus ? -1 : r->target;
	return 1;
}
