/* Session services every record mode uses: target start/stop, record handling,
 * executable-mapping snapshots (see rec.h). */
#include "record/rec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "arch/x86_64/x86_regs.h"
#include "record/ring.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

volatile sig_atomic_t rec_stop_requested;
volatile sig_atomic_t rec_signalled;

void rec_set_sample_layout(struct rec *r, const struct perf_event_attr *attr, uint64_t id)
{
	r->sample_type = attr->sample_type;
	r->time_off = pd_sample_time_offset(attr->sample_type);
	r->synth_id = id;
	r->hold = r->time_off >= 0 && attr->use_clockid && attr->clockid == CLOCK_MONOTONIC;
}

int rec_target_go(struct rec *r)
{
	int e = 0;
	ssize_t n;

	if (r->go_fd < 0)
		return 0;
	if (write(r->go_fd, "g", 1) != 1)
		e = errno;
	close(r->go_fd);
	r->go_fd = -1;
	if (e)
		return xp_err_code(-e, "start the command", NULL, "%s", strerror(e));
	/* The error pipe is close-on-exec: EOF means the exec succeeded. */
	do
		n = read(r->exec_err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(r->exec_err_fd);
	r->exec_err_fd = -1;
	if (n == sizeof(e)) {
		waitpid(r->child, NULL, 0);
		r->target_done = 1;
		r->exec_failed = 1;
		r->child = 0;
		return xp_err_code(-e, "run the command", "check the command name and PATH", "%s: %s",
				   r->opts->cmd[0], strerror(e));
	}
	return 0;
}

int rec_wait(struct pollfd *pfd, unsigned long n, int timeout_ms)
{
	struct timespec ts = { timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L };
	sigset_t set, old;
	int r = 0;

	/* Blocked while the flag is tested, unblocked atomically by ppoll(). */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &old);
	if (!rec_signalled)
		r = ppoll(pfd, (nfds_t)n, &ts, &old);
	rec_signalled = 0;
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

void rec_started(struct rec *r)
{
	const struct rec_opts *o = r->opts;

	if (o->duration > 0)
		r->deadline_ns = xp_now_ns() + (uint64_t)(o->duration * 1e9);
	if (o->quiet || o->cmd || o->pid)
		return;
	if (o->duration > 0)
		fprintf(stderr, "xptrace: recording %s%s for %g s (Ctrl-C or SIGTERM stops it sooner)\n",
			o->cpu_list ? "CPUs " : "every CPU", o->cpu_list ? o->cpu_list : "", o->duration);
	else
		fprintf(stderr, "xptrace: recording %s%s until Ctrl-C or SIGTERM (-d SECONDS: for that "
			"long)\n", o->cpu_list ? "CPUs " : "every CPU", o->cpu_list ? o->cpu_list : "");
}

int rec_should_stop(struct rec *r)
{
	if (rec_stop_requested) {
		if (!r->stop_signal)
			r->stop_signal = (int)rec_stop_requested;
		return 1;
	}
	if (r->write_err)
		return 1;
	if (r->child && !r->target_done) {
		int st;
		pid_t p = waitpid(r->child, &st, WNOHANG);
		if (p == r->child) {
			r->target_status = st;
			r->target_done = 1;
		}
	}
	if (r->target_done)
		return 1;
	if (r->opts->pid && kill(r->opts->pid, 0) < 0 && errno == ESRCH) {
		r->target_done = 1;
		return 1;
	}
	if (r->deadline_ns && xp_now_ns() >= r->deadline_ns)
		return 1;
	return 0;
}

static int write_failed(struct rec *r, int e)
{
	if (!r->write_err)
		r->write_err = e;
	return e;
}

/* A SAMPLE's TIME into *t; 0 when the layout has none or the record is too short. */
static int sample_time(const struct rec *r, const struct perf_event_header *h, uint64_t *t)
{
	if (r->time_off < 0 || (size_t)r->time_off + 8 > h->size)
		return 0;
	memcpy(t, (const char *)h + r->time_off, 8);
	return 1;
}

int rec_record(struct rec *r, const struct perf_event_header *h)
{
	uint64_t t;
	int e;

	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (r->hooks.sample && !r->hooks.sample(r, h))
			return 0;	/* past --probe-limit */
		r->samples++;
		if (sample_time(r, h, &t)) {
			if (!r->first_time || t < r->first_time)
				r->first_time = t;
			if (t > r->last_time)
				r->last_time = t;
		}
		break;
	case PERF_RECORD_MMAP2:
		rec_snapshot_mmap2(r, h);
		break;
	case PERF_RECORD_LOST:
		if (h->size >= 24) {
			uint64_t n;
			memcpy(&n, (const char *)h + 16, 8);
			r->lost += n;
		}
		break;
	case PERF_RECORD_LOST_SAMPLES:
		if (h->size >= 16) {
			uint64_t n;
			memcpy(&n, (const char *)h + 8, 8);
			r->lost_samples += n;
		}
		break;
	case PERF_RECORD_FORK:
		if (r->hooks.fork)
			r->hooks.fork(r, h);
		break;
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
		r->switches++;
		break;
	}
	r->records++;
	e = pd_writer_record(r->w, h);
	return e < 0 ? write_failed(r, e) : 0;
}

