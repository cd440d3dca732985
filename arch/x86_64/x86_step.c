/* ptrace branch tracer with interrupt avoidance (see x86_step.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>

#include "arch/x86_64/x86_dis.h"
#include "arch/x86_64/x86_emu.h"
#include "arch/x86_64/x86_step.h"
#include "util/xp_err.h"

#define INT3 0xcc
#define TRACE_OPTIONS (PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACEEXEC | PTRACE_O_TRACECLONE | \
		       PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_EXITKILL)
/* Straight-line runs longer than this are split (and chained like a direct jump). */
#define RUN_MAX_INSNS 4096
/* Instructions emulated in one stop at most (bounds a stop's latency, and ends loops
 * that run forever inside emulated code). */
#define CHAIN_MAX 2048

/* ---- u64 -> u32 open-addressing map ------------------------------------------------ */

struct u64map {
	uint64_t *keys;		/* 0 = empty (address 0 is never code) */
	uint32_t *vals;
	size_t cap, n;
};

static size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k;
}

static int u64map_get(const struct u64map *m, uint64_t k, uint32_t *v)
{
	if (!m->cap)
		return 0;
	for (size_t i = hash64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			*v = m->vals[i];
			return 1;
		}
		if (!m->keys[i])
			return 0;
	}
}

static int u64map_put(struct u64map *m, uint64_t k, uint32_t v);

