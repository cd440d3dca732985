/* The ptrace branch tracer behind `xptrace record --mode step` (stp_trace.c: the ptrace
 * loop, syscalls, signals; stp_threads.c: threads, clone/fork/exec; stp_code.c: address
 * spaces, runs and breakpoints; stp_bp.c: stops at a breakpoint).  What is x86 in it
 * (registers, int3, branch emulation) comes from arch/x86_64/x86_isa.h.
 *
 * Interrupt avoidance: straight-line code and direct jumps/calls run at full speed.  Basic
 * blocks are discovered lazily (decode forward from an address to the next control
 * transfer, x86_dis_run) and an int3 stays armed at every conditional branch, indirect
 * jump/call and return reached so far.  At a stop the tracer evaluates the branch from
 * the registers (flags, rcx, operands, the stack), emulates it (rip, rsp, pushed return
 * address, loop counter) and keeps emulating while the next instruction is another armed
 * branch, so one stop can resolve several branches.  Syscalls are seen through
 * PTRACE_SYSCALL stops (no int3 on them), signals through signal-delivery stops.
 *
 * The tracer knows nothing about Intel PT or perf.data: it reports, per thread and in
 * execution order, what a user-only PT tracer would record (branch outcomes, indirect
 * targets, tracing disabled/enabled around syscalls and filter exits, asynchronous
 * transfers) to a callback; rec_mode_step.c turns that into PT packets and perf.data. */
#ifndef STP_H
#define STP_H

#include <stdint.h>
#include <signal.h>
#include <sys/types.h>

#include "arch/x86_64/x86_branch.h"

enum stp_kind {
	STP_THREAD,	/* new thread/process `tid` (child of ptid/ppid); traced from `ip` (enabled) */
	STP_EXEC,	/* `pid` exec'd `comm`; mappings are new; ip = entry (tracing disabled) */
	STP_ATTACH,	/* `pid` (named `comm`) was seized running (stp_seize): its mappings are
			 * as they are; its threads follow as STP_THREAD with `attached` */
	STP_MAPS,	/* pid's executable mappings may have changed (mmap/mprotect/munmap) */
	STP_TNT,	/* conditional branch at ip: taken (1) / not taken (0) */
	STP_TIP,	/* indirect jump/call or return at ip went to `to` */
	STP_DISABLE,	/* tracing stops at ip: syscall (to = 0), filter exit (to = target);
			 * taken = 1: asynchronously (a signal into code outside the filter) */
	STP_ENABLE,	/* tracing (re)starts at `to` (after a syscall, filter entry) */
	STP_ASYNC,	/* asynchronous transfer: interrupted at ip, continues at `to` (signal) */
	STP_FATAL,	/* a signal with no handler kills the thread at ip: `sig`, `code`, `to`
			 * = si_addr; taken = 1: the instruction at ip faulted (a STP_DISABLE
			 * with taken = 1 at ip came just before while tracing was on) */
	STP_COMM,	/* thread `tid` was renamed `comm` (prctl, pthread_setname_np) */
	STP_LOSS,	/* the thread runs into code the tracer cannot decode, at `ip`: what it
			 * runs until its next event is lost (that event says where it is) */
	STP_EXIT,	/* thread exits (its last event) */
	STP_MMAP,	/* not from this tracer: a producer that cannot read /proc (--mode dbt
			 * converts after the run) tells pid's executable mappings itself:
			 * [ip, to) at file offset `pgoff` of `comm` ("" anonymous) */
};

struct stp_event {
	enum stp_kind kind;
	pid_t pid, tid;
	pid_t ppid, ptid;	/* STP_THREAD: parent */
	uint64_t time;		/* CLOCK_MONOTONIC ns */
	uint64_t ip, to;
	int taken;		/* STP_TNT */
	int fork;		/* STP_THREAD: a new process (own address space) */
	int attached;		/* STP_THREAD: a thread seized running, traced from where it
				 * was (no parent event: it predates the trace) */
	enum x86_bclass cls;	/* STP_TIP: which kind of branch */
	const char *comm;	/* STP_EXEC, STP_COMM, STP_MMAP */
	uint64_t pgoff;		/* STP_MMAP */
	int status;		/* STP_EXIT: wait status of the thread (when it is known) */
	int sig, code;		/* STP_FATAL: signal number and si_code */
	void **user;		/* per-thread slot the callback may use */
};

/* Returning non-zero stops tracing (the tracee is killed). */
typedef int (*stp_fn)(void *ctx, const struct stp_event *ev);

struct stp_range {		/* --filter: [start, end) */
	uint64_t start, end;
};

