/* --blocks and --annotate SYM: reports over the block tallies. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views/bb_views.h"
#include "views/bb_src.h"
#include "output/out.h"
#include "arch/x86_64/x86_dis.h"
#include "util/xp_grow.h"

/* "symbol+0xoff" of the block's start in `buf`, NULL when no symbol holds it. */
static const char *block_sym(const struct bb_env *env, const struct bb_block *b, struct out_buf *buf)
{
	uint64_t start = 0, size = 0;
	const char *name = env && env->symbol ?
		env->symbol(env->ctx, b->pid, b->time, b->start, &start, &size) : NULL;
	if (!name)
		return NULL;
	buf->len = 0;
	out_buf_printf(buf, "%s+0x%lx%c", name, (unsigned long)(b->start - start), 0);
	return buf->oom ? NULL : buf->p;
}

/* The more frequent direction of a conditional branch ("mainline"). */
static const char *mainline(const struct bb_block *b)
{
	if (!b->cond)
		return NULL;
	return b->taken >= b->not_taken ? "taken" : "not_taken";
}

struct lenctx {
	const struct bb_env *env;
	struct x86_dis dis;
};

static size_t insn_len(void *ctx, const struct bb_block *b, uint64_t ip)
{
	struct lenctx *l = ctx;
	uint8_t buf[X86_MAX_INSN];
	size_t n = l->env->read(l->env->ctx, b->pid, b->time, ip, buf, sizeof(buf));
	return n ? x86_dis_len(&l->dis, buf, n, ip) : 0;
}

/* --blocks columns: text like the tables of other tools, jsonl with numbers apart
 * from their marks (cycles_approx for '~', mainline for '*') */
static const struct out_col blocks_text[] = {
	{ "start", OUT_HEX, 18, OUT_LEFT }, { "end", OUT_HEX, 18, OUT_LEFT },
	{ "symbol", OUT_STR, 36, 0 }, { "count", OUT_INT, 10, 0 }, { "insns", OUT_INT, 6, 0 },
	{ "cycles", OUT_STR, 12, OUT_RIGHT }, { "IPC", OUT_FLOAT, 6, 0 },
	{ "taken", OUT_STR, 10, OUT_RIGHT }, { "not_taken", OUT_STR, 10, OUT_RIGHT },
	{ "aborted", OUT_INT, 10, 0 },	/* only when some code ran in aborted transactions */
};
static const struct out_col blocks_json[] = {
	{ "start", OUT_HEX, 0, 0 }, { "end", OUT_HEX, 0, 0 }, { "sym", OUT_STR, 0, 0 },
	{ "count", OUT_INT, 0, 0 }, { "insns", OUT_INT, 0, 0 }, { "cycles", OUT_INT, 0, 0 },
	{ "ipc", OUT_FLOAT, 0, OUT_DEC(3) }, { "cycles_approx", OUT_BOOL, 0, 0 },
	{ "taken", OUT_INT, 0, 0 }, { "not_taken", OUT_INT, 0, 0 }, { "mainline", OUT_STR, 0, 0 },
	{ "aborted", OUT_INT, 0, 0 },
};
#define NCOLS(c) (sizeof(c) / sizeof((c)[0]))

