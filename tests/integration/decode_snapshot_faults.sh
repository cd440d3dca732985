#!/bin/bash
# A module snapshot that cannot stand for its module (issue 29, item 5 a, c): emptied,
# cut short, not ELF, another binary's.  Decoding says which snapshot and why, once,
# and goes on: with the program still at its recorded path (same build-id) its
# functions are named from there, as from the intact snapshot; without it they are
# addresses, said.  In a step trace the PT that ran in the missing code is not "gaps in
# the PT trace": the trace is whole, the code to follow it is not.
. "$(dirname "$0")/../lib.sh"
mkdir -p "$TMP/bin"
cp "$PROGS/hot" "$PROGS/step_basic" "$TMP/bin/"
"$XPTRACE" record -g -o "$TMP/s" -- "$TMP/bin/hot" 300 >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record hot"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }
"$XPTRACE" record --mode step -o "$TMP/st" -- "$TMP/bin/step_basic" >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record step_basic"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }
"$XPTRACE" decode -i "$TMP/s" --functions >"$TMP/s.ref" 2>/dev/null
"$XPTRACE" decode -i "$TMP/st" --functions >"$TMP/st.ref" 2>/dev/null
check_match "the sample trace names hot_inner" ' hot_inner$' "$(cat "$TMP/s.ref")"

# snap TRACE PROG: the program's snapshot file, by its build-id (as decode names it)
snap() {
	local l
	for l in "$1"/.build-id/*/*; do
		case $(readlink -f "$l") in */"$2"/*) echo "$l/elf" ;; esac
	done
}
# damage TRACE PROG HOW: a copy of TRACE (its snapshots copied, not linked to the
# program) in $TMP/d with the program's snapshot replaced as HOW says
damage() {
	rm -rf "$TMP/d" && cp -r "$1" "$TMP/d"
	local f
	f=$(snap "$TMP/d" "$2")
	case $3 in
	empty) : >"$f.new" ;;
	cut) head -c 4096 "$f" >"$f.new" ;;
	text) echo "not a module" >"$f.new" ;;
	other) cp "$PROGS/busy" "$f.new" ;;
	esac
	mv -f "$f.new" "$f"
	echo "$f"
}

# the program still at its recorded path: named from there, said
f=$(damage "$TMP/s" hot cut)
"$XPTRACE" decode -i "$TMP/d" --functions >"$TMP/out" 2>"$TMP/err"
check_eq "truncated snapshot, program at its path: exit 0" 0 "$?"
check_match "... the warning names the module, the snapshot, why and what stands in" \
	"^xptrace: $TMP/bin/hot: snapshot $f is unusable: truncated \(4096 bytes, its ELF headers describe [0-9]+\) \(its symbols and code are read from $TMP/bin/hot instead\)$" \
	"$(cat "$TMP/err")"
check_eq "... the same functions as from the intact snapshot" "$(cat "$TMP/s.ref")" "$(cat "$TMP/out")"

# without the program: addresses, each snapshot's fault said once
mv "$TMP/bin/hot" "$TMP/hot.away"
for how in empty cut text other; do
	case $how in
	empty) why='empty \(0 bytes\)' ;;
	cut) why='truncated \(4096 bytes, its ELF headers describe [0-9]+\)' ;;
	text) why='not an ELF file' ;;
	other) why='build-id mismatch \(the trace has [0-9a-f]{40}, the snapshot [0-9a-f]{40}\)' ;;
	esac
	f=$(damage "$TMP/s" hot $how)
	"$XPTRACE" decode -i "$TMP/d" --calltree >"$TMP/out" 2>"$TMP/err"
	check_eq "sample trace, $how snapshot: exit 0" 0 "$?"
	check_match "sample trace, $how snapshot: the warning says which and why" \
		"^xptrace: $TMP/bin/hot: snapshot $f is unusable: $why \(its functions show as addresses" \
		"$(cat "$TMP/err")"
	check_eq "sample trace, $how snapshot: said once" 1 "$(grep -c 'is unusable' "$TMP/err")"
	check_match "sample trace, $how snapshot: the other modules still named" ' main$|__libc_start_call_main$' \
		"$(cat "$TMP/out")"
done

# a step trace: the code of the program is missing, the trace is not damaged
mv "$TMP/bin/step_basic" "$TMP/step_basic.away"
f=$(damage "$TMP/st" step_basic cut)
"$XPTRACE" decode -i "$TMP/d" --functions >"$TMP/out" 2>"$TMP/err"
check_eq "step trace, truncated snapshot: exit 0" 0 "$?"
check_match "step trace, truncated snapshot: the warning says which and why" \
	"^xptrace: $TMP/bin/step_basic: snapshot $f is unusable: truncated \(4096 bytes" "$(cat "$TMP/err")"
check_eq "step trace, truncated snapshot: not reported as gaps in the PT trace" "" \
	"$(grep 'gaps in the PT trace' "$TMP/err")"
check_match "step trace, truncated snapshot: the gaps are said to be missing code" \
	'gaps where the code that ran was not available \(a module without a usable file, see above; not damage in the PT trace\)' \
	"$(cat "$TMP/err")"
check_match "step trace, truncated snapshot: libc still decoded" ' libc\.so\.6 ' "$(cat "$TMP/out")"
