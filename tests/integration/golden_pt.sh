#!/bin/bash
# The golden outputs of traces/pt-spin (see its README.md for how each was made).
. "$(dirname "$0")/../lib.sh"

G=$XP_ROOT/traces/pt-spin
cd "$G" || exit 1
E=ptspin:0x555555554000
golden() {	# $1 file, rest: decode arguments
	local f=$1; shift
	# (callgrind's ob= names the ELF by its absolute path: the checkout's is left out)
	"$XPTRACE" decode --pt trace.pt --elf $E "$@" 2>"$TMP/$f.err" | sed "s|^ob=(1) $G/|ob=(1) |" >"$TMP/$f"
	if cmp -s "$G/$f" "$TMP/$f"; then ok "golden $f"; else
		not_ok "golden $f (xptrace decode ... $*)"
		diff "$G/$f" "$TMP/$f" | head -10 | sed 's/^/#   /'
	fi
}
golden insn.txt --insn
golden insn.jsonl --insn --format jsonl
golden blocks.txt --blocks
golden blocks.jsonl --blocks --format jsonl
golden calltree.txt --calltree
golden annotate-spin.txt --annotate spin
golden callgrind.out --blocks --format callgrind
check_eq "insn.jsonl addresses equal perf script's (perf-script-ip.txt)" \
	"$(cat perf-script-ip.txt)" "$(awk -F'"ip":"0x' 'NF > 1 { split($2, a, "\""); print a[1] }' insn.jsonl)"
