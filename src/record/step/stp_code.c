/* Address spaces of the step tracer: the code the threads run through, decoded into
 * straight-line runs, and the int3s armed at the branches a stop has to see. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record/step/stp_int.h"
#include "util/xp_err.h"
#include "util/xp_maps.h"

/* Straight-line runs longer than this are split (and chained like a direct jump). */
#define RUN_MAX_INSNS 4096
#define EMU_MAX_BODY 1024	/* longer bodies run for real */

/* bp_at and run_at map an address to an index (uint32_t) */
static bool map_get(const struct xp_map *m, uint64_t k, uint32_t *v)
{
	uint64_t x;

	if (!xp_map_get(m, k, &x))
		return false;
	*v = (uint32_t)x;
	return true;
}

struct stp_mm *stp_mm_new(pid_t pid)
{
	struct stp_mm *m = calloc(1, sizeof(*m));
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
	m->cache_gen = 1;
	m->gen = 1;
	return m;
}

void stp_mm_put(struct stp_mm *m)
{
	if (!m || --m->refs > 0)
		return;
	close(m->memfd);
	free(m->wr);
	free(m->cache);
	xp_map_free(&m->bp_at);
	xp_map_free(&m->run_at);
	free(m->bps);
	free(m->runs);
	free(m->uops);
	xp_map_free(&m->fb_at);
	free(m);
}

struct stp_mm *stp_mm_fork(const struct stp_mm *p, pid_t child)
{
	struct stp_mm *m = stp_mm_new(child);

	if (!m)
		return NULL;
	m->gen = p->gen;
	if (xp_map_copy(&m->bp_at, &p->bp_at) < 0 || xp_map_copy(&m->run_at, &p->run_at) < 0 ||
	    xp_map_copy(&m->fb_at, &p->fb_at) < 0)
		goto fail;
	m->bps = malloc((p->capbps ? p->capbps : 1) * sizeof(*m->bps));
	m->runs = malloc((p->capruns ? p->capruns : 1) * sizeof(*m->runs));
	if (!m->bps || !m->runs)
		goto fail;
	/* (a parent without any has no array: memcpy's source is declared non-null) */
	if (p->nbps)
		memcpy(m->bps, p->bps, p->nbps * sizeof(*m->bps));
	if (p->nruns)
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
	stp_mm_put(m);
	return NULL;
}

struct stp_bp *stp_bp_find(struct stp_mm *m, uint64_t addr)
{
	uint32_t i;

	if (!map_get(&m->bp_at, addr, &i) || !m->bps[i].live)
		return NULL;
	return &m->bps[i];
}

static int mem_read(struct stp_mm *m, uint64_t addr, void *buf, size_t len)
{
	ssize_t n = pread(m->memfd, buf, len, (off_t)addr);

	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* process_vm_readv/writev copy straight between the address spaces; /proc/PID/mem goes
 * through a bounce page allocated per call (a third of a stop's cost with pages). */
static int vm_copy(struct stp_mm *m, uint64_t addr, void *buf, size_t len, int write)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr, .iov_len = len };
	ssize_t n = write ? process_vm_writev(m->pid, &local, 1, &remote, 1, 0)
			  : process_vm_readv(m->pid, &local, 1, &remote, 1, 0);

	if (n == (ssize_t)len)
		return 0;
	if (write)
		n = pwrite(m->memfd, buf, len, (off_t)addr);
	else
		n = pread(m->memfd, buf, len, (off_t)addr);
	return n == (ssize_t)len ? 0 : -EFAULT;
}

/* Writes the emulation's stores in page p to the tracee. */
static void page_flush(struct stp_mm *m, struct stp_page *p)
{
	if (p->dhi <= p->dlo)
		return;
	if (vm_copy(m, p->addr + p->dlo, p->data + p->dlo, p->dhi - p->dlo, 1) < 0)
		xp_warn("step: an emulated store at %#llx could not be written (the mapping went "
			"away during the stop): the tracee may run on with different data",
			(unsigned long long)(p->addr + p->dlo));
	p->dlo = p->dhi = 0;
}