/* Why a stop at a breakpoint ended and the tracee ran on by itself. */
enum stp_end {
	STP_END_INSN,		/* an instruction the emulator leaves to the CPU (stp_top_blockers) */
	STP_END_LONG,		/* a body longer than the emulator takes in one go */
	STP_END_TERM,		/* a run ending in a syscall, trap or far transfer; a split run */
	STP_END_FAULT,		/* an emulated access faulted, or a case left to the CPU */
	STP_END_BUDGET,		/* the instructions one stop emulates at most */
	STP_END_LEAVE,		/* out of the --filter ranges */
	STP_END_STEP,		/* a branch the emulation cannot evaluate: single-stepped */
	STP_END_BROKEN,		/* undecodable code */
	STP_END_N
};

struct stp_stats {
	uint64_t stops;		/* every ptrace stop the tracer handled */
	uint64_t bp_stops;	/* stops at an armed branch */
	uint64_t syscall_stops;
	uint64_t signal_stops;
	uint64_t other_stops;	/* events, exits, single-step fallbacks */
	uint64_t cond, indirect, ret;	/* branches resolved (each once) */
	uint64_t chained;	/* branches resolved without a stop of their own */
	uint64_t emulated;	/* instructions between branches emulated at stops */
	uint64_t steps;		/* single-step fallbacks */
	uint64_t blocks;	/* straight-line runs discovered */
	uint64_t breakpoints;	/* int3 armed */
	uint64_t syscalls, signals, threads;
	uint64_t processes;	/* of the threads, those that led a process */
	uint64_t end[STP_END_N];	/* breakpoint stops by why they ended */
	uint64_t undecodable;	/* code paths whose bytes did not decode: not traced */
	uint64_t losses;	/* times a thread ran into one of them while traced */
	uint64_t undecodable_at[4];	/* the first of them */
};


struct stp_opts {
	stp_fn fn;
	void *ctx;
	/* When nranges > 0, trace only inside them (addresses are resolved by the caller,
	 * possibly later through stp_set_ranges from the STP_MAPS callback). */
	const struct stp_range *ranges;
	unsigned nranges;
	/* Trace only inside the ranges even while there are none yet (a filter whose
	 * module is not mapped yet). */
	int filtered;
	/* Checked between stops: non-zero ends tracing (the tracees are killed; seized
	 * ones are detached). */
	volatile sig_atomic_t *stop;
	/* CLOCK_MONOTONIC ns, 0 none: tracing ends there and the tracees are detached
	 * (our int3s removed), running on untraced.  A blocked waitpid notices only when
	 * a signal interrupts it (the caller arms a timer). */
	uint64_t deadline_ns;
};

struct stp;

/* Seizes `pid`, a child that has not exec'd yet (it waits for a go signal from the
 * caller); tracing starts at its exec. */
int stp_attach(struct stp **out, const struct stp_opts *o, pid_t pid);
/* Seizes every thread of the running process `pid` (PTRACE_SEIZE, then PTRACE_INTERRUPT)
 * and waits until each has stopped; threads it creates from then on are followed.
 * Tracing starts, when stp_run begins, at the instruction each thread goes on with
 * (STP_ATTACH, then STP_THREAD with `attached`).  The tracees are never killed: the
 * deadline, *stop and errors detach them, running on as they were.  -EPERM: another
 * tracer has it (or ptrace is not allowed), -ESRCH: no such process. */
int stp_seize(struct stp **out, const struct stp_opts *o, pid_t pid);
/* Runs until every traced thread exited or the deadline passed.  Returns 0, or the
 * first negative error / the callback's non-zero value (the tracees are killed then,
 * seized ones detached). */
int stp_run(struct stp *s);
/* After stp_run: 1 when it detached the tracees (still running: the deadline, or *stop
 * or an error for seized ones), 0 when they all exited. */
int stp_detached(const struct stp *s);
/* Wait status of the traced process (valid after stp_run returned 0). */
int stp_exit_status(const struct stp *s);
const struct stp_stats *stp_stats(const struct stp *s);
/* The instructions that ended the most stops (STP_END_INSN), most first: fills up to n,
 * returns how many. */
struct stp_blocker {
	const char *name;
	uint64_t count;
};
size_t stp_top_blockers(const struct stp *s, struct stp_blocker *out, size_t n);
const char *stp_end_name(enum stp_end e);
/* Replaces the filter ranges (from a callback, e.g. once a module is mapped). */
int stp_set_ranges(struct stp *s, const struct stp_range *r, unsigned n);
void stp_free(struct stp *s);

#endif