static void block_row(struct out_table *tab, const struct bb_block *b, const char *sym, bool aborted)
{
	bool has_cyc = b->cyc_execs > 0;
	double ipc = has_cyc && b->cycles ? (double)(b->insns * b->cyc_execs) / (double)b->cycles : 0;
	const char *ml = mainline(b);
	struct out_val v[NCOLS(blocks_json)];

	if (tab->fmt == OUT_JSONL) {
		struct out_val none = { .null = true };
		v[0] = (struct out_val){ .u = b->start };
		v[1] = (struct out_val){ .u = b->end };
		v[2] = sym ? (struct out_val){ .s = sym } : none;
		v[3] = (struct out_val){ .u = b->count };
		v[4] = (struct out_val){ .u = b->insns };
		v[5] = has_cyc ? (struct out_val){ .u = b->cycles } : none;
		v[6] = has_cyc ? (struct out_val){ .d = ipc } : none;
		v[7] = (struct out_val){ .omit = !has_cyc, .b = b->approx };
		v[8] = ml ? (struct out_val){ .u = b->taken } : none;
		v[9] = ml ? (struct out_val){ .u = b->not_taken } : none;
		v[10] = ml ? (struct out_val){ .s = ml } : none;
		v[11] = (struct out_val){ .omit = !aborted, .u = b->aborted };
		out_row(tab, v, 0, NULL, 0);
		return;
	}
	char cbuf[32], tbuf[24], nbuf[24];
	if (has_cyc)
		snprintf(cbuf, sizeof(cbuf), "%lu%s", (unsigned long)b->cycles, b->approx ? "~" : "");
	if (ml) {
		snprintf(tbuf, sizeof(tbuf), "%lu%s", (unsigned long)b->taken,
			 strcmp(ml, "taken") == 0 ? "*" : "");
		snprintf(nbuf, sizeof(nbuf), "%lu%s", (unsigned long)b->not_taken,
			 strcmp(ml, "not_taken") == 0 ? "*" : "");
	}
	v[0] = (struct out_val){ .u = b->start };
	v[1] = (struct out_val){ .u = b->end };
	v[2] = (struct out_val){ .s = sym ? sym : "[unknown]" };
	v[3] = (struct out_val){ .u = b->count };
	v[4] = (struct out_val){ .u = b->insns };
	v[5] = (struct out_val){ .null = !has_cyc, .s = cbuf };
	v[6] = (struct out_val){ .null = !has_cyc, .d = ipc };
	v[7] = (struct out_val){ .null = !ml, .s = tbuf };
	v[8] = (struct out_val){ .null = !ml, .s = nbuf };
	v[9] = (struct out_val){ .u = b->aborted };
	out_row(tab, v, 0, NULL, 0);
}

int bb_blocks_report(struct bb_tally *t0, const struct bb_view_opts *o)
{
	size_t n;
	struct bb_tally *t = t0, *basic = NULL;
	struct lenctx lc = { .env = o->env };
	/* libipt blocks start where tracing resumed too: report basic blocks proper */
	if (o->env && o->env->read && x86_dis_init(&lc.dis) == 0) {
		basic = bb_tally_basic(t0, insn_len, &lc);
		x86_dis_fini(&lc.dis);
		if (basic)
			t = basic;
	}
	struct bb_block **v = bb_tally_sorted(t, &n);
	bool cyc = bb_tally_has_cycles(t);
	FILE *out = o->out;
	struct out_table tab;
	struct out_buf sym;

	if (!v) {
		bb_tally_free(basic);
		return -ENOMEM;
	}
	/* code of aborted transactions ran but was undone: counted apart (the column
	 * only when there is some) */
	uint64_t aborted = bb_tally_aborted(t);
	if (o->format == BB_TEXT) {
		fprintf(out, "# %zu blocks, %lu instructions, %lu gaps", n,
			(unsigned long)bb_tally_insns(t), (unsigned long)bb_tally_gaps(t));
		if (aborted)
			fprintf(out, ", %lu instructions in aborted transactions", (unsigned long)aborted);
		fprintf(out, "; sorted by %s\n", cyc ? "cycles" : "count");
		fprintf(out, "# mainline direction of a conditional branch marked with *\n");
		out_table_begin_style(&tab, out, OUT_TEXT, blocks_text, NCOLS(blocks_text) - !aborted,
				      &(struct out_style){ " ", false });
	} else {
		out_table_begin(&tab, out, OUT_JSONL, blocks_json, NCOLS(blocks_json));
	}
	out_buf_init(&sym, NULL, 0);
	for (size_t i = 0; i < n; i++)
		block_row(&tab, v[i], block_sym(o->env, v[i], &sym), aborted);
	out_buf_free(&sym);
	bb_tally_free(basic);
	return 0;
}

