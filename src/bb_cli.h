/* Entry points of the PT views in `xptrace decode` (cmd_decode.c dispatches here). */
#ifndef BB_CLI_H
#define BB_CLI_H

#include <stdbool.h>

/* Option help for decode's usage text. */
#define BB_PT_USAGE \
	"raw Intel PT (ptxed-style):\n" \
	"  --pt FILE              raw PT byte stream to decode (instead of a perf.data)\n" \
	"  --raw FILE:BASE        raw memory image FILE loaded at address BASE (repeatable)\n" \
	"  --elf FILE[:BASE]      executable segments of an ELF file, at BASE if given (repeatable)\n" \
	"  --cpu F/M[/S]          cpu family/model/stepping the trace came from: applies its errata\n" \
	"  --nom-freq N           nominal core:bus ratio (MSR_PLATFORM_INFO[15:8]): CYC -> cycles\n" \
	"  --mtc-freq N           MTC frequency (IA32_RTIT_CTL.MTCFreq) of the trace\n" \
	"  --resync-on-error      on a decode error, report a gap and resume at the next PSB\n" \
	"                         (default for --pt: stop at the first error, like ptxed)\n" \
	"PT views:\n" \
	"  --insn                 instruction stream (time, tid, ip, symbol+offset, bytes, disassembly)\n" \
	"  --blocks               per basic block: count, insns, cycles, IPC, taken/not-taken\n" \
	"  --annotate SYM         disassembly of SYM with per-instruction counts and cycles\n" \
	"  --format text|jsonl    output format of the view (default text)\n" \
	"  --format callgrind     per-instruction Ir (+Cycles) with exact calls= (KCachegrind)\n" \
	"  --syntax att|intel     disassembly syntax (default att, like perf and objdump)\n" \
	"  --srcline              source file:line of each instruction (--insn)\n" \
	"  --tid TID              only thread TID\n" \
	"  --time A-B             only events with A <= time <= B (either side may be omitted)\n" \
	"  --sym NAME             only code of function NAME\n"


/* Raw PT mode (`decode --pt FILE ...`): true when argv asks for it. */
bool bb_pt_raw_wanted(int argc, char **argv);
/* argv[0] is "decode"; returns an XP_EXIT_* code. */
int bb_pt_raw_main(int argc, char **argv);

#endif