/* Two passes over a round: the sideband (mmap, comm, fork, lost...) of every ring, then
 * the samples of all in the order of their times.  Readers order a round by time (perf's
 * ordered events, pd_read's queue), so the file means the same; but when the disk fills
 * up in the middle of a round, what is kept still holds the mappings that name its
 * samples: drained ring by ring, a 700 KB disk once kept 104 samples of one CPU's ring
 * and no mmap, which was in the next.  The samples are merged by time: read ring by
 * ring, a call entered on one cpu and returning on another had its return read before
 * its entry (the probes keep a thread's returns once its entry in the window was read:
 * that first return was lost), and --probe-limit counted entries in the order of the
 * rings, not of the calls.
 * The heads are taken one after the other, and a collector preempted between two (a
 * loaded machine) took one ring's head ms after another's: a thread that moved cpu
 * meanwhile had its later hit in this round and its earlier one in the next (a return
 * read after the next call's entry).  Every sample written before the round began is
 * under its ring's head, whichever was taken last; so with CLOCK_MONOTONIC times
 * (r->hold) the samples from that moment on are held (copied) for the next round,
 * merged there with its own, until the events are disabled (r->rings_final).  They
 * reach the file and the probes' counts one round (~10 ms with probes) later.  From a
 * margin before that moment (HOLD_MARGIN_NS: a sample stamped before it can be
 * published after its ring's head was taken, seen as an entry read after its return;
 * the kernel stamps, then publishes, and a vCPU the hypervisor preempts in between
 * publishes ms later on a loaded VM; with 2 ms, a loaded run once kept one entry of
 * 161897 without its return, which such a delay would explain), but never from before
 * the last round had taken its heads: perf (ordered events) takes a record written in
 * round N+1 as out of order when it is older than the newest of round N-1, and every
 * record of round N-1 is older than that.  Rounds come every ~10 ms, so the hold
 * reaches back to the last round's heads. */
#define HOLD_MARGIN_NS 50000000ull
struct take {
	struct rec *r;
	uint64_t begun;		/* samples at or after it are held */
	const uint8_t *old;	/* the last round's held samples, in time order */
	size_t off, len;
	struct rec_held next;
};

static int hold(struct take *k, const struct perf_event_header *h)
{
	if (XP_GROW(k->next.buf, k->next.cap, k->next.len + h->size) < 0)
		return -ENOMEM;
	memcpy(k->next.buf + k->next.len, h, h->size);
	k->next.len += h->size;
	return 0;
}

/* The last round's held samples up to time t (all when t is UINT64_MAX): taken, or
 * held again when they are not before `begun` either (a TIME ahead of the clock), so
 * that what is held stays in time order. */
static int take_old(struct take *k, uint64_t t)
{
	int e = 0;

	while (e == 0 && k->off < k->len) {
		const struct perf_event_header *h = (const void *)(k->old + k->off);
		uint64_t ht = 0;

		sample_time(k->r, h, &ht);
		if (ht > t)
			break;
		k->off += h->size;
		e = ht < k->begun ? rec_record(k->r, h) : hold(k, h);
	}
	return e;
}

static int take_sample(void *ctx, const struct perf_event_header *h)
{
	struct take *k = ctx;
	uint64_t t = 0;
	int e;

	sample_time(k->r, h, &t);
	if ((e = take_old(k, t)) < 0)
		return e;
	return t < k->begun ? rec_record(k->r, h) : hold(k, h);
}

