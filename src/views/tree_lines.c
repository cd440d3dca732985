/* Source lines of a call tree's costs (tree_lines.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "views/tree_lines.h"
#include "session/sb_code.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

/* A function's cost at an address (end == ip) or over a block [ip, end]. */
struct at {
	uint32_t fn;
	int32_t pid;
	uint64_t time, ip, end;
	uint64_t w[DEC_MAX_METRICS];
};

struct site {
	uint32_t caller, callee;
	int32_t pid;
	uint64_t time, ip;
};

struct fnline {
	uint32_t fn;
	struct out_line l;
};

struct tl {
	struct dec_ctx *c;
	unsigned nm;
	struct at *at;
	size_t nat, capat;
	struct xp_map at_by_key;
	struct site *sites;
	size_t nsites, capsites;
	struct xp_map site_by_key;
	struct fnline *lines;	/* after tl_lines' first call: sorted by fn, file, line */
	size_t nlines;
	struct out_line *out;	/* the same lines, contiguous (what tl_lines hands out) */
	bool summed;
};

struct tl *tl_new(struct dec_ctx *c)
{
	struct tl *t = calloc(1, sizeof(*t));
	if (t) {
		t->c = c;
		t->nm = c->nmetrics;
	}
	return t;
}

void tl_free(struct tl *t)
{
	if (!t)
		return;
	free(t->at);
	xp_map_free(&t->at_by_key);
	free(t->sites);
	xp_map_free(&t->site_by_key);
	free(t->lines);
	free(t->out);
	free(t);
}

static int add(struct tl *t, uint32_t fn, int32_t pid, uint64_t time, uint64_t ip, uint64_t end, const uint64_t *w)
{
	uint64_t k = xp_hash_key3(fn, ip, end ^ (uint64_t)(uint32_t)pid << 40), i;
	for (; xp_map_get(&t->at_by_key, k, &i); k++)
		if (t->at[i].fn == fn && t->at[i].ip == ip && t->at[i].end == end && t->at[i].pid == pid)
			goto found;
	if (XP_GROW(t->at, t->capat, t->nat + 1) < 0 || xp_map_put(&t->at_by_key, k, t->nat) < 0)
		return -ENOMEM;
	i = t->nat++;
	t->at[i] = (struct at){ .fn = fn, .pid = pid, .time = time, .ip = ip, .end = end };
found:
	for (unsigned m = 0; m < t->nm; m++)
		t->at[i].w[m] += w[m];
	return 0;
}

int tl_sample(struct tl *t, uint32_t fn, int32_t pid, uint64_t time, uint64_t ip, const uint64_t *w)
{
	return add(t, fn, pid, time, ip, ip, w);
}

int tl_block(struct tl *t, uint32_t fn, int32_t pid, uint64_t time, uint64_t ip, uint64_t end, const uint64_t *w)
{
	return add(t, fn, pid, time, ip, end, w);
}

int tl_site(struct tl *t, uint32_t caller, uint32_t callee, int32_t pid, uint64_t time, uint64_t site)
{
	uint64_t k = xp_hash_key3(caller, callee, 0), i;
	for (; xp_map_get(&t->site_by_key, k, &i); k++)
		if (t->sites[i].caller == caller && t->sites[i].callee == callee)
			return 0;
	if (XP_GROW(t->sites, t->capsites, t->nsites + 1) < 0 || xp_map_put(&t->site_by_key, k, t->nsites) < 0)
		return -ENOMEM;
	t->sites[t->nsites++] = (struct site){ caller, callee, pid, time, site };
	return 0;
}

static bool srcline(struct tl *t, int32_t pid, uint64_t time, uint64_t ip, const char **file, int *line)
{
	const struct sb_map *m = sb_find_map(t->c->sb, pid, ip, time);
	if (m && sym_srcline(t->c->sym, m, ip, file, line) && *file && *line > 0)
		return true;
	return (!m || !m->dso || m->dso->anon) && t->c->jit && jit_srcline(t->c->jit, pid, time, ip, file, line) &&
	       *file && *line > 0;
}

static int by_fn_file_line(const void *a, const void *b)
{
	const struct fnline *x = a, *y = b;
	if (x->fn != y->fn)
		return x->fn < y->fn ? -1 : 1;
	int c = strcmp(x->l.file, y->l.file);
	if (c)
		return c;
	return (x->l.line > y->l.line) - (x->l.line < y->l.line);
}

