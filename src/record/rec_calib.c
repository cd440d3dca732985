/* What a probed call costs the traced program, measured at record start (see
 * rec_probe.h and perfdata/pd_probes.h).
 *
 * A helper child (a fork of xptrace, so the recording's own process is never probed)
 * places an entry and a return uprobe on rec_calib_probed, an empty routine of xptrace,
 * and runs many times the sequence
 *     M1 = now; rec_calib_probed(); M2 = now; rec_calib_unprobed(); M3 = now
 * on CLOCK_MONOTONIC, the clock of the probe hits' TIME (use_clockid).  Minimums over the
 * runs remove preemption and cache misses:
 *     per probed call       = min(M2 - M1) - min(M3 - M2)
 *     CALLEE_NS             = min(return hit TIME - entry hit TIME): what a call adds
 *                             inside the callee's own measured time
 *     CALLER_NS             = per probed call - CALLEE_NS: what it adds around it */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/rec.h"
#include "record/ring.h"
#include "util/xp_err.h"

#define CAL_RUNS 2000
#define CAL_PAGES 64		/* 256 KiB: CAL_RUNS x 2 hits of 24 bytes fit */

/* noipa: neither inlined nor merged with its twin (identical code folding), so both
 * calls are real calls to distinct addresses */
__attribute__((noipa)) void rec_calib_probed(void)
{
	__asm__ volatile("");
}

__attribute__((noipa)) void rec_calib_unprobed(void)
{
	__asm__ volatile("");
}

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct cal_out {
	int err;	/* positive errno, 0 when measured */
	uint64_t caller, callee, runs;
};

static int open_probe(const struct rec_probes *p, const char *exe, uint64_t off, int ret)
{
	struct perf_event_attr a;
	uint64_t words[PMU_NWORDS] = { 0 };

	memset(&a, 0, sizeof(a));
	pmu_field_put(&p->retprobe, (uint64_t)ret, words);
	a.size = sizeof(a);
	a.type = (uint32_t)p->type;
	a.config = words[PMU_CONFIG];
	a.config1 = (uint64_t)(uintptr_t)exe;
	a.config2 = off;
	a.sample_period = 1;
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TIME;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	return (int)rec_perf_open(&a, 0, -1, -1);
}

/* In the child: the measurement, or the errno that stopped it. */
static void measure(const struct rec_probes *p, struct cal_out *out)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (CAL_PAGES + 1) * pg;
	uint64_t d12 = UINT64_MAX, d23 = UINT64_MAX, callee = UINT64_MAX, entry = 0, ids[2];
	const struct perf_event_header *h;
	static struct ring rg;
	struct sym_found *f = NULL;
	char exe[PATH_MAX];
	int fd[2] = { -1, -1 }, n;
	void *base;

	if (!realpath("/proc/self/exe", exe) ||
	    (n = sym_find_funcs(exe, "rec_calib_probed", 0, &f)) <= 0) {
		out->err = ENOENT;	/* a stripped xptrace */
		return;
	}
	fd[0] = open_probe(p, exe, f[0].offset, 0);
	fd[1] = open_probe(p, exe, f[0].offset, 1);
	sym_found_free(f, n);
	if (fd[0] < 0 || fd[1] < 0 || ioctl(fd[0], PERF_EVENT_IOC_ID, &ids[0]) < 0 ||
	    ioctl(fd[1], PERF_EVENT_IOC_ID, &ids[1]) < 0) {
		out->err = errno;
		return;
	}
	base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd[0], 0);
	if (base == MAP_FAILED || ioctl(fd[1], PERF_EVENT_IOC_SET_OUTPUT, fd[0]) < 0 ||
	    ring_init(&rg, base, CAL_PAGES * pg) < 0) {
		out->err = errno ? errno : EINVAL;
		return;
	}
	ioctl(fd[0], PERF_EVENT_IOC_ENABLE, 0);
	ioctl(fd[1], PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < CAL_RUNS; i++) {
		uint64_t m1 = mono(), m2, m3;
		rec_calib_probed();
		m2 = mono();
		rec_calib_unprobed();
		m3 = mono();
		if (m2 - m1 < d12)
			d12 = m2 - m1;
		if (m3 - m2 < d23)
			d23 = m3 - m2;
	}
	ioctl(fd[0], PERF_EVENT_IOC_DISABLE, 0);
	ioctl(fd[1], PERF_EVENT_IOC_DISABLE, 0);
	out->runs = 0;
	ring_begin(&rg);
	while ((h = ring_next(&rg))) {
		uint64_t v[2];
		if (h->type != PERF_RECORD_SAMPLE || h->size < sizeof(*h) + 16)
			continue;
		memcpy(v, h + 1, 16);	/* IDENTIFIER, TIME */
		if (v[0] == ids[0]) {
			entry = v[1];
		} else if (v[0] == ids[1] && entry && v[1] >= entry) {
			if (v[1] - entry < callee)
				callee = v[1] - entry;
			entry = 0;
			out->runs++;
		}
	}
	ring_end(&rg);
	if (!out->runs || d12 <= d23) {
		out->err = out->runs ? ERANGE : ENODATA;
		return;
	}
	out->callee = callee;
	out->caller = d12 - d23 > callee ? d12 - d23 - callee : 0;
}

void rec_probes_calibrate(struct rec_probes *p)
{
	struct cal_out out = { 0 };
	int pfd[2], st;
	pid_t pid;
	ssize_t n;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		alarm(5);	/* whatever happens, the recording does not wait for us */
		measure(p, &out);
		n = write(pfd[1], &out, sizeof(out));
		_exit(n == sizeof(out) ? 0 : 1);
	}
	close(pfd[1]);
	out.err = ECHILD;
	if (pid > 0) {
		do
			n = read(pfd[0], &out, sizeof(out));
		while (n < 0 && errno == EINTR);
		if (n != sizeof(out))
			out.err = ECHILD;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	}
	close(pfd[0]);
	if (out.err) {
		if (!p->o->quiet)
			xp_warn("no calibration of the probes' cost (%s): decode cannot compensate it",
				out.err == ENOENT ? "xptrace has no symbol table" :
				out.err == ERANGE ? "the probed calls were not slower" :
				strerror(out.err));
		return;
	}
	p->cal_caller_ns = out.caller;
	p->cal_callee_ns = out.callee;
	p->cal_runs = out.runs;
	if (!p->o->quiet)
		xp_warn("calibration: a probed call costs %.2f us (%.2f us in the caller's time, "
			"%.2f us in the callee's; %llu runs)", (out.caller + out.callee) / 1e3,
			out.caller / 1e3, out.callee / 1e3, (unsigned long long)out.runs);
}
