#!/bin/bash
# Step mode through C++ exceptions and longjmp (issue 24): libgcc's unwinder runs CET
# instructions (rdsspq, incsspq: NOPs with CET off, capstone 4 calls rdsspq (bad)) and
# lands in main's handler with an indirect jump from far above the top of the stack;
# longjmp lands in main from three frames up.  Each program calls its thrower 10 times,
# 5 of them throw (or longjmp).  The trace must be whole (record silent, no gap), the
# thrower have exactly its 10 calls, the call tree stay as deep after the fifth throw as
# after the first, and the instruction stream equal single-step ground truth.
. "$(dirname "$0")/../lib.sh"

PIE_BASE=0x555555554000
NOASLR="setarch -R"

if ! command -v g++ >/dev/null; then
	ok "step_unwind: skipped, no g++ to build the C++ programs"
	exit 0
fi
g++ -O2 -g -fno-omit-frame-pointer -o "$TMP/throw" "$XP_ROOT/tests/progs/step_throw.cc" &&
g++ -O2 -g -fno-omit-frame-pointer -fcf-protection=full -o "$TMP/throw_cet" "$XP_ROOT/tests/progs/step_throw.cc" &&
gcc -O2 -g -fno-omit-frame-pointer -o "$TMP/longjmp" "$XP_ROOT/tests/progs/step_longjmp.c"
check_eq "the test programs build" 0 "$?"

unwind_case() {	# $1 program in $TMP, $2 the function called 10 times, $3 one main calls
		# after the landing, $4 "truth": the instruction streams against single-step too
		# (seconds of ptrace stops: once for the C++ unwinder, on the CET build, whose
		# libgcc path with rdssp the plain build runs as well)
	local prog=$1 fn=$2 after=$3 truth=${4:-} p=$TMP/$1 off start out lvl
	off=$(nm "$p" | awk '$3 == "main" { print $1 }')
	start=$(printf '%x' $((PIE_BASE + 0x$off)))
	[ -n "$truth" ] && $NOASLR "$PROGS/xp_sstep" "$TMP/$prog.truth" "0x$off" -- "$p" >"$TMP/$prog.out1" 2>&1
	$NOASLR "$XPTRACE" record --mode step -o "$TMP/$prog.d" -- "$p" >"$TMP/$prog.out2" 2>"$TMP/$prog.err"
	check_eq "$prog: step record exits 0" 0 "$?"
	check_eq "$prog: record says nothing is missing" "" "$(grep -i 'incomplete\|cannot decode' "$TMP/$prog.err")"
	[ -n "$truth" ] &&
		check_eq "$prog: same program output as under single-step" "$(cat "$TMP/$prog.out1")" "$(cat "$TMP/$prog.out2")"

	"$XPTRACE" decode -i "$TMP/$prog.d" --functions >"$TMP/$prog.fn" 2>"$TMP/$prog.derr"
	check_eq "$prog: decode finds no gap and misses nothing" "" "$(grep -i 'gap\|incomplete' "$TMP/$prog.derr")"
	check_eq "$prog: $fn has its 10 calls" "10" \
		"$(awk -v f="$fn" '$NF == f { print $1 }' "$TMP/$prog.fn")"
	# every activation of the thrower sits at one depth: a tree that grew at each
	# throw would have it 5 levels apart
	"$XPTRACE" decode -i "$TMP/$prog.d" --calltree --percent-limit 0 >"$TMP/$prog.tree" 2>/dev/null
	lvl=$(awk -v f="$fn" '$NF == f { print $1 }' "$TMP/$prog.tree" | sort -u | tr '\n' ' ')
	check_match "$prog: $fn at a single depth of the call tree (got: $lvl)" "^[0-9]+ $" "$lvl"
	check_eq "$prog: main once in the call tree" 1 "$(awk '$NF == "main"' "$TMP/$prog.tree" | wc -l)"
	"$XPTRACE" decode -i "$TMP/$prog.d" --calls --format jsonl --sym main >"$TMP/$prog.calls" 2>/dev/null
	out=$(python3 -c 'import json, sys
d = [json.loads(l) for l in sys.stdin if l.startswith("{")]
print(sorted({e["depth"] for e in d if e["name"] == sys.argv[1]}),
      sorted({e["depth"] for e in d if e["name"] == sys.argv[2]}))' "$fn" "$after" <"$TMP/$prog.calls")
	check_eq "$prog: --calls shows $fn at depth 3 (main, outer, middle) and $after, called after the landing, at 1" \
		"[3] [1]" "$out"
	check_eq "$prog: --calls shows $fn 10 times" 10 \
		"$(grep -c "\"name\":\"$fn\"" "$TMP/$prog.calls")"

	# perf's calls (--itrace=c) into the thrower
	check_eq "$prog: perf counts 10 calls of $fn too" 10 \
		"$(perf script -i "$TMP/$prog.d/perf.data" --itrace=c -F addr,sym 2>/dev/null | awk -v f="$fn" '$NF ~ "^"f' | wc -l)"
	[ -n "$truth" ] || return 0
	# the instruction streams from main on against single-step
	"$XPTRACE" decode --insn -i "$TMP/$prog.d" 2>/dev/null | awk '$1 != "---" { print $2, $3 }' >"$TMP/$prog.xinsn"
	out=$(python3 "$XP_ROOT/tests/step_truth.py" "$TMP/$prog.truth" "$start" "$TMP/$prog.xinsn")
	check_match "$prog: xptrace decode --insn equals the single-step ground truth" "identical" \
		"$(printf '%s\n' "$out" | grep -v identical || echo identical)"
	perf script -i "$TMP/$prog.d/perf.data" --itrace=i0ns -F tid,ip >"$TMP/$prog.insn" 2>/dev/null
	out=$(python3 "$XP_ROOT/tests/step_truth.py" "$TMP/$prog.truth" "$start" "$TMP/$prog.insn")
	check_match "$prog: perf's instruction stream equals the single-step ground truth" "identical" \
		"$(printf '%s\n' "$out" | grep -v identical || echo identical)"
}

