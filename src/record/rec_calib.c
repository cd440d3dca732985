/* What a probed call costs the traced program, measured at record start (see
 * rec_probe.h and perfdata/pd_probes.h).
 *
 * A helper child (a fork of xptrace, so the recording's own process is never probed)
 * places an entry and a return uprobe on a routine of each class (rec_probe.h: the
 * kernel emulates the probed instruction, or single-steps it) and runs many times
 * the sequence
 *     M1 = now; routine(); M2 = now; unprobed twin(); M3 = now
 * on CLOCK_MONOTONIC, the clock of the probe hits' TIME (use_clockid).  What a hit
 * costs depends on how it is taken, so the helper takes it as the target's hits are:
 *   - the probes carry the target's probes' sample fields and callchain, if theirs
 *     have one (a user callchain walk per hit is ~40 % of a probed call's cost here);
 *   - the routines begin as the probed functions do: with a push (of the frame
 *     pointer or of a callee-saved register), which the kernel emulates, or with an
 *     instruction it single-steps out of line: a trap more, 4-5 x the cost of an
 *     emulated hit on a VM (issue 13: the empty routine probed before, a lone ret,
 *     cost 11.4 us in the callee against 2.7 us in the program's own probed P, whose
 *     first instruction is push %rbp).  The feature's figures are the classes'
 *     weighted by the hits of the probes of each (rec_probe_report.c).
 * Medians over the runs, not minimums: compensation subtracts calls x cost, so it
 * needs the typical cost of a hit; the minimum is the rare hit that found every cache
 * warm, below the cost of nearly all the target's hits.
 *     per probed call       = median(M2 - M1 - (M3 - M2))
 *     CALLEE_NS             = median(return hit TIME - entry hit TIME): what a call
 *                             adds inside the callee's own measured time
 *     CALLER_NS             = per probed call - CALLEE_NS: what it adds around it
 * The child reports, then holds its probe events until the recording ends (EOF on
 * cal_hold, closed by rec_probes_free): they match no other process, and the kernel
 * takes ~80 ms to close each (it waits for RCU grace periods) under a mutex that any
 * uprobe event's open waits for, so closing them at the start made the recording's
 * own probes wait (--adaptive armed its first ones up to 1.4 s late on a loaded
 * machine), and waiting for the closes delayed the command's start. */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "perfdata/pd_write.h"
#include "record/rec.h"
#include "record/ring.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"

#define CAL_RUNS 2000
#define CAL_BATCH 250		/* runs between two reads of the buffer */
#define CAL_PAGES 64		/* 256 KiB: CAL_BATCH x 2 hits with a callchain fit */

/* In assembly, so that the compiler's choices (frame pointer or not, CET) do not
 * decide how the kernel takes the hit: each class of rec_probe.h has a routine that
 * begins with an instruction of the class, and an unprobed twin of the same code at
 * another address, so that the two sequences differ by the hits only. */
void rec_calib_emulated(void);
void rec_calib_emulated_twin(void);
void rec_calib_stepped(void);
void rec_calib_stepped_twin(void);
#define CAL_ROUTINE(name, body) \
	".globl " name "\n"     \
	".type " name ", @function\n" \
	name ":\n" body "\tret\n"  \
	".size " name ", .-" name "\n"
#define CAL_PUSH "\tpush %rbp\n\tmov %rsp, %rbp\n\tpop %rbp\n"
#define CAL_MOV "\tmov %rdi, %rax\n"
__asm__(".text\n" CAL_ROUTINE("rec_calib_emulated", CAL_PUSH)
	CAL_ROUTINE("rec_calib_emulated_twin", CAL_PUSH)
	CAL_ROUTINE("rec_calib_stepped", CAL_MOV) CAL_ROUTINE("rec_calib_stepped_twin", CAL_MOV));

static const struct {
	const char *sym;
	void (*probed)(void), (*twin)(void);
} cal_routine[REC_CAL_N] = {
	[REC_CAL_EMULATED] = { "rec_calib_emulated", rec_calib_emulated, rec_calib_emulated_twin },
	[REC_CAL_STEPPED] = { "rec_calib_stepped", rec_calib_stepped, rec_calib_stepped_twin },
};

struct cal_out {
	int err;	/* positive errno, 0 when measured */
	uint64_t caller[REC_CAL_N], callee[REC_CAL_N], runs;
};

/* The sample fields and callchain (when they have one) of the target's probes
 * (rec_probe.c add_fn, rec_probe_arm.c rec_probe_fn_attr_fill): the kernel's work per
 * hit grows with them. */
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
	a.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
			PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD;
	a.read_format = PERF_FORMAT_ID;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	if (p->chain)
		rec_attr_callgraph(&a, p->o);
	if (ret)
		rec_probe_attr_retval(&a);
	return (int)rec_perf_open(&a, 0, -1, -1);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_u64);
	return v[n / 2];
}

/* The [entry, return] windows of the hits in the buffer, appended to win. */
static void read_windows(struct ring *rg, const uint64_t ids[2], size_t toff, uint64_t *win,
			 size_t *nwin)
{
	const struct perf_event_header *h;
	uint64_t entry = 0;

	ring_begin(rg);
	while ((h = ring_next(rg))) {
		uint64_t id, t;
		if (h->type != PERF_RECORD_SAMPLE || h->size < toff + 8)
			continue;
		memcpy(&id, h + 1, 8);	/* IDENTIFIER comes first */
		memcpy(&t, (const char *)h + toff, 8);	/* toff counts the header */
		if (id == ids[0]) {
			entry = t;
		} else if (id == ids[1] && entry && t >= entry && *nwin < CAL_RUNS) {
			win[(*nwin)++] = t - entry;
			entry = 0;
		}
	}
	ring_end(rg);
}

