/* The step tracer's ptrace loop: attach, wait for stops and dispatch them (events,
 * syscalls, signals, breakpoints), end (see stp.h). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "record/step/stp_int.h"
#include "util/xp_clock.h"

#define TRACE_OPTIONS (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | \
		       PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK)

/* Whether `sig` is in the signal set `field` (SigCgt, SigIgn, SigPnd) of thread tid of
 * pid (/proc); `dflt` when that cannot be read. */
static int sig_in(pid_t pid, pid_t tid, const char *field, int sig, int dflt)
{
	char path[96], line[256];
	unsigned long long mask;
	size_t n = strlen(field);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return dflt;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, n) == 0 && line[n] == ':' &&
		    sscanf(line + n + 1, "%llx", &mask) == 1) {
			fclose(f);
			return sig >= 1 && sig <= 64 && (mask >> (sig - 1)) & 1;
		}
	fclose(f);
	return dflt;
}

/* Does the default action of `sig` end the process (terminate or dump core)? */
static int sig_kills(const struct stp_thr *t, int sig)
{
	switch (sig) {
	case SIGCHLD: case SIGCONT: case SIGURG: case SIGWINCH:
	case SIGSTOP: case SIGTSTP: case SIGTTIN: case SIGTTOU:
		return 0;
	}
	return !sig_in(t->pid, t->tid, "SigIgn", sig, 0);
}

/* A signal with no handler that ends the thread: where it hit and why.  A fault raised
 * by the instruction at rip (si_code > 0: SEGV_MAPERR, FPE_INTDIV, ILL_*, ...) ends
 * the trace there like the hardware's FUP + TIP.PGD into the kernel; a signal sent by
 * someone (kill, abort's tgkill: si_code <= 0) or met on the way back from a syscall
 * hit no instruction: the trace's last instruction stays the last one. */
static int on_fatal(struct stp *s, struct stp_thr *t, int sig, struct user_regs_struct *r)
{
	struct stp_event ev = { .kind = STP_FATAL, .ip = x86_isa_ip(r), .sig = sig };
	siginfo_t si;

	memset(&si, 0, sizeof(si));
	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) == 0) {
		ev.code = si.si_code;
		if (si.si_code > 0)
			ev.to = (uint64_t)(uintptr_t)si.si_addr;
	}
	ev.time = xp_now_ns();
	if (si.si_code > 0)
		stp_sync_enable(s, t, ev.time);	/* back from a syscall, it ran up to here */
	ev.taken = si.si_code > 0 && t->enabled;
	if (ev.taken) {
		struct stp_event dis = { .kind = STP_DISABLE, .ip = ev.ip, .taken = 1,
					 .time = ev.time };

		t->enabled = 0;
		stp_emit(s, t, &dis);
	}
	stp_emit(s, t, &ev);
	return stp_resume(t, sig);
}

static int on_signal(struct stp *s, struct stp_thr *t, int sig, struct user_regs_struct *r)
{
	struct stp_event ev = { .kind = STP_ASYNC, .ip = x86_isa_ip(r) };
	int st;

	s->st.signal_stops++;
	s->st.signals++;
	if (!sig_in(t->pid, t->tid, "SigCgt", sig, 0))	/* default action or ignored: no transfer in user code */
		return sig_kills(t, sig) ? on_fatal(s, t, sig, r) : stp_resume(t, sig);
	/* Single-stepping into the signal stops at the handler's first instruction. */
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, (void *)(long)sig) < 0)
		return -errno;
	if (waitpid(t->tid, &st, __WALL) < 0)
		return -errno;
	s->st.stops++;		/* at the handler */
	s->st.other_stops++;
	if (!WIFSTOPPED(st))
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, r) < 0)
		return -errno;
	ev.to = x86_isa_ip(r);
	ev.time = xp_now_ns();
	if (t->pending) {
		/* back from a syscall straight into the handler: tracing resumes there */
		t->pending = 0;
		t->enabled = 0;
	}
	if (!t->enabled && stp_in_range(s, ev.to)) {
		ev.kind = STP_ENABLE;
		ev.ip = ev.to;
		t->enabled = 1;
		stp_emit(s, t, &ev);
	} else if (t->enabled && !stp_in_range(s, ev.to)) {
		ev.kind = STP_DISABLE;	/* asynchronous exit from the filter ranges */
		ev.to = 0;
		ev.taken = 1;
		t->enabled = 0;
		stp_emit(s, t, &ev);
	} else if (t->enabled) {
		stp_emit(s, t, &ev);
	}
	stp_go_on(s, t, x86_isa_ip(r));
	return stp_resume(t, 0);
}

