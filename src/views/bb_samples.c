/* --annotate SYM and --blocks on traces of sampled addresses (no branch data): the
 * samples and period of each instruction address, as perf annotate counts them. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views/bb_views.h"
#include "views/bb_src.h"
#include "output/out.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"
#include "util/xp_hash.h"
#include "util/xp_map.h"

struct sip {
	int32_t pid;
	uint64_t ip, time;	/* time: the first sample's (symbol and code lookups) */
	uint64_t samples, period;
};

struct bb_samples {
	struct sip *v;
	size_t n, cap;
	struct xp_map by_key;	/* hash of (pid, ip) -> index in v */
	uint64_t samples, period;
};

struct bb_samples *bb_samples_new(void)
{
	return calloc(1, sizeof(struct bb_samples));
}

void bb_samples_free(struct bb_samples *s)
{
	if (!s)
		return;
	free(s->v);
	xp_map_free(&s->by_key);
	free(s);
}

int bb_samples_add(struct bb_samples *s, int32_t pid, uint64_t time, uint64_t ip, uint64_t period)
{
	uint64_t k = xp_hash_bits(ip ^ (uint64_t)(uint32_t)pid << 48, 64), i;

	s->samples++;
	s->period += period;
	for (; xp_map_get(&s->by_key, k, &i); k++)
		if (s->v[i].ip == ip && s->v[i].pid == pid) {
			s->v[i].samples++;
			s->v[i].period += period;
			return 0;
		}
	if (XP_GROW(s->v, s->cap, s->n + 1) < 0 || xp_map_put(&s->by_key, k, s->n) < 0)
		return -ENOMEM;
	s->v[s->n++] = (struct sip){ pid, ip, time, 1, period };
	return 0;
}

struct aline {
	struct x86_instr in;
	uint64_t samples, period;
};

static const struct out_col ann_text[] = {
	{ "Percent", OUT_FLOAT, 8, 0 }, { "Samples", OUT_INT, 8, 0 },
	{ "address", OUT_HEX, 18, OUT_LEFT | OUT_MARK }, { "instruction", OUT_STR, 0, 0 },
};
static const struct out_col ann_json[] = {
	{ "ip", OUT_HEX, 0, 0 }, { "offset", OUT_INT, 0, 0 }, { "samples", OUT_INT, 0, 0 },
	{ "period", OUT_INT, 0, 0 }, { "percent", OUT_FLOAT, 0, OUT_DEC(2) }, { "insn", OUT_STR, 0, 0 },
	{ "file", OUT_STR, 0, 0 }, { "line", OUT_INT, 0, 0 },
};
#define NCOLS(c) (sizeof(c) / sizeof((c)[0]))

/* Whether the copy of a function at `at` (where sample p fell) starts with the same
 * bytes as the one at `fstart`. */
static bool same_code(const struct bb_env *env, int32_t pid, uint64_t time, uint64_t fstart,
		      const struct sip *p, uint64_t at, uint64_t size)
{
	uint8_t x[64], y[64];
	size_t k = size < sizeof(x) ? (size_t)size : sizeof(x);

	return env->read(env->ctx, pid, time, fstart, x, k) == k &&
	       env->read(env->ctx, p->pid, p->time, at, y, k) == k && memcmp(x, y, k) == 0;
}

