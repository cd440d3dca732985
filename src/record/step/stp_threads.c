/* Threads of the step tracer: the tid list, the events a thread reports, and its
 * lifecycle (new thread, clone/fork/vfork, exec, exit). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>

#include "record/step/stp_int.h"
#include "util/xp_clock.h"

struct stp_thr *stp_thr_find(struct stp *s, pid_t tid)
{
	for (struct stp_thr *t = s->threads; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

struct stp_thr *stp_thr_add(struct stp *s, pid_t tid)
{
	struct stp_thr *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = tid;
	t->next = s->threads;
	s->threads = t;
	return t;
}

void stp_thr_del(struct stp *s, struct stp_thr *t)
{
	for (struct stp_thr **pp = &s->threads; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	stp_mm_put(t->mm);
	free(t);
}

int stp_emit(struct stp *s, struct stp_thr *t, struct stp_event *ev)
{
	int rc;

	ev->pid = t->pid;
	ev->tid = t->tid;
	if (!ev->time)
		ev->time = xp_now_ns();
	ev->user = &t->user;
	rc = s->o.fn(s->o.ctx, ev);
	if (rc && !s->error)
		s->error = rc;
	return rc;
}

void stp_sync_enable(struct stp *s, struct stp_thr *t, uint64_t time)
{
	struct stp_event ev = { .kind = STP_ENABLE, .time = time };

	if (!t->pending)
		return;
	t->pending = 0;
	t->enabled = 1;
	ev.ip = ev.to = t->pge_ip;
	stp_emit(s, t, &ev);
}

void stp_go_on(struct stp *s, struct stp_thr *t, uint64_t ip)
{
	struct stp_event ev = { .kind = STP_LOSS };
	uint64_t at = stp_ensure_armed(s, t->mm, ip);

	/* another tool's int3 is stepped over; the [uprobes] page is stepped through (a
	 * uretprobe's trampoline: its syscall returns into the page, a ret there leaves
	 * it): where the thread comes out is where tracing resumes */
	t->fstep = (stp_in_range(s, ip) && stp_foreign_at(t->mm, ip)) || stp_xol_at(s, ip) ? ip : 0;
	if (!at)
		return;
	ev.time = xp_now_ns();
	stp_sync_enable(s, t, ev.time);
	if (!t->enabled)
		return;
	ev.ip = at;
	s->st.losses++;
	stp_emit(s, t, &ev);
}

