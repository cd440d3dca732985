/* Inside the step tracer (stp.h): the tables of an address space (breakpoints, runs,
 * emulation bodies), the threads, and the calls between the files.  Calls go one way:
 * stp_trace.c -> stp_bp.c -> stp_threads.c -> stp_code.c. */
#ifndef STP_INT_H
#define STP_INT_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_emu.h"
#include "arch/x86_64/x86_isa.h"
#include "record/step/stp.h"
#include "util/xp_map.h"

struct stp_bp {
	uint64_t addr;
	uint8_t orig;
	uint8_t live;		/* 0 after the mapping went away */
	uint8_t entry;		/* --filter: where tracing (re)starts when reached from outside */
	uint64_t pge_at;	/* where it restarts then: addr, or the start of the run of
				 * another tool's int3s (not branches) before it */
	uint8_t has_uop;	/* an entry on an ordinary instruction: emulated by `uop` */
	uint8_t len;
	struct x86_branch br;
	struct x86_uop uop;
};

/* A straight-line run from `start` to its control transfer. */
struct stp_run {
	uint64_t start;
	uint64_t term_ip;
	uint64_t target;	/* direct jmp/call target; next run for split runs */
	uint8_t term_len;	/* length of the terminator */
	uint32_t gen;		/* == mm->gen: the chain from here was armed in this generation */
	uint8_t cls;		/* enum x86_bclass of the terminator; X86_BR_NONE: split/broken */
	uint8_t broken;		/* decoding stopped on bad bytes (2: and that was said) */
	uint8_t dead;		/* its code was unmapped: decode again when reached */
	uint8_t lost;		/* the chain from here (gen) runs into undecodable code */
	uint8_t nocode;		/* broken: not even its first byte can be read (unmapped) */
	uint8_t foreign;	/* it starts on another tool's int3 (stp_foreign_at) */
	uint8_t emu;		/* STP_EMU_*: can a stop emulate its body? */
	uint8_t emu_end;	/* STP_EMU_NO: enum stp_end, why not */
	uint16_t block_id;	/* STP_END_INSN: capstone id of the instruction */
	uint16_t nuops;
	uint32_t uop0;		/* its body in mm->uops[uop0 .. uop0 + nuops) */
};

enum { STP_EMU_UNKNOWN, STP_EMU_YES, STP_EMU_NO };

#define STP_PAGE 4096
#define STP_CACHE_PAGES 256	/* direct-mapped by page number: 1 MB per address space */

/* A page of the tracee copied during one stop (struct stp_mm's cache). */
struct stp_page {
	uint64_t addr;
	uint32_t gen;		/* == stp_mm.cache_gen: valid */
	uint16_t dlo, dhi;	/* [dlo, dhi): written by the emulation, not yet to the tracee */
	uint8_t data[STP_PAGE];
};

struct stp_wrange {		/* a writable mapping of the tracee */
	uint64_t start, end;
};

struct stp_mm {
	int refs;
	int memfd;
	pid_t pid;
	uint32_t gen;
	struct xp_map bp_at;	/* addr -> index in bps */
	struct stp_bp *bps;
	size_t nbps, capbps;
	/* Every 0xcc met in the code that is no int3 of ours: another tool's (a uprobe:
	 * the file's byte differs) or the program's own (stp_foreign.c) */
	struct xp_map fb_at;
	uint64_t dec_start;	/* the run being decoded starts here */
	int xol_known;		/* its [uprobes] page is in stp.xol */
	unsigned foreign_said;	/* another tool's int3s found (the first few said) */
	struct xp_map run_at;	/* start -> index in runs */
	struct stp_run *runs;
	size_t nruns, capruns;
	struct x86_uop *uops;
	size_t nuops, capuops;
	/* Pages read and written during a stop, while the tracee cannot change them
	 * (stp_mm_cache); the emulation's stores reach the tracee when the stop ends. */
	int caching;
	/* The writable mappings (/proc/PID/maps), read again after a mapping syscall or
	 * when an address is not in them; an emulated store elsewhere faults for real. */
	struct stp_wrange *wr;
	size_t nwr, capwr;
	int wr_valid;
	uint32_t wr_gen;	/* cache_gen when read */
	uint32_t cache_gen;
	struct stp_page *cache;	/* STP_CACHE_PAGES, allocated on first use */
};