struct aline {
	struct x86_instr in;
	uint64_t count;
	double cycles;
	uint64_t taken, not_taken;	/* as the conditional branch ending blocks */
	bool cond;
	bool approx;
};

static int ip_index(const struct aline *l, size_t n, uint64_t ip)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (l[mid].in.ip < ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && l[lo].in.ip == ip ? (int)lo : -1;
}

/* Whether the copy of a function at `s` (block b's) starts with the same bytes as the
 * one at `fstart`. */
static bool same_code(const struct bb_env *env, int32_t pid, uint64_t time, uint64_t fstart,
		      const struct bb_block *b, uint64_t s, uint64_t size)
{
	uint8_t x[64], y[64];
	size_t k = size < sizeof(x) ? (size_t)size : sizeof(x);

	return env->read(env->ctx, pid, time, fstart, x, k) == k &&
	       env->read(env->ctx, b->pid, b->time, s, y, k) == k && memcmp(x, y, k) == 0;
}

/* --annotate columns; the hottest lines are marked ('>', red on a terminal) */
static const struct out_col annotate_text[] = {
	{ "count", OUT_INT, 8, 0 }, { "cycles", OUT_STR, 10, OUT_RIGHT },
	{ "address", OUT_HEX, 18, OUT_LEFT | OUT_MARK }, { "instruction", OUT_STR, 34, 0 },
	{ "taken", OUT_STR, 0, 0 },
};
static const struct out_col annotate_json[] = {
	{ "ip", OUT_HEX, 0, 0 }, { "offset", OUT_INT, 0, 0 }, { "count", OUT_INT, 0, 0 },
	{ "cycles", OUT_FLOAT, 0, OUT_DEC(0) }, { "insn", OUT_STR, 0, 0 }, { "taken", OUT_INT, 0, 0 },
	{ "not_taken", OUT_INT, 0, 0 }, { "taken_pct", OUT_FLOAT, 0, OUT_DEC(1) },
	{ "hot", OUT_BOOL, 0, 0 }, { "file", OUT_STR, 0, 0 }, { "line", OUT_INT, 0, 0 },
	{ "inlined", OUT_STR, 0, 0 },
};
/* --srcline: where the source line goes, above the instruction column */
#define ANNOTATE_SRC_INDENT 39

/* file and line: --srcline's position of the instruction (file NULL: none asked or
 * known; jsonl leaves the keys out when not asked) */
/* inl: --inline's "outer > inner" of the instruction ("" none), NULL: not asked */
static void annotate_row(struct out_table *tab, const struct aline *a, uint64_t fstart, bool cyc,
			 bool hot, bool srcline, const char *file, int line, const char *inl)
{
	bool has_taken = a->cond && a->taken + a->not_taken;
	double pct = has_taken ? 100.0 * (double)a->taken / (double)(a->taken + a->not_taken) : 0;
	char dis[200], cbuf[32], taken[32] = "";
	struct out_val v[NCOLS(annotate_json)];

	snprintf(dis, sizeof(dis), "%s%s%s", a->in.mnemonic, a->in.op_str[0] ? " " : "", a->in.op_str);
	if (tab->fmt == OUT_JSONL) {
		v[0] = (struct out_val){ .u = a->in.ip };
		v[1] = (struct out_val){ .u = a->in.ip - fstart };
		v[2] = (struct out_val){ .u = a->count };
		v[3] = (struct out_val){ .null = !cyc, .d = a->cycles };
		v[4] = (struct out_val){ .s = dis };
		v[5] = (struct out_val){ .omit = !has_taken, .u = a->taken };
		v[6] = (struct out_val){ .omit = !has_taken, .u = a->not_taken };
		v[7] = (struct out_val){ .omit = !has_taken, .d = pct };
		v[8] = (struct out_val){ .b = hot };
		v[9] = (struct out_val){ .omit = !srcline, .null = !file, .s = file };
		v[10] = (struct out_val){ .omit = !srcline, .null = !file, .u = (uint64_t)line };
		v[11] = (struct out_val){ .omit = !inl || !*inl, .s = inl };
		out_row(tab, v, 0, NULL, 0);
		return;
	}
	if (cyc)
		snprintf(cbuf, sizeof(cbuf), "%.0f%s", a->cycles, a->approx ? "~" : "");
	if (has_taken)
		snprintf(taken, sizeof(taken), "%.1f%%", pct);
	v[0] = (struct out_val){ .u = a->count };
	v[1] = (struct out_val){ .null = !cyc, .s = cbuf };
	v[2] = (struct out_val){ .u = a->in.ip };
	v[3] = (struct out_val){ .s = dis };
	v[4] = (struct out_val){ .s = taken };
	out_row_marked(tab, v, hot);
}