int stp_resume(struct stp_thr *t, int sig)
{
	int req = t->fstep ? PTRACE_SINGLESTEP : PTRACE_SYSCALL;

	if (ptrace(req, t->tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

int stp_read_comm(pid_t pid, pid_t tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	buf[0] = 0;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
	return 0;
}

int stp_start_thread(struct stp *s, struct stp_thr *t)
{
	struct user_regs_struct r;
	struct stp_event ev = { .kind = STP_THREAD };

	if (!t->have_event || !t->have_stop)
		return 0;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return -errno;
	t->state = STP_TH_RUNNING;
	s->st.threads++;
	s->st.processes += t->tid == t->pid;
	ev.ppid = t->ppid;
	ev.ptid = t->ptid;
	ev.fork = t->fork;
	if (stp_in_range(s, x86_isa_ip(&r))) {
		ev.ip = x86_isa_ip(&r);
		t->enabled = 1;
	}
	stp_emit(s, t, &ev);
	if (t->renamed) {
		struct stp_event cm = { .kind = STP_COMM };
		char comm[32];

		if (stp_read_comm(t->pid, t->tid, comm, sizeof(comm)) == 0) {
			cm.comm = comm;
			stp_emit(s, t, &cm);
		}
	}
	stp_go_on(s, t, x86_isa_ip(&r));
	return stp_resume(t, 0);
}

int stp_on_clone(struct stp *s, struct stp_thr *p, int event)
{
	unsigned long msg;
	struct stp_thr *c;

	s->st.other_stops++;
	if (ptrace(PTRACE_GETEVENTMSG, p->tid, 0, &msg) < 0)
		return -errno;
	c = stp_thr_find(s, (pid_t)msg);
	if (!c && !(c = stp_thr_add(s, (pid_t)msg)))
		return -ENOMEM;
	c->ptid = p->tid;
	c->ppid = p->pid;
	if (event == PTRACE_EVENT_CLONE) {
		c->pid = p->pid;
		c->mm = p->mm;
		p->mm->refs++;
	} else if (event == PTRACE_EVENT_VFORK) {
		c->pid = c->tid;
		c->mm = p->mm;
		p->mm->refs++;
		c->fork = 1;
	} else {
		c->pid = c->tid;
		c->fork = 1;
		if (!(c->mm = stp_mm_fork(p->mm, c->tid)))
			return -ENOMEM;
	}
	c->have_event = 1;
	if (stp_start_thread(s, c) < 0)
		return -errno;
	return stp_resume(p, 0);
}

int stp_on_exec(struct stp *s, struct stp_thr *t, struct user_regs_struct *r)
{
	struct stp_event ev = { .kind = STP_EXEC };
	unsigned long former;
	char comm[32];

	s->st.other_stops++;
	/* a non-leader thread that execs takes over the leader's tid */
	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 && (pid_t)former != t->tid) {
		struct stp_thr *o = stp_thr_find(s, (pid_t)former);

		if (o)
			stp_thr_del(s, o);
	}
	stp_mm_put(t->mm);
	t->mm = stp_mm_new(t->tid);
	if (!t->mm)
		return -errno;
	t->enabled = 0;
	t->pending = 0;
	t->in_syscall = 1;
	t->sc_nr = SYS_execve;
	if (t->state == STP_TH_PREEXEC) {
		struct stp_event th = { .kind = STP_THREAD };

		t->state = STP_TH_RUNNING;
		s->st.threads++;
		s->st.processes += t->tid == t->pid;
		stp_emit(s, t, &th);
	}
	stp_read_comm(t->pid, t->tid, comm, sizeof(comm));
	ev.comm = comm;
	ev.ip = x86_isa_ip(r);
	stp_emit(s, t, &ev);
	if (s->ranges_dirty)
		stp_arm_entries(s, t->mm);
	return stp_resume(t, 0);
}

/* The thread a syscall that returned rval renamed, 0 none: prctl(PR_SET_NAME) names its
 * caller, a write to /proc/PID/task/TID/comm (pthread_setname_np of another thread) or
 * /proc/PID/comm names that thread. */
static pid_t renamed(const struct stp_thr *t, int64_t rval)
{
	char path[64], link[128];
	int pid, tid, end = 0;
	ssize_t n;

	if (t->sc_nr == SYS_prctl)
		return t->sc_args[0] == PR_SET_NAME && rval == 0 ? t->tid : 0;
	if ((t->sc_nr != SYS_write && t->sc_nr != SYS_pwrite64) || rval <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", t->pid, (int)t->sc_args[0]);
	n = readlink(path, link, sizeof(link) - 1);
	if (n <= 0)
		return 0;
	link[n] = 0;
	if (sscanf(link, "/proc/%d/task/%d/comm%n", &pid, &tid, &end) == 2 && end == n)
		return tid;
	if (sscanf(link, "/proc/%d/comm%n", &pid, &end) == 1 && end == n)
		return pid;
	return 0;
}

void stp_on_rename(struct stp *s, struct stp_thr *t, int64_t rval, uint64_t time)
{
	struct stp_event ev = { .kind = STP_COMM, .time = time };
	pid_t tid = renamed(t, rval);
	struct stp_thr *o = tid ? stp_thr_find(s, tid) : NULL;
	char comm[32];

	/* the name as the kernel keeps it (cut to 15 bytes), as its COMM record has it */
	if (o && o->state == STP_TH_NEW) {
		o->renamed = 1;	/* named right after its clone: said when it starts */
		return;
	}
	if (!o || o->state != STP_TH_RUNNING || stp_read_comm(o->pid, tid, comm, sizeof(comm)) < 0)
		return;
	ev.comm = comm;
	stp_emit(s, o, &ev);
}

int stp_on_exit(struct stp *s, struct stp_thr *t, int status)
{
	struct stp_event ev = { .kind = STP_EXIT, .status = status };

	s->st.other_stops++;
	if (t->state == STP_TH_RUNNING)
		stp_emit(s, t, &ev);
	if (t->tid == s->root)
		s->root_status = status;
	stp_thr_del(s, t);
	return 0;
}

