/* --insn: the instruction stream.  What a line says about an instruction (address,
 * symbol+offset, bytes, disassembly, source line) depends only on the code, so it is
 * formatted once per address and cached; per executed instruction only the time and
 * thread are written.  That keeps the view close to the bare decoder's speed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views/bb_views.h"
#include "views/view.h"
#include "output/out.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"

#define CACHE_BITS 16

struct line {
	uint64_t ip;
	uint64_t from, to;	/* times the line holds for (bb_env.span) */
	int32_t pid;
	uint8_t size;		/* 0: empty slot */
	uint8_t bytes[X86_MAX_INSN];
	uint32_t len;
	char *text;		/* constant part of the line */
};

/* A block's lines, formatted once: with neither time nor thread to add (jsonl of a
 * raw trace) the whole block goes out in one copy. */
struct bline {
	uint64_t start, end;
	int32_t pid;
	uint32_t n;		/* instructions; 0: empty slot */
	uint32_t len;		/* bytes of text */
	uint32_t *off;		/* n + 1 offsets into text */
	char *text;		/* padded to 16 bytes */
	bool bad;		/* ran into unreadable or undecodable bytes */
	uint64_t from, to;	/* times all its lines hold for */
	/* The lines with a head before each (the head of generation hgen; NULL: none):
	 * a block that runs again under the same head goes out in one copy.  seen: the
	 * head generation it last ran under, so that only blocks that repeat under one
	 * head are spliced (a trace with a new time every block would pay twice). */
	char *htext;
	size_t hlen, hcap;
	uint64_t hgen, seen;
};

#define BCACHE_BITS 14

struct bb_insn_view {
	struct bb_view_opts o;
	unsigned fields;	/* what a line shows: o.fields, or the default line's */
	struct bline *blocks;
	struct x86_dis dis;
	struct line *cache;
	char buf[(1 << 18) + 64];	/* output staging, flushed with one write; the
					 * slack lets put_line copy whole 16-byte chunks */
	size_t pos;
	bool failed;		/* a write failed (EPIPE, ENOSPC) */
	bool *fault_done;	/* per o.faults entry: shown */
	uint64_t next_kill;	/* time of the earliest kill not shown yet, UINT64_MAX none */
	struct out_buf fmt, tmp;	/* lines and their parts, as they are formatted */
	/* The head of the last instruction's line: what its time, tid and cpu give it (jsonl:
	 * '{' and those keys, no ','; text: the columns before the address, with the space
	 * after them), which repeats over runs of instructions; 16 bytes of slack after it
	 * (put_line). */
	struct { uint64_t time; int32_t tid, cpu; bool valid; struct out_buf b; uint64_t gen; } head;
};

#define BUF_USE (sizeof(((struct bb_insn_view *)0)->buf) - 64)

/* Lines go out through our own buffer straight to the descriptor: going through
 * stdio would copy every byte twice. */