int bb_samples_annotate(struct bb_samples *s, const char *symname, const char *metric,
			const struct bb_view_opts *o)
{
	const struct bb_env *env = o->env;
	uint64_t fstart = 0, fsize = 0;
	int32_t pid = -1;
	uint64_t time = 0;
	bool found = false;

	if (!env || !env->symbol || !env->read)
		return -EINVAL;
	/* the function's code as the first sample in it found it; its other copies (the
	 * same binary in other processes) count at their offsets, as perf annotate
	 * counts per symbol */
	uint64_t *base = malloc((s->n ? s->n : 1) * sizeof(*base));
	if (!base)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		uint64_t st = 0, z = 0;
		const char *name = env->symbol(env->ctx, s->v[i].pid, s->v[i].time, s->v[i].ip, &st, &z);
		base[i] = UINT64_MAX;
		if (!name || strcmp(name, symname) != 0)
			continue;
		if (!found) {
			fstart = st;
			fsize = z;
			pid = s->v[i].pid;
			time = s->v[i].time;
			found = true;
		}
		if ((st == fstart && s->v[i].pid == pid) ||
		    (z == fsize && same_code(env, pid, time, fstart, &s->v[i], st, z)))
			base[i] = st;	/* else: same name, other code (another program's main) */
	}
	if (!found || !fsize) {
		free(base);
		return -ENOENT;
	}
	struct x86_dis dis;
	struct aline *l = NULL;
	size_t nl = 0, cap = 0;
	if (x86_dis_init(&dis) < 0 || x86_dis_set_intel(&dis, o->intel) < 0) {
		free(base);
		return -EINVAL;
	}
	for (uint64_t ip = fstart; ip < fstart + fsize;) {
		uint8_t buf[X86_MAX_INSN];
		size_t got = env->read(env->ctx, pid, time, ip, buf, sizeof(buf));
		if (XP_GROW(l, cap, nl + 1) < 0) {
			free(l);
			free(base);
			x86_dis_fini(&dis);
			return -ENOMEM;
		}
		memset(&l[nl], 0, sizeof(*l));
		if (!got || x86_dis_one(&dis, buf, got, ip, &l[nl].in) < 0)
			break;
		ip += l[nl++].in.size;
	}
	x86_dis_fini(&dis);
	uint64_t samples = 0, period = 0;
	for (size_t i = 0; i < s->n; i++) {
		if (base[i] == UINT64_MAX)
			continue;
		uint64_t ip = s->v[i].ip - base[i] + fstart;
		for (size_t j = 0; j < nl; j++)	/* a sample inside an instruction counts on it */
			if (ip >= l[j].in.ip && ip < l[j].in.ip + l[j].in.size) {
				l[j].samples += s->v[i].samples;
				l[j].period += s->v[i].period;
				samples += s->v[i].samples;
				period += s->v[i].period;
				break;
			}
	}
	free(base);
	uint64_t hot = 0;
	for (size_t j = 0; j < nl; j++)
		if (l[j].period > hot)
			hot = l[j].period;

	FILE *out = o->out;
	struct out_table tab;
	bool text = o->format == BB_TEXT;
	if (text) {
		fprintf(out, "# %s at %#" PRIx64 ": %" PRIu64 " samples, %s %" PRIu64
			" (percent: of the function's period, as perf annotate's local period)\n",
			symname, fstart, samples, metric, period);
		out_table_begin_style(&tab, out, OUT_TEXT, ann_text, NCOLS(ann_text),
				      &(struct out_style){ " ", isatty(fileno(out)) });
	} else {
		out_table_begin(&tab, out, OUT_JSONL, ann_json, NCOLS(ann_json));
	}
	struct bb_src src = { .last_line = -1 };
	for (size_t j = 0; j < nl; j++) {
		const struct aline *a = &l[j];
		const char *file = NULL;
		int line = 0;
		bool has = env->srcline && env->srcline(env->ctx, pid, time, a->in.ip, &file, &line) && file;
		double pct = period ? 100.0 * (double)a->period / (double)period : 0;
		char dis_s[200];
		snprintf(dis_s, sizeof(dis_s), "%s%s%s", a->in.mnemonic, a->in.op_str[0] ? " " : "", a->in.op_str);
		if (text && has)
			bb_src_print(&src, out, 36, file, line);
		if (text) {
			struct out_val v[4] = { { .d = pct }, { .u = a->samples }, { .u = a->in.ip }, { .s = dis_s } };
			out_row_marked(&tab, v, a->period && a->period == hot);
		} else {
			struct out_val v[8] = {
				{ .u = a->in.ip }, { .u = a->in.ip - fstart }, { .u = a->samples }, { .u = a->period },
				{ .d = pct }, { .s = dis_s }, { .s = file, .null = !has }, { .u = (uint64_t)line, .null = !has },
			};
			out_row(&tab, v, 0, NULL, 0);
		}
	}
	bb_src_free(&src);
	free(l);
	return 0;
}

/* ---- --blocks: the samples of each basic block ---- */

struct sblock {
	uint64_t start, end;	/* first and last instruction */
	uint64_t insns, samples, period;
	int32_t pid;
	uint64_t time;
	bool known;		/* found by disassembling its function (else: one address) */
};

static int by_fn_ip(const void *a, const void *b)
{
	const struct sip *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return (x->ip > y->ip) - (x->ip < y->ip);
}

static int by_samples(const void *a, const void *b)
{
	const struct sblock *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* The instructions of [start, end) and which of them start a basic block: the
 * entry, direct branch targets inside, and what follows a control transfer. */
static int fn_blocks(const struct bb_env *env, struct x86_dis *dis, int32_t pid, uint64_t time, uint64_t start,
		     uint64_t end, struct x86_instr **insns, bool **leader, size_t *n)
{
	size_t cap = 0, lcap = 0;
	*n = 0;
	for (uint64_t ip = start; ip < end;) {
		uint8_t buf[X86_MAX_INSN];
		size_t got = env->read(env->ctx, pid, time, ip, buf, sizeof(buf));
		if (XP_GROW(*insns, cap, *n + 1) < 0 || XP_GROW(*leader, lcap, *n + 1) < 0)
			return -ENOMEM;
		if (!got || x86_dis_one(dis, buf, got, ip, &(*insns)[*n]) < 0)
			break;
		(*leader)[*n] = *n == 0 || x86_branch_ends_run((*insns)[*n - 1].br.cls);
		ip += (*insns)[(*n)++].size;
	}
	for (size_t i = 0; i < *n; i++) {
		const struct x86_branch *b = &(*insns)[i].br;
		if ((b->cls != X86_BR_COND && b->cls != X86_BR_JMP) || b->target < start || b->target >= end)
			continue;
		size_t lo = 0, hi = *n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			if ((*insns)[mid].ip < b->target)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < *n && (*insns)[lo].ip == b->target)
			(*leader)[lo] = true;
	}
	return 0;
}