static int on_syscall(struct stp *s, struct stp_thr *t, struct user_regs_struct *r)
{
	struct __ptrace_syscall_info si;
	struct stp_event ev = { 0 };
	uint64_t time = xp_now_ns();

	s->st.syscall_stops++;
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, (void *)sizeof(si), &si) <= 0)
		return -errno;
	if (si.op == PTRACE_SYSCALL_INFO_ENTRY) {
		s->st.syscalls++;
		t->in_syscall = 1;
		t->sc_nr = (long)si.entry.nr;
		t->sc_args[0] = si.entry.args[0];
		t->sc_args[1] = si.entry.args[1];
		t->sc_args[3] = si.entry.args[3];
		stp_sync_enable(s, t, time);
		if (t->enabled) {
			ev.kind = STP_DISABLE;
			ev.time = time;
			ev.ip = x86_isa_syscall_ip(r);
			stp_emit(s, t, &ev);
			t->enabled = 0;
		}
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT) {
		t->in_syscall = 0;
		stp_on_rename(s, t, si.exit.rval, time);
		if (t->sc_nr == SYS_mmap || t->sc_nr == SYS_mprotect || t->sc_nr == SYS_munmap ||
		    t->sc_nr == SYS_mremap || t->sc_nr == SYS_brk)
			stp_mm_maps_changed(t->mm);
		if (t->sc_nr == SYS_mmap || t->sc_nr == SYS_mprotect || t->sc_nr == SYS_munmap ||
		    t->sc_nr == SYS_mremap) {
			/* mprotect keeps the bytes (and our int3s); the others replace them.
			 * Forget first: the consumer may arm filter entries in the new code. */
			if (t->sc_nr == SYS_munmap || t->sc_nr == SYS_mremap ||
			    (t->sc_nr == SYS_mmap && (t->sc_args[3] & MAP_FIXED)))
				stp_forget_code(t->mm, t->sc_args[0], t->sc_args[1]);
			ev.kind = STP_MAPS;
			ev.time = time;
			stp_emit(s, t, &ev);
			if (s->ranges_dirty)
				stp_arm_entries(s, t->mm);
		}
		if (stp_in_range(s, x86_isa_ip(r))) {
			t->pending = 1;
			t->pge_ip = x86_isa_ip(r);
			stp_go_on(s, t, t->pge_ip);
		} else if (stp_xol_at(s, x86_isa_ip(r))) {
			stp_go_on(s, t, x86_isa_ip(r));	/* stepped out of it */
		}
	}
	return stp_resume(t, 0);
}