static void cache_flush(struct stp_mm *m)
{
	for (int i = 0; m->cache && i < STP_CACHE_PAGES; i++)
		if (m->cache[i].gen == m->cache_gen)
			page_flush(m, &m->cache[i]);
}

/* The cached copy of the page at `page`, read in whole on a miss (one pread for the many
 * stack and data accesses a stop's emulation makes there); NULL when unreadable. */
static struct stp_page *cache_page(struct stp_mm *m, uint64_t page)
{
	struct stp_page *p;

	if (!m->cache && !(m->cache = calloc(STP_CACHE_PAGES, sizeof(*m->cache))))
		return NULL;
	p = &m->cache[(page / STP_PAGE) % STP_CACHE_PAGES];
	if (p->gen == m->cache_gen) {
		if (p->addr == page)
			return p;
		page_flush(m, p);
	}
	p->gen = 0;
	if (vm_copy(m, page, p->data, sizeof(p->data), 0) < 0)
		return NULL;
	p->addr = page;
	p->gen = m->cache_gen;
	p->dlo = p->dhi = 0;
	return p;
}

static int mem_read_cb(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct stp_mm *m = ctx;
	uint8_t *out = buf;

	if (!m->caching)
		return mem_read(m, addr, buf, len);
	while (len) {
		uint64_t off = addr & (STP_PAGE - 1);
		size_t part = STP_PAGE - off < len ? STP_PAGE - off : len;
		struct stp_page *p = cache_page(m, addr - off);

		if (!p)
			return -EFAULT;
		memcpy(out, p->data + off, part);
		out += part;
		addr += part;
		len -= part;
	}
	return 0;
}

static int load_wranges(struct stp_mm *m)
{
	struct xp_maps it;
	struct xp_maps_line l;
	int rc = xp_maps_open(&it, m->pid);

	if (rc < 0)
		return rc;
	m->nwr = 0;
	while (xp_maps_next(&it, &l)) {
		if (l.perms[1] != 'w')
			continue;
		if (m->nwr == m->capwr) {
			size_t nc = m->capwr ? m->capwr * 2 : 64;
			struct stp_wrange *n = realloc(m->wr, nc * sizeof(*n));

			if (!n) {
				xp_maps_close(&it);
				return -ENOMEM;
			}
			m->wr = n;
			m->capwr = nc;
		}
		m->wr[m->nwr++] = (struct stp_wrange){ l.start, l.end };
	}
	xp_maps_close(&it);
	m->wr_valid = 1;
	m->wr_gen = m->cache_gen;
	return 0;
}