static int u64map_grow(struct u64map *m)
{
	struct u64map nm = { 0 };

	nm.cap = m->cap ? m->cap * 2 : 1024;
	nm.keys = calloc(nm.cap, sizeof(*nm.keys));
	nm.vals = calloc(nm.cap, sizeof(*nm.vals));
	if (!nm.keys || !nm.vals) {
		free(nm.keys);
		free(nm.vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			u64map_put(&nm, m->keys[i], m->vals[i]);
	free(m->keys);
	free(m->vals);
	*m = nm;
	return 0;
}

static int u64map_put(struct u64map *m, uint64_t k, uint32_t v)
{
	if ((m->n + 1) * 2 > m->cap && u64map_grow(m) < 0)
		return -ENOMEM;
	for (size_t i = hash64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (m->keys[i] == k) {
			m->vals[i] = v;
			return 0;
		}
		if (!m->keys[i]) {
			m->keys[i] = k;
			m->vals[i] = v;
			m->n++;
			return 0;
		}
	}
}

static int u64map_copy(struct u64map *dst, const struct u64map *src)
{
	*dst = (struct u64map){ 0 };
	if (!src->cap)
		return 0;
	dst->keys = malloc(src->cap * sizeof(*dst->keys));
	dst->vals = malloc(src->cap * sizeof(*dst->vals));
	if (!dst->keys || !dst->vals)
		return -ENOMEM;
	memcpy(dst->keys, src->keys, src->cap * sizeof(*dst->keys));
	memcpy(dst->vals, src->vals, src->cap * sizeof(*dst->vals));
	dst->cap = src->cap;
	dst->n = src->n;
	return 0;
}

static void u64map_free(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct u64map){ 0 };
}

/* ---- address spaces ---------------------------------------------------------------- */

struct bp {
	uint64_t addr;
	uint8_t orig;
	uint8_t live;		/* 0 after the mapping went away */
	uint8_t entry;		/* --filter: where tracing (re)starts when reached from outside */
	uint8_t has_uop;	/* an entry on an ordinary instruction: emulated by `uop` */
	uint8_t len;
	struct x86_branch br;
	struct x86_uop uop;
};

/* A straight-line run from `start` to its control transfer. */
struct run {
	uint64_t start;
	uint64_t term_ip;
	uint64_t target;	/* direct jmp/call target; next run for split runs */
	uint8_t term_len;	/* length of the terminator */
	uint32_t gen;		/* == mm->gen: the chain from here was armed in this generation */
	uint8_t cls;		/* enum x86_bclass of the terminator; X86_BR_NONE: split/broken */
	uint8_t broken;		/* decoding stopped on bad bytes */
	uint8_t dead;		/* its code was unmapped: decode again when reached */
	uint8_t emu;		/* EMU_*: can a stop emulate its body? */
	uint16_t nuops;
	uint32_t uop0;		/* its body in mm->uops[uop0 .. uop0 + nuops) */
};

enum { EMU_UNKNOWN, EMU_YES, EMU_NO };
#define EMU_MAX_BODY 64	/* longer bodies run for real */

struct mm {
	int refs;
	int memfd;
	pid_t pid;
	uint32_t gen;
	struct u64map bp_at;	/* addr -> index in bps */
	struct bp *bps;
	size_t nbps, capbps;
	struct u64map run_at;	/* start -> index in runs */
	struct run *runs;
	size_t nruns, capruns;
	struct x86_uop *uops;
	size_t nuops, capuops;
};

enum th_state { TH_NEW, TH_PREEXEC, TH_RUNNING };

struct thr {
	struct thr *next;
	pid_t tid, pid;
	pid_t ppid, ptid;
	struct mm *mm;
	enum th_state state;
	int have_event;		/* new thread: the parent's clone/fork event was seen */
	int have_stop;		/* new thread: its initial stop was seen */
	int fork;
	int enabled;		/* trace on (not in a syscall, inside the filter) */
	int pending;		/* resumed at pge_ip after a syscall: XS_ENABLE not sent yet */
	uint64_t pge_ip;
	int in_syscall;
	long sc_nr;
	uint64_t sc_args[4];
	void *user;
};

struct x86_step {
	struct x86_step_opts o;
	struct x86_step_range *ranges;
	unsigned nranges;
	int ranges_dirty;	/* entries of new ranges still to arm */
	struct x86_dis dis;
	struct thr *threads;
	pid_t root;
	int root_status;
	int error;
	struct x86_step_stats st;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static struct mm *mm_new(pid_t pid)
{
	struct mm *m = calloc(1, sizeof(*m));
	char path[64];

	if (!m)
		return NULL;
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	m->memfd = open(path, O_RDWR | O_CLOEXEC);
	if (m->memfd < 0) {
		free(m);
		return NULL;
	}
	m->refs = 1;
	m->pid = pid;
	m->gen = 1;
	return m;
}

static void mm_put(struct mm *m)
{
	if (!m || --m->refs > 0)
		return;
	close(m->memfd);
	u64map_free(&m->bp_at);
	u64map_free(&m->run_at);
	free(m->bps);
	free(m->runs);
	free(m->uops);
	free(m);
}

/* A forked child: same code, same breakpoints (fork copied the int3 bytes). */
static struct mm *mm_fork(const struct mm *p, pid_t child)
{
	struct mm *m = mm_new(child);

	if (!m)
		return NULL;
	m->gen = p->gen;
	if (u64map_copy(&m->bp_at, &p->bp_at) < 0 || u64map_copy(&m->run_at, &p->run_at) < 0)
		goto fail;
	m->bps = malloc((p->capbps ? p->capbps : 1) * sizeof(*m->bps));
	m->runs = malloc((p->capruns ? p->capruns : 1) * sizeof(*m->runs));
	if (!m->bps || !m->runs)
		goto fail;
	memcpy(m->bps, p->bps, p->nbps * sizeof(*m->bps));
	memcpy(m->runs, p->runs, p->nruns * sizeof(*m->runs));
	if (p->nuops) {
		m->uops = malloc(p->nuops * sizeof(*m->uops));
		if (!m->uops)
			goto fail;
		memcpy(m->uops, p->uops, p->nuops * sizeof(*m->uops));
		m->nuops = m->capuops = p->nuops;
	}
	m->nbps = p->nbps;
	m->capbps = p->capbps ? p->capbps : 1;
	m->nruns = p->nruns;
	m->capruns = p->capruns ? p->capruns : 1;
	return m;
fail:
	mm_put(m);
	return NULL;
}

static struct bp *bp_find(struct mm *m, uint64_t addr)
{
	uint32_t i;

	if (!u64map_get(&m->bp_at, addr, &i) || !m->bps[i].live)
		return NULL;
	return &m->bps[i];
}

static int mem_read(struct mm *m, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(m->memfd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

static int mem_read_cb(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return mem_read(ctx, addr, buf, len);
}

static int mem_write(struct mm *m, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = pwrite(m->memfd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Code as the program sees it: our int3 bytes replaced by the original ones. */
static long code_read(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	struct mm *m = ctx;
	ssize_t n = pread(m->memfd, buf, len, (off_t)ip);

	if (n <= 0) {
		/* a read across the end of a mapping fails as a whole: retry shorter */
		size_t part = 4096 - (ip & 4095);

		if (part >= len)
			return 0;
		n = pread(m->memfd, buf, part, (off_t)ip);
		if (n <= 0)
			return 0;
	}
	for (ssize_t i = 0; i < n; i++) {
		uint32_t k;

		if (buf[i] == INT3 && u64map_get(&m->bp_at, ip + (uint64_t)i, &k) && m->bps[k].live)
			buf[i] = m->bps[k].orig;
	}
	return n;
}

static int arm(struct x86_step *s, struct mm *m, const struct x86_instr *in)
{
	struct bp *b;
	uint8_t cc = INT3;
	uint32_t idx;

	if (u64map_get(&m->bp_at, in->ip, &idx)) {
		if (m->bps[idx].live)
			return 0;
		b = &m->bps[idx];
	} else {
		if (m->nbps == m->capbps) {
			size_t nc = m->capbps ? m->capbps * 2 : 1024;
			struct bp *nb = realloc(m->bps, nc * sizeof(*nb));

			if (!nb)
				return -ENOMEM;
			m->bps = nb;
			m->capbps = nc;
		}
		idx = (uint32_t)m->nbps++;
		b = &m->bps[idx];
		if (u64map_put(&m->bp_at, in->ip, idx) < 0)
			return -ENOMEM;
	}
	b->addr = in->ip;
	b->orig = in->bytes[0];
	b->br = in->br;
	b->len = in->size;
	b->entry = 0;
	b->has_uop = 0;
	if (mem_write(m, in->ip, &cc, 1) < 0) {
		b->live = 0;
		return -EFAULT;
	}
	b->live = 1;
	s->st.breakpoints++;
	return 0;
}

static int in_range(const struct x86_step *s, uint64_t ip)
{
	if (!s->nranges)
		return !s->o.filtered;
	for (unsigned i = 0; i < s->nranges; i++)
		if (ip >= s->ranges[i].start && ip < s->ranges[i].end)
			return 1;
	return 0;
}

static struct run *run_get(struct x86_step *s, struct mm *m, uint64_t ip)
{
	struct x86_run r;
	struct run *ru;
	uint32_t idx;
	int err;

	if (u64map_get(&m->run_at, ip, &idx)) {
		if (!m->runs[idx].dead)
			return &m->runs[idx];
		ru = &m->runs[idx];
		goto decode;
	}
	if (m->nruns == m->capruns) {
		size_t nc = m->capruns ? m->capruns * 2 : 1024;
		struct run *nr = realloc(m->runs, nc * sizeof(*nr));

		if (!nr)
			return NULL;
		m->runs = nr;
		m->capruns = nc;
	}
	ru = &m->runs[m->nruns];
	idx = (uint32_t)m->nruns;
	if (u64map_put(&m->run_at, ip, idx) < 0)
		return NULL;
	m->nruns++;
decode:
	memset(ru, 0, sizeof(*ru));
	ru->start = ip;
	err = x86_dis_run(&s->dis, code_read, m, ip, RUN_MAX_INSNS, &r);
	if (err < 0 || (r.truncated && r.truncated != -E2BIG)) {
		ru->broken = 1;
		ru->cls = X86_BR_NONE;
	} else if (r.truncated) {
		ru->cls = X86_BR_NONE;
		ru->target = r.term.ip + r.term.size;
	} else {
		ru->cls = (uint8_t)r.term.br.cls;
		ru->term_ip = r.term.ip;
		ru->term_len = r.term.size;
		ru->target = r.term.br.target;
		int stop = x86_branch_needs_trace(r.term.br.cls) &&
			   r.term.br.cls != X86_BR_SYSCALL && r.term.br.cls != X86_BR_TRAP &&
			   r.term.br.cls != X86_BR_FAR;

		/* a direct jump/call out of the filter ranges is where tracing stops */
		if ((r.term.br.cls == X86_BR_JMP || r.term.br.cls == X86_BR_CALL) &&
		    !in_range(s, r.term.br.target))
			stop = 1;
		if (stop && arm(s, m, &r.term) < 0)
			ru->broken = 1;
	}
	s->st.blocks++;
	return ru;
}

/* --filter: an int3 where tracing restarts when the thread comes back from outside
 * (a range's start, the return address of a call that left the ranges). */
static void arm_entry(struct x86_step *s, struct mm *m, uint64_t addr)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	struct bp *b;
	struct x86_uop u;
	int has_uop;
	long got;

	if ((b = bp_find(m, addr))) {
		b->entry = 1;
		return;
	}
	got = code_read(m, addr, buf, sizeof(buf));
	if (got <= 0 || x86_dis_one(&s->dis, buf, (size_t)got, addr, &in) < 0)
		return;
	has_uop = in.br.cls == X86_BR_NONE &&
		  x86_emu_translate(s->dis.scratch, !s->dis.intel, &u) == 0;
	if (in.br.cls != X86_BR_NONE && in.br.cls != X86_BR_COND && in.br.cls != X86_BR_RET &&
	    in.br.cls != X86_BR_JMP_IND && in.br.cls != X86_BR_CALL_IND &&
	    in.br.cls != X86_BR_JMP && in.br.cls != X86_BR_CALL)
		return;	/* a syscall or trap at an entry: the range starts after it */
	if (arm(s, m, &in) < 0 || !(b = bp_find(m, addr)))
		return;
	b->entry = 1;
	b->has_uop = (uint8_t)has_uop;
	if (has_uop)
		b->uop = u;
}

static void arm_entries(struct x86_step *s, struct mm *m)
{
	for (unsigned i = 0; i < s->nranges; i++)
		arm_entry(s, m, s->ranges[i].start);
	s->ranges_dirty = 0;
	m->gen++;	/* chains may now end at a range boundary */
}

/* Makes sure every instruction the thread can reach from `ip` before its next stop is
 * known: follows direct jumps/calls (which never stop) to the first armed branch. */
static void ensure_armed(struct x86_step *s, struct mm *m, uint64_t ip)
{
	for (int hops = 0; hops < 100000; hops++) {
		struct run *ru;

		if (!in_range(s, ip))
			return;
		ru = run_get(s, m, ip);
		if (!ru)
			return;
		if (ru->gen == m->gen)
			return;	/* the chain from here is armed already */
		ru->gen = m->gen;
		if (ru->broken) {
			xp_warn("step: cannot decode code at %#llx: tracing of this path is incomplete",
				(unsigned long long)ip);
			return;
		}
		switch (ru->cls) {
		case X86_BR_JMP:
		case X86_BR_CALL:
		case X86_BR_NONE:
			ip = ru->target;
			continue;
		default:
			return;
		}
	}
}

/* ---- threads ----------------------------------------------------------------------- */

static struct thr *thr_find(struct x86_step *s, pid_t tid)
{
	for (struct thr *t = s->threads; t; t = t->next)
		if (t->tid == tid)
			return t;
	return NULL;
}

static struct thr *thr_add(struct x86_step *s, pid_t tid)
{
	struct thr *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->tid = tid;
	t->pid = tid;
	t->next = s->threads;
	s->threads = t;
	return t;
}

static void thr_del(struct x86_step *s, struct thr *t)
{
	for (struct thr **pp = &s->threads; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	mm_put(t->mm);
	free(t);
}

static int emit(struct x86_step *s, struct thr *t, struct x86_step_event *ev)
{
	int rc;

	ev->pid = t->pid;
	ev->tid = t->tid;
	if (!ev->time)
		ev->time = now_ns();
	ev->user = &t->user;
	rc = s->o.fn(s->o.ctx, ev);
	if (rc && !s->error)
		s->error = rc;
	return rc;
}

/* Tracing resumed at pge_ip after a syscall: tell the consumer before anything else. */
static void sync_enable(struct x86_step *s, struct thr *t, uint64_t time)
{
	struct x86_step_event ev = { .kind = XS_ENABLE, .time = time };

	if (!t->pending)
		return;
	t->pending = 0;
	t->enabled = 1;
	ev.ip = ev.to = t->pge_ip;
	emit(s, t, &ev);
}

static int resume(struct thr *t, int sig)
{
	if (ptrace(PTRACE_SYSCALL, t->tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

static int mem_write_cb(void *ctx, uint64_t addr, const void *buf, size_t len);

/* Emulates the armed instruction at r->rip (a branch, or an ordinary instruction under a
 * filter entry); returns 0 or < 0 when it cannot be emulated. */
static int emulate(struct x86_step *s, struct thr *t, const struct bp *b,
		   struct user_regs_struct *r, uint64_t time)
{
	struct x86_step_event ev = { .time = time, .ip = b->addr, .cls = b->br.cls };
	uint64_t target, rcx;
	int err;

	if (!t->enabled) {
		/* back inside the filter ranges */
		struct x86_step_event en = { .kind = XS_ENABLE, .time = time };

		en.ip = en.to = b->addr;
		t->enabled = 1;
		emit(s, t, &en);
	}
	switch (b->br.cls) {
	case X86_BR_NONE:
		if (!b->has_uop)
			return -EINVAL;
		return x86_emu_exec(&b->uop, b->addr, r, mem_read_cb, mem_write_cb, t->mm);
	case X86_BR_JMP:
	case X86_BR_CALL:
		if (b->br.cls == X86_BR_CALL) {
			if ((err = mem_write(t->mm, r->rsp - 8, &b->br.next, 8)) < 0)
				return err;
			r->rsp -= 8;
		}
		r->rip = b->br.target;
		if (in_range(s, r->rip))
			return 0;	/* direct: nothing to record */
		ev.kind = XS_DISABLE;
		ev.to = r->rip;
		break;
	case X86_BR_COND:
		ev.kind = XS_TNT;
		ev.taken = x86_branch_cond_taken(&b->br, r, &rcx);
		r->rcx = rcx;
		r->rip = ev.taken ? b->br.target : b->br.next;
		s->st.cond++;
		break;
	case X86_BR_RET:
		if ((err = mem_read(t->mm, r->rsp, &target, 8)) < 0)
			return err;
		r->rsp += 8 + b->br.ret_imm;
		r->rip = target;
		ev.kind = XS_TIP;
		ev.to = target;
		s->st.ret++;
		break;
	case X86_BR_JMP_IND:
	case X86_BR_CALL_IND:
		err = x86_branch_indirect_target(&b->br, r, mem_read_cb, t->mm, &target);
		if (err < 0)
			return err;
		if (b->br.cls == X86_BR_CALL_IND) {
			if ((err = mem_write(t->mm, r->rsp - 8, &b->br.next, 8)) < 0)
				return err;
			r->rsp -= 8;
		}
		r->rip = target;
		ev.kind = XS_TIP;
		ev.to = target;
		s->st.indirect++;
		break;
	default:
		return -EINVAL;
	}
	if (!in_range(s, r->rip)) {
		/* leaving the filter ranges: TIP.PGD to the target; a call comes back at
		 * its return address */
		ev.kind = XS_DISABLE;
		ev.to = r->rip;
		if (b->br.cls == X86_BR_CALL || b->br.cls == X86_BR_CALL_IND)
			arm_entry(s, t->mm, b->br.next);
	}
	if (ev.kind == XS_DISABLE)
		t->enabled = 0;
	emit(s, t, &ev);
	return 0;
}

static int mem_write_cb(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	return mem_write(ctx, addr, buf, len);
}

/* Translates a run's body (everything before its branch) for x86_emu, once. */
static void emu_prepare(struct x86_step *s, struct mm *m, struct run *ru)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	uint64_t ip = ru->start;
	size_t first = m->nuops;
	long got;

	ru->emu = EMU_NO;
	switch (ru->cls) {
	case X86_BR_COND: case X86_BR_RET: case X86_BR_JMP_IND: case X86_BR_CALL_IND:
	case X86_BR_JMP: case X86_BR_CALL:
		break;
	default:
		return;	/* syscalls, traps, split runs: the tracee goes on by itself */
	}
	while (ip < ru->term_ip) {
		if (m->nuops - first >= EMU_MAX_BODY)
			goto fail;
		got = code_read(m, ip, buf, sizeof(buf));
		if (got <= 0 || x86_dis_one(&s->dis, buf, (size_t)got, ip, &in) < 0)
			goto fail;
		if (m->nuops == m->capuops) {
			size_t nc = m->capuops ? m->capuops * 2 : 4096;
			struct x86_uop *nu = realloc(m->uops, nc * sizeof(*nu));

			if (!nu)
				goto fail;
			m->uops = nu;
			m->capuops = nc;
		}
		if (x86_emu_translate(s->dis.scratch, !s->dis.intel, &m->uops[m->nuops]) < 0)
			goto fail;
		m->nuops++;
		ip += in.size;
	}
	if (ip != ru->term_ip)
		goto fail;
	ru->uop0 = (uint32_t)first;
	ru->nuops = (uint16_t)(m->nuops - first);
	ru->emu = EMU_YES;
	return;
fail:
	m->nuops = first;
}

/* Fallback for a branch the emulation cannot evaluate: execute it for real with the
 * int3 lifted for one single-step. */
static int step_over(struct x86_step *s, struct thr *t, const struct bp *b,
		     struct user_regs_struct *r, uint64_t time)
{
	struct x86_step_event ev = { .time = time, .ip = b->addr, .cls = b->br.cls };
	uint8_t cc = INT3;
	int st;

	s->st.steps++;
	s->st.stops++;		/* the single-step's stop */
	s->st.other_stops++;
	r->rip = b->addr;
	if (ptrace(PTRACE_SETREGS, t->tid, 0, r) < 0 ||
	    mem_write(t->mm, b->addr, &b->orig, 1) < 0 ||
	    ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0)
		return -errno;
	if (waitpid(t->tid, &st, __WALL) < 0)
		return -errno;
	mem_write(t->mm, b->addr, &cc, 1);
	if (!WIFSTOPPED(st))
		return -ESRCH;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, r) < 0)
		return -errno;
	if (b->br.cls == X86_BR_NONE)
		return 0;	/* a filter entry on an ordinary instruction */
	if (b->br.cls == X86_BR_COND) {
		ev.kind = XS_TNT;
		ev.taken = r->rip != b->br.next;
		s->st.cond++;
	} else {
		ev.kind = XS_TIP;
		ev.to = r->rip;
		if (b->br.cls == X86_BR_RET)
			s->st.ret++;
		else
			s->st.indirect++;
	}
	emit(s, t, &ev);
	return 0;
}

static int on_breakpoint(struct x86_step *s, struct thr *t, struct user_regs_struct *r)
{
	uint64_t time = now_ns();
	const struct bp *b = bp_find(t->mm, r->rip - 1);
	int err;

	struct mm *m = t->mm;
	int budget = CHAIN_MAX, branches = 0;

	s->st.bp_stops++;
	sync_enable(s, t, time);
	r->rip = b->addr;
	/* Interrupt avoidance: resolve this branch, then keep going as long as the code up
	 * to the next branch can be emulated; the tracee resumes where that stops. */
	for (;;) {
		struct run *ru;
		uint64_t ip;

		if ((b = bp_find(m, r->rip)) && in_range(s, r->rip)) {
			if (budget-- <= 0)
				break;	/* resumes onto the int3: the next stop goes on */
			if (branches++ > 0)
				s->st.chained++;
			if (emulate(s, t, b, r, time) < 0) {
				if ((err = step_over(s, t, b, r, time)) < 0)
					return err;
				break;
			}
			continue;
		}
		if (budget <= 0 || !in_range(s, r->rip) || !(ru = run_get(s, m, r->rip)) ||
		    ru->broken)
			break;
		if (ru->emu == EMU_UNKNOWN)
			emu_prepare(s, m, ru);
		if (ru->emu != EMU_YES || ru->nuops > budget)
			break;
		ip = r->rip;
		for (uint32_t i = 0; i < ru->nuops; i++) {
			const struct x86_uop *u = &m->uops[ru->uop0 + i];

			if (x86_emu_exec(u, ip, r, mem_read_cb, mem_write_cb, m) < 0)
				goto resume;	/* it faults for real, at ip */
			ip += u->len;
		}
		budget -= ru->nuops + 1;
		s->st.emulated += ru->nuops;
		if (bp_find(m, ru->term_ip)) {
			r->rip = ru->term_ip;	/* armed: the next round handles it */
		} else if (ru->cls == X86_BR_JMP) {
			r->rip = ru->target;
		} else if (ru->cls == X86_BR_CALL) {
			uint64_t ret = ru->term_ip + ru->term_len;

			if (mem_write(m, r->rsp - 8, &ret, 8) < 0)
				break;
			r->rsp -= 8;
			r->rip = ru->target;
		}
		/* else: the armed branch at term_ip comes next */
	}
resume:
	if (ptrace(PTRACE_SETREGS, t->tid, 0, r) < 0)
		return -errno;
	ensure_armed(s, t->mm, r->rip);
	return resume(t, 0);
}

static int sig_caught(pid_t pid, int sig)
{
	char path[64], line[256];
	unsigned long long mask = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "SigCgt: %llx", &mask) == 1)
			break;
	fclose(f);
	return sig >= 1 && sig <= 64 && (mask >> (sig - 1)) & 1;
}

static int on_signal(struct x86_step *s, struct thr *t, int sig, struct user_regs_struct *r)
{
	struct x86_step_event ev = { .kind = XS_ASYNC, .ip = r->rip };
	int st;

	s->st.signal_stops++;
	s->st.signals++;
	if (!sig_caught(t->pid, sig))
		return resume(t, sig);	/* default action or ignored: no transfer in user code */
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
	ev.to = r->rip;
	ev.time = now_ns();
	if (t->pending) {
		/* back from a syscall straight into the handler: tracing resumes there */
		t->pending = 0;
		t->enabled = 0;
	}
	if (!t->enabled && in_range(s, ev.to)) {
		ev.kind = XS_ENABLE;
		ev.ip = ev.to;
		t->enabled = 1;
		emit(s, t, &ev);
	} else if (t->enabled && !in_range(s, ev.to)) {
		ev.kind = XS_DISABLE;	/* asynchronous exit from the filter ranges */
		ev.to = 0;
		ev.taken = 1;
		t->enabled = 0;
		emit(s, t, &ev);
	} else if (t->enabled) {
		emit(s, t, &ev);
	}
	ensure_armed(s, t->mm, r->rip);
	return resume(t, 0);
}

/* Code in [addr, addr+len) may be gone or replaced (munmap, mprotect, mremap): its
 * breakpoints vanished with it, its runs are decoded again when reached, and every chain
 * is walked again since one may lead into the range. */
static void forget_code(struct mm *m, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	for (size_t i = 0; i < m->nbps; i++)
		if (m->bps[i].addr >= addr && m->bps[i].addr < end)
			m->bps[i].live = 0;
	for (size_t i = 0; i < m->nruns; i++)
		if (m->runs[i].start >= addr && m->runs[i].start < end)
			m->runs[i].dead = 1;
	m->gen++;
}

static int on_syscall(struct x86_step *s, struct thr *t, struct user_regs_struct *r)
{
	struct __ptrace_syscall_info si;
	struct x86_step_event ev = { 0 };
	uint64_t time = now_ns();

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
		sync_enable(s, t, time);
		if (t->enabled) {
			ev.kind = XS_DISABLE;
			ev.time = time;
			ev.ip = r->rip - 2;	/* syscall, sysenter and int 0x80 are 2 bytes */
			emit(s, t, &ev);
			t->enabled = 0;
		}
	} else if (si.op == PTRACE_SYSCALL_INFO_EXIT) {
		t->in_syscall = 0;
		if (t->sc_nr == SYS_mmap || t->sc_nr == SYS_mprotect || t->sc_nr == SYS_munmap ||
		    t->sc_nr == SYS_mremap) {
			/* mprotect keeps the bytes (and our int3s); the others replace them.
			 * Forget first: the consumer may arm filter entries in the new code. */
			if (t->sc_nr == SYS_munmap || t->sc_nr == SYS_mremap ||
			    (t->sc_nr == SYS_mmap && (t->sc_args[3] & MAP_FIXED)))
				forget_code(t->mm, t->sc_args[0], t->sc_args[1]);
			ev.kind = XS_MAPS;
			ev.time = time;
			emit(s, t, &ev);
			if (s->ranges_dirty)
				arm_entries(s, t->mm);
		}
		if (in_range(s, r->rip)) {
			t->pending = 1;
			t->pge_ip = r->rip;
			ensure_armed(s, t->mm, r->rip);
		}
	}
	return resume(t, 0);
}

/* A new thread is ready when both its first stop and the parent's event were seen. */
static int start_thread(struct x86_step *s, struct thr *t)
{
	struct user_regs_struct r;
	struct x86_step_event ev = { .kind = XS_THREAD };

	if (!t->have_event || !t->have_stop)
		return 0;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return -errno;
	t->state = TH_RUNNING;
	s->st.threads++;
	ev.ppid = t->ppid;
	ev.ptid = t->ptid;
	ev.fork = t->fork;
	if (in_range(s, r.rip)) {
		ev.ip = r.rip;
		t->enabled = 1;
	}
	emit(s, t, &ev);
	ensure_armed(s, t->mm, r.rip);
	return resume(t, 0);
}

static int on_clone_event(struct x86_step *s, struct thr *p, int event)
{
	unsigned long msg;
	struct thr *c;

	s->st.other_stops++;
	if (ptrace(PTRACE_GETEVENTMSG, p->tid, 0, &msg) < 0)
		return -errno;
	c = thr_find(s, (pid_t)msg);
	if (!c && !(c = thr_add(s, (pid_t)msg)))
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
		if (!(c->mm = mm_fork(p->mm, c->tid)))
			return -ENOMEM;
	}
	c->have_event = 1;
	if (start_thread(s, c) < 0)
		return -errno;
	return resume(p, 0);
}

static int read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	buf[0] = 0;
	f = fopen(path, "r");
	if (!f)
		return -errno;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
	return 0;
}

static int on_exec(struct x86_step *s, struct thr *t, struct user_regs_struct *r)
{
	struct x86_step_event ev = { .kind = XS_EXEC };
	unsigned long former;
	char comm[32];

	s->st.other_stops++;
	/* a non-leader thread that execs takes over the leader's tid */
	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 && (pid_t)former != t->tid) {
		struct thr *o = thr_find(s, (pid_t)former);

		if (o)
			thr_del(s, o);
	}
	mm_put(t->mm);
	t->mm = mm_new(t->tid);
	if (!t->mm)
		return -errno;
	t->enabled = 0;
	t->pending = 0;
	t->in_syscall = 1;
	t->sc_nr = SYS_execve;
	if (t->state == TH_PREEXEC) {
		struct x86_step_event th = { .kind = XS_THREAD };

		t->state = TH_RUNNING;
		s->st.threads++;
		emit(s, t, &th);
	}
	read_comm(t->tid, comm, sizeof(comm));
	ev.comm = comm;
	ev.ip = r->rip;
	emit(s, t, &ev);
	if (s->ranges_dirty)
		arm_entries(s, t->mm);
	return resume(t, 0);
}