/* The lines of the code in [fstart, fend) up to the first it cannot read or decode,
 * all counts 0; NULL when out of memory or without a disassembler. */
static struct aline *disassemble(const struct bb_env *env, int32_t pid, uint64_t time,
				 uint64_t fstart, uint64_t fend, bool intel, size_t *nl)
{
	struct x86_dis dis;
	struct aline *l = NULL;
	size_t cap = 0, n = 0;

	if (x86_dis_init(&dis) < 0)
		return NULL;
	/* a line to spare: an empty listing is not NULL */
	int rc = x86_dis_set_intel(&dis, intel) < 0 ? -EINVAL : XP_GROW(l, cap, 1);
	for (uint64_t ip = fstart; rc == 0 && ip < fend;) {
		uint8_t buf[X86_MAX_INSN];
		size_t got = env->read(env->ctx, pid, time, ip, buf, sizeof(buf));
		memset(&l[n], 0, sizeof(*l));
		if (!got || x86_dis_one(&dis, buf, got, ip, &l[n].in) < 0)
			break;
		ip += l[n++].in.size;
		rc = XP_GROW(l, cap, n + 1);
	}
	x86_dis_fini(&dis);
	if (rc < 0) {
		free(l);
		return NULL;
	}
	*nl = n;
	return l;
}

