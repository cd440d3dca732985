/* A stop at one of the step tracer's int3s: resolve the branch there and carry on
 * through emulated code to further branches (interrupt avoidance, see stp.h). */
#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "record/step/stp_int.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"

/* Instructions emulated in one stop at most (bounds a stop's latency, and ends loops
 * that run forever inside emulated code). */
#define CHAIN_MAX 32768

static void enable(struct stp *s, struct stp_thr *t, uint64_t ip, uint64_t time)
{
	struct stp_event en = { .kind = STP_ENABLE, .time = time };

	if (t->enabled)
		return;
	/* back inside the filter ranges */
	en.ip = en.to = ip;
	t->enabled = 1;
	stp_emit(s, t, &en);
}

/* Reports the branch br at ip that went to `to` (taken, for a conditional one). */
static void report(struct stp *s, struct stp_thr *t, const struct x86_branch *br, uint64_t ip,
		   int taken, uint64_t to, uint64_t time)
{
	struct stp_event ev = { .time = time, .ip = ip, .cls = br->cls, .taken = taken };

	switch (br->cls) {
	case X86_BR_JMP:
	case X86_BR_CALL:
		if (stp_in_range(s, to))
			return;	/* direct: nothing to record */
		ev.kind = STP_DISABLE;
		ev.to = to;
		break;
	case X86_BR_COND:
		ev.kind = STP_TNT;
		s->st.cond++;
		break;
	case X86_BR_RET:
		ev.kind = STP_TIP;
		ev.to = to;
		s->st.ret++;
		break;
	default:	/* indirect jmp/call */
		ev.kind = STP_TIP;
		ev.to = to;
		s->st.indirect++;
		break;
	}
	if (!stp_in_range(s, to)) {
		/* leaving the filter ranges: TIP.PGD to the target; a call comes back at
		 * its return address */
		ev.kind = STP_DISABLE;
		ev.to = to;
		if (br->cls == X86_BR_CALL || br->cls == X86_BR_CALL_IND)
			stp_arm_entry(s, t->mm, br->next);
	}
	if (ev.kind == STP_DISABLE)
		t->enabled = 0;
	stp_emit(s, t, &ev);
}

/* Emulates the armed instruction at the stop (a branch, or an ordinary instruction
 * under a filter entry) and reports it; returns 0 or < 0 when it cannot be emulated. */
static int emulate(struct stp *s, struct stp_thr *t, const struct stp_bp *b,
		   struct user_regs_struct *r, struct x86_xmm *xs, uint64_t time)
{
	const struct x86_isa_mem mem = stp_mm_mem(t->mm);
	int err, taken = 0;

	enable(s, t, b->pge_at, time);
	if (b->br.cls == X86_BR_NONE)
		return b->has_uop ? x86_emu_exec(&b->uop, b->addr, r, mem.rd, mem.wr, mem.ctx, xs)
				  : -EINVAL;
	if ((err = x86_isa_branch(&b->br, r, &mem, &taken)) < 0)
		return err;
	report(s, t, &b->br, b->addr, taken, x86_isa_ip(r), time);
	return 0;
}

int stp_on_foreign_step(struct stp *s, struct stp_thr *t, struct user_regs_struct *r)
{
	uint64_t time = xp_now_ns(), at = t->fstep, to = x86_isa_ip(r);
	struct x86_instr in;

	t->fstep = 0;
	stp_foreign_xol(s, t->mm);
	s->st.steps++;
	s->st.other_stops++;
	stp_sync_enable(s, t, time);
	if (stp_xol_at(s, at)) {
		if (!s->xol_said++)
			xp_warn("step: a thread went into the kernel's [uprobes] page at %#llx (the "
				"return trampoline of another tool's uretprobe, or its out-of-line "
				"slots; no file holds that code): the trace leaves there and resumes "
				"where the thread comes out (the real return address)",
				(unsigned long long)at);
		if (!t->enabled && stp_in_range(s, to)) {
			t->pending = 1;	/* out of the [uprobes] page */
			t->pge_ip = to;
		}
	} else if (stp_code_insn(s, t->mm, at, &in) == 0 && in.br.cls != X86_BR_NONE) {
		enable(s, t, at, time);
		report(s, t, &in.br, at, to != in.br.next, to, time);
	}
	stp_go_on(s, t, to);
	return stp_resume(t, 0);
}

/* Fallback for a branch the emulation cannot evaluate: execute it for real with the
 * int3 lifted for one single-step.  Returns 0, a negative errno, or the signal that
 * stopped the step instead (the branch faulted, e.g. a return on a bad stack, or a
 * signal came first): the branch did not run, rip is still on it. */
static int fp_load(void *ctx, struct user_fpregs_struct *fp)
{
	const struct stp_thr *t = ctx;

	return ptrace(PTRACE_GETFPREGS, t->tid, 0, fp) < 0 ? -errno : 0;
}

/* The SSE registers the emulation changed, back into the thread before it runs. */
static int fp_store(const struct stp_thr *t, struct x86_xmm *xs)
{
	if (!xs->dirty)
		return 0;
	xs->dirty = 0;
	return ptrace(PTRACE_SETFPREGS, t->tid, 0, &xs->fp) < 0 ? -errno : 0;
}

static int step_over(struct stp *s, struct stp_thr *t, const struct stp_bp *b,
		     struct user_regs_struct *r, struct x86_xmm *xs, uint64_t time)
{
	struct stp_event ev = { .time = time, .ip = b->addr, .cls = b->br.cls };
	const struct x86_isa_mem mem = stp_mm_mem(t->mm);
	uint8_t cc = X86_ISA_BP_BYTE;
	int st;