static int on_thread_exit(struct x86_step *s, struct thr *t, int status)
{
	struct x86_step_event ev = { .kind = XS_EXIT, .status = status };

	s->st.other_stops++;
	if (t->state == TH_RUNNING)
		emit(s, t, &ev);
	if (t->tid == s->root)
		s->root_status = status;
	thr_del(s, t);
	return 0;
}

static int handle_stop(struct x86_step *s, pid_t tid, int st)
{
	struct user_regs_struct r;
	struct thr *t = thr_find(s, tid);
	int sig, event;

	s->st.stops++;
	if (!t) {
		/* a new thread's first stop before its parent's clone event */
		if (!WIFSTOPPED(st) || !(t = thr_add(s, tid)))
			return WIFSTOPPED(st) ? -ENOMEM : 0;
		t->state = TH_NEW;
	}
	if (WIFEXITED(st) || WIFSIGNALED(st))
		return on_thread_exit(s, t, st);
	if (!WIFSTOPPED(st))
		return 0;
	sig = WSTOPSIG(st);
	event = st >> 16;
	if (t->state == TH_NEW) {
		/* SIGSTOP for PTRACE_TRACEME tracers, PTRACE_EVENT_STOP under PTRACE_SEIZE */
		if (sig != SIGSTOP && event != PTRACE_EVENT_STOP) {
			s->st.other_stops++;
			return resume(t, 0);
		}
		t->have_stop = 1;
		return start_thread(s, t);
	}
	if (ptrace(PTRACE_GETREGS, tid, 0, &r) < 0)
		return errno == ESRCH ? 0 : -errno;
	if (t->state == TH_PREEXEC) {
		if (sig == SIGTRAP && event == PTRACE_EVENT_EXEC)
			return on_exec(s, t, &r);
		s->st.other_stops++;
		return ptrace(PTRACE_CONT, tid, 0, (void *)(long)(sig == SIGTRAP ? 0 : sig)) < 0 ? -errno : 0;
	}
	if (sig == (SIGTRAP | 0x80))
		return on_syscall(s, t, &r);
	if (sig == SIGTRAP && event) {
		switch (event) {
		case PTRACE_EVENT_EXEC:
			return on_exec(s, t, &r);
		case PTRACE_EVENT_CLONE:
		case PTRACE_EVENT_FORK:
		case PTRACE_EVENT_VFORK:
			return on_clone_event(s, t, event);
		default:	/* PTRACE_EVENT_STOP: group-stop of a seized tracee */
			s->st.other_stops++;
			return resume(t, 0);
		}
	}
	if (event == PTRACE_EVENT_STOP) {
		s->st.other_stops++;
		return resume(t, 0);
	}
	/* SIGTRAP right after one of our int3s is that int3 (not asking GETSIGINFO saves a
	 * syscall per stop; a program's own SIGTRAP there would have to be raised by kill
	 * exactly at a branch) */
	if (sig == SIGTRAP && bp_find(t->mm, r.rip - 1))
		return on_breakpoint(s, t, &r);
	return on_signal(s, t, sig, &r);
}

