/* The hint-NOP and CET opcode space, decoded without capstone: 0F 18-0F 1F with any
 * ModRM (hint NOPs, nopl/nopw, prefetch, cldemote, MPX's bnd*, endbr64/endbr32,
 * rdsspd/rdsspq), 0F 0D (prefetch/prefetchw) and
 * the shadow-stack instructions elsewhere (incssp, setssbsy, saveprevssp, rstorssp,
 * clrssbsy, wrss, wruss).  capstone 4 calls several of them (bad) (rdsspq, which
 * libgcc's unwinder runs) and others wrong (incssp as lfence, clrssbsy as xsaveopt), so
 * x86_dis asks this table first for these bytes.  Text as objdump prints it, AT&T. */
#ifndef X86_HINT_H
#define X86_HINT_H

#include <stddef.h>
#include <stdint.h>

/* What the instruction does in user space.  None transfers control. */
enum x86_hint_kind {
	X86_HINT_NOP,		/* no architectural effect: hint NOPs, endbr (CET IBT off or
				 * not, endbr is what an indirect branch must land on, which
				 * a tracer that only follows branches never breaks), prefetch,
				 * cldemote, MPX (NOPs without it) */
	X86_HINT_SSP_READ,	/* rdssp: a NOP (its register unchanged) with shadow stacks
				 * off; with them on it reads the shadow-stack pointer */
	X86_HINT_SHSTK,		/* incssp, saveprevssp, rstorssp, wrss: #UD unless the thread
				 * has shadow stacks (wrss: and shadow-stack writes) enabled */
	X86_HINT_PRIV,		/* setssbsy, clrssbsy, wruss: supervisor only, fault in user
				 * space */
};

struct x86_hint {
	uint8_t len;
	uint8_t kind;		/* enum x86_hint_kind */
	uint8_t op;		/* which entry of the table (x86_hint_name) */
	char mnemonic[24];	/* with the prefixes objdump shows as words ("repz nop") */
	char op_str[64];
};

/* Decodes code[0..len) when it is in this space: 0 and *h filled; -ENOENT for any other
 * instruction, -EINVAL
 * when the bytes end before the instruction does. */
int x86_hint_decode(const uint8_t *code, size_t len, struct x86_hint *h);
/* The mnemonic of entry `op` ("nop", "endbr64", "rdsspq", ...), for statistics; NULL
 * past the table. */
const char *x86_hint_name(unsigned op);
/* Can an emulator run it as a NOP whatever the thread's CET state? */
static inline int x86_hint_is_nop(const struct x86_hint *h) { return h->kind == X86_HINT_NOP; }

#endif
