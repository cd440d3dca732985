/* --insn: the instruction stream.  What a line says about an instruction (address,
 * symbol+offset, bytes, disassembly, source line) depends only on the code, so it is
 * formatted once per address and cached; per executed instruction only the time and
 * thread are written.  That keeps the view close to the bare decoder's speed. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views/bb_views.h"
#include "arch/x86_64/x86_dis.h"

#define CACHE_BITS 16

struct line {
	uint64_t ip;
	uint64_t from, to;	/* times the line holds for (bb_env.span) */
	int32_t pid;
	uint8_t size;		/* 0: empty slot */
	uint8_t bytes[X86_MAX_INSN];
	uint16_t len;
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
};

#define BCACHE_BITS 14

struct bb_insn_view {
	struct bb_view_opts o;
	struct bline *blocks;
	struct x86_dis dis;
	struct line *cache;
	char buf[(1 << 16) + 64];	/* output staging, flushed with one write; the
					 * slack lets put_line copy whole 16-byte chunks */
	size_t pos;
	bool failed;		/* a write failed (EPIPE, ENOSPC) */
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
	for (size_t i = 0; i < n; i += 16)
		__builtin_memcpy(d + i, s + i, 16);
	v->pos += n;
}

static void put_u64(struct bb_insn_view *v, uint64_t x)
{
	char tmp[24];
	int i = sizeof(tmp);
	do {
		tmp[--i] = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	put(v, tmp + i, sizeof(tmp) - (size_t)i);
}

static void put_i32(struct bb_insn_view *v, int32_t x)
{
	if (x < 0) {
		put(v, "-1", 2);
		return;
	}
	put_u64(v, (uint64_t)x);
}

/* perf's time format: seconds with nanoseconds */
static void put_time(struct bb_insn_view *v, uint64_t t)
{
	if (v->o.raw_time) {
		put_u64(v, t);
		return;
	}
	char frac[10];
	put_u64(v, t / 1000000000ULL);
	uint64_t ns = t % 1000000000ULL;
	frac[0] = '.';
	for (int i = 9; i >= 1; i--, ns /= 10)
		frac[i] = (char)('0' + ns % 10);
	put(v, frac, 10);
}

struct bb_insn_view *bb_insn_view_new(const struct bb_view_opts *o)
{
	struct bb_insn_view *v = calloc(1, sizeof(*v));
	if (!v)
		return NULL;
	v->o = *o;
	v->cache = calloc(1u << CACHE_BITS, sizeof(*v->cache));
	v->blocks = calloc(1u << BCACHE_BITS, sizeof(*v->blocks));
	if (!v->cache || !v->blocks || x86_dis_init(&v->dis) < 0 ||
	    x86_dis_set_intel(&v->dis, o->intel) < 0) {
		free(v->cache);
		free(v->blocks);
		free(v);
		return NULL;
	}
	return v;
}

int bb_insn_view_free(struct bb_insn_view *v)
{
	if (!v)
		return 0;
	flush(v);
	int ret = v->failed ? -1 : 0;
	for (size_t i = 0; i < 1u << CACHE_BITS; i++)
		free(v->cache[i].text);
	for (size_t i = 0; i < 1u << BCACHE_BITS; i++) {
		free(v->blocks[i].text);
		free(v->blocks[i].off);
	}
	free(v->blocks);
	free(v->cache);
	x86_dis_fini(&v->dis);
	free(v);
	return ret;
}

static void json_escape(char *out, size_t cap, const char *s)
{
	size_t k = 0;
	for (; *s && k + 7 < cap; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			out[k++] = '\\';
			out[k++] = (char)ch;
		} else if (ch < 0x20) {
			k += (size_t)snprintf(out + k, cap - k, "\\u%04x", ch);
		} else {
			out[k++] = (char)ch;
		}
	}
	out[k] = '\0';
}