static int handle_stop(struct stp *s, pid_t tid, int st)
{
	struct user_regs_struct r;
	struct stp_thr *t = stp_thr_find(s, tid);
	int sig, event;

	s->st.stops++;
	if (!t) {
		/* a new thread's first stop before its parent's clone event */
		if (!WIFSTOPPED(st) || !(t = stp_thr_add(s, tid)))
			return WIFSTOPPED(st) ? -ENOMEM : 0;
		t->state = STP_TH_NEW;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st))
		return stp_on_exit(s, t, st);
	if (!WIFSTOPPED(st))
		return 0;
	sig = WSTOPSIG(st);
	event = st >> 16;
	if (t->state == STP_TH_NEW) {
		/* SIGSTOP for PTRACE_TRACEME tracers, PTRACE_EVENT_STOP under PTRACE_SEIZE */
		if (sig != SIGSTOP && event != PTRACE_EVENT_STOP) {
			s->st.other_stops++;
			return stp_resume(t, 0);
		}
		t->have_stop = 1;
		return stp_start_thread(s, t);
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return errno == ESRCH ? 0 : -errno;
	if (t->state == STP_TH_PREEXEC) {
		if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC)
			return stp_on_exec(s, t, &r);
		s->st.other_stops++;
		return ptrace(PTRACE_CONT, tid, 0, (void *)(long)(sig == SIGTRAP ? 0 : sig)) < 0 ? -errno : 0;
	}
	if (sig == (SIGTRAP | 0x80))
		return on_syscall(s, t, &r);
	if (sig == SIGTRAP && event) {
		switch (event) {
		case PTRACE_EVENT_EXEC:
			return stp_on_exec(s, t, &r);
		case PTRACE_EVENT_CLONE:
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
			return stp_on_clone(s, t, event);
		default:	/* PTRACE_EVENT_STOP: group-stop of a seized tracee */
			s->st.other_stops++;
			return stp_resume(t, 0);
		}
	}
	if (event == PTRACE_EVENT_STOP) {
		s->st.other_stops++;
		return stp_resume(t, 0);
	}
	/* the single-step over another tool's int3 ended after it: the kernel ran the
	 * instruction (out of line or emulated) and, the step flag set, sent this SIGTRAP */
	if (sig == SIGTRAP && t->fstep && x86_isa_ip(&r) != t->fstep)
		return stp_on_foreign_step(s, t, &r);
	/* SIGTRAP right after one of our int3s is that int3 (not asking GETSIGINFO saves a
	 * syscall per stop; a program's own SIGTRAP there would have to be raised by kill
	 * exactly at a branch) */
	if (sig == SIGTRAP && stp_bp_find(t->mm, x86_isa_bp_addr(&r))) {
		/* > 0: the branch stepped for real met a signal (its fault) instead */
		if ((sig = stp_on_breakpoint(s, t, &r)) <= 0)
			return sig;
	}
	return on_signal(s, t, sig, &r);
}

int stp_attach(struct stp **out, const struct stp_opts *o, pid_t pid)
{
	struct stp *s = calloc(1, sizeof(*s));
	struct stp_thr *t;
	int err;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	if ((err = x86_dis_init(&s->dis)) < 0 ||
	    (err = stp_set_ranges(s, o->ranges, o->nranges)) < 0)
		goto fail;
	/* the command lives only for its recording: it dies with a tracer that does */
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)(TRACE_OPTIONS | PTRACE_O_EXITKILL)) < 0) {
		err = -errno;
		goto fail;
	}
	if (!(t = stp_thr_add(s, pid))) {
		err = -ENOMEM;
		goto fail;
	}
	t->state = STP_TH_PREEXEC;
	s->root = pid;
	*out = s;
	return 0;
fail:
	stp_free(s);
	return err;
}

static int seize_thread(struct stp *s, pid_t pid, pid_t tid)
{
	struct stp_thr *t;

	/* no EXITKILL: a process we attached to is not ours to end */
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)TRACE_OPTIONS) < 0)
		return -errno;
	if (!(t = stp_thr_add(s, tid)))
		return -ENOMEM;
	t->pid = pid;
	t->state = STP_TH_SEIZED;
	if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
		return -errno;
	return 0;
}

/* Seizes the threads /proc lists until a listing has no new one: a thread created by
 * one not seized yet is missed by its parent's PTRACE_O_TRACECLONE, never by the next
 * listing.  One a seized thread created is ours already (-EPERM here): its own stop
 * comes through waitpid. */