static const struct out_col blk_text[] = {
	{ "start", OUT_HEX, 18, OUT_LEFT }, { "end", OUT_HEX, 18, OUT_LEFT },
	{ "symbol", OUT_STR, 36, 0 }, { "samples", OUT_INT, 9, 0 }, { "percent", OUT_FLOAT, 8, 0 },
	{ "insns", OUT_INT, 6, 0 }, { "per_insn", OUT_FLOAT, 9, OUT_DEC(1) },
};
static const struct out_col blk_json[] = {
	{ "start", OUT_HEX, 0, 0 }, { "end", OUT_HEX, 0, 0 }, { "sym", OUT_STR, 0, 0 },
	{ "samples", OUT_INT, 0, 0 }, { "period", OUT_INT, 0, 0 }, { "percent", OUT_FLOAT, 0, OUT_DEC(2) },
	{ "insns", OUT_INT, 0, 0 }, { "per_insn", OUT_FLOAT, 0, OUT_DEC(2) },
};

int bb_samples_blocks(struct bb_samples *s, const char *metric, const struct bb_view_opts *o)
{
	const struct bb_env *env = o->env;
	struct sblock *blk = NULL;
	size_t nb = 0, cb = 0;
	struct x86_instr *insns = NULL;
	bool *leader = NULL;
	struct x86_dis dis;
	int rc = 0;

	if (!env || !env->symbol || !env->read || x86_dis_init(&dis) < 0)
		return -EINVAL;
	if (s->n)	/* (no samples: no array, and qsort's is declared non-null) */
		qsort(s->v, s->n, sizeof(*s->v), by_fn_ip);
	xp_map_free(&s->by_key);	/* the order changed: no more adds */
	for (size_t i = 0; i < s->n && rc == 0;) {
		const struct sip *p = &s->v[i];
		uint64_t fs = 0, fz = 0;
		size_t ni = 0;
		if (!env->symbol(env->ctx, p->pid, p->time, p->ip, &fs, &fz) || !fz ||
		    (rc = fn_blocks(env, &dis, p->pid, p->time, fs, fs + fz, &insns, &leader, &ni)) < 0 || !ni) {
			/* no function around it to disassemble: the address alone */
			if (rc == 0 && XP_GROW(blk, cb, nb + 1) < 0)
				rc = -ENOMEM;
			if (rc == 0)
				blk[nb++] = (struct sblock){ p->ip, p->ip, 1, p->samples, p->period, p->pid, p->time, false };
			i++;
			continue;
		}
		/* every sample of this function (sorted by address) into its block */
		size_t k = 0, cur = SIZE_MAX;
		for (; i < s->n && s->v[i].pid == p->pid && s->v[i].ip >= fs && s->v[i].ip < fs + fz && rc == 0; i++) {
			const struct sip *q = &s->v[i];
			while (k + 1 < ni && insns[k + 1].ip <= q->ip)
				k++;
			size_t b = k;
			while (b > 0 && !leader[b])
				b--;
			if (cur == SIZE_MAX || blk[cur].start != insns[b].ip) {
				size_t e = b + 1;
				while (e < ni && !leader[e])
					e++;
				if (XP_GROW(blk, cb, nb + 1) < 0) {
					rc = -ENOMEM;
					break;
				}
				cur = nb++;
				blk[cur] = (struct sblock){ insns[b].ip, insns[e - 1].ip, e - b, 0, 0, q->pid, q->time, true };
			}
			blk[cur].samples += q->samples;
			blk[cur].period += q->period;
		}
	}
	x86_dis_fini(&dis);
	free(insns);
	free(leader);
	if (rc < 0) {
		free(blk);
		return rc;
	}
	if (nb)
		qsort(blk, nb, sizeof(*blk), by_samples);

	FILE *out = o->out;
	struct out_table tab;
	struct out_buf sym;
	if (o->format == BB_TEXT) {
		fprintf(out, "# %zu blocks with samples, %" PRIu64 " samples, %s %" PRIu64
			"; blocks found by disassembling the sampled functions; sorted by samples\n",
			nb, s->samples, metric, s->period);
		out_table_begin_style(&tab, out, OUT_TEXT, blk_text, NCOLS(blk_text),
				      &(struct out_style){ " ", false });
	} else {
		out_table_begin(&tab, out, OUT_JSONL, blk_json, NCOLS(blk_json));
	}
	out_buf_init(&sym, NULL, 0);
	for (size_t i = 0; i < nb; i++) {
		const struct sblock *b = &blk[i];
		uint64_t fs = 0, fz = 0;
		const char *name = env->symbol(env->ctx, b->pid, b->time, b->start, &fs, &fz);
		sym.len = 0;
		if (name)
			out_buf_printf(&sym, "%s+0x%" PRIx64 "%c", name, b->start - fs, 0);
		const char *sn = name && !sym.oom ? sym.p : NULL;
		double pct = s->period ? 100.0 * (double)b->period / (double)s->period : 0;
		double per = (double)b->samples / (double)b->insns;
		if (o->format == BB_TEXT) {
			struct out_val v[7] = { { .u = b->start }, { .u = b->end }, { .s = sn ? sn : "[unknown]" },
						{ .u = b->samples }, { .d = pct }, { .u = b->insns }, { .d = per } };
			out_row(&tab, v, 0, NULL, 0);
		} else {
			struct out_val v[8] = { { .u = b->start }, { .u = b->end }, { .s = sn, .null = !sn },
						{ .u = b->samples }, { .u = b->period }, { .d = pct },
						{ .u = b->insns }, { .d = per } };
			out_row(&tab, v, 0, NULL, 0);
		}
	}
	out_buf_free(&sym);
	free(blk);
	return 0;
}