int rec_take_round(struct rec *r, struct ring *first, size_t stride, int n,
		   void (*note)(void *ctx, const struct perf_event_header *h), void *ctx)
{
	uint64_t now = xp_now_ns();
	struct take k = { r, !r->hold || r->rings_final ? UINT64_MAX
			  : now - HOLD_MARGIN_NS > r->heads_taken ? now - HOLD_MARGIN_NS : r->heads_taken,
			  r->held.buf, 0, r->held.len, { 0 } };
	const struct perf_event_header *h;
	int any = k.len != 0, e = 0;

	for (int i = 0; i < n; i++)
		any |= ring_begin(ring_at(first, stride, i)) != 0;
	r->heads_taken = xp_now_ns();
	for (int i = 0; e == 0 && i < n; i++) {
		struct ring *rg = ring_at(first, stride, i);
		while (e == 0 && (h = ring_next(rg)))
			if (h->type != PERF_RECORD_SAMPLE) {
				if (note)
					note(ctx, h);
				e = rec_record(r, h);
			}
		ring_rewind(rg);
	}
	if (e == 0)
		e = ring_merge_samples(first, stride, n,
				       r->time_off >= 0 ? (size_t)r->time_off : SIZE_MAX, take_sample, &k);
	if (e == 0)
		e = take_old(&k, UINT64_MAX);
	for (int i = 0; i < n; i++)
		ring_end(ring_at(first, stride, i));
	free(r->held.buf);
	r->held = k.next;
	return e < 0 ? e : any;
}

int rec_round(struct rec *r)
{
	int e = pd_writer_finished_round(r->w);

	return e < 0 ? write_failed(r, e) : 0;
}

/* PERF_RECORD_MMAP2 body (after the header). */
struct mmap2_body {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	union {
		struct {
			uint32_t maj, min;
			uint64_t ino, ino_generation;
		};
		struct {
			uint8_t build_id_size, res1;
			uint16_t res2;
			uint8_t build_id[20];
		};
	};
	uint32_t prot, flags;
	char filename[];
};

void rec_snapshot_mmap2(struct rec *r, const struct perf_event_header *h)
{
	const struct mmap2_body *m = (const void *)(h + 1);
	const uint8_t *bid = NULL;
	size_t bsz = 0, maxname;
	char name[4096], src[96];
	int e;

	if (h->size < sizeof(*h) + sizeof(*m) + 1 || !(m->prot & PROT_EXEC))
		return;
	maxname = h->size - sizeof(*h) - sizeof(*m);
	if (maxname >= sizeof(name))
		maxname = sizeof(name) - 1;
	memcpy(name, m->filename, maxname);
	name[maxname] = 0;
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		bid = m->build_id;
		bsz = m->build_id_size <= 20 ? m->build_id_size : 20;
		if (bsz && ms_store_has(r->ms, bid, bsz))
			return;
		if (!bsz)
			bid = NULL;
	}
	if (strcmp(name, "[vdso]") == 0) {
		const void *img;
		size_t size;
		/* Every 64-bit process of this kernel maps the same vdso as we do. */
		e = ms_vdso_self(&img, &size);
		if (e == 0)
			e = ms_store_add_image(r->ms, "[vdso]", img, size, bid, bsz);
	} else if (name[0] != '/' || strncmp(name, "/memfd:", 7) == 0 ||
		   strncmp(name, "//anon", 6) == 0 || strncmp(name, "/dev/", 5) == 0) {
		/* anonymous code (JIT) has no file to keep: its perf map may name it */
		rec_jit_note_mmap(r, (int32_t)m->pid, name, 1);
		return;
	} else if (rec_jit_note_mmap(r, (int32_t)m->pid, name, 0)) {
		return;	/* a jitdump, not ELF: kept as a whole at the end */
	} else {
		/* map_files reaches the mapped inode even if the path was deleted or replaced;
		 * once the process exited, the store reads the path */
		snprintf(src, sizeof(src), "/proc/%u/map_files/%lx-%lx", m->pid,
			 (unsigned long)m->addr, (unsigned long)(m->addr + m->len));
		e = ms_store_add_file(r->ms, name, src, bid, bsz);
	}
	if (e < 0) {
		r->snapshot_fail++;
		if (!r->opts->quiet && e != -ENODATA)
			xp_warn("no snapshot of %s: %s", name,
				e == -ESTALE ? "the file changed since it was mapped" : strerror(-e));
	}
}

long rec_perf_open(struct perf_event_attr *a, pid_t pid, int cpu, int group)
{
	return syscall(SYS_perf_event_open, a, pid, cpu, group, PERF_FLAG_FD_CLOEXEC);
}

void rec_attr_callgraph(struct perf_event_attr *a, const struct rec_opts *o)
{
	if (o->callgraph != REC_CG_NONE) {
		a->sample_type |= PERF_SAMPLE_CALLCHAIN;
		a->exclude_callchain_kernel = 1;
	}
	if (o->callgraph == REC_CG_DWARF) {
		a->sample_type |= PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
		a->sample_regs_user = x86_perf_regs_user_mask();
		a->sample_stack_user = o->stack_size ? o->stack_size : REC_DEFAULT_STACK;
	}
}
