/* --blocks and --annotate SYM: reports over the block tallies. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "views/bb_views.h"
#include "arch/x86_64/x86_dis.h"

static const char *block_sym(const struct bb_env *env, const struct bb_block *b, char *buf,
			     size_t cap, uint64_t *fstart, uint64_t *fsize)
{
	uint64_t start = 0, size = 0;
	const char *name = env && env->symbol ?
		env->symbol(env->ctx, b->pid, b->time, b->start, &start, &size) : NULL;
	if (fstart)
		*fstart = start;
	if (fsize)
		*fsize = size;
	if (!name)
		return NULL;
	snprintf(buf, cap, "%s+0x%lx", name, (unsigned long)(b->start - start));
	return buf;
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
	struct x86_instr in;
	size_t n = l->env->read(l->env->ctx, b->pid, b->time, ip, buf, sizeof(buf));
	return n && x86_dis_one(&l->dis, buf, n, ip, &in) == 0 ? in.size : 0;
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
	char sym[512];

	if (!v) {
		bb_tally_free(basic);
		return -1;
	}
	if (o->format == BB_TEXT) {
		fprintf(out, "# %zu blocks, %lu instructions, %lu gaps; sorted by %s\n", n,
			(unsigned long)bb_tally_insns(t), (unsigned long)bb_tally_gaps(t),
			cyc ? "cycles" : "count");
		fprintf(out, "# mainline direction of a conditional branch marked with *\n");
		fprintf(out, "%-18s %-18s %-36s %10s %6s %12s %6s %10s %10s\n", "start", "end",
			"symbol", "count", "insns", "cycles", "IPC", "taken", "not_taken");
	}
	for (size_t i = 0; i < n; i++) {
		const struct bb_block *b = v[i];
		const char *s = block_sym(o->env, b, sym, sizeof(sym), NULL, NULL);
		bool has_cyc = b->cyc_execs > 0;
		double ipc = has_cyc && b->cycles ? (double)(b->insns * b->cyc_execs) / (double)b->cycles : 0;
		const char *ml = mainline(b);
		if (o->format == BB_JSONL) {
			fprintf(out, "{\"start\":\"%#lx\",\"end\":\"%#lx\",\"sym\":", (unsigned long)b->start,
				(unsigned long)b->end);
			bb_json_str(out, s);
			fprintf(out, ",\"count\":%lu,\"insns\":%lu,", (unsigned long)b->count,
				(unsigned long)b->insns);
			if (has_cyc)
				fprintf(out, "\"cycles\":%lu,\"ipc\":%.3f,\"cycles_approx\":%s,",
					(unsigned long)b->cycles, ipc, b->approx ? "true" : "false");
			else
				fprintf(out, "\"cycles\":null,\"ipc\":null,");
			if (ml)
				fprintf(out, "\"taken\":%lu,\"not_taken\":%lu,\"mainline\":\"%s\"}\n",
					(unsigned long)b->taken, (unsigned long)b->not_taken, ml);
			else
				fprintf(out, "\"taken\":null,\"not_taken\":null,\"mainline\":null}\n");
			continue;
		}
		char cbuf[32] = "-", ibuf[16] = "-", tbuf[24] = "-", nbuf[24] = "-";
		if (has_cyc) {
			snprintf(cbuf, sizeof(cbuf), "%lu%s", (unsigned long)b->cycles, b->approx ? "~" : "");
			snprintf(ibuf, sizeof(ibuf), "%.2f", ipc);
		}
		if (ml) {
			snprintf(tbuf, sizeof(tbuf), "%lu%s", (unsigned long)b->taken,
				 strcmp(ml, "taken") == 0 ? "*" : "");
			snprintf(nbuf, sizeof(nbuf), "%lu%s", (unsigned long)b->not_taken,
				 strcmp(ml, "not_taken") == 0 ? "*" : "");
		}
		fprintf(out, "%#-18lx %#-18lx %-36s %10lu %6lu %12s %6s %10s %10s\n",
			(unsigned long)b->start, (unsigned long)b->end, s ? s : "[unknown]",
			(unsigned long)b->count, (unsigned long)b->insns, cbuf, ibuf, tbuf, nbuf);
	}
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
		return -1;
	/* Where each block's copy of the function starts: the same function may lie at
	 * several places (JIT code moved, a library mapped at other addresses by other
	 * processes); blocks count at their offset in it.  UINT64_MAX: another function. */
	uint64_t *base = malloc((n ? n : 1) * sizeof(*base));
	if (!base)
		return -1;
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
		return -1;
	}
	if (fsize)
		fend = fstart + fsize;
	else
		fend += X86_MAX_INSN;	/* the last instruction's bytes */

	struct x86_dis dis;
	if (x86_dis_init(&dis) < 0 || x86_dis_set_intel(&dis, o->intel) < 0)
		return -1;
	size_t cap = 256, nl = 0;
	struct aline *l = calloc(cap, sizeof(*l));
	for (uint64_t ip = fstart; l && ip < fend;) {
		uint8_t buf[X86_MAX_INSN];
		size_t got = env->read(env->ctx, pid, time, ip, buf, sizeof(buf));
		if (!got)
			break;
		if (nl == cap) {
			struct aline *nlp = realloc(l, 2 * cap * sizeof(*l));
			if (!nlp)
				break;
			l = nlp;
			memset(l + cap, 0, cap * sizeof(*l));
			cap *= 2;
		}
		if (x86_dis_one(&dis, buf, got, ip, &l[nl].in) < 0)
			break;
		ip += l[nl].in.size;
		nl++;
	}
	x86_dis_fini(&dis);
	if (!l) {
		free(base);
		return -1;
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
	bool color = o->format == BB_TEXT && isatty(fileno(o->out));
	FILE *out = o->out;
	if (o->format == BB_TEXT)
		fprintf(out, "# %s at %#lx: %lu instructions executed%s\n%8s %10s  %-18s %-34s %s\n",
			symname, (unsigned long)fstart, (unsigned long)total,
			cyc ? "" : " (no cycles in this trace)", "count", "cycles", "address", "instruction",
			"taken");
	for (size_t j = 0; j < nl; j++) {
		const struct aline *a = &l[j];
		double w = cyc ? a->cycles : (double)a->count;
		bool is_hot = w > 0 && w >= hot[2];
		char taken[32] = "";
		if (a->cond && a->taken + a->not_taken)
			snprintf(taken, sizeof(taken), "%.1f%%",
				 100.0 * (double)a->taken / (double)(a->taken + a->not_taken));
		char dis_text[200];
		snprintf(dis_text, sizeof(dis_text), "%s%s%s", a->in.mnemonic, a->in.op_str[0] ? " " : "",
			 a->in.op_str);
		if (o->format == BB_JSONL) {
			fprintf(out, "{\"ip\":\"%#lx\",\"offset\":%lu,\"count\":%lu,", (unsigned long)a->in.ip,
				(unsigned long)(a->in.ip - fstart), (unsigned long)a->count);
			if (cyc)
				fprintf(out, "\"cycles\":%.0f,", a->cycles);
			else
				fprintf(out, "\"cycles\":null,");
			fprintf(out, "\"insn\":");
			bb_json_str(out, dis_text);
			if (taken[0])
				fprintf(out, ",\"taken\":%lu,\"not_taken\":%lu,\"taken_pct\":%.1f",
					(unsigned long)a->taken, (unsigned long)a->not_taken,
					100.0 * (double)a->taken / (double)(a->taken + a->not_taken));
			fprintf(out, ",\"hot\":%s}\n", is_hot ? "true" : "false");
			continue;
		}
		char cbuf[32] = "-";
		if (cyc)
			snprintf(cbuf, sizeof(cbuf), "%.0f%s", a->cycles, a->approx ? "~" : "");
		fprintf(out, "%s%8lu %10s %c%#-18lx %-34s %s%s\n", color && is_hot ? "\033[31m" : "",
			(unsigned long)a->count, cbuf, is_hot ? '>' : ' ', (unsigned long)a->in.ip,
			dis_text, taken, color && is_hot ? "\033[0m" : "");
	}
	free(l);
	free(base);
	return 0;
}
