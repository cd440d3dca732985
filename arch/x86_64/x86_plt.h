/* x86-64 PLT entries: which GOT slot an entry jumps through.  Names of PLT entries
 * (printf@plt) come from the relocation of that slot, as objdump finds them: the
 * order of .rela.plt need not be the order of the entries (IRELATIVE slots). */
#ifndef X86_PLT_H
#define X86_PLT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The GOT slot of the first `jmp *disp32(%rip)` (ff 25, after an endbr64 or a bnd
 * prefix) in the entry code[0..n) at address `ip`; false when the entry has none (the
 * PLT's header, the lazy-binding .plt entries of an IBT binary). */
bool x86_plt_got_slot(const uint8_t *code, size_t n, uint64_t ip, uint64_t *slot);

#endif