static bool in_wranges(const struct stp_mm *m, uint64_t addr)
{
	size_t lo = 0, hi = m->nwr;

	while (lo < hi) {	/* maps lists the mappings in address order */
		size_t mid = (lo + hi) / 2;

		if (addr < m->wr[mid].start)
			hi = mid;
		else if (addr >= m->wr[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

static bool writable(struct stp_mm *m, uint64_t addr)
{
	if (m->wr_valid && in_wranges(m, addr))
		return true;
	/* not there: maybe mapped since (a brk, another thread's mmap); once per stop */
	if (m->wr_valid && m->wr_gen == m->cache_gen)
		return false;
	return load_wranges(m) == 0 && in_wranges(m, addr);
}

/* Without the cache, straight to the tracee (our int3s go this way: /proc/PID/mem
 * writes code too).  With it, an emulated store: only into writable mappings, kept in
 * the page until the stop ends. */
static int mem_write(struct stp_mm *m, uint64_t addr, const void *buf, size_t len)
{
	ssize_t n = pwrite(m->memfd, buf, len, (off_t)addr);

	if (n != (ssize_t)len)
		return -EFAULT;
	for (uint64_t pg = addr & ~(uint64_t)(STP_PAGE - 1); m->caching && m->cache && pg < addr + len;
	     pg += STP_PAGE) {
		struct stp_page *p = &m->cache[(pg / STP_PAGE) % STP_CACHE_PAGES];
		uint64_t lo = addr > pg ? addr : pg;
		uint64_t hi = addr + len < pg + STP_PAGE ? addr + len : pg + STP_PAGE;

		if (p->gen == m->cache_gen && p->addr == pg)
			memcpy(p->data + (lo - pg), (const uint8_t *)buf + (lo - addr), hi - lo);
	}
	return 0;
}

static int mem_write_cb(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	struct stp_mm *m = ctx;
	struct stp_page *p[2];
	uint64_t off = addr & (STP_PAGE - 1);
	size_t first = STP_PAGE - off < len ? STP_PAGE - off : len;

	if (!m->caching)
		return mem_write(m, addr, buf, len);
	/* all or nothing: both pages (a store may straddle two) writable and cached */
	if (len > STP_PAGE || !writable(m, addr) || !(p[0] = cache_page(m, addr - off)))
		return -EFAULT;
	if (first < len && (!writable(m, addr + first) || !(p[1] = cache_page(m, addr + first))))
		return -EFAULT;
	/* adjacent pages never share a slot: the first one is still there */
	for (int i = 0; i < (first < len ? 2 : 1); i++) {
		uint16_t lo = (uint16_t)(i ? 0 : off), hi = (uint16_t)(i ? len - first : off + first);

		memcpy(p[i]->data + lo, (const uint8_t *)buf + (i ? first : 0), hi - lo);
		if (p[i]->dhi <= p[i]->dlo) {
			p[i]->dlo = lo;
			p[i]->dhi = hi;
		} else {
			p[i]->dlo = lo < p[i]->dlo ? lo : p[i]->dlo;
			p[i]->dhi = hi > p[i]->dhi ? hi : p[i]->dhi;
		}
	}
	return 0;
}

void stp_mm_cache(struct stp_mm *m, int on)
{
	if (!on && m->caching)
		cache_flush(m);
	m->caching = on;
	if (!on && !++m->cache_gen)
		m->cache_gen = 1;	/* gen 0 marks an empty slot */
}

void stp_mm_maps_changed(struct stp_mm *m)
{
	m->wr_valid = 0;
}

struct x86_isa_mem stp_mm_mem(struct stp_mm *m)
{
	return (struct x86_isa_mem){ .rd = mem_read_cb, .wr = mem_write_cb, .ctx = m };
}

/* Code as the program sees it: our int3 bytes replaced by the original ones, and
 * another tool's by the file's. */
static long code_read(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	struct stp_mm *m = ctx;
	ssize_t n;

	if (m->caching)
		cache_flush(m);	/* code the emulation just wrote (a JIT) */
	n = pread(m->memfd, buf, len, (off_t)ip);

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

		if (buf[i] == X86_ISA_BP_BYTE && map_get(&m->bp_at, ip + (uint64_t)i, &k) && m->bps[k].live)
			buf[i] = m->bps[k].orig;
	}
	stp_foreign_fix(m, ip, buf, (size_t)n);
	return n;
}

/* code_read for decoding a run: it ends before another tool's int3 (the tracer needs
 * a stop there, x86_dis_run then stops short of it) */
static long code_read_run(void *ctx, uint64_t ip, uint8_t *buf, size_t len)
{
	struct stp_mm *m = ctx;
	long n = code_read(ctx, ip, buf, len);

	for (long i = 0; i < n; i++)
		if (ip + (uint64_t)i > m->dec_start && stp_foreign_at(m, ip + (uint64_t)i))
			return i;
	return n;
}

int stp_code_insn(struct stp *s, struct stp_mm *m, uint64_t addr, struct x86_instr *in)
{
	uint8_t buf[X86_MAX_INSN];
	long got = code_read(m, addr, buf, sizeof(buf));

	if (got <= 0)
		return -EFAULT;
	return x86_dis_one(&s->dis, buf, (size_t)got, addr, in);
}

static int arm(struct stp *s, struct stp_mm *m, const struct x86_instr *in)
{
	struct stp_bp *b;
	uint8_t cc = X86_ISA_BP_BYTE;
	uint32_t idx;

	if (stp_foreign_at(m, in->ip))
		return 0;	/* never over another tool's: the caller finds no int3 of ours */
	if (map_get(&m->bp_at, in->ip, &idx)) {
		if (m->bps[idx].live)
			return 0;
		b = &m->bps[idx];
	} else {
		if (m->nbps == m->capbps) {
			size_t nc = m->capbps ? m->capbps * 2 : 1024;
			struct stp_bp *nb = realloc(m->bps, nc * sizeof(*nb));

			if (!nb)
				return -ENOMEM;
			m->bps = nb;
			m->capbps = nc;
		}
		idx = (uint32_t)m->nbps++;
		b = &m->bps[idx];
		if (xp_map_put(&m->bp_at, in->ip, idx) < 0)
			return -ENOMEM;
	}
	b->addr = in->ip;
	b->orig = in->bytes[0];
	b->br = in->br;
	b->len = in->size;
	b->entry = 0;
	b->pge_at = in->ip;
	b->has_uop = 0;
	if (mem_write(m, in->ip, &cc, 1) < 0) {
		b->live = 0;
		return -EFAULT;
	}
	b->live = 1;
	s->st.breakpoints++;
	return 0;
}

int stp_xol_at(const struct stp *s, uint64_t ip)
{
	for (unsigned i = 0; i < s->nxol; i++)
		if (ip >= s->xol[i].start && ip < s->xol[i].end)
			return 1;
	return 0;
}

int stp_in_range(const struct stp *s, uint64_t ip)
{
	if (stp_xol_at(s, ip))
		return 0;
	if (!s->nranges)
		return !s->o.filtered;
	for (unsigned i = 0; i < s->nranges; i++)
		if (ip >= s->ranges[i].start && ip < s->ranges[i].end)
			return 1;
	return 0;
}

struct stp_run *stp_run_get(struct stp *s, struct stp_mm *m, uint64_t ip)
{
	struct x86_run r;
	struct stp_run *ru;
	uint32_t idx;
	int err;

	if (map_get(&m->run_at, ip, &idx)) {
		if (!m->runs[idx].dead)
			return &m->runs[idx];
		ru = &m->runs[idx];
		goto decode;
	}
	if (m->nruns == m->capruns) {
		size_t nc = m->capruns ? m->capruns * 2 : 1024;
		struct stp_run *nr = realloc(m->runs, nc * sizeof(*nr));

		if (!nr)
			return NULL;
		m->runs = nr;
		m->capruns = nc;
	}
	ru = &m->runs[m->nruns];
	idx = (uint32_t)m->nruns;
	if (xp_map_put(&m->run_at, ip, idx) < 0)
		return NULL;
	m->nruns++;
decode:
	memset(ru, 0, sizeof(*ru));
	ru->start = ip;
	m->dec_start = ip;
	err = x86_dis_run(&s->dis, code_read_run, m, ip, RUN_MAX_INSNS, &r);
	ru->foreign = stp_foreign_at(m, ip);
	if (err == 0 && r.truncated && stp_foreign_at(m, r.term.ip + r.term.size)) {
		/* split before another tool's int3: a run of its own */
		ru->cls = X86_BR_NONE;
		ru->term_ip = r.term.ip;
		ru->target = r.term.ip + r.term.size;
	} else if (err < 0 || (r.truncated && r.truncated != -E2BIG)) {
		uint8_t b;

		ru->broken = 1;
		ru->cls = X86_BR_NONE;
		/* no code at all (a jump to an unmapped address): its fetch faults, no
		 * instruction runs there untraced */
		ru->nocode = code_read(m, ip, &b, 1) <= 0;
	} else if (r.truncated) {
		ru->cls = X86_BR_NONE;
		ru->term_ip = r.term.ip;
		ru->target = r.term.ip + r.term.size;
	} else {
		ru->cls = (uint8_t)r.term.br.cls;
		ru->term_ip = r.term.ip;
		ru->term_len = r.term.size;
		ru->target = r.term.br.target;
		int stop = x86_isa_bp_needed(r.term.br.cls);

		/* a direct jump/call out of the filter ranges is where tracing stops */
		if ((r.term.br.cls == X86_BR_JMP || r.term.br.cls == X86_BR_CALL) &&
		    !stp_in_range(s, r.term.br.target))
			stop = 1;
		if (stop && arm(s, m, &r.term) < 0)
			ru->broken = 1;
	}
	s->st.blocks++;
	return ru;
}

void stp_arm_entry(struct stp *s, struct stp_mm *m, uint64_t addr)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	struct stp_bp *b;
	struct x86_uop u;
	uint64_t pge = addr;
	int has_uop;
	long got;

	for (int skip = 0;; skip++) {
		if ((b = stp_bp_find(m, addr))) {
			b->entry = 1;
			b->pge_at = pge;
			return;
		}
		got = code_read(m, addr, buf, sizeof(buf));
		if (got <= 0 || x86_dis_one(&s->dis, buf, (size_t)got, addr, &in) < 0)
			return;
		if (!stp_foreign_at(m, addr))
			break;
		/* another tool's int3 at the entry: the stop is at the instruction after
		 * it, which only it leads to when it is no branch; tracing restarts at it */
		if (in.br.cls != X86_BR_NONE || skip == 8) {
			xp_warn("step: another tool's breakpoint at %#llx, on a branch where "
				"tracing restarts: the thread's returns there go untraced",
				(unsigned long long)addr);
			return;
		}
		addr += in.size;
	}
	has_uop = in.br.cls == X86_BR_NONE && x86_isa_translate(&s->dis, &u) == 0;
	if (in.br.cls != X86_BR_NONE && !x86_isa_emulable(in.br.cls))
		return;	/* a syscall or trap at an entry: the range starts after it */
	if (arm(s, m, &in) < 0 || !(b = stp_bp_find(m, addr)))
		return;
	b->entry = 1;
	b->pge_at = pge;
	b->has_uop = (uint8_t)has_uop;
	if (has_uop)
		b->uop = u;
}

void stp_arm_entries(struct stp *s, struct stp_mm *m)
{
	for (unsigned i = 0; i < s->nranges; i++)
		stp_arm_entry(s, m, s->ranges[i].start);
	s->ranges_dirty = 0;
	m->gen++;	/* chains may now end at a range boundary */
}

/* The run after `ru` on the way from it without a stop (a direct jump or call, a split
 * run), 0 when a stop (its armed branch) comes first. */
static uint64_t chain_next(const struct stp_run *ru)
{
	if (ru->foreign)
		return 0;	/* stepped: the way on is armed after the step */
	switch (ru->cls) {
	case X86_BR_JMP:
	case X86_BR_CALL:
	case X86_BR_NONE:
		return ru->target;
	default:
		return 0;
	}
}

/* Marks the runs of the chain from ip (armed in this generation) as leading into
 * undecodable code or not; returns where that code starts when `lost`. */
static uint64_t mark_chain(struct stp *s, struct stp_mm *m, uint64_t ip, int lost)
{
	for (int hops = 0; hops < 100000 && ip && stp_in_range(s, ip); hops++) {
		struct stp_run *ru = stp_run_get(s, m, ip);

		if (!ru)
			break;
		ru->lost = (uint8_t)lost;
		if (ru->broken)
			return ru->nocode ? 0 : ip;
		ip = chain_next(ru);
	}
	return 0;
}

uint64_t stp_ensure_armed(struct stp *s, struct stp_mm *m, uint64_t ip)
{
	uint64_t from = ip, at = 0, last = 0;
	int walked = 0;

	for (int hops = 0; hops < 100000 && ip; hops++) {
		struct stp_run *ru;

		if (!stp_in_range(s, ip))
			break;
		ru = stp_run_get(s, m, ip);
		if (!ru)
			break;
		if (ru->foreign) {
			/* the thread would run into another tool's int3 unseen: a stop at the
			 * instruction before it (a direct jump or call, or the last of a split
			 * run), from where the stop goes on to a single-step over it */
			if (last)
				stp_arm_entry(s, m, last);
			break;
		}
		last = ru->term_ip;
		if (ru->gen == m->gen) {
			/* the chain from here is armed already, and known to be lost or not */
			if (!walked)
				return ru->lost ? mark_chain(s, m, ip, 1) : 0;
			at = ru->lost ? mark_chain(s, m, ip, 1) : 0;
			break;
		}
		ru->gen = m->gen;
		walked = 1;
		if (ru->broken && ru->nocode)
			break;
		if (ru->broken) {
			if (ru->broken == 1) {	/* said once per path */
				xp_warn("step: cannot decode code at %#llx: tracing of this path is "
					"incomplete", (unsigned long long)ip);
				if (s->st.undecodable < sizeof(s->st.undecodable_at) / 8)
					s->st.undecodable_at[s->st.undecodable] = ip;
				s->st.undecodable++;
				ru->broken = 2;
			}
			at = ip;
			break;
		}
		ip = chain_next(ru);
	}
	mark_chain(s, m, from, at != 0);
	return at;
}

void stp_emu_prepare(struct stp *s, struct stp_mm *m, struct stp_run *ru)
{
	uint8_t buf[X86_MAX_INSN];
	struct x86_instr in;
	uint64_t ip = ru->start;
	size_t first = m->nuops;
	long got;

	ru->emu = STP_EMU_NO;
	ru->emu_end = STP_END_TERM;
	if (!x86_isa_emulable(ru->cls))
		return;	/* syscalls, traps, split runs: the tracee goes on by itself */
	while (ip < ru->term_ip) {
		ru->emu_end = STP_END_LONG;
		if (m->nuops - first >= EMU_MAX_BODY)
			goto fail;
		got = code_read(m, ip, buf, sizeof(buf));
		ru->emu_end = STP_END_BROKEN;
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
		if (x86_isa_translate(&s->dis, &m->uops[m->nuops]) < 0) {
			ru->emu_end = STP_END_INSN;
			ru->block_id = (uint16_t)x86_dis_last_id(&s->dis);
			goto fail;
		}
		m->nuops++;
		ip += in.size;
	}
	if (ip != ru->term_ip)
		goto fail;
	ru->uop0 = (uint32_t)first;
	ru->nuops = (uint16_t)(m->nuops - first);
	ru->emu = STP_EMU_YES;
	return;
fail:
	m->nuops = first;
}

/* Code in [addr, addr+len) may be gone or replaced (munmap, mprotect, mremap): its
 * breakpoints vanished with it, its runs are decoded again when reached, and every chain
 * is walked again since one may lead into the range. */
void stp_forget_code(struct stp_mm *m, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + len;

	for (size_t i = 0; i < m->nbps; i++)
		if (m->bps[i].addr >= addr && m->bps[i].addr < end)
			m->bps[i].live = 0;
	for (size_t i = 0; i < m->nruns; i++)
		if (m->runs[i].start >= addr && m->runs[i].start < end)
			m->runs[i].dead = 1;
	stp_foreign_forget(m, addr, len);
	m->gen++;
}

void stp_mm_disarm(struct stp_mm *m)
{
	for (size_t i = 0; i < m->nbps; i++) {
		struct stp_bp *b = &m->bps[i];

		if (b->live && mem_write(m, b->addr, &b->orig, 1) == 0)
			b->live = 0;
	}
	m->gen++;
}