	stp_mm_cache(t->mm, 0);	/* the instruction runs for real */
	s->st.steps++;
	s->st.stops++;		/* the single-step's stop */
	s->st.other_stops++;
	x86_isa_set_ip(r, b->addr);
	if (fp_store(t, xs) < 0 || ptrace(PTRACE_SETREGS, t->tid, 0, r) < 0 ||
	    mem.wr(mem.ctx, b->addr, &b->orig, 1) < 0 ||
	    ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0)
		return -errno;
	if (waitpid(t->tid, &st, __WALL) < 0)
		return -errno;
	mem.wr(mem.ctx, b->addr, &cc, 1);
	if (!WIFSTOPPED(st))
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, r) < 0)
		return -errno;
	if (WSTOPSIG(st) != SIGTRAP)
		return WSTOPSIG(st);
	if (b->br.cls == X86_BR_NONE)
		return 0;	/* a filter entry on an ordinary instruction */
	if (b->br.cls == X86_BR_COND) {
		ev.kind = STP_TNT;
		ev.taken = x86_isa_ip(r) != b->br.next;
		s->st.cond++;
	} else {
		ev.kind = STP_TIP;
		ev.to = x86_isa_ip(r);
		if (b->br.cls == X86_BR_RET)
			s->st.ret++;
		else
			s->st.indirect++;
	}
	stp_emit(s, t, &ev);
	return 0;
}

static void count_blocker(struct stp *s, unsigned id)
{
	uint64_t n = 0;

	xp_map_get(&s->blockers, id, &n);
	xp_map_put(&s->blockers, id, n + 1);	/* statistics only: no memory, no count */
}

int stp_on_breakpoint(struct stp *s, struct stp_thr *t, struct user_regs_struct *r)
{
	uint64_t time = xp_now_ns();
	const struct stp_bp *b = stp_bp_find(t->mm, x86_isa_bp_addr(r));
	int err;

	struct stp_mm *m = t->mm;
	const struct x86_isa_mem mem = stp_mm_mem(m);
	int budget = CHAIN_MAX, branches = 0;
	enum stp_end end;
	struct x86_xmm xs = { .load = fp_load, .ctx = t };

	s->st.bp_stops++;
	stp_mm_cache(m, 1);
	stp_sync_enable(s, t, time);
	x86_isa_set_ip(r, b->addr);
	/* Interrupt avoidance: resolve this branch, then keep going as long as the code up
	 * to the next branch can be emulated; the tracee resumes where that stops. */
	for (;;) {
		struct stp_run *ru;
		uint64_t ip;

		ip = x86_isa_ip(r);
		if ((b = stp_bp_find(m, ip)) && stp_in_range(s, ip)) {
			if (budget-- <= 0) {
				end = STP_END_BUDGET;
				break;	/* resumes onto the int3: the next stop goes on */
			}
			if (branches++ > 0)
				s->st.chained++;
			if (emulate(s, t, b, r, &xs, time) < 0) {
				s->st.end[STP_END_STEP]++;
				if ((err = step_over(s, t, b, r, &xs, time)) != 0) {
					/* a signal: the caller handles it at the branch (the
					 * registers are the tracee's own, nothing to write) */
					stp_ensure_armed(s, t->mm, x86_isa_ip(r));
					return err;
				}
				goto resume;
			}
			continue;
		}
		end = budget <= 0 ? STP_END_BUDGET : STP_END_LEAVE;
		if (budget <= 0 || !stp_in_range(s, ip))
			break;
		end = STP_END_BROKEN;
		if (!(ru = stp_run_get(s, m, ip)) || ru->broken)
			break;
		end = STP_END_TERM;
		if (ru->foreign)
			break;	/* another tool's int3: stp_go_on has it single-stepped */
		if (ru->emu == STP_EMU_UNKNOWN)
			stp_emu_prepare(s, m, ru);
		if (ru->emu != STP_EMU_YES) {
			end = ru->emu_end;
			if (end == STP_END_INSN)
				count_blocker(s, ru->block_id);
			break;
		}
		end = STP_END_BUDGET;
		if (ru->nuops > budget)
			break;
		end = STP_END_FAULT;
		for (uint32_t i = 0; i < ru->nuops; i++) {
			const struct x86_uop *u = &m->uops[ru->uop0 + i];

			if (x86_emu_exec(u, ip, r, mem.rd, mem.wr, mem.ctx, &xs) < 0)
				goto out;	/* it faults for real, at ip */
			ip += u->len;
		}
		budget -= ru->nuops + 1;
		s->st.emulated += ru->nuops;
		if (stp_bp_find(m, ru->term_ip)) {
			x86_isa_set_ip(r, ru->term_ip);	/* armed: the next round handles it */
		} else if (ru->cls == X86_BR_JMP) {
			x86_isa_set_ip(r, ru->target);
		} else if (ru->cls == X86_BR_CALL) {
			if (x86_isa_push(r, ru->term_ip + ru->term_len, &mem) < 0)
				break;
			x86_isa_set_ip(r, ru->target);
		}
		/* else: the armed branch at term_ip comes next */
	}
out:
	s->st.end[end]++;
resume:
	stp_mm_cache(m, 0);
	if (fp_store(t, &xs) < 0 || ptrace(PTRACE_SETREGS, t->tid, 0, r) < 0)
		return -errno;
	stp_go_on(s, t, x86_isa_ip(r));
	return stp_resume(t, 0);
}