int bb_annotate_report(struct bb_tally *t, const char *symname, const struct bb_view_opts *o)
{
	size_t n;
	struct bb_block **v = bb_tally_sorted(t, &n);
	const struct bb_env *env = o->env;
	uint64_t fstart = 0, fsize = 0, fend = 0;
	int32_t pid = -1;
	uint64_t time = 0;
	bool found = false;

	if (!v || !env || !env->symbol || !env->read)
		return -EINVAL;
	/* Where each block's copy of the function starts: the same function may lie at
	 * several places (JIT code moved, a library mapped at other addresses by other
	 * processes); blocks count at their offset in it.  UINT64_MAX: another function. */
	uint64_t *base = malloc((n ? n : 1) * sizeof(*base));
	if (!base)
		return -ENOMEM;
	/* the function's extent: its symbol size, or the blocks executed in it */
	for (size_t i = 0; i < n; i++) {
		uint64_t s = 0, z = 0;
		const char *name = env->symbol(env->ctx, v[i]->pid, v[i]->time, v[i]->start, &s, &z);
		base[i] = UINT64_MAX;
		if (!name || strcmp(name, symname) != 0)
			continue;
		if (!found) {
			fstart = s;
			fsize = z;
			pid = v[i]->pid;
			time = v[i]->time;
			found = true;
		}
		if (s != fstart && (z != fsize || !z || !same_code(env, pid, time, fstart, v[i], s, z)))
			continue;	/* same name, other code */
		base[i] = s;
		if (v[i]->end - s + fstart + 1 > fend)
			fend = v[i]->end - s + fstart + 1;
	}
	if (!found) {
		free(base);
		return -ENOENT;
	}
	if (fsize)
		fend = fstart + fsize;
	else
		fend += X86_MAX_INSN;	/* the last instruction's bytes */

	size_t nl;
	struct aline *l = disassemble(env, pid, time, fstart, fend, o->intel, &nl);
	if (!l) {
		free(base);
		return -ENOMEM;
	}

	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const struct bb_block *b = v[i];
		if (base[i] == UINT64_MAX)
			continue;
		uint64_t start = b->start - base[i] + fstart, end = b->end - base[i] + fstart;
		if (start < fstart || start >= fend)
			continue;
		int k = ip_index(l, nl, start);
		if (k < 0)
			continue;	/* starts inside an instruction of this disassembly */
		double per = b->cyc_execs && b->insns ? (double)b->cycles / (double)b->insns : 0;
		for (size_t j = (size_t)k; j < nl && l[j].in.ip <= end; j++) {
			l[j].count += b->count;
			l[j].cycles += per;
			l[j].approx |= b->insns > 1 && b->cyc_execs;
			total += b->count;
			if (l[j].in.ip == end && b->cond) {
				l[j].cond = true;
				l[j].taken += b->taken;
				l[j].not_taken += b->not_taken;
			}
		}
	}
	bool cyc = bb_tally_has_cycles(t);
	/* the three hottest lines (cycles, else count) are highlighted */
	double hot[3] = { 0, 0, 0 };
	for (size_t j = 0; j < nl; j++) {
		double w = cyc ? l[j].cycles : (double)l[j].count;
		for (int h = 0; h < 3; h++)
			if (w > hot[h]) {
				memmove(hot + h + 1, hot + h, (size_t)(2 - h) * sizeof(*hot));
				hot[h] = w;
				break;
			}
	}
	FILE *out = o->out;
	struct out_table tab;
	if (o->format == BB_TEXT) {
		fprintf(out, "# %s at %#lx: %lu instructions executed%s\n", symname, (unsigned long)fstart,
			(unsigned long)total, cyc ? "" : " (no cycles in this trace)");
		out_table_begin_style(&tab, out, OUT_TEXT, annotate_text, NCOLS(annotate_text),
				      &(struct out_style){ " ", isatty(fileno(out)) });
	} else {
		out_table_begin(&tab, out, OUT_JSONL, annotate_json, NCOLS(annotate_json));
	}
	struct bb_src src = { .last_line = -1 };
	char inl[2][512] = { "", "" };	/* this instruction's inline chain, the last one's */
	for (size_t j = 0; j < nl; j++) {
		const struct aline *a = &l[j];
		double w = cyc ? a->cycles : (double)a->count;
		const char *file = NULL;
		int line = 0;
		if (o->srcline && env->srcline && !env->srcline(env->ctx, pid, time, a->in.ip, &file, &line))
			file = NULL;
		if (o->inlined && (!env->inlined || !env->inlined(env->ctx, pid, time, a->in.ip, inl[0], sizeof(inl[0]))))
			inl[0][0] = 0;
		/* text: where the inlined code changes, as a line above (perf annotate's
		 * source lines' place); none over a function's own code before any */
		if (o->inlined && o->format == BB_TEXT && strcmp(inl[0], inl[1])) {
			fprintf(out, "%*s[inline] %s\n", ANNOTATE_SRC_INDENT, "", *inl[0] ? inl[0] : "-");
			src.last_line = -1;
		}
		if (file && o->format == BB_TEXT)
			bb_src_print(&src, out, ANNOTATE_SRC_INDENT, file, line);
		annotate_row(&tab, a, fstart, cyc, w > 0 && w >= hot[2], o->srcline, file, line,
			     o->inlined ? inl[0] : NULL);
		memcpy(inl[1], inl[0], sizeof(inl[1]));
	}
	bb_src_free(&src);
	free(l);
	free(base);
	return 0;
}