/* STP_TH_SEIZED: running when stp_seize took it; started by stp_run */
enum stp_th_state { STP_TH_NEW, STP_TH_PREEXEC, STP_TH_SEIZED, STP_TH_RUNNING };

struct stp_thr {
	struct stp_thr *next;
	pid_t tid, pid;
	pid_t ppid, ptid;
	struct stp_mm *mm;
	enum stp_th_state state;
	int have_event;		/* new thread: the parent's clone/fork event was seen */
	int have_stop;		/* new thread: its initial stop was seen */
	int fork;
	int enabled;		/* trace on (not in a syscall, inside the filter) */
	int pending;		/* resumed at pge_ip after a syscall: STP_ENABLE not sent yet */
	uint64_t pge_ip;
	uint64_t fstep;		/* resumed with a single-step over another tool's int3 here,
				 * or through the [uprobes] page (s->xol) from here */
	int in_syscall;
	long sc_nr;
	uint64_t sc_args[4];
	int detach_sig;		/* detaching: signal to deliver, -1 not stopped yet */
	int renamed;		/* new thread: renamed before it started (STP_COMM due) */
	int seize_status;	/* STP_TH_SEIZED: its first stop, handled once it starts */
	void *user;
};

struct stp {
	struct stp_opts o;
	struct stp_range *ranges;
	unsigned nranges;
	int ranges_dirty;	/* entries of new ranges still to arm */
	struct x86_dis dis;
	struct stp_thr *threads;
	pid_t root;
	int root_status;
	int error;
	int detached;		/* the tracees run on untraced (deadline; seized: stop, error) */
	int seized;		/* stp_seize: a running process, left running at the end */
	int seize_start;	/* stp_seize: its threads wait for stp_run to start them */
	/* The kernel's [uprobes] pages (out-of-line slots, the uretprobe trampoline) of the
	 * processes that ran into another tool's int3: traced as outside the ranges (no file
	 * holds their code), so a return a uretprobe diverted there ends tracing and its
	 * syscall's exit resumes it at the real return address.  Any process's page counts
	 * for every process: an address there is code of no other mapping in practice. */
	struct stp_range xol[8];
	unsigned nxol;
	int xol_said;
	struct stp_stats st;
	struct xp_map blockers;	/* capstone id -> stops it ended */
};

/* stp_code.c: address spaces and the code in them */
struct stp_mm *stp_mm_new(pid_t pid);
void stp_mm_put(struct stp_mm *m);
/* A forked child: same code, same breakpoints (fork copied the int3 bytes). */
struct stp_mm *stp_mm_fork(const struct stp_mm *p, pid_t child);
/* The tracee's memory for x86_isa/x86_emu, as the program sees it. */
struct x86_isa_mem stp_mm_mem(struct stp_mm *m);
/* on: reads through stp_mm_mem() may keep the pages they read until turned off, which
 * must happen before any thread of the address space runs again (the tracee's own
 * writes would not be seen). */
void stp_mm_cache(struct stp_mm *m, int on);
/* A mapping syscall ran (mmap, munmap, mprotect, mremap, brk). */
void stp_mm_maps_changed(struct stp_mm *m);
struct stp_bp *stp_bp_find(struct stp_mm *m, uint64_t addr);
int stp_in_range(const struct stp *s, uint64_t ip);
/* In one of the [uprobes] pages of s->xol? */
int stp_xol_at(const struct stp *s, uint64_t ip);
struct stp_run *stp_run_get(struct stp *s, struct stp_mm *m, uint64_t ip);
/* Translates a run's body (everything before its branch) for x86_emu, once. */
void stp_emu_prepare(struct stp *s, struct stp_mm *m, struct stp_run *ru);
/* --filter: an int3 where tracing restarts when the thread comes back from outside
 * (a range's start, the return address of a call that left the ranges). */