static int seize_threads(struct stp *s, pid_t pid)
{
	char path[64];
	int added;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	do {
		struct dirent *de;
		DIR *d = opendir(path);

		if (!d)
			return s->threads ? 0 : -errno;
		added = 0;
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			int e;

			if (tid <= 0 || stp_thr_find(s, tid))
				continue;
			e = seize_thread(s, pid, tid);
			if (e == -ESRCH || (e == -EPERM && s->threads && tid != pid))
				continue;	/* ended meanwhile; or a new thread of ours */
			if (e < 0) {
				closedir(d);
				return e;
			}
			added++;
		}
		closedir(d);
	} while (added);
	return 0;
}

static int handle_stop(struct stp *s, pid_t tid, int st);

int stp_seize(struct stp **out, const struct stp_opts *o, pid_t pid)
{
	struct stp *s = calloc(1, sizeof(*s));
	struct stp_thr *t;
	int err, st, left;
	pid_t tid;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	s->seized = 1;
	s->root = pid;
	if ((err = x86_dis_init(&s->dis)) < 0 ||
	    (err = stp_set_ranges(s, o->ranges, o->nranges)) < 0)
		goto fail;
	/* the leader first: the process's own error (-EPERM: traced already) is the one */
	if ((err = seize_thread(s, pid, pid)) < 0 || (err = seize_threads(s, pid)) < 0)
		goto fail;
	do {
		left = 0;
		for (t = s->threads; t; t = t->next)
			left += t->state == STP_TH_SEIZED && !t->have_stop;
		if (!left)
			break;
		tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto fail;
		}
		t = stp_thr_find(s, tid);
		if (t && t->state == STP_TH_SEIZED) {
			if (WIFSTOPPED(st)) {
				t->have_stop = 1;
				t->seize_status = st;
			} else {
				stp_thr_del(s, t);
			}
		} else if ((err = handle_stop(s, tid, st)) < 0) {
			goto fail;	/* (a thread a seized one cloned meanwhile) */
		}
	} while (s->threads);
	if (!s->threads) {
		err = -ESRCH;
		goto fail;
	}
	s->seize_start = 1;
	*out = s;
	return 0;
fail:
	/* what was seized runs on: nothing of ours is in it yet */
	while ((t = s->threads)) {
		ptrace(PTRACE_DETACH, t->tid, 0, 0);
		stp_thr_del(s, t);
	}
	stp_free(s);
	return err;
}

/* stp_run begins on a seized process: its mappings and threads are announced, and each
 * thread is traced from the instruction it goes on with. */
static int start_seized(struct stp *s)
{
	struct stp_event ev = { .kind = STP_ATTACH };
	struct user_regs_struct r;
	struct stp_thr *t, *lead = NULL;
	struct stp_mm *mm;
	char comm[32];
	int e;

	s->seize_start = 0;
	if (!(mm = stp_mm_new(s->root)))
		return -errno;
	for (t = s->threads; t; t = t->next)
		if (t->state == STP_TH_SEIZED) {
			t->mm = mm;
			mm->refs++;
			if (!lead || t->tid == s->root)
				lead = t;
		}
	stp_mm_put(mm);
	if (!lead)
		return 0;
	stp_read_comm(s->root, s->root, comm, sizeof(comm));
	ev.comm = comm;
	stp_emit(s, lead, &ev);
	if (s->ranges_dirty)
		stp_arm_entries(s, mm);
	for (t = s->threads; t && !s->error; t = t->next) {
		struct stp_event th = { .kind = STP_THREAD, .attached = 1 };
		uint64_t ip;

		if (t->state != STP_TH_SEIZED)
			continue;
		if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0) {
			if (errno != ESRCH)
				return -errno;
			t->seize_status = 0;	/* killed meanwhile: its exit comes */
			continue;
		}
		/* a signal's stop instead: its delivery (stp_trace's on_signal) starts there */
		ip = (t->seize_status >> 16) == PTRACE_EVENT_STOP ? x86_isa_resume_ip(&r)
								    : x86_isa_ip(&r);
		t->state = STP_TH_RUNNING;
		s->st.threads++;
		if (stp_in_range(s, ip)) {
			th.ip = ip;
			t->enabled = 1;
		}
		th.ppid = th.ptid = t->pid;
		stp_read_comm(t->pid, t->tid, comm, sizeof(comm));
		th.comm = comm;
		stp_emit(s, t, &th);
		stp_go_on(s, t, ip);
	}
	/* their first stops, now that every thread is known (one may be a clone event) */
	for (t = s->threads; t && !s->error; t = t->next) {
		int st = t->seize_status;

		if (!t->seize_status)
			continue;
		t->seize_status = 0;
		if ((st >> 16) == PTRACE_EVENT_STOP)
			e = stp_resume(t, 0);
		else
			e = handle_stop(s, t->tid, st);
		if (e < 0)
			return e;
	}
	return s->error;
}