/* w shared over n parts: part i of it (the remainder to the first parts). */
static uint64_t share(uint64_t w, uint64_t n, uint64_t i)
{
	return w / n + (i < w % n ? 1 : 0);
}

/* Every address's and every block instruction's cost onto its line. */
static int sum_lines(struct tl *t)
{
	struct sb_code *mem = sb_code_new(t->c->sb, t->c->sym, t->c->jit);
	struct x86_dis dis;
	struct xp_map idx = { 0 };	/* (fn, file, line) -> index in lines */
	uint64_t *ips = NULL;
	size_t cap = 0, capips = 0;
	int rc = 0;

	if (!mem)
		return -ENOMEM;
	if (x86_dis_init(&dis) < 0) {
		sb_code_free(mem);
		return -EIO;
	}
	for (size_t i = 0; i < t->nat && rc == 0; i++) {
		const struct at *a = &t->at[i];
		size_t n = 0;
		/* the block's instructions (an address is its own) */
		for (uint64_t ip = a->ip; ip <= a->end;) {
			uint8_t buf[X86_MAX_INSN];
			unsigned size;
			if (XP_GROW(ips, capips, n + 1) < 0) {
				rc = -ENOMEM;
				break;
			}
			ips[n++] = ip;
			if (ip == a->end)
				break;
			size_t got = sb_code_read(mem, a->pid, a->time, ip, buf, sizeof(buf));
			if (!got || !(size = x86_dis_len(&dis, buf, got, ip)))
				break;	/* unreadable: the rest stays on the instructions seen */
			ip += size;
		}
		for (size_t j = 0; j < n && rc == 0; j++) {
			const char *file;
			int line;
			if (!srcline(t, a->pid, a->time, ips[j], &file, &line))
				continue;	/* left to the function's line */
			uint64_t k = xp_hash_key3(a->fn, xp_hash_str(XP_HASH_STR_SEED, file), (uint64_t)line), li;
			for (; xp_map_get(&idx, k, &li); k++)
				if (t->lines[li].fn == a->fn && t->lines[li].l.line == (uint64_t)line &&
				    strcmp(t->lines[li].l.file, file) == 0)
					goto found;
			if (XP_GROW(t->lines, cap, t->nlines + 1) < 0 || xp_map_put(&idx, k, t->nlines) < 0) {
				rc = -ENOMEM;
				break;
			}
			li = t->nlines++;
			memset(&t->lines[li], 0, sizeof(t->lines[li]));
			t->lines[li].fn = a->fn;
			t->lines[li].l.file = file;
			t->lines[li].l.line = (uint64_t)line;
found:
			for (unsigned m = 0; m < t->nm; m++)
				t->lines[li].l.cost[m] += share(a->w[m], n, j);
		}
	}
	x86_dis_fini(&dis);
	sb_code_free(mem);
	xp_map_free(&idx);
	free(ips);
	if (t->nlines)	/* qsort takes no NULL array, even empty */
		qsort(t->lines, t->nlines, sizeof(*t->lines), by_fn_file_line);
	if (rc == 0 && !(t->out = malloc((t->nlines ? t->nlines : 1) * sizeof(*t->out))))
		rc = -ENOMEM;
	for (size_t i = 0; rc == 0 && i < t->nlines; i++)
		t->out[i] = t->lines[i].l;
	return rc;
}

int tl_lines(void *ctx, uint32_t fn, const struct out_line **v, size_t *n)
{
	struct tl *t = ctx;
	if (!t->summed) {
		t->summed = true;
		int rc = sum_lines(t);
		if (rc < 0)
			return rc;
	}
	size_t lo = 0, hi = t->nlines;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (t->lines[mid].fn < fn)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t e = lo;
	while (e < t->nlines && t->lines[e].fn == fn)
		e++;
	*n = e - lo;
	*v = *n ? &t->out[lo] : NULL;
	return 0;
}

bool tl_site_line(void *ctx, uint32_t caller, uint32_t callee, const char **file, int *line)
{
	struct tl *t = ctx;
	uint64_t k = xp_hash_key3(caller, callee, 0), i;
	for (; xp_map_get(&t->site_by_key, k, &i); k++)
		if (t->sites[i].caller == caller && t->sites[i].callee == callee)
			return srcline(t, t->sites[i].pid, t->sites[i].time, t->sites[i].ip, file, line);
	return false;
}