unwind_case throw thrower __cxa_begin_catch@plt
unwind_case throw_cet thrower __cxa_begin_catch@plt truth
unwind_case longjmp jumper _setjmp@plt truth

# What the tracer cannot decode (an opcode invalid in 64-bit mode, which the program
# catches as SIGILL) is lost: record still exits with the program's status, but says
# so at the end, and the trace carries it: decode and every other reader repeat it.
p=$PROGS/step_badcode
"$XPTRACE" record --mode step -q -o "$TMP/bad.d" -- "$p" >"$TMP/bad.out" 2>"$TMP/bad.err"
check_eq "badcode: record exits with the program's 0" 0 "$?"
check_eq "badcode: the program ran to its end" "caught SIGILL" "$(cat "$TMP/bad.out")"
check_match "badcode: record says, even with -q, which path it lost and that the trace is marked" \
	"^xptrace: step: 1 code path could not be decoded \(at 0x[0-9a-f]+\): what ran there is missing from the trace; the trace is marked \(decode says it too\)$" \
	"$(grep 'code path' "$TMP/bad.err")"
"$XPTRACE" decode -i "$TMP/bad.d" --functions >/dev/null 2>"$TMP/bad.derr"
check_match "badcode: decode repeats it" \
	"^xptrace: $TMP/bad.d/perf.data: the recording lost part of the trace: step: 1 code path could not be decoded \(at 0x[0-9a-f]+\): what ran there is missing from the trace$" \
	"$(grep 'lost part' "$TMP/bad.derr")"
"$XPTRACE" decode -i "$TMP/bad.d" --insn >/dev/null 2>"$TMP/bad.derr2"
check_eq "badcode: --insn repeats it too" 1 "$(grep -c 'the recording lost part of the trace' "$TMP/bad.derr2")"
# ... and the PT stream has it where it happened, as hardware PT has a loss: OVF after
# main's branch into the lost path, then the FUP where decoding resumes (the invalid
# instruction, which SIGILL interrupts): perf and both decoders of xptrace resynchronize
# there and go on into the handler
bad_at=$(objdump -d "$p" | awk '$NF == "(bad)" { sub(":", "", $1); print $1; exit }')
ill_at=$(nm "$p" | awk '$3 == "on_ill" { print $1 }')
perf script -i "$TMP/bad.d/perf.data" --itrace=iecr -F flags,ip,sym >"$TMP/bad.perf" 2>&1
check_eq "badcode: perf reports one Overflow packet" 1 "$(grep -c 'code 7: Overflow packet' "$TMP/bad.perf")"
check_match "badcode: perf resumes at the invalid instruction, interrupted into the handler" \
	"^ *hw int +[0-9a-f]*${bad_at: -3} bad$" "$(grep -A3 'Overflow packet' "$TMP/bad.perf" | grep -m1 'hw int')"
for dec in fast libipt; do
	"$XPTRACE" decode -i "$TMP/bad.d" --insn --pt-decoder $dec 2>"$TMP/bad.$dec.err" |
		grep -A1 -e '^--- .* gap: ' >"$TMP/bad.$dec.gap"
	check_match "badcode: --insn --pt-decoder $dec: the overflow's gap, then the SIGILL interrupt at the invalid instruction into on_ill" \
		"gap: overflow .*
--- [0-9.]+ [0-9]+ interrupt 0x[0-9a-f]*${bad_at: -3} -> 0x[0-9a-f]*${ill_at: -3}$" "$(cat "$TMP/bad.$dec.gap")"
	check_match "badcode: --pt-decoder $dec says the gap" "1 gaps in the PT trace" "$(cat "$TMP/bad.$dec.err")"
done