/* Detaching, t stopped at the interrupt (status st): when it had just run one of our
 * int3s, the int3's SIGTRAP is still pending and would kill it once detached (its
 * default action); so is the one the kernel's uprobe sends the process after a
 * single-step over another tool's int3 (stp_on_foreign_step).  It is let run into
 * that signal's stop, whose status is returned (the caller puts it back on our
 * instruction, or drops the step's trap); else st.  A negative errno on error. */
static int take_trap(struct stp_thr *t, int st)
{
	struct user_regs_struct r;

	if (!t->mm || ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return st;
	if (t->fstep ? !sig_in(t->pid, t->tid, "SigPnd", SIGTRAP, 0) &&
		       !sig_in(t->pid, t->tid, "ShdPnd", SIGTRAP, 0)
		     : !stp_bp_find(t->mm, x86_isa_bp_addr(&r)) ||
		       !sig_in(t->pid, t->tid, "SigPnd", SIGTRAP, 0))
		return st;
	while (ptrace(PTRACE_CONT, t->tid, 0, 0) == 0) {
		if (waitpid(t->tid, &st, __WALL) < 0)
			return -errno;
		if (!WIFSTOPPED(st) || !(st >> 16))
			return st;	/* (synchronous signals come first: SIGTRAP's stop) */
	}
	return errno == ESRCH ? st : -errno;
}

/* The deadline passed: every thread is brought to a stop (PTRACE_INTERRUPT), our int3s
 * are lifted, a thread stopped on one is put back on its instruction, and all are
 * detached with the signal they were about to get.  Returns 0 or a negative errno. */
static int detach_all(struct stp *s)
{
	struct user_regs_struct r;
	struct stp_thr *t;
	int st, left = 0;
	pid_t tid;

	for (t = s->threads; t; t = t->next) {
		t->detach_sig = -1;	/* not stopped yet */
		if (t->have_stop && (t->state == STP_TH_NEW || t->state == STP_TH_SEIZED))
			t->detach_sig = 0;	/* held at its first stop, nothing pending */
		else if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) == 0)
			left++;
		else
			t->detach_sig = 0;	/* gone already: its exit is reaped below */
	}
	while (left > 0 && (tid = waitpid(-1, &st, __WALL)) > 0) {
		if (!(t = stp_thr_find(s, tid))) {
			/* a thread cloned just now: it starts stopped */
			if (!WIFSTOPPED(st) || !(t = stp_thr_add(s, tid)))
				continue;
			t->detach_sig = 0;
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			if (t->tid == s->root)
				s->root_status = st;
			left -= t->detach_sig < 0;
			stp_thr_del(s, t);
			continue;
		}
		if (t->detach_sig >= 0)
			continue;	/* its interrupt's stop, after another one */
		left--;
		t->detach_sig = 0;
		if ((st >> 16) && (st = take_trap(t, st)) < 0)
			return st;
		if (!WIFSTOPPED(st))
			continue;	/* it ended meanwhile */
		if ((st >> 16) || WSTOPSIG(st) == (SIGTRAP | 0x80))
			continue;	/* event, syscall or interrupt stop: nothing pending */
		if (WSTOPSIG(st) == SIGTRAP && t->fstep) {
			t->fstep = 0;	/* the single-step over another tool's int3: done */
			continue;
		}
		if (WSTOPSIG(st) == SIGTRAP && t->mm && ptrace(PTRACE_GETREGS, tid, 0, &r) == 0 &&
		    stp_bp_find(t->mm, x86_isa_bp_addr(&r))) {
			x86_isa_set_ip(&r, x86_isa_bp_addr(&r));	/* run the instruction for real */
			if (ptrace(PTRACE_SETREGS, tid, 0, &r) < 0)
				return -errno;
			continue;
		}
		t->detach_sig = WSTOPSIG(st);
	}
	for (t = s->threads; t; t = t->next)
		if (t->mm)
			stp_mm_disarm(t->mm);
	while ((t = s->threads)) {
		ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)(t->detach_sig > 0 ? t->detach_sig : 0));
		stp_thr_del(s, t);
	}
	s->detached = 1;
	return 0;
}

