/* Capstone glue: decode one x86-64 instruction (with branch classification), or decode
 * forward from an address to the next control transfer.  Used by the step tracer to
 * discover basic blocks and by the PT decoders to print instructions. */
#ifndef X86_DIS_H
#define X86_DIS_H

#include <stddef.h>
#include <stdint.h>

#include "arch/x86_64/x86_branch.h"

#define X86_MAX_INSN 15

struct x86_dis {
	size_t handle;		/* capstone csh */
	void *scratch;		/* capstone cs_insn (with detail), reused */
	int intel;		/* 1: Intel syntax; default AT&T like perf/objdump */
	int hint;		/* the x86_hint kind of the last instruction when x86_hint
				 * decoded it, else -1 */
	uint8_t hint_len;	/* and its length */
	size_t len_handle;	/* capstone csh for x86_dis_len: no details, Intel syntax (0:
				 * not opened yet) */
	void *len_scratch;
};

struct x86_instr {
	uint64_t ip;
	uint8_t size;
	uint8_t bytes[X86_MAX_INSN];
	struct x86_branch br;	/* br.cls == X86_BR_NONE for ordinary instructions */
	char mnemonic[32];
	char op_str[160];
};

/* A straight-line run: `ninsns` instructions from `start`, the last one (`term`) a
 * control transfer, or not (`truncated`) when the run hit `max_insns` or unreadable or
 * undecodable bytes. */
struct x86_run {
	uint64_t start;
	uint32_t ninsns;
	int truncated;		/* 0, or the negative error that stopped decoding */
	struct x86_instr term;	/* last decoded instruction */
};

/* Reads up to `len` code bytes at `ip`; returns the number read (0..len) or < 0. */
typedef long (*x86_code_read_fn)(void *ctx, uint64_t ip, uint8_t *buf, size_t len);

int x86_dis_init(struct x86_dis *d);
void x86_dis_fini(struct x86_dis *d);
/* 0 = AT&T (default), 1 = Intel. */
int x86_dis_set_intel(struct x86_dis *d, int intel);

/* Decodes the instruction at code[0..len) located at `ip`.  Returns 0, -EINVAL for bytes
 * that are no valid instruction (or a truncated one).  The hint-NOP and CET space is
 * x86_hint's where capstone does not know it or misreads it (text in AT&T syntax). */
int x86_dis_one(struct x86_dis *d, const uint8_t *code, size_t len, uint64_t ip,
		struct x86_instr *out);

/* The size of the instruction at code[0..len), the one x86_dis_one() gives (0 where
 * it fails), decoded at half its cost: without capstone's details, branch class and
 * text.  The instruction x86_dis_one() last decoded stays its. */
unsigned x86_dis_len(struct x86_dis *d, const uint8_t *code, size_t len, uint64_t ip);

/* capstone's id of the instruction x86_dis_one() last decoded (0: none it knows; past
 * capstone's ids: an x86_hint entry), and the mnemonic of an id, for statistics (id 0:
 * "(vex/evex)", an instruction only its length is known of). */
unsigned x86_dis_last_id(const struct x86_dis *d);
const char *x86_dis_id_name(const struct x86_dis *d, unsigned id);

/* Decodes forward from `ip` to the first control transfer (any class but X86_BR_NONE),
 * at most `max_insns` instructions.  Returns 0 when a run was decoded (check
 * run->truncated), or a negative error when not even the first instruction decodes. */
int x86_dis_run(struct x86_dis *d, x86_code_read_fn read, void *ctx, uint64_t ip,
		uint32_t max_insns, struct x86_run *run);

#endif
