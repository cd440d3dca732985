/* Ground truth for the step-mode tests: a plain single-step tracer (one ptrace stop per
 * instruction, no emulation, no shared code with xptrace).  Records the address of every
 * user instruction each thread executes, from the first execution of the symbol address
 * given as an offset in the main executable (usually main) to the end; offset 0 starts
 * at the exec (the dynamic loader's first instruction).
 *
 *   xp_sstep [--lose-trap] OUTPREFIX FILE_OFFSET -- PROGRAM [ARGS]
 *
 * Some hypervisors lose the single-step trap of an instruction they emulate (cpuid,
 * rdtsc ...): the next instruction then runs without a stop of its own.  xp_sstep
 * notices (the stop is not at the instruction that follows) and writes the missing
 * address; .stat counts them ("repaired N").  --lose-trap makes xp_sstep lose those
 * traps itself, to test that repair on any machine.
 *
 * writes OUTPREFIX.0 (the main thread), OUTPREFIX.1, ... (other threads in creation
 * order), one hex address per line, and OUTPREFIX.stat ("steps N").  Run it and the
 * tracer under test with ASLR off (setarch -R) so the addresses agree. */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>

#define MAXT 64

/* Each stop reports the instruction that runs next; it is written once the next step
 * proves it ran (a signal delivered in between preempts it). */
static struct {
	pid_t tid;
	FILE *f;
	uint64_t pending, last;
	int exit_len;
	int sent;	/* a fatal signal from outside / a syscall: pending never ran */
} th[MAXT];
static int nth;
static char *prefix;
static unsigned long long repaired;
static int simulate;

/* Instructions a hypervisor may emulate (a VM exit) and then skip without raising the
 * single-step trap: the trap comes one instruction late, and that instruction would be
 * missing from the ground truth.  Returns the length of such an instruction at ip
 * (cpuid, rdtsc, rdtscp, rdpmc, xgetbv; glibc's ld.so runs ~40 cpuid), else 0. */
static int exit_insn_len(pid_t tid, uint64_t ip)
{
	unsigned char b[8];
	long w;

	errno = 0;
	w = ptrace(PTRACE_PEEKTEXT, tid, (void *)ip, 0);
	if (errno)
		return 0;
	memcpy(b, &w, sizeof(b));
	if (b[0] != 0x0f)
		return 0;
	if (b[1] == 0xa2 || b[1] == 0x31 || b[1] == 0x33)
		return 2;
	if (b[1] == 0x01 && (b[2] == 0xf9 || b[2] == 0xd0))
		return 3;
	return 0;
}

static int caught(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &mask) == 1)
			break;
	if (f)
		fclose(f);
	return (mask >> (sig - 1)) & 1;
}

static int slot(pid_t tid)
{
	char path[4096];

	for (int i = 0; i < nth; i++)
		if (th[i].tid == tid)
			return i;
	if (nth == MAXT) {
		fprintf(stderr, "xp_sstep: too many threads\n");
		exit(2);
	}
	snprintf(path, sizeof(path), "%s.%d", prefix, nth);
	th[nth].tid = tid;
	th[nth].pending = th[nth].last = 0;
	th[nth].f = fopen(path, "w");
	if (!th[nth].f) {
		perror(path);
		exit(2);
	}
	return nth++;
}

/* A rep-prefixed string instruction single-steps once per iteration; trace decoders
 * count it once, so consecutive repeats of one address are one instruction. */
static void ran(int i)
{
	if (th[i].pending && th[i].pending != th[i].last)
		fprintf(th[i].f, "%llx\n", (unsigned long long)th[i].pending);
	th[i].last = th[i].pending;
	th[i].pending = 0;
}