/* Formats the constant part of an instruction's line into `l`. */
static int format_line(struct bb_insn_view *v, struct line *l, const struct xev *ev,
		       uint64_t ip, const uint8_t *bytes, size_t n)
{
	const struct bb_env *env = v->o.env;
	struct x86_instr in;
	char sym[512], hex[3 * X86_MAX_INSN + 1], dis[256], src[600], text[2048];
	int ok = x86_dis_one(&v->dis, bytes, n, ip, &in) == 0;
	size_t size = ok ? in.size : 1;

	uint64_t start = 0, fsize = 0;
	const char *name = env && env->symbol ?
		env->symbol(env->ctx, ev->pid, ev->time, ip, &start, &fsize) : NULL;
	if (name)
		snprintf(sym, sizeof(sym), "%s+0x%lx", name, (unsigned long)(ip - start));
	else
		snprintf(sym, sizeof(sym), "[unknown]");
	for (size_t i = 0; i < size; i++)
		snprintf(hex + 3 * i, 4, "%02x ", bytes[i]);
	hex[size ? 3 * size - 1 : 0] = '\0';
	if (ok)
		snprintf(dis, sizeof(dis), "%s%s%s", in.mnemonic, in.op_str[0] ? " " : "", in.op_str);
	else
		snprintf(dis, sizeof(dis), "(bad)");
	src[0] = '\0';
	const char *file;
	int line;
	if (v->o.srcline && env && env->srcline &&
	    env->srcline(env->ctx, ev->pid, ev->time, ip, &file, &line))
		snprintf(src, sizeof(src), "%s:%d", file, line);

	int len;
	if (v->o.format == BB_JSONL) {
		char esym[1100], edis[600], esrc[1300];
		json_escape(esym, sizeof(esym), sym);
		json_escape(edis, sizeof(edis), dis);
		json_escape(esrc, sizeof(esrc), src);
		len = snprintf(text, sizeof(text), "{\"ip\":\"%#lx\",\"sym\":%s%s%s,\"bytes\":\"%s\",\"insn\":\"%s\"%s%s%s}\n",
			       (unsigned long)ip, name ? "\"" : "", name ? esym : "null", name ? "\"" : "",
			       hex, edis, src[0] ? ",\"srcline\":\"" : "", esrc, src[0] ? "\"" : "");
	} else {
		len = snprintf(text, sizeof(text), "%16lx  %-32s %-30s %s%s%s\n", (unsigned long)ip, sym,
			       hex, dis, src[0] ? "  " : "", src);
	}
	if (len < 0 || (size_t)len >= sizeof(text))
		len = (int)strlen(text);
	free(l->text);
	l->text = calloc(1, ((size_t)len + 15) & ~(size_t)15);
	if (!l->text) {
		l->size = 0;
		return -1;
	}
	memcpy(l->text, text, (size_t)len);
	l->len = (uint16_t)len;
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
	struct line *l = &v->cache[(ip ^ ip >> CACHE_BITS) & ((1u << CACHE_BITS) - 1)];
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

/* The start of a jsonl record: '{' then the event's time and tid when known. */
static inline void put_json_head(struct bb_insn_view *v, const struct xev *ev)
{
	put(v, "{", 1);
	if (ev->time) {
		put(v, "\"time\":", 7);
		put_u64(v, ev->time);
		put(v, ",", 1);
	}
	if (ev->tid >= 0) {
		put(v, "\"tid\":", 6);
		put_i32(v, ev->tid);
		put(v, ",", 1);
	}
	if (ev->cpu >= 0) {	/* per-cpu traces: events of several cpus interleave */
		put(v, "\"cpu\":", 6);
		put_i32(v, ev->cpu);
		put(v, ",", 1);
	}
}

/* The time ('-' when unknown), tid and (per-cpu traces) cpu columns of a text line. */
static inline void put_text_head(struct bb_insn_view *v, const struct xev *ev)
{
	if (ev->time)
		put_time(v, ev->time);
	else
		put(v, "-", 1);
	put(v, " ", 1);
	put_i32(v, ev->tid);
	if (ev->cpu >= 0) {	/* per-cpu traces, as perf script's [cpu] */
		char b[16];
		int n = snprintf(b, sizeof(b), " [%03d]", ev->cpu);
		put(v, b, (size_t)n);
	}
}

static inline __attribute__((always_inline)) int emit_insn(struct bb_insn_view *v, const struct xev *ev, uint64_t ip,
		     const uint8_t *bytes, size_t n, uint8_t *size_out)
{
	const struct line *l = cached_line(v, ev, ip, bytes, n);
	if (!l)
		return -1;
	*size_out = l->size;
	if (v->o.format == BB_JSONL) {
		/* the cached line starts with '{': time and tid go in after it */
		if (!ev->time && ev->tid < 0 && ev->cpu < 0) {
			put_line(v, l->text, l->len);
			return 0;
		}
		put_json_head(v, ev);
		put(v, l->text + 1, l->len - 1u);
		return 0;
	} else {
		put_text_head(v, ev);
		put(v, " ", 1);
	}
	put_line(v, l->text, l->len);
	return 0;
}

static void marker(struct bb_insn_view *v, const struct xev *ev, const char *what)
{
	char line[512];
	int n;
	if (v->o.format == BB_JSONL) {
		char reason[256] = "";
		if (ev->kind == XEV_GAP)
			json_escape(reason, sizeof(reason), ev->reason ? ev->reason : "unknown");
		put_json_head(v, ev);
		switch (ev->kind) {
		case XEV_GAP:
			n = snprintf(line, sizeof(line), "\"event\":\"gap\",\"reason\":\"%s\",\"offset\":%lu,\"lost\":%lu}\n",
				     reason, (unsigned long)ev->offset, (unsigned long)ev->lost);
			break;
		case XEV_INTERRUPT:
			n = snprintf(line, sizeof(line), "\"event\":\"interrupt\",\"from\":\"0x%lx\",\"to\":\"0x%lx\"}\n",
				     (unsigned long)ev->ip, (unsigned long)ev->addr);
			break;
		default:
			n = snprintf(line, sizeof(line), "\"event\":\"%s\",\"addr\":\"0x%lx\"}\n", what,
				     (unsigned long)(ev->kind == XEV_ENABLE ? ev->ip : ev->addr));
			break;
		}
	} else {
		put(v, "--- ", 4);
		put_text_head(v, ev);
		switch (ev->kind) {
		case XEV_GAP:
			n = snprintf(line, sizeof(line), " gap: %s (offset %lu, %lu bytes lost)\n",
				     ev->reason ? ev->reason : "unknown", (unsigned long)ev->offset,
				     (unsigned long)ev->lost);
			break;
		case XEV_INTERRUPT:
			n = snprintf(line, sizeof(line), " interrupt %#lx -> %#lx\n",
				     (unsigned long)ev->ip, (unsigned long)ev->addr);
			break;
		case XEV_ENABLE:
			n = snprintf(line, sizeof(line), " enabled at %#lx\n", (unsigned long)ev->ip);
			break;
		default:
			n = snprintf(line, sizeof(line), " disabled\n");
			break;
		}
	}
	if (n > 0)
		put(v, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
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
		return -1;
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
		if (len + l->len + 16 > cap) {
			cap = 2 * (len + l->len + 16);
			char *t = realloc(text, cap);
			if (!t) {
				free(text);
				free(off);
				return -1;
			}
			text = t;
		}
		off[n++] = (uint32_t)len;
		memcpy(text + len, l->text, l->len);
		len += l->len;
		ip += l->size;
	}
	if (!text && !(text = malloc(16))) {
		free(off);
		return -1;
	}
	memset(text + len, 0, 16 - (len & 15));	/* put_line reads whole chunks */
	off[n] = (uint32_t)len;
	free(b->text);
	free(b->off);
	*b = (struct bline){ ev->ip, ev->end, ev->pid, n, (uint32_t)len, off, text, bad, from, to };
	if (!n) {
		b->n = 0;	/* nothing cacheable: the slot stays empty */
		free(b->text);
		free(b->off);
		b->text = NULL;
		b->off = NULL;
	}
	return 0;
}

/* A run of several instructions (block decoders): its lines come from the block
 * cache, built from the code bytes the first time the block is seen. */
static int emit_block(struct bb_insn_view *v, const struct xev *ev)
{
	uint64_t h = ev->ip * 0x9e3779b97f4a7c15ULL ^ ev->end;
	struct bline *b = &v->blocks[(h >> 40) & ((1u << BCACHE_BITS) - 1)];
	if (!(b->n && b->start == ev->ip && b->end == ev->end && b->pid == ev->pid &&
	      b->from <= ev->time && ev->time < b->to)) {
		if (build_block(v, b, ev) < 0)
			return -1;
	}
	if (b->n) {
		if (v->o.format == BB_JSONL && !ev->time && ev->tid < 0) {
			put_line(v, b->text, b->len);
		} else {
			for (uint32_t i = 0; i < b->n; i++) {
				const char *t = b->text + b->off[i];
				size_t tl = b->off[i + 1] - b->off[i];
				if (v->o.format == BB_JSONL) {
					put_json_head(v, ev);
					put(v, t + 1, tl - 1);
				} else {
					put_text_head(v, ev);
					put(v, " ", 1);
					put(v, t, tl);
				}
			}
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

int bb_insn_view_event(void *ctx, const struct xev *ev)
{
	struct bb_insn_view *v = ctx;
	uint8_t size;

	switch (ev->kind) {
	case XEV_BLOCK:
		if (ev->bytes && ev->insns == 1)
			return emit_insn(v, ev, ev->ip, ev->bytes, ev->nbytes, &size);
		return emit_block(v, ev);
	case XEV_GAP:
		marker(v, ev, "gap");
		return 0;
	case XEV_ENABLE:
		marker(v, ev, "enabled");
		return 0;
	case XEV_DISABLE:
		marker(v, ev, "disabled");
		return 0;
	case XEV_INTERRUPT:
		marker(v, ev, "interrupt");
		return 0;
	default:
		return 0;
	}
}

void bb_json_str(FILE *out, const char *s)
{
	char buf[2048];
	if (!s) {
		fputs("null", out);
		return;
	}
	json_escape(buf, sizeof(buf), s);
	fprintf(out, "\"%s\"", buf);
}