/* In the child: the measurement of class c, or the errno that stopped it.  Its events
 * stay open (released by the child's exit, after it reported). */
static void measure(const struct rec_probes *p, int c, struct cal_out *out)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE), len = (CAL_PAGES + 1) * pg, nwin = 0;
	static uint64_t call[CAL_RUNS], win[CAL_RUNS];
	uint64_t ids[2], per_call;
	static struct ring rg;
	struct sym_found *f = NULL;
	char exe[PATH_MAX];
	int fd[2] = { -1, -1 }, n, toff;
	void *base;

	if (!realpath("/proc/self/exe", exe) ||
	    (n = sym_find_funcs(exe, cal_routine[c].sym, 0, &f)) <= 0) {
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
	toff = pd_sample_time_offset(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |
				     PERF_SAMPLE_TIME);
	ioctl(fd[0], PERF_EVENT_IOC_ENABLE, 0);
	ioctl(fd[1], PERF_EVENT_IOC_ENABLE, 0);
	for (int i = 0; i < CAL_RUNS; i++) {
		uint64_t m1 = xp_now_ns(), m2, m3;
		cal_routine[c].probed();
		m2 = xp_now_ns();
		cal_routine[c].twin();
		m3 = xp_now_ns();
		/* may wrap below 0 on a preempted unprobed call: sorts last, as it should */
		call[i] = (m2 - m1) - (m3 - m2);
		if ((i + 1) % CAL_BATCH == 0)
			read_windows(&rg, ids, (size_t)toff, win, &nwin);
	}
	ioctl(fd[0], PERF_EVENT_IOC_DISABLE, 0);
	ioctl(fd[1], PERF_EVENT_IOC_DISABLE, 0);
	out->runs = nwin;
	if (!nwin) {
		out->err = ENODATA;
		return;
	}
	per_call = median(call, CAL_RUNS);
	out->callee[c] = median(win, nwin);
	if (per_call > (uint64_t)INT64_MAX || per_call <= out->callee[c]) {
		out->err = ERANGE;
		return;
	}
	out->caller[c] = per_call - out->callee[c];
}

static void cal_failed(const struct rec_probes *p, int err)
{
	if (!p->o->quiet)
		xp_warn("no calibration of the probes' cost (%s): decode cannot compensate it",
			err == ENOENT ? "xptrace has no symbol table" :
			err == ERANGE ? "the probed calls were not slower" : strerror(err));
}

void rec_probes_calibrate(struct rec_probes *p)
{
	struct cal_out out = { 0 };
	int pfd[2], hold[2];
	pid_t pid;
	ssize_t n;
	char c;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return;
	if (pipe2(hold, O_CLOEXEC) < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return;
	}
	pid = fork();
	if (pid == 0) {
		close(pfd[0]);
		close(hold[1]);
		/* record's own closes of its probes' events must be their last */
		for (int k = 0; k < p->ntried; k++)
			close(p->tried[k]);
		alarm(5);	/* whatever happens, the recording does not wait for us */
		for (int k = 0; k < REC_CAL_N && !out.err; k++)
			measure(p, k, &out);
		n = write(pfd[1], &out, sizeof(out));
		alarm(0);
		prctl(PR_SET_NAME, "xptrace-release");	/* what it does from now on */
		/* no pipe of record's caller waits for it ($(xptrace record ...)) */
		close(0);
		close(1);
		close(2);
		while (read(hold[0], &c, 1) < 0 && errno == EINTR)
			;
		_exit(n == sizeof(out) ? 0 : 1);
	}
	close(pfd[1]);
	close(hold[0]);
	if (pid < 0) {
		close(pfd[0]);
		close(hold[1]);
		cal_failed(p, errno);
		return;
	}
	p->cal_pid = pid;
	p->cal_fd = pfd[0];
	p->cal_hold = hold[1];	/* holding its probes until the end */
}

void rec_probes_calibrated(struct rec_probes *p, int wait)
{
	struct pollfd pf = { p->cal_fd, POLLIN, 0 };
	struct cal_out out = { 0 };
	ssize_t n;

	if (p->cal_fd < 0 || (!wait && poll(&pf, 1, 0) <= 0))
		return;
	do
		n = read(p->cal_fd, &out, sizeof(out));
	while (n < 0 && errno == EINTR);
	close(p->cal_fd);
	p->cal_fd = -1;
	/* the pipe holds less than PIPE_BUF: the child's one write, or nothing */
	if (n != sizeof(out)) {
		close(p->cal_hold);
		p->cal_hold = -1;
		while (waitpid(p->cal_pid, NULL, 0) < 0 && errno == EINTR)
			;
		p->cal_pid = 0;
		out.err = ECHILD;
	}
	if (out.err) {
		cal_failed(p, out.err);
		return;
	}
	memcpy(p->cal_caller_ns, out.caller, sizeof(out.caller));
	memcpy(p->cal_callee_ns, out.callee, sizeof(out.callee));
	p->cal_runs = out.runs;
	if (!p->o->quiet)
		xp_warn("calibration: a probed call costs %.2f us (%.2f us in the caller's time, "
			"%.2f us in the callee's) at a push the kernel emulates, %.2f us (%.2f + "
			"%.2f) at an instruction it single-steps; %llu runs",
			(out.caller[0] + out.callee[0]) / 1e3, out.caller[0] / 1e3,
			out.callee[0] / 1e3, (out.caller[1] + out.callee[1]) / 1e3,
			out.caller[1] / 1e3, out.callee[1] / 1e3, (unsigned long long)out.runs);
}