/* Load address of the main executable: the mapping at file offset 0 of /proc/PID/exe. */
static uint64_t exe_base(pid_t pid)
{
	char path[64], exe[4096], line[4600];
	unsigned long lo, hi, off;
	ssize_t n;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n < 0)
		return 0;
	exe[n] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		int at = 0;
		/* the path is the rest of the line: it may hold spaces */
		if (sscanf(line, "%lx-%lx %*s %lx %*s %*s %n", &lo, &hi, &off, &at) != 3 || !at || off)
			continue;
		line[at + strcspn(line + at, "\n")] = 0;
		if (strcmp(line + at, exe) == 0) {
			fclose(f);
			return lo;
		}
	}
	if (f)
		fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct user_regs_struct r;
	unsigned long long steps = 0;
	uint64_t start, orig;
	int st, started = 0, live = 1;
	pid_t pid, tid;
	FILE *f;

	
	if (argc > 1 && strcmp(argv[1], "--lose-trap") == 0) {
		simulate = 1;
		argc--;
		argv++;
	}
	if (argc < 5 || strcmp(argv[3], "--") != 0) {
		fprintf(stderr, "usage: xp_sstep [--lose-trap] OUTPREFIX FILE_OFFSET -- PROGRAM [ARGS]\n");
		return 2;
	}
	prefix = argv[1];
	start = strtoull(argv[2], NULL, 0);
	pid = fork();
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		execvp(argv[4], argv + 4);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	ptrace(PTRACE_SETOPTIONS, pid, 0,
	       (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC | PTRACE_O_EXITKILL));
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);	/* exec */
	if (!WIFSTOPPED(st) || (st >> 16) != PTRACE_EVENT_EXEC) {
		fprintf(stderr, "xp_sstep: %s did not exec\n", argv[4]);
		return 2;
	}
	if (start == 0) {	/* from the exec on */
		started = 1;
		ptrace(PTRACE_GETREGS, pid, 0, &r);
		th[slot(pid)].pending = r.rip;
		th[slot(pid)].exit_len = exit_insn_len(pid, r.rip);
		ptrace(PTRACE_SINGLESTEP, pid, 0, 0);
		goto loop;
	}
	/* run at full speed to the start address: an int3 there */
	start += exe_base(pid);
	errno = 0;
	orig = (uint64_t)ptrace(PTRACE_PEEKTEXT, pid, (void *)start, 0);
	if (errno) {
		perror("xp_sstep: peek");
		return 2;
	}
	ptrace(PTRACE_POKETEXT, pid, (void *)start, (void *)((orig & ~0xffull) | 0xcc));
	ptrace(PTRACE_CONT, pid, 0, 0);
loop:
	while (live > 0) {
		int sig, ev;

		tid = waitpid(-1, &st, __WALL);
		if (tid < 0)
			break;
		if (WIFEXITED(st) || WIFSIGNALED(st)) {
			/* the exit syscall, or the instruction that faulted (as the step
			 * tracer shows it); a signal sent hit no instruction */
			if (started && !th[slot(tid)].sent)
				ran(slot(tid));
			live--;
			continue;
		}
		sig = WSTOPSIG(st);
		ev = st >> 16;
		if (!started) {
			ptrace(PTRACE_GETREGS, tid, 0, &r);
			if (sig != SIGTRAP || r.rip - 1 != start) {
				ptrace(PTRACE_CONT, tid, 0, (void *)(long)(sig == SIGTRAP ? 0 : sig));
				continue;
			}
			ptrace(PTRACE_POKETEXT, pid, (void *)start, (void *)orig);
			r.rip = start;
			ptrace(PTRACE_SETREGS, tid, 0, &r);
			started = 1;
			sig = SIGTRAP;
		}
		if (ev == PTRACE_EVENT_CLONE) {
			live++;
			ptrace(PTRACE_SINGLESTEP, tid, 0, 0);	/* the event stop is no step */
			continue;
		}
		if (ev) {
			ptrace(PTRACE_SINGLESTEP, tid, 0, 0);
			continue;
		}
		if (sig == SIGTRAP || sig == SIGSTOP) {
			/* a step finished (or a new thread's first stop): rip runs next */
			int i = slot(tid);
			uint64_t after = th[i].pending + (uint64_t)th[i].exit_len;

			th[i].sent = 0;

			ptrace(PTRACE_GETREGS, tid, 0, &r);
			if (th[i].exit_len && simulate && r.rip == after) {
				/* --lose-trap: behave like such a hypervisor */
				ptrace(PTRACE_SINGLESTEP, tid, 0, 0);
				continue;
			}
			ran(i);
			if (th[i].exit_len && r.rip != after) {
				/* the trap was lost: the instruction after it ran too */
				th[i].pending = after;
				ran(i);
				repaired++;
			}
			th[i].pending = r.rip;
			th[i].exit_len = exit_insn_len(tid, r.rip);
			steps++;
			ptrace(PTRACE_SINGLESTEP, tid, 0, 0);
			continue;
		}
		/* a signal: deliver it; the step stops at the handler's first instruction,
		 * and the instruction it preempted did not run (it runs after sigreturn) */
		if (caught(pid, sig)) {
			th[slot(tid)].pending = 0;
			th[slot(tid)].exit_len = 0;
			th[slot(tid)].last = 0;
		} else {
			siginfo_t si;

			memset(&si, 0, sizeof(si));
			ptrace(PTRACE_GETSIGINFO, tid, 0, &si);
			th[slot(tid)].sent = si.si_code <= 0;
		}
		ptrace(PTRACE_SINGLESTEP, tid, 0, (void *)(long)sig);
	}
	for (int i = 0; i < nth; i++)
		fclose(th[i].f);
	{
		char path[4096];

		snprintf(path, sizeof(path), "%s.stat", prefix);
		f = fopen(path, "w");
		if (f) {
			fprintf(f, "steps %llu\nthreads %d\nrepaired %llu\n", steps, nth, repaired);
			fclose(f);
		}
	}
	return 0;
}