static void flush(struct bb_insn_view *v)
{
	const char *p = v->buf;
	size_t n = v->pos;
	fflush(v->o.out);
	while (n) {
		ssize_t w = write(fileno(v->o.out), p, n);
		if (w <= 0) {
			if (w < 0 && errno == EINTR)
				continue;
			v->failed = true;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	v->pos = 0;
}

static void put_slow(struct bb_insn_view *v, const char *s, size_t n)
{
	flush(v);
	while (n > BUF_USE) {
		memcpy(v->buf, s, BUF_USE);
		v->pos = BUF_USE;
		flush(v);
		s += BUF_USE;
		n -= BUF_USE;
	}
	memcpy(v->buf, s, n);
	v->pos = n;
}

static inline void put(struct bb_insn_view *v, const char *s, size_t n)
{
	if (__builtin_expect(v->pos + n > BUF_USE, 0)) {
		put_slow(v, s, n);
		return;
	}
	memcpy(v->buf + v->pos, s, n);
	v->pos += n;
}

/* A cached line: its storage is padded to 16 bytes, so it is copied in whole chunks
 * (the bytes past its end land in the buffer's slack and are overwritten next). */
static inline void put_line(struct bb_insn_view *v, const char *s, size_t n)
{
	if (__builtin_expect(v->pos + n > BUF_USE, 0)) {
		put_slow(v, s, n);
		return;
	}
	char *d = v->buf + v->pos;
	if (n > 256)	/* whole blocks: libc's copy is the faster */
		memcpy(d, s, n);
	else
		for (size_t i = 0; i < n; i += 16)
			__builtin_memcpy(d + i, s + i, 16);
	v->pos += n;
}

/* perf's time format: seconds with nanoseconds (raw traces: the TSC as it is) */
static void buf_time(struct out_buf *b, uint64_t t, bool raw)
{
	if (raw) {
		out_buf_u64(b, t);
		return;
	}
	char frac[10];
	out_buf_u64(b, t / 1000000000ULL);
	uint64_t ns = t % 1000000000ULL;
	frac[0] = '.';
	for (int i = 9; i >= 1; i--, ns /= 10)
		frac[i] = (char)('0' + ns % 10);
	out_buf_put(b, frac, 10);
}

static void buf_i32(struct out_buf *b, int32_t x)
{
	if (x < 0)
		out_buf_put(b, "-1", 2);
	else
		out_buf_u64(b, (uint64_t)x);
}

/* x in at least `width` columns (printf's %*d, %-*d with left, %0*d with zeros): heads
 * are formatted once per new time, which on a timed trace is every few blocks */
static void buf_int(struct out_buf *b, int64_t x, int width, bool left, bool zeros)
{
	char tmp[24];
	int i = sizeof(tmp);
	uint64_t u = x < 0 ? (uint64_t)-x : (uint64_t)x;
	do {
		tmp[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	int digits = (int)sizeof(tmp) - i, n = digits + (x < 0);
	if (zeros)
		while (digits++ < width - (x < 0) && i > 1)
			tmp[--i] = '0', n++;
	if (x < 0)
		tmp[--i] = '-';
	if (!left)
		for (; n < width; n++)
			out_buf_put(b, " ", 1);
	out_buf_put(b, tmp + i, sizeof(tmp) - (size_t)i);
	if (left)
		for (; n < width; n++)
			out_buf_put(b, " ", 1);
}

struct bb_insn_view *bb_insn_view_new(const struct bb_view_opts *o)
{
	struct bb_insn_view *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->o = *o;
	v->fields = o->fields ? o->fields : BB_FIELDS_DEFAULT | (o->srcline ? BB_FIELD(SRCLINE) : 0);
	v->cache = calloc(1u << CACHE_BITS, sizeof(*v->cache));
	v->blocks = calloc(1u << BCACHE_BITS, sizeof(*v->blocks));
	v->fault_done = calloc(o->nfaults ? o->nfaults : 1, sizeof(*v->fault_done));
	v->next_kill = UINT64_MAX;
	for (size_t i = 0; i < o->nfaults; i++)
		if (!o->faults[i].fault && o->faults[i].time < v->next_kill)
			v->next_kill = o->faults[i].time;
	if (!v->cache || !v->blocks || !v->fault_done || x86_dis_init(&v->dis) < 0 ||
	    x86_dis_set_intel(&v->dis, o->intel) < 0) {
		free(v->cache);
		free(v->blocks);
		free(v->fault_done);
		free(v);
		return NULL;
	}
	return v;
}

static void show_kills(struct bb_insn_view *v, uint64_t before);

int bb_insn_view_free(struct bb_insn_view *v)
{
	if (!v)
		return 0;
	show_kills(v, UINT64_MAX);
	flush(v);
	int ret = v->failed ? -1 : 0;
	for (size_t i = 0; i < 1u << CACHE_BITS; i++)
		free(v->cache[i].text);
	for (size_t i = 0; i < 1u << BCACHE_BITS; i++) {
		free(v->blocks[i].text);
		free(v->blocks[i].off);
		free(v->blocks[i].htext);
	}
	free(v->blocks);
	free(v->cache);
	free(v->fault_done);
	x86_dis_fini(&v->dis);
	out_buf_free(&v->fmt);
	out_buf_free(&v->tmp);
	out_buf_free(&v->head.b);
	free(v);
	return ret;
}

/* The jsonl keys of an instruction that depend only on its code, in a "{...}\n" of
 * their own: what the fields select of ip, sym, dso, insnlen, bytes, insn, srcline
 * (file NULL: none). */
static void json_line(struct bb_insn_view *v, struct out_buf *b, uint64_t ip, const char *name,
		      const char *sym, const char *hex, const char *dis, size_t size, const char *file,
		      int line, const struct xev *ev)
{
	const struct bb_env *env = v->o.env;
	unsigned f = v->fields;

	out_json_begin(b);
	if (f & BB_FIELD(IP))
		out_json_hex(b, "ip", ip);
	if (f & BB_FIELD(SYM))
		out_json_string(b, "sym", name ? sym : NULL);
	if (f & BB_FIELD(DSO))
		out_json_string(b, "dso", env && env->dso ? env->dso(env->ctx, ev->pid, ev->time, ip) : NULL);
	if (f & BB_FIELD(INSNLEN))
		out_json_u64(b, "insnlen", size);
	if (f & BB_FIELD(INSN))
		out_json_string(b, "bytes", hex);
	if (f & BB_FIELD(DISASM))
		out_json_string(b, "insn", dis);
	if (file) {
		struct out_buf *t = &v->tmp;
		t->len = 0;
		out_buf_printf(t, "%s:%d%c", file, line, 0);
		out_json_string(b, "srcline", t->p);
	}
	out_json_end(b);
}

/* The part of a perf script line that depends only on the code, as perf script
 * prints the fields (ip right-aligned in 16 columns, " sym+0xOFF", " (dso)",
 * srcline on a line of its own, " ilen: N", " insn: xx xx", "\t\tdisasm"). */
static void perf_line(struct bb_insn_view *v, struct out_buf *b, uint64_t ip, const char *name,
		      uint64_t off, const char *hex, const char *dis, size_t size, const char *file,
		      int line, const struct xev *ev)
{
	const struct bb_env *env = v->o.env;
	unsigned f = v->fields;

	if (f & BB_FIELD(IP))
		out_buf_printf(b, " %16lx", (unsigned long)ip);
	if (f & BB_FIELD(SYM)) {
		out_buf_printf(b, " %s", name ? name : "[unknown]");
		if (name && (f & BB_FIELD(SYMOFF)))
			out_buf_printf(b, "+0x%lx", (unsigned long)off);
	}
	if (f & BB_FIELD(DSO)) {
		const char *dso = env && env->dso ? env->dso(env->ctx, ev->pid, ev->time, ip) : NULL;
		out_buf_printf(b, " (%s)", dso ? dso : "[unknown]");
	}
	if (file) {	/* perf script names the file without its directory */
		const char *base = strrchr(file, '/');
		out_buf_printf(b, "\n  %s:%d", base ? base + 1 : file, line);
	}
	if (f & BB_FIELD(INSNLEN))
		out_buf_printf(b, " ilen: %zu", size);
	if (f & BB_FIELD(INSN))
		out_buf_printf(b, " insn: %s", hex);
	if (f & BB_FIELD(DISASM))
		out_buf_printf(b, "\t\t%s", dis);
	out_buf_put(b, "\n", 1);
}

/* Formats the constant part of an instruction's line into `l`. */
static int format_line(struct bb_insn_view *v, struct line *l, const struct xev *ev,
		       uint64_t ip, const uint8_t *bytes, size_t n)
{
	const struct bb_env *env = v->o.env;
	struct out_buf *b = &v->fmt, *sym = &v->tmp;
	struct x86_instr in;
	char hex[3 * X86_MAX_INSN + 1], dis[256];
	int ok = x86_dis_one(&v->dis, bytes, n, ip, &in) == 0;
	size_t size = ok ? in.size : 1;

	uint64_t start = 0, fsize = 0;
	const char *name = env && env->symbol ?
		env->symbol(env->ctx, ev->pid, ev->time, ip, &start, &fsize) : NULL;
	sym->len = 0;
	if (name && (v->fields & BB_FIELD(SYMOFF)))
		out_buf_printf(sym, "%s+0x%lx%c", name, (unsigned long)(ip - start), 0);
	else if (name)
		out_buf_printf(sym, "%s%c", name, 0);
	else
		out_buf_printf(sym, "[unknown]%c", 0);
	for (size_t i = 0; i < size; i++)
		snprintf(hex + 3 * i, 4, "%02x ", bytes[i]);
	hex[size ? 3 * size - 1 : 0] = '\0';
	if (ok)
		snprintf(dis, sizeof(dis), "%s%s%s", in.mnemonic, in.op_str[0] ? " " : "", in.op_str);
	else
		snprintf(dis, sizeof(dis), "(bad)");
	const char *file;
	int line;
	bool src = (v->fields & BB_FIELD(SRCLINE)) && env && env->srcline &&
		   env->srcline(env->ctx, ev->pid, ev->time, ip, &file, &line);

	b->len = 0;
	if (v->o.format == BB_JSONL)
		json_line(v, b, ip, name, sym->p, hex, dis, size, src ? file : NULL, line, ev);
	else if (v->o.fields)
		perf_line(v, b, ip, name, ip - start, hex, dis, size, src ? file : NULL, line, ev);
	else {
		out_buf_printf(b, "%16lx  %-32s %-30s %s", (unsigned long)ip, sym->p, hex, dis);
		if (src)
			out_buf_printf(b, "  %s:%d", file, line);
		out_buf_put(b, "\n", 1);
	}
	free(l->text);
	l->text = b->oom || sym->oom ? NULL : calloc(1, (b->len + 15) & ~(size_t)15);
	if (!l->text) {
		l->size = 0;
		return -ENOMEM;
	}
	memcpy(l->text, b->p, b->len);
	l->len = (uint32_t)b->len;
	l->ip = ip;
	l->pid = ev->pid;
	l->from = 0;
	l->to = UINT64_MAX;
	if (env && env->span)
		env->span(env->ctx, ev->pid, ev->time, ip, &l->from, &l->to);
	l->size = (uint8_t)size;
	memcpy(l->bytes, bytes, size);
	return 0;
}

/* The formatted line of the instruction at ip through the per-address cache;
 * NULL when it cannot be formatted. */
static inline __attribute__((always_inline)) const struct line *
cached_line(struct bb_insn_view *v, const struct xev *ev, uint64_t ip, const uint8_t *bytes,
	    size_t n)
{
	struct line *l = &v->cache[xp_hash_bits(ip, CACHE_BITS)];
	bool hit = l->size && l->ip == ip && l->pid == ev->pid && l->size <= n &&
		l->from <= ev->time && ev->time < l->to;
	/* same address, same bytes, a time the line holds for (JIT code may reuse
	 * addresses, under another name); instructions are a few bytes, a loop beats a
	 * memcmp call */
	for (size_t i = 0; hit && i < l->size; i++)
		hit = l->bytes[i] == bytes[i];
	if (!hit && format_line(v, l, ev, ip, bytes, n) < 0)
		return NULL;
	return l;
}

/* The keys a jsonl record starts with, of those `fields` selects: the event's time,
 * tid, pid and cpu when known, the thread's name. */
static void json_head(struct bb_insn_view *v, struct out_buf *b, const struct xev *ev, unsigned fields)
{
	const struct bb_env *env = v->o.env;

	out_json_begin(b);
	if ((fields & BB_FIELD(TIME)) && ev->time)
		out_json_u64(b, "time", ev->time);
	if ((fields & BB_FIELD(TID)) && ev->tid >= 0)
		out_json_u64(b, "tid", (uint64_t)ev->tid);
	if ((fields & BB_FIELD(PID)) && ev->pid >= 0)
		out_json_u64(b, "pid", (uint64_t)ev->pid);
	if ((fields & BB_FIELD(CPU)) && ev->cpu >= 0)	/* per-cpu traces: cpus interleave */
		out_json_u64(b, "cpu", (uint64_t)ev->cpu);
	if ((fields & BB_FIELD(COMM)) && env && env->comm && ev->tid >= 0)
		out_json_string(b, "comm", env->comm(env->ctx, ev->tid, ev->time));
}

/* The time ('-' when unknown), tid and (per-cpu traces) cpu columns of a text line. */
static void text_head(struct bb_insn_view *v, struct out_buf *b, const struct xev *ev)
{
	if (ev->time)
		buf_time(b, ev->time, v->o.raw_time);
	else
		out_buf_put(b, "-", 1);
	out_buf_put(b, " ", 1);
	buf_i32(b, ev->tid);
	if (ev->cpu >= 0) {	/* per-cpu traces, as perf script's [cpu] */
		out_buf_put(b, " [", 2);
		buf_int(b, ev->cpu, 3, false, true);
		out_buf_put(b, "]", 1);
	}
}

/* The columns before the address as perf script prints them (perf 6.1: comm in 16
 * columns, pid/tid in 5, [cpu], seconds.nanoseconds as with --ns); a cpu or time the
 * trace does not have is left out. */
static void perf_head(struct bb_insn_view *v, struct out_buf *b, const struct xev *ev)
{
	const struct bb_env *env = v->o.env;
	unsigned f = v->fields;

	if (f & BB_FIELD(COMM))
		out_buf_printf(b, "%16s ", env && env->comm ? env->comm(env->ctx, ev->tid, ev->time) : "");
	if ((f & BB_FIELD(PID)) && (f & BB_FIELD(TID))) {
		buf_int(b, ev->pid, 5, false, false);
		out_buf_put(b, "/", 1);
		buf_int(b, ev->tid, 5, true, false);
		out_buf_put(b, " ", 1);
	} else if (f & (BB_FIELD(PID) | BB_FIELD(TID))) {
		buf_int(b, f & BB_FIELD(PID) ? ev->pid : ev->tid, 5, false, false);
		out_buf_put(b, " ", 1);
	}
	if ((f & BB_FIELD(CPU)) && ev->cpu >= 0) {
		out_buf_put(b, "[", 1);
		buf_int(b, ev->cpu, 3, false, true);
		out_buf_put(b, "] ", 2);
	}
	if ((f & BB_FIELD(TIME)) && ev->time) {
		if (v->o.raw_time) {
			out_buf_u64(b, ev->time);
		} else {
			buf_int(b, (int64_t)(ev->time / 1000000000ULL), 5, false, false);
			out_buf_put(b, ".", 1);
			buf_int(b, (int64_t)(ev->time % 1000000000ULL), 9, false, true);
		}
		out_buf_put(b, ": ", 2);
	}
}

/* The head of an instruction's line for this event (v->head), formatted when its
 * time, tid or cpu differ from the last instruction's; false when out of memory. */
static inline bool head_for(struct bb_insn_view *v, const struct xev *ev)
{
	if (__builtin_expect(v->head.valid && v->head.time == ev->time && v->head.tid == ev->tid &&
			     v->head.cpu == ev->cpu, 1))
		return true;
	struct out_buf *b = &v->head.b;
	b->len = 0;
	if (v->o.format == BB_JSONL) {
		json_head(v, b, ev, v->fields);
	} else if (v->o.fields) {
		perf_head(v, b, ev);
	} else {
		text_head(v, b, ev);
		out_buf_put(b, " ", 1);
	}
	v->head.valid = out_buf_reserve(b, 16);	/* put_line's slack */
	v->head.gen++;
	v->head.time = ev->time;
	v->head.tid = ev->tid;
	v->head.cpu = ev->cpu;
	return v->head.valid;
}

/* The head (from head_for) has nothing in it: lines go out as cached. */
static inline bool head_empty(const struct bb_insn_view *v)
{
	return v->head.b.len == (v->o.format == BB_JSONL);
}

/* A jsonl line of an instruction run speculatively (in a transaction): the mark goes
 * before the cached line's "}\n". */
static void put_spec_json(struct bb_insn_view *v, const char *t, size_t n)
{
	const struct out_buf *h = &v->head.b;
	bool keys = n > 3;	/* "{}\n": the fields select nothing of the code */

	put(v, h->p, h->len);
	if (keys) {
		if (h->len > 1)
			put(v, ",", 1);
		put(v, t + 1, n - 3);
	}
	put(v, h->len > 1 || keys ? ",\"speculative\":true}\n" : "\"speculative\":true}\n",
	    h->len > 1 || keys ? 21 : 20);
}

/* A text line of an instruction run speculatively (in a transaction): '?' in the
 * address column's padding, as ptxed marks them (perf script's fields: no mark). */
static void put_spec_text(struct bb_insn_view *v, const char *t, size_t n)
{
	put(v, v->head.b.p, v->head.b.len - 1);	/* the default head ends in a ' ' */
	if (n && t[0] == ' ') {
		put(v, " ?", 2);
		put(v, t + 1, n - 1);
	} else {
		put(v, " ? ", 3);
		put(v, t, n);
	}
}

/* copies n bytes in 16-byte chunks: both sides have the slack (padded storage) */
static inline void copy16(char *d, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i += 16)
		__builtin_memcpy(d + i, s + i, 16);
}

/* The head (head_for: done) and the cached line (t, n) into d, which has room for
 * both and 16 bytes more; returns the bytes written.  In jsonl the line's '{' is
 * overwritten by the ',' between the head's keys and its own. */
static inline size_t line_into(const struct bb_insn_view *v, char *d, const char *t, size_t n)
{
	const struct out_buf *h = &v->head.b;

	if (v->o.format != BB_JSONL) {
		copy16(d, h->p, h->len);
		copy16(d + h->len, t, n);
		return h->len + n;
	}
	if (h->len <= 1) {	/* the head is "{": the line as cached */
		copy16(d, t, n);
		return n;
	}
	copy16(d, h->p, h->len);
	if (n == 3) {	/* "{}\n": only the head's keys */
		memcpy(d + h->len, "}\n", 2);
		return h->len + 2;
	}
	copy16(d + h->len, t, n);
	d[h->len] = ',';
	return h->len + n;
}

/* A cached line (t, n) after the event's head (head_for: done). */
static inline void put_insn_line(struct bb_insn_view *v, const struct xev *ev, const char *t, size_t n)
{
	const struct out_buf *h = &v->head.b;
	bool json = v->o.format == BB_JSONL;

	if (__builtin_expect(ev->flags & XEV_F_SPECULATIVE, 0)) {
		if (json)
			put_spec_json(v, t, n);
		else if (!v->o.fields)
			put_spec_text(v, t, n);
		else {
			put(v, h->p, h->len);
			put(v, t, n);
		}
		return;
	}
	if (v->pos + h->len + n > BUF_USE)
		flush(v);
	if (h->len + n > BUF_USE) {	/* longer than the buffer: piece by piece */
		put(v, h->p, h->len);
		if (json)
			put(v, h->len > 1 ? "," : "", h->len > 1);
		put(v, t + json, n - json);
		return;
	}
	v->pos += line_into(v, v->buf + v->pos, t, n);
}

/* A block's lines each after the head, formatted into b->htext for this head. */
static int splice_block(struct bb_insn_view *v, struct bline *b)
{
	size_t need = b->len + (size_t)b->n * (v->head.b.len + 16) + 16;

	if (need > b->hcap) {
		free(b->htext);
		b->hcap = 0;
		if (!(b->htext = malloc(need)))
			return -ENOMEM;
		b->hcap = need;
	}
	b->hlen = 0;
	for (uint32_t i = 0; i < b->n; i++)
		b->hlen += line_into(v, b->htext + b->hlen, b->text + b->off[i], b->off[i + 1] - b->off[i]);
	memset(b->htext + b->hlen, 0, 16 - (b->hlen & 15));	/* put_line reads whole chunks */
	b->hgen = v->head.gen;
	return 0;
}

static inline __attribute__((always_inline)) int emit_insn(struct bb_insn_view *v, const struct xev *ev, uint64_t ip,
		     const uint8_t *bytes, size_t n, uint8_t *size_out)
{
	const struct line *l = cached_line(v, ev, ip, bytes, n);
	if (!l || !head_for(v, ev))
		return -ENOMEM;
	*size_out = l->size;
	put_insn_line(v, ev, l->text, l->len);
	return 0;
}

static const char *const power_names[] = {
	[XEV_PWR_MWAIT] = "mwait", [XEV_PWR_PWRE] = "pwre", [XEV_PWR_EXSTOP] = "exstop",
	[XEV_PWR_PWRX] = "pwrx",
};

/* Power events as ptxed prints them ("mwait 7 1", "pwre c1.0", "pwrx int: c1 (c0)"). */
static void power_json(struct out_buf *b, const struct xev *ev)
{
	out_json_string(b, "event", power_names[ev->sub]);
	switch (ev->sub) {
	case XEV_PWR_MWAIT:
		out_json_u64(b, "hints", ev->arg0);
		out_json_u64(b, "ext", ev->arg1);
		break;
	case XEV_PWR_PWRE:
		out_json_u64(b, "state", ev->arg0);
		out_json_u64(b, "sub_state", ev->arg1);
		out_json_bool(b, "hw", ev->flags & XEV_F_HW);
		break;
	case XEV_PWR_PWRX:
		out_json_u64(b, "last", ev->arg0);
		out_json_u64(b, "deepest", ev->arg1);
		out_json_string(b, "wake", ev->reason);
		break;
	default:
		break;
	}
	if (ev->ip)
		out_json_hex(b, "ip", ev->ip);
}

static void power_text(struct out_buf *b, const struct xev *ev)
{
	out_buf_printf(b, " %s", power_names[ev->sub]);
	switch (ev->sub) {
	case XEV_PWR_MWAIT:
		out_buf_printf(b, " %#lx %#lx", (unsigned long)ev->arg0, (unsigned long)ev->arg1);
		break;
	case XEV_PWR_PWRE:
		out_buf_printf(b, " c%lu.%lu%s", (unsigned long)ev->arg0, (unsigned long)ev->arg1,
			       ev->flags & XEV_F_HW ? ", hw" : "");
		break;
	case XEV_PWR_PWRX:
		out_buf_printf(b, " %s: c%lu (c%lu)", ev->reason ? ev->reason : "wake",
			       (unsigned long)ev->arg0, (unsigned long)ev->arg1);
		break;
	default:
		break;
	}
	if (ev->ip)
		out_buf_printf(b, " at %#lx", (unsigned long)ev->ip);
	out_buf_put(b, "\n", 1);
}

static const char *const tsx_json[] = {
	[XEV_TSX_BEGIN] = "tsx_begin", [XEV_TSX_COMMIT] = "tsx_commit", [XEV_TSX_ABORT] = "tsx_abort",
};
static const char *const tsx_text[] = {
	[XEV_TSX_BEGIN] = "begin transaction", [XEV_TSX_COMMIT] = "committed", [XEV_TSX_ABORT] = "aborted",
};

static void marker(struct bb_insn_view *v, const struct xev *ev, const char *what)
{
	struct out_buf *b = &v->tmp;
	const char *reason = ev->reason ? ev->reason : "unknown";

	b->len = 0;
	if (v->o.format == BB_JSONL) {
		json_head(v, b, ev, BB_FIELDS_DEFAULT);
		switch (ev->kind) {
		case XEV_GAP:
			out_json_string(b, "event", "gap");
			out_json_string(b, "reason", reason);
			out_json_u64(b, "offset", ev->offset);
			out_json_u64(b, "lost", ev->lost);
			break;
		case XEV_INTERRUPT:
			out_json_string(b, "event", "interrupt");
			out_json_hex(b, "from", ev->ip);
			out_json_hex(b, "to", ev->addr);
			break;
		case XEV_END:
			out_json_string(b, "event", "end");
			break;
		case XEV_POWER:
			power_json(b, ev);
			break;
		case XEV_TSX:
			out_json_string(b, "event", tsx_json[ev->sub]);
			if (ev->ip)
				out_json_hex(b, "ip", ev->ip);
			break;
		default:
			out_json_string(b, "event", what);
			out_json_hex(b, "addr", ev->kind == XEV_ENABLE ? ev->ip : ev->addr);
			break;
		}
		out_json_end(b);
		put(v, b->p, b->len);
		return;
	}
	out_buf_put(b, "--- ", 4);
	text_head(v, b, ev);
	switch (ev->kind) {
	case XEV_GAP:
		out_buf_printf(b, " gap: %s (offset %lu, %lu bytes lost)\n", reason,
			       (unsigned long)ev->offset, (unsigned long)ev->lost);
		break;
	case XEV_INTERRUPT:
		out_buf_printf(b, " interrupt %#lx -> %#lx\n", (unsigned long)ev->ip, (unsigned long)ev->addr);
		break;
	case XEV_ENABLE:
		out_buf_printf(b, " enabled at %#lx\n", (unsigned long)ev->ip);
		break;
	case XEV_END:
		out_buf_printf(b, " end of trace\n");
		break;
	case XEV_POWER:
		power_text(b, ev);
		break;
	case XEV_TSX:
		out_buf_printf(b, " %s", tsx_text[ev->sub]);
		if (ev->ip)
			out_buf_printf(b, " at %#lx", (unsigned long)ev->ip);
		out_buf_put(b, "\n", 1);
		break;
	default:
		out_buf_printf(b, " %s\n", what);
		break;
	}
	put(v, b->p, b->len);
}

/* The line of the instruction at ip through the per-address cache; NULL when there
 * are no bytes or no memory. */
static const struct line *line_at(struct bb_insn_view *v, const struct xev *ev, uint64_t ip)
{
	uint8_t buf[X86_MAX_INSN];
	size_t n = v->o.env && v->o.env->read ?
		v->o.env->read(v->o.env->ctx, ev->pid, ev->time, ip, buf, sizeof(buf)) : 0;
	if (n == 0)
		return NULL;
	return cached_line(v, ev, ip, buf, n);
}

static int build_block(struct bb_insn_view *v, struct bline *b, const struct xev *ev)
{
	size_t cap = 0, len = 0;
	char *text = NULL;
	uint32_t *off = malloc((ev->insns + 1) * sizeof(*off));
	uint32_t n = 0;
	bool bad = false;
	uint64_t from = 0, to = UINT64_MAX;

	if (!off)
		return -ENOMEM;
	for (uint64_t ip = ev->ip; n < ev->insns && ip <= ev->end;) {
		const struct line *l = line_at(v, ev, ip);
		if (!l) {
			bad = true;
			break;
		}
		if (l->from > from)
			from = l->from;
		if (l->to < to)
			to = l->to;
		if (XP_GROW(text, cap, len + l->len + 16) < 0)
			goto fail;
		off[n++] = (uint32_t)len;
		memcpy(text + len, l->text, l->len);
		len += l->len;
		ip += l->size;
	}
	free(b->text);
	free(b->off);
	free(b->htext);
	if (!n) {
		/* nothing cacheable: the slot stays empty */
		free(text);
		free(off);
		*b = (struct bline){ .bad = bad };
		return 0;
	}
	memset(text + len, 0, 16 - (len & 15));	/* put_line reads whole chunks */
	off[n] = (uint32_t)len;
	*b = (struct bline){ .start = ev->ip, .end = ev->end, .pid = ev->pid, .n = n, .len = (uint32_t)len,
			     .off = off, .text = text, .bad = bad, .from = from, .to = to };
	return 0;
fail:
	free(text);
	free(off);
	return -ENOMEM;
}

/* A run of several instructions (block decoders): its lines come from the block
 * cache, built from the code bytes the first time the block is seen. */
static int emit_block(struct bb_insn_view *v, const struct xev *ev)
{
	struct bline *b = &v->blocks[xp_hash_bits(ev->ip ^ (ev->end - ev->ip) << 32, BCACHE_BITS)];
	if (!(b->n && b->start == ev->ip && b->end == ev->end && b->pid == ev->pid &&
	      b->from <= ev->time && ev->time < b->to)) {
		if (build_block(v, b, ev) < 0)
			return -ENOMEM;
	}
	if (b->n) {
		if (!head_for(v, ev))
			return -ENOMEM;
		if (__builtin_expect(ev->flags & XEV_F_SPECULATIVE, 0)) {
			for (uint32_t i = 0; i < b->n; i++)
				put_insn_line(v, ev, b->text + b->off[i], b->off[i + 1] - b->off[i]);
		} else if (head_empty(v)) {
			put_line(v, b->text, b->len);	/* the whole block in one copy */
		} else if (b->htext && b->hgen == v->head.gen) {
			put_line(v, b->htext, b->hlen);	/* the same, heads included */
		} else if (b->seen == v->head.gen) {	/* again under this head */
			if (splice_block(v, b) < 0)
				return -ENOMEM;
			put_line(v, b->htext, b->hlen);
		} else {
			for (uint32_t i = 0; i < b->n; i++)
				put_insn_line(v, ev, b->text + b->off[i], b->off[i + 1] - b->off[i]);
			b->seen = v->head.gen;
		}
	}
	if (!b->n || b->bad) {
		struct xev gap = *ev;
		gap.kind = XEV_GAP;
		gap.reason = "no code bytes for this address";
		gap.lost = 0;
		marker(v, &gap, "gap");
	}
	return 0;
}

/* Kills (signals that hit no instruction) up to `before`, in time order, as markers. */
static void show_kills(struct bb_insn_view *v, uint64_t before)
{
	struct out_buf *b = &v->tmp;

	while (v->next_kill < before) {
		const struct pd_fault *f = NULL;
		size_t k = 0;

		for (size_t i = 0; i < v->o.nfaults; i++)
			if (!v->fault_done[i] && !v->o.faults[i].fault &&
			    (!f || v->o.faults[i].time < f->time)) {
				f = &v->o.faults[i];
				k = i;
			}
		if (!f || f->time >= before) {
			v->next_kill = f ? f->time : UINT64_MAX;
			break;
		}
		v->fault_done[k] = true;
		struct xev ev = { .time = f->time, .tid = f->tid, .pid = f->pid, .cpu = -1 };
		b->len = 0;
		if (v->o.format == BB_JSONL) {
			json_head(v, b, &ev, BB_FIELDS_DEFAULT);
			out_json_string(b, "event", "killed");
			view_fault_json(b, f);
			out_json_end(b);
		} else {
			out_buf_put(b, "--- ", 4);
			text_head(v, b, &ev);
			out_buf_printf(b, " killed by ");
			view_fault_text(b, f);
			out_buf_put(b, "\n", 1);
		}
		put(v, b->p, b->len);
	}
}

/* An asynchronous disable where an instruction faulted: that instruction, marked, is
 * the thread's last line.  False when the disable is no fault of the trace's. */
static bool show_fault(struct bb_insn_view *v, const struct xev *ev)
{
	const struct pd_fault *f = NULL;
	struct out_buf *b = &v->tmp;
	const struct line *l;

	for (size_t i = 0; i < v->o.nfaults && !f; i++)
		if (!v->fault_done[i] && v->o.faults[i].fault && v->o.faults[i].tid == ev->tid &&
		    v->o.faults[i].ip == ev->ip) {
			f = &v->o.faults[i];
			v->fault_done[i] = true;
		}
	if (!f)
		return false;
	l = line_at(v, ev, ev->ip);
	if (l && !head_for(v, ev))
		l = NULL;
	b->len = 0;
	if (v->o.format == BB_JSONL) {
		if (l) {	/* the cached line: {"ip":...}\n, keys go in before its end */
			out_buf_put(b, v->head.b.p, v->head.b.len);
			if (l->len > 3) {
				if (b->len > 1)
					out_buf_put(b, ",", 1);
				out_buf_put(b, l->text + 1, l->len - 3);
			}
		} else {
			json_head(v, b, ev, BB_FIELDS_DEFAULT);
			out_json_string(b, "event", "fault");
			out_json_hex(b, "ip", ev->ip);
		}
		out_json_bool(b, "faulted", true);
		view_fault_json(b, f);
		out_json_end(b);
	} else {
		if (l) {
			out_buf_put(b, v->head.b.p, v->head.b.len);
			out_buf_put(b, l->text, l->len - 1);
			out_buf_printf(b, "  faulted: ");
		} else {
			out_buf_put(b, "--- ", 4);
			text_head(v, b, ev);
			out_buf_printf(b, " faulted at %#lx (no code bytes): ", (unsigned long)ev->ip);
		}
		view_fault_text(b, f);
		out_buf_put(b, "\n", 1);
	}
	put(v, b->p, b->len);
	return true;
}

int bb_insn_view_event(void *ctx, const struct xev *ev)
{
	struct bb_insn_view *v = ctx;
	uint8_t size;

	if (__builtin_expect(v->next_kill != UINT64_MAX, 0) && ev->time > v->next_kill)
		show_kills(v, ev->time);
	switch (ev->kind) {
	case XEV_BLOCK:
		if (ev->bytes && ev->insns == 1)
			return emit_insn(v, ev, ev->ip, ev->bytes, ev->nbytes, &size);
		return emit_block(v, ev);
	case XEV_GAP:
		marker(v, ev, "gap");
		return 0;
	default:
		break;
	}
	/* perf script's fields: instructions, and what went missing (gaps, faults, kills) */
	if (v->o.fields && !(ev->kind == XEV_DISABLE && v->o.nfaults && ev->ip))
		return 0;
	switch (ev->kind) {
	case XEV_ENABLE:
		marker(v, ev, "enabled");
		return 0;
	case XEV_DISABLE:
		if (!(v->o.nfaults && ev->ip && show_fault(v, ev)) && !v->o.fields)
			marker(v, ev, ev->reason ? ev->reason : "disabled");
		return 0;
	case XEV_INTERRUPT:
		marker(v, ev, "interrupt");
		return 0;
	case XEV_END:
	case XEV_POWER:
	case XEV_TSX:
		marker(v, ev, NULL);
		return 0;
	default:
		return 0;
	}
}