int stp_run(struct stp *s)
{
	int st, err;
	pid_t tid;

	if (s->seize_start && (err = start_seized(s)) < 0 && !s->error)
		s->error = err;
	while (s->threads && !s->error) {
		if (s->o.stop && *s->o.stop) {
			if (s->seized)
				return detach_all(s);
			s->error = -EINTR;
			break;
		}
		if (s->o.deadline_ns && xp_now_ns() >= s->o.deadline_ns) {
			if ((s->error = detach_all(s)) < 0)
				break;
			return 0;
		}
		tid = waitpid(-1, &st, __WALL);
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		err = handle_stop(s, tid, st);
		if (err < 0 && !s->error)
			s->error = err;
		if (s->error)
			break;
	}
	if (s->error && s->seized) {
		detach_all(s);
		return s->error;
	}
	if (s->error) {
		for (struct stp_thr *t = s->threads; t; t = t->next)
			kill(t->tid, SIGKILL);
		while (waitpid(-1, &st, __WALL) > 0)
			;
		return s->error;
	}
	return 0;
}

int stp_detached(const struct stp *s)
{
	return s->detached;
}

int stp_exit_status(const struct stp *s)
{
	return s->root_status;
}

const struct stp_stats *stp_stats(const struct stp *s)
{
	return &s->st;
}

size_t stp_top_blockers(const struct stp *s, struct stp_blocker *out, size_t n)
{
	size_t it = 0, k = 0;
	uint64_t id, count;

	while (n && xp_map_next(&s->blockers, &it, &id, &count)) {
		size_t i = k < n ? k++ : n;

		if (i == n && count <= out[n - 1].count)
			continue;	/* not among the first n */
		for (i = i == n ? n - 1 : i; i > 0 && out[i - 1].count < count; i--)
			out[i] = out[i - 1];
		out[i] = (struct stp_blocker){ x86_dis_id_name(&s->dis, (unsigned)id), count };
	}
	return k;
}

const char *stp_end_name(enum stp_end e)
{
	static const char *const names[STP_END_N] = {
		[STP_END_INSN] = "instruction", [STP_END_LONG] = "long body",
		[STP_END_TERM] = "syscall/trap", [STP_END_FAULT] = "fault",
		[STP_END_BUDGET] = "budget", [STP_END_LEAVE] = "left filter",
		[STP_END_STEP] = "single-step", [STP_END_BROKEN] = "undecodable",
	};

	return e < STP_END_N ? names[e] : "?";
}

int stp_set_ranges(struct stp *s, const struct stp_range *r, unsigned n)
{
	struct stp_range *nr = NULL;

	if (n) {
		nr = malloc(n * sizeof(*nr));
		if (!nr)
			return -ENOMEM;
		memcpy(nr, r, n * sizeof(*nr));
	}
	free(s->ranges);
	s->ranges = nr;
	s->nranges = n;
	s->ranges_dirty = n > 0;
	return 0;
}

void stp_free(struct stp *s)
{
	if (!s)
		return;
	while (s->threads)
		stp_thr_del(s, s->threads);
	free(s->ranges);
	xp_map_free(&s->blockers);
	x86_dis_fini(&s->dis);
	free(s);
}
