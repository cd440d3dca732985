/* DWARF unwinding with libdw: one Dwfl per process holding its executable mappings
 * (rebuilt when the mappings change), whose thread state is the sample's registers
 * and whose memory is the sample's stack copy. */
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decoders/samples/dsm_unwind.h"

/* perf's x86_64 register numbers (PERF_REG_X86_*) */
enum { P_AX, P_BX, P_CX, P_DX, P_SI, P_DI, P_BP, P_SP, P_IP, P_FLAGS, P_CS, P_SS, P_DS, P_ES,
       P_FS, P_GS, P_R8, P_R9, P_R10, P_R11, P_R12, P_R13, P_R14, P_R15 };
/* DWARF x86_64 numbering 0..16: rax rdx rcx rbx rsi rdi rbp rsp r8..r15 rip */
static const int dwarf_to_perf[17] = { P_AX, P_DX, P_CX, P_BX, P_SI, P_DI, P_BP, P_SP, P_R8, P_R9,
	P_R10, P_R11, P_R12, P_R13, P_R14, P_R15, P_IP };

struct dsm_unwind {
	Dwfl *dwfl;
	int32_t pid;
	uint64_t gen;
	const struct pd_sample *cur;
	uint64_t *out;
	unsigned n, max;
	bool attached;
};

static const Dwfl_Callbacks dwfl_cb = {
	.find_elf = dwfl_linux_proc_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
};

struct dsm_unwind *dsm_unwind_new(struct dec_ctx *c)
{
	(void)c;
	return calloc(1, sizeof(struct dsm_unwind));
}

void dsm_unwind_free(struct dsm_unwind *u)
{
	if (!u)
		return;
	if (u->dwfl)
		dwfl_end(u->dwfl);
	free(u);
}

static bool reg(const struct pd_sample *s, int perf_reg, uint64_t *v)
{
	if (!(s->user_regs_mask >> perf_reg & 1))
		return false;
	*v = s->user_regs[__builtin_popcountll(s->user_regs_mask & ((1ull << perf_reg) - 1))];
	return true;
}

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_argp)
{
	struct dsm_unwind *u = arg;

	(void)dwfl;
	if (*thread_argp)
		return 0;
	*thread_argp = u;
	return u->pid;
}

static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	struct dsm_unwind *u = arg;
	const struct pd_sample *s = u->cur;
	uint64_t sp;

	(void)dwfl;
	if (!reg(s, P_SP, &sp) || addr < sp || addr + 8 > sp + s->user_stack_dyn_size || addr + 8 < addr)
		return false;
	memcpy(result, (const uint8_t *)s->user_stack + (addr - sp), 8);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	struct dsm_unwind *u = arg;
	Dwarf_Word regs[17];

	for (int i = 0; i < 17; i++) {
		uint64_t v = 0;
		if (!reg(u->cur, dwarf_to_perf[i], &v) && (i == 7 || i == 16))
			return false;
		regs[i] = v;
	}
	return dwfl_thread_state_registers(thread, 0, 17, regs);
}

static const Dwfl_Thread_Callbacks thread_cb = {
	.next_thread = next_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int rebuild(struct dsm_unwind *u, struct dec_ctx *c, int32_t pid)
{
	const struct sb_map *maps;
	uint32_t n = sb_maps(c->sb, pid, &maps);

	if (u->dwfl)
		dwfl_end(u->dwfl);
	u->dwfl = dwfl_begin(&dwfl_cb);
	u->attached = false;
	if (!u->dwfl)
		return -ENOMEM;
	u->pid = pid;
	u->gen = sb_generation(c->sb);
	dwfl_report_begin(u->dwfl);
	for (uint32_t i = 0; i < n; i++) {
		const struct sb_map *m = &maps[i];
		uint64_t va;
		bool dup = false;
		if (!(m->prot & 4) || m->dso->anon)
			continue;
		for (uint32_t k = 0; k < i; k++)
			if (maps[k].dso == m->dso && (maps[k].prot & 4))
				dup = true;
		const char *file = sym_dso_file(c->sym, m->dso);
		if (dup || !file || !sym_map_vaddr(c->sym, m, m->start, &va))
			continue;
		/* bias: runtime address minus ELF address of the same byte, page aligned as
		 * dwfl_report_elf wants the load base of the whole file */
		dwfl_report_elf(u->dwfl, m->dso->path, file, -1, m->start - va, false);
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	if (!dwfl_attach_state(u->dwfl, NULL, pid, &thread_cb, u))
		return -EIO;	/* libdwfl: no unwinder for this process */
	u->attached = true;
	return 0;
}

static int frame_cb(Dwfl_Frame *state, void *arg)
{
	struct dsm_unwind *u = arg;
	Dwarf_Addr pc;
	bool act;

	if (!dwfl_frame_pc(state, &pc, &act))
		return DWARF_CB_ABORT;
	if (u->n >= u->max)
		return DWARF_CB_ABORT;
	u->out[u->n++] = pc;
	return DWARF_CB_OK;
}

int dsm_unwind(struct dsm_unwind *u, struct dec_ctx *c, const struct pd_sample *s, uint64_t *out,
	       unsigned max)
{
	int32_t pid = (int32_t)s->pid;
	int rc;

	if (!u->dwfl || u->pid != pid || u->gen != sb_generation(c->sb))
		if ((rc = rebuild(u, c, pid)) < 0)
			return rc;
	if (!u->attached)
		return -EIO;	/* the last rebuild could not attach */
	u->cur = s;
	u->out = out;
	u->n = 0;
	u->max = max;
	dwfl_getthread_frames(u->dwfl, pid, frame_cb, u);
	return u->n ? (int)u->n : -ENOENT;	/* not even the first frame */
}