int x86_step_spawn(struct x86_step **out, const struct x86_step_opts *o, char *const argv[])
{
	struct x86_step *s = calloc(1, sizeof(*s));
	struct thr *t;
	int st, err;
	pid_t pid;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	if ((err = x86_dis_init(&s->dis)) < 0 ||
	    (err = x86_step_set_ranges(s, o->ranges, o->nranges)) < 0) {
		x86_step_free(s);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		err = -errno;
		x86_step_free(s);
		return err;
	}
	if (pid == 0) {
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		raise(SIGSTOP);
		execvp(argv[0], argv);
		fprintf(stderr, "xptrace: execute %s: %s (check the command name and PATH)\n",
			argv[0], strerror(errno));
		_exit(127);
	}
	s->root = pid;
	if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st) ||
	    ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)(TRACE_OPTIONS)) < 0) {
		err = -errno;
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		x86_step_free(s);
		return err ? err : -ECHILD;
	}
	t = thr_add(s, pid);
	if (!t) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		x86_step_free(s);
		return -ENOMEM;
	}
	t->state = TH_PREEXEC;
	*out = s;
	return ptrace(PTRACE_CONT, pid, 0, 0) < 0 ? -errno : 0;
}

int x86_step_attach(struct x86_step **out, const struct x86_step_opts *o, pid_t pid)
{
	struct x86_step *s = calloc(1, sizeof(*s));
	struct thr *t;
	int err;

	if (!s)
		return -ENOMEM;
	s->o = *o;
	if ((err = x86_dis_init(&s->dis)) < 0 ||
	    (err = x86_step_set_ranges(s, o->ranges, o->nranges)) < 0)
		goto fail;
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)(TRACE_OPTIONS)) < 0) {
		err = -errno;
		goto fail;
	}
	if (!(t = thr_add(s, pid))) {
		err = -ENOMEM;
		goto fail;
	}
	t->state = TH_PREEXEC;
	s->root = pid;
	*out = s;
	return 0;
fail:
	x86_step_free(s);
	return err;
}

int x86_step_run(struct x86_step *s)
{
	int st, err;
	pid_t tid;

	while (s->threads) {
		if (s->o.stop && *s->o.stop) {
			s->error = -EINTR;
			break;
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
	if (s->error) {
		for (struct thr *t = s->threads; t; t = t->next)
			kill(t->tid, SIGKILL);
		while (waitpid(-1, &st, __WALL) > 0)
			;
		return s->error;
	}
	return 0;
}

int x86_step_exit_status(const struct x86_step *s)
{
	return s->root_status;
}

const struct x86_step_stats *x86_step_stats(const struct x86_step *s)
{
	return &s->st;
}

int x86_step_set_ranges(struct x86_step *s, const struct x86_step_range *r, unsigned n)
{
	struct x86_step_range *nr = NULL;

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

void x86_step_free(struct x86_step *s)
{
	if (!s)
		return;
	while (s->threads)
		thr_del(s, s->threads);
	free(s->ranges);
	x86_dis_fini(&s->dis);
	free(s);
}