/* ---- --blocks --format callgrind: the samples of each instruction ---- */

int bb_samples_callgrind(struct bb_samples *s, const char *metric, FILE *out, const char *cmd,
			 const struct bb_env *env)
{
	char ev[48];
	size_t k = 0;
	/* callgrind event names: letters, digits, '_' */
	for (const char *p = metric; *p && k + 1 < sizeof(ev); p++)
		ev[k++] = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ? *p : '_';
	ev[k] = 0;
	const char *const events[] = { "samples", ev };
	struct out_cg w;
	const char *prev_name = NULL, *prev_mod = NULL, *cur_file = NULL;
	int32_t prev_pid = 0;

	if (s->n)
		qsort(s->v, s->n, sizeof(*s->v), by_fn_ip);
	xp_map_free(&s->by_key);	/* the order changed: no more adds */
	out_cg_begin(&w, out, OUT_CG_INSTR | OUT_CG_LINE, cmd, NULL, events, 2, NULL);
	for (size_t i = 0; i < s->n; i++) {
		const struct sip *p = &s->v[i];
		const char *mod = NULL, *file = NULL;
		const char *name = env && env->fn_name ? env->fn_name(env->ctx, p->pid, p->time, p->ip, &mod) : NULL;
		uint64_t st, sz;
		char hex[24];
		int line = 0;
		if (!name && env && env->symbol)
			name = env->symbol(env->ctx, p->pid, p->time, p->ip, &st, &sz);
		if (!name) {
			snprintf(hex, sizeof(hex), "%#" PRIx64, p->ip);
			name = hex;
		}
		if (!env || !env->srcline || !env->srcline(env->ctx, p->pid, p->time, p->ip, &file, &line) || !file ||
		    line < 0)
			file = "???", line = 0;
		/* the object file and the address in it, as objdump shows them (KCachegrind
		 * disassembles ob= there); the module's name and ip without a file */
		const char *path = NULL;
		uint64_t at;
		if (!env || !env->obj || !env->obj(env->ctx, p->pid, p->time, p->ip, &path, &at))
			path = NULL, at = p->ip;
		if (!prev_name || p->pid != prev_pid || strcmp(name, prev_name) != 0 ||
		    (mod != prev_mod && (!mod || !prev_mod || strcmp(mod, prev_mod) != 0))) {
			out_cg_fn(&w, &(struct out_cg_fn){ { 0, path ? path : mod ? mod : "[unknown]" }, { 0, file },
							   { 0, name } });
			cur_file = file;
		} else if (line && strcmp(file, cur_file) != 0) {
			out_cg_name(&w, "fi", &(struct out_cg_name){ 0, file });
			cur_file = file;
		}
		/* names from the environment stay valid; a formatted address does not */
		prev_name = name == hex ? "" : name;
		prev_mod = mod;
		prev_pid = p->pid;
		out_cg_cost(&w, &(struct out_cg_pos){ at, (uint64_t)line }, (uint64_t[]){ p->samples, p->period });
	}
	out_cg_end(&w, (uint64_t[]){ s->samples, s->period });
	return ferror(out) ? -EIO : 0;
}