void stp_arm_entry(struct stp *s, struct stp_mm *m, uint64_t addr);
void stp_arm_entries(struct stp *s, struct stp_mm *m);
/* Makes sure every instruction the thread can reach from `ip` before its next stop is
 * known: follows direct jumps/calls (which never stop) to the first armed branch.
 * Returns where code it cannot decode starts when the way leads there (what runs from
 * there is lost to the trace: stp_go_on says so), else 0. */
uint64_t stp_ensure_armed(struct stp *s, struct stp_mm *m, uint64_t ip);
/* Code in [addr, addr+len) may be gone or replaced (munmap, mprotect, mremap). */
void stp_forget_code(struct stp_mm *m, uint64_t addr, uint64_t len);
/* Puts the original bytes back under every int3 (detaching: the code runs on alone). */
void stp_mm_disarm(struct stp_mm *m);

/* stp_foreign.c: another tool's breakpoint (a uprobe: an int3 the kernel wrote over
 * the first byte of an instruction of a file, in every process mapping it).  Ours never
 * goes there, no byte is written over it, and the thread runs it natively with a
 * single-step (stp_go_on, stp_on_foreign_step): the kernel handles its int3 and the
 * step's stop comes after the instruction. */
/* buf holds the code at ip: a foreign int3 in it becomes the file's byte (said once). */
void stp_foreign_fix(struct stp_mm *m, uint64_t ip, uint8_t *buf, size_t n);
bool stp_foreign_at(const struct stp_mm *m, uint64_t addr);
/* After a single-step over one: the process's [uprobes] page (the kernel made it at
 * the first hit) goes into s->xol. */
void stp_foreign_xol(struct stp *s, struct stp_mm *m);
void stp_foreign_forget(struct stp_mm *m, uint64_t addr, uint64_t len);
/* The instruction at addr as the program sees it. */
int stp_code_insn(struct stp *s, struct stp_mm *m, uint64_t addr, struct x86_instr *in);

/* stp_threads.c: threads and their events */
struct stp_thr *stp_thr_find(struct stp *s, pid_t tid);
struct stp_thr *stp_thr_add(struct stp *s, pid_t tid);
void stp_thr_del(struct stp *s, struct stp_thr *t);
int stp_emit(struct stp *s, struct stp_thr *t, struct stp_event *ev);
/* The name of thread tid of pid as the kernel keeps it (/proc/PID/task/TID/comm). */
int stp_read_comm(pid_t pid, pid_t tid, char *buf, size_t len);
/* Tracing resumed at pge_ip after a syscall: tell the consumer before anything else. */
void stp_sync_enable(struct stp *s, struct stp_thr *t, uint64_t time);
/* The thread is about to go on at ip: its way there is armed (stp_ensure_armed); when
 * it leads into code the tracer cannot decode, what runs there is lost: STP_LOSS (its
 * pending enable first). */
void stp_go_on(struct stp *s, struct stp_thr *t, uint64_t ip);
int stp_resume(struct stp_thr *t, int sig);
/* A new thread is ready when both its first stop and the parent's event were seen. */
int stp_start_thread(struct stp *s, struct stp_thr *t);
int stp_on_clone(struct stp *s, struct stp_thr *p, int event);
int stp_on_exec(struct stp *s, struct stp_thr *t, struct user_regs_struct *r);
/* At a syscall's exit: a thread it renamed (prctl, a write to a comm file) gets
 * STP_COMM with its new name. */
void stp_on_rename(struct stp *s, struct stp_thr *t, int64_t rval, uint64_t time);
int stp_on_exit(struct stp *s, struct stp_thr *t, int status);

/* stp_bp.c: a stop at one of our int3s.  0, a negative errno, or a signal that stopped
 * the thread at the branch instead (stp_trace.c handles it like any signal stop). */
int stp_on_breakpoint(struct stp *s, struct stp_thr *t, struct user_regs_struct *r);
/* The single-step over another tool's int3 (or in the [uprobes] page) at t->fstep
 * stopped after it (r). */
int stp_on_foreign_step(struct stp *s, struct stp_thr *t, struct user_regs_struct *r);

#endif
