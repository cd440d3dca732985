#!/bin/bash
# record --mode step on programs that die of a signal: the trace ends where the signal
# hit.  A fault (SIGSEGV, SIGFPE, a call through a bad pointer) ends the PT stream with
# FUP + TIP.PGD at the faulting instruction, and decode --insn shows that instruction
# last, marked with the signal; a signal sent (abort's SIGABRT from tgkill) hit no
# instruction: the last one is the syscall, followed by a "killed by" marker.  Checked
# against single-step ground truth (xp_sstep: the faulting instruction is its last
# address, a sent signal's pending one is not) and against perf script --itrace=i0ns,
# which lists everything before the faulting instruction.
. "$(dirname "$0")/../lib.sh"

NOASLR="setarch -R"
prog=$PROGS/step_fault
main_off=$(nm "$prog" | awk '$3 == "main" { print $1 }')
main=$(printf '%x' $((0x555555554000 + 0x$main_off)))

# fault_case MODE SIGNAL KIND FUNCTION: KIND fault|killed; FUNCTION holds the last line
fault_case() {
	local m=$1 sig=$2 kind=$3 fn=$4 d=$TMP/$1 out last
	$NOASLR "$PROGS/xp_sstep" "$d.truth" "0x$main_off" -- "$prog" "$m" >/dev/null 2>&1
	$NOASLR "$XPTRACE" record --mode step -o "$d" -- "$prog" "$m" >/dev/null 2>"$d.err"
	local rc=$?
	# record passes the command's end on as perf does: 128 + the signal
	check_eq "$m: record exits 128+$sig" "$((128 + $(kill -l "$sig")))" "$rc"
	check_match "$m: the command died of $sig" "killed by signal [0-9]+ " "$(cat "$d.err")"
	"$XPTRACE" decode --insn -i "$d" >"$d.insn" 2>"$d.derr"
	"$XPTRACE" decode --insn --format jsonl -i "$d" >"$d.jsonl" 2>>"$d.derr"
	check_eq "$m: decode --insn says nothing on stderr" "" "$(cat "$d.derr")"
	perf script -i "$d/perf.data" --itrace=i0ns -F tid,ip >"$d.perf" 2>"$d.perr"
	check_eq "$m: perf decodes it without errors or warnings" "0" "$(grep -ci 'error\|warning' "$d.perr")"
	# instruction lines (no markers) as "TID IP" for step_truth.py
	awk '$1 != "---" { print $2, $3 }' "$d.insn" >"$d.xinsn"
	out=$(python3 "$XP_ROOT/tests/step_truth.py" "$d.truth" "$main" "$d.xinsn")
	check_match "$m: decode --insn equals the single-step ground truth, last instruction included" \
		"^thread 0: [0-9]+ instructions identical$" "$out"
	# perf lists the same instructions up to the faulting one, which did not complete
	if [ "$kind" = fault ]; then
		head -n -1 "$d.xinsn" >"$d.xbefore"
	else
		cp "$d.xinsn" "$d.xbefore"
	fi
	check_eq "$m: perf script --itrace=i0ns lists the same instructions up to there" "" \
		"$(diff <(awk '{ print $2 }' "$d.perf" | sed 's/^0*//') <(awk '{ print $2 }' "$d.xbefore") | head -3)"
	last=$(tail -1 "$d.insn")
	if [ "$kind" = fault ]; then
		check_match "$m: the last line is the faulting instruction in $fn, marked with $sig" \
			"^[0-9.]+ +[0-9]+ +$(tail -1 "$d.truth.0") +$fn\+0x[0-9a-f]+ .* faulted: $sig " "$last"
		check_match "$m: jsonl: the last record is that instruction, faulted, with the signal" \
			"\"ip\":\"0x$(tail -1 "$d.truth.0")\".*\"faulted\":true,\"signal\":\"$sig\"" "$(tail -1 "$d.jsonl")"
	else
		# (the three last lines joined: grep takes a pattern's lines as alternatives)
		check_match "$m: the last instruction is the syscall in $fn, then a killed-by marker" \
			"$fn\+0x[0-9a-f]+ +0f 05 +syscall\|--- [0-9.]+ [0-9]+ disabled\|--- [0-9.]+ [0-9]+ killed by $sig \(" \
			"$(tail -3 "$d.insn" | paste -sd '|')"
		check_match "$m: jsonl: the last record is the kill" "\"event\":\"killed\",\"signal\":\"$sig\"" \
			"$(tail -1 "$d.jsonl")"
	fi
	# the call tree counts what completed, as perf lists it: the faulting instruction
	# is not in it, the call into the function that faulted is
	check_eq "$m: --calltree's total is perf's instruction count" "$(grep -c . "$d.perf")" \
		"$("$XPTRACE" decode --calltree -i "$d" 2>/dev/null | sed -n 's/^# call tree: insns, total //p')"
	if [ "$kind" = fault ]; then
		local lo size want
		read -r lo size < <(nm -S "$prog" | awk -v f="$fn" '$4 == f { print $1, $2 }')
		want=$(python3 -c 'import sys
lo = 0x555555554000 + int(sys.argv[1], 16); hi = lo + int(sys.argv[2], 16)
print(sum(1 for l in open(sys.argv[3]) if lo <= int(l.split()[1], 16) < hi))' "$lo" "$size" "$d.perf")
		check_eq "$m: --calltree: main called $fn once, its Base = perf's instructions in it ($want)" \
			"1 1 $want" "$("$XPTRACE" decode --calltree --format jsonl --percent-limit 0 -i "$d" 2>/dev/null |
				python3 -c 'import json, sys
r = [json.loads(l) for l in sys.stdin]
n = [x for x in r if x["name"] == sys.argv[1] and x["path"][-2:-1] == ["main"]]
print(len(n), *(n[0]["calls"], n[0]["base"]) if n else "")' "$fn")"
		# the default view lists it even when no instruction of it completed (do_segv)
		check_match "$m: --functions lists $fn: 1 call, Base $want" \
			"^ +1 +$want +[0-9]+ +[0-9.]+% +[0-9.]+% +step_fault +$fn\$" "$("$XPTRACE" decode -i "$d" 2>/dev/null)"
	fi
}

fault_case segv SIGSEGV fault do_segv
# a store the emulation would make through /proc/PID/mem, which writes read-only pages
fault_case rodata SIGSEGV fault do_store
fault_case fpe SIGFPE fault do_fpe
fault_case abort SIGABRT killed __pthread_kill_implementation
# an indirect call whose pointer cannot be read: the tracer's emulation cannot
# evaluate it, runs it for real, and that faults
fault_case badcall SIGSEGV fault do_call

# a call to an unmapped address: the fetch faults there, no code bytes to show
d=$TMP/badjump
"$XPTRACE" record --mode step -o "$d" -- "$prog" badjump >/dev/null 2>"$TMP/badjump.err"
check_eq "badjump: no path is said lost (no instruction ran at 0x10, nothing is missing)" 0 \
	"$(grep -c 'could not be decoded' "$TMP/badjump.err")"
check_match "badjump: the call is the last instruction, then the fault at its target" \
	"do_jump\+0x[0-9a-f]+ +ff d7 +callq \*%rdi\|--- [0-9.]+ [0-9]+ faulted at 0x10 \(no code bytes\): SIGSEGV \(Segmentation fault\), address 0x10$" \
	"$("$XPTRACE" decode --insn -i "$d" 2>/dev/null | tail -2 | paste -sd '|')"

# the marks follow --tid
check_eq "--tid of another thread: no fault shown" "0" "$("$XPTRACE" decode --insn -i "$TMP/segv" --tid 1 2>/dev/null | grep -c faulted)"
