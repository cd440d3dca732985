/* --insn: the instruction stream.  What a line says about an instruction (address,
 * symbol+offset, bytes, disassembly, source line) depends only on the code, so it is
 * formatted once per address and cached; per executed instruction only the time and
 * thread are written.  That keeps the view close to the bare decoder's speed. */
#include <stdlib.h>
#include <string.h>

#include "bb.h"
#include "x86_dis.h"

#define CACHE_BITS 16

struct line {
	uint64_t ip;
	int32_t pid;
	uint8_t size;		/* 0: empty slot */
	uint8_t bytes[X86_MAX_INSN];
	uint16_t len;
	char *text;		/* constant part of the line */
};

struct bb_insn_view {
	struct bb_view_opts o;
	struct x86_dis dis;
	struct line *cache;
	char buf[1 << 16];	/* output staging, flushed with one fwrite */
	size_t pos;
};

static void flush(struct bb_insn_view *v)
{
	if (v->pos)
		fwrite(v->buf, 1, v->pos, v->o.out);
	v->pos = 0;
}

static void put(struct bb_insn_view *v, const char *s, size_t n)
{
	if (v->pos + n > sizeof(v->buf)) {
		flush(v);
		if (n > sizeof(v->buf)) {
			fwrite(s, 1, n, v->o.out);
			return;
		}
	}
	memcpy(v->buf + v->pos, s, n);
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
	if (!v->cache || x86_dis_init(&v->dis) < 0 || x86_dis_set_intel(&v->dis, o->intel) < 0) {
		free(v->cache);
		free(v);
		return NULL;
	}
	return v;
}

void bb_insn_view_free(struct bb_insn_view *v)
{
	if (!v)
		return;
	flush(v);
	fflush(v->o.out);
	for (size_t i = 0; i < 1u << CACHE_BITS; i++)
		free(v->cache[i].text);
	free(v->cache);
	x86_dis_fini(&v->dis);
	free(v);
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
		snprintf(sym, sizeof(sym), "%s+%#lx", name, (unsigned long)(ip - start));
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
		len = snprintf(text, sizeof(text), "\"ip\":\"%#lx\",\"sym\":%s%s%s,\"bytes\":\"%s\",\"insn\":\"%s\"%s%s%s}\n",
			       (unsigned long)ip, name ? "\"" : "", name ? esym : "null", name ? "\"" : "",
			       hex, edis, src[0] ? ",\"srcline\":\"" : "", esrc, src[0] ? "\"" : "");
	} else {
		len = snprintf(text, sizeof(text), "%16lx  %-32s %-30s %s%s%s\n", (unsigned long)ip, sym,
			       hex, dis, src[0] ? "  " : "", src);
	}
	if (len < 0 || (size_t)len >= sizeof(text))
		len = (int)strlen(text);
	free(l->text);
	l->text = malloc((size_t)len);
	if (!l->text) {
		l->size = 0;
		return -1;
	}
	memcpy(l->text, text, (size_t)len);
	l->len = (uint16_t)len;
	l->ip = ip;
	l->pid = ev->pid;
	l->size = (uint8_t)size;
	memcpy(l->bytes, bytes, size);
	return 0;
}

static int emit_insn(struct bb_insn_view *v, const struct xev *ev, uint64_t ip,
		     const uint8_t *bytes, size_t n, uint8_t *size_out)
{
	struct line *l = &v->cache[(ip ^ ip >> CACHE_BITS) & ((1u << CACHE_BITS) - 1)];
	if (l->size == 0 || l->ip != ip || l->pid != ev->pid ||
	    memcmp(l->bytes, bytes, l->size < n ? l->size : n) != 0 || l->size > n) {
		if (format_line(v, l, ev, ip, bytes, n) < 0)
			return -1;
	}
	*size_out = l->size;
	if (v->o.format == BB_JSONL) {
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
	} else {
		if (ev->time)
			put_time(v, ev->time);
		else
			put(v, "-", 1);
		put(v, " ", 1);
		put_i32(v, ev->tid);
		put(v, " ", 1);
	}
	put(v, l->text, l->len);
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
		switch (ev->kind) {
		case XEV_GAP:
			n = snprintf(line, sizeof(line), "\"event\":\"gap\",\"reason\":\"%s\",\"offset\":%lu,\"lost\":%lu}\n",
				     reason, (unsigned long)ev->offset, (unsigned long)ev->lost);
			break;
		case XEV_INTERRUPT:
			n = snprintf(line, sizeof(line), "\"event\":\"interrupt\",\"from\":\"%#lx\",\"to\":\"%#lx\"}\n",
				     (unsigned long)ev->ip, (unsigned long)ev->addr);
			break;
		default:
			n = snprintf(line, sizeof(line), "\"event\":\"%s\",\"addr\":\"%#lx\"}\n", what,
				     (unsigned long)(ev->kind == XEV_ENABLE ? ev->ip : ev->addr));
			break;
		}
	} else {
		put(v, "--- ", 4);
		if (ev->time)
			put_time(v, ev->time);
		else
			put(v, "-", 1);
		put(v, " ", 1);
		put_i32(v, ev->tid);
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

int bb_insn_view_event(void *ctx, const struct xev *ev)
{
	struct bb_insn_view *v = ctx;
	uint8_t size;

	switch (ev->kind) {
	case XEV_BLOCK:
		if (ev->bytes && ev->insns == 1)
			return emit_insn(v, ev, ev->ip, ev->bytes, ev->nbytes, &size);
		/* a run of several instructions: walk it through the code bytes */
		for (uint64_t ip = ev->ip, k = 0; k < ev->insns && ip <= ev->end; k++) {
			uint8_t buf[X86_MAX_INSN];
			size_t n = v->o.env && v->o.env->read ?
				v->o.env->read(v->o.env->ctx, ev->pid, ev->time, ip, buf, sizeof(buf)) : 0;
			if (n == 0) {
				struct xev gap = *ev;
				gap.kind = XEV_GAP;
				gap.reason = "no code bytes for this address";
				gap.lost = 0;
				marker(v, &gap, "gap");
				return 0;
			}
			if (emit_insn(v, ev, ip, buf, n, &size) < 0)
				return -1;
			ip += size;
		}
		return 0;
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
