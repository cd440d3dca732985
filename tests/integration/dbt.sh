#!/bin/bash
# record --mode dbt: the command under valgrind with xptrace's tool, written as Intel PT.
# Oracles: perf decodes the same trace (instruction counts equal, no trace errors);
# callgrind runs the same engine (per-address instruction counts of the program's own
# code equal callgrind's Ir with --dump-instr); step mode on the same program (its
# functions' instruction counts equal); perf's view of threads, processes and signal
# handlers.
. "$(dirname "$0")/../lib.sh"

if [ ! -x "$XP_ROOT/build/dbt/xptdbt-amd64-linux" ] || ! command -v valgrind >/dev/null; then
	echo "ok - # SKIP valgrind or its static libraries are missing: the dbt tool is not built"
	exit 0
fi

rec() {	# $1 name, then the command
	local name=$1
	shift
	"$XPTRACE" record --mode dbt -v -o "$TMP/$name" -- "$@" >"$TMP/$name.out" 2>"$TMP/$name.err"
	check_eq "$name: record --mode dbt exits 0" 0 "$?"
}
# perf's instructions and trace errors against xptrace's instructions (perf's lines,
# "COMM TID IP", kept in NAME.pinsn)
same_count() {	# $1 name
	local p x e
	perf script -i "$TMP/$1/perf.data" --itrace=i0ns -F comm,tid,ip >"$TMP/$1.pinsn" 2>/dev/null
	p=$(wc -l <"$TMP/$1.pinsn")
	e=$(perf script -i "$TMP/$1/perf.data" --itrace=e 2>&1 | grep -c 'instruction trace error')
	x=$("$XPTRACE" decode -i "$TMP/$1" --insn -F ip 2>"$TMP/$1.derr" | grep -vc '^#')
	check_eq "$1: perf script --itrace=i0ns and decode --insn list the same instructions, no errors" \
		"$p 0" "$x $e"
	check_eq "$1: decode says nothing went missing" "" "$(cat "$TMP/$1.derr")"
}
# Instruction counts per offset in the program's file ("OFFSET COUNT", sorted), as
# callgrind's --dump-instr writes its addresses: the trace's addresses less the load
# base of the program (its text mapping's start less its file offset: the first text
# segment of a PIE is at its file offset).  Callgrind files what it has no symbols of
# (.init, .plt, .fini) under "ob=???" with absolute addresses: those in the program's
# text mapping are the program's.
text_map() {	# $1 name, $2 program path: "START LEN OFFSET" (hex) of its text mapping
	perf script -i "$TMP/$1/perf.data" --show-mmap-events --itrace=e 2>/dev/null |
		sed -n "s|.*PERF_RECORD_MMAP2 .*: \[0x\([0-9a-f]*\)(0x\([0-9a-f]*\)) @ 0x\([0-9a-f]*\) .*r-xp $2\$|\1 \2 \3|p" | head -1
}
own_counts_perf() {	# $1 name, $2 program path, $3 text_map
	perf script -i "$TMP/$1/perf.data" --itrace=i0ns -F ip,dso 2>/dev/null |
		awk -v d="($2)" '{ sub(/[ \t]+$/, "") } substr($0, length($0) - length(d) + 1) == d { n[$1]++ }
			END { for (a in n) print a, n[a] }' |
		python3 -c 'import sys
start, size, off = (int(x, 16) for x in sys.argv[1].split())
for a, n in sorted((int(a, 16), n) for a, n in (l.split() for l in sys.stdin)): print("%x %s" % (a - (start - off), n))' "$3"
}
own_counts_callgrind() {	# $1 callgrind.out (--dump-instr=yes, uncompressed), $2 program path, $3 text_map
	python3 - "$1" "$2" "$3" <<'PY'
import re, sys
start, size, off = (int(x, 16) for x in sys.argv[3].split())
n, ob, skip = {}, None, False
for l in open(sys.argv[1]):
    if l.startswith("ob="):
        ob = l[3:].strip()
    elif l.startswith("calls="):
        skip = True  # the next line is the call's inclusive cost
        continue
    elif re.match(r"0x[0-9a-f]+( \d+)+$", l) and not skip:
        f = l.split()
        a = int(f[0], 16)
        if ob == "???" and start <= a < start + size:
            a -= start - off
        elif ob != sys.argv[2]:
            a = None
        if a is not None:
            n[a] = n.get(a, 0) + int(f[-1])
    skip = False
for a in sorted(n): print("%x %d" % (a, n[a]))
PY
}

# ---------------------------------------------------------------- one thread, no signals
P=$PROGS/step_basic
rec basic "$P"
check_eq "basic: program output" "$("$P")" "$(cat "$TMP/basic.out")"
same_count basic
valgrind -q --tool=callgrind --dump-instr=yes --skip-plt=no --compress-strings=no --compress-pos=no \
	--callgrind-out-file="$TMP/basic.cg" "$P" >/dev/null 2>&1
map=$(text_map basic "$P")
own_counts_perf basic "$P" "$map" >"$TMP/basic.own"
own_counts_callgrind "$TMP/basic.cg" "$P" "$map" >"$TMP/basic.cgown"
check_eq "basic: callgrind's Ir per address of step_basic's code equals the trace's ($(wc -l <"$TMP/basic.own") addresses)" \
	"$(cat "$TMP/basic.cgown")" "$(cat "$TMP/basic.own")"
check_match "basic: the comparison covers step_basic's code" "^[1-9][0-9]{2,}$" "$(wc -l <"$TMP/basic.own")"
"$XPTRACE" record --mode step -o "$TMP/basic.step" -- "$P" >/dev/null 2>&1
fns() {	# $1 trace, $2 module: "NAME CALLS INSNS" of its functions
	"$XPTRACE" decode -i "$1" --functions --metric insns --percent-limit 0 --format jsonl 2>/dev/null |
		python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["module"] == sys.argv[1]:
        print(r["name"], r["calls"], r["base"])' "$2" | sort
}
check_eq "basic: step_basic's functions, calls and instructions equal step mode's" \
	"$(fns "$TMP/basic.step" step_basic)" "$(fns "$TMP/basic" step_basic)"
check_match "basic: record -v says what the program saw of the CPU" \
	"dbt: .* conditional branches.*the program saw the CPU as: amd64-" "$(cat "$TMP/basic.err")"
"$XPTRACE" decode -i "$TMP/basic" --functions --metric insns >"$TMP/basic.fn" 2>&1
check_match "basic: decode's header names the engine and the CPU it showed" \
	"^# engine: valgrind-[0-9.]+ \(VEX, --mode dbt\), the program saw the CPU as amd64-" \
	"$(cat "$TMP/basic.fn")"
check_match "info names the engine --mode dbt runs" \
	"^dbt engine +valgrind-[0-9.]+ with xptrace's tool .*--mode auto never picks it" "$("$XPTRACE" info 2>&1)"

# ---------------------------------------------------------------- threads
rec thread "$PROGS/step_thread"
same_count thread
check_eq "thread: two threads, each with its own PT queue (perf's tids of PT samples)" 2 \
	"$(awk '{ print $2 }' "$TMP/thread.pinsn" | sort -u | wc -l)"

# ---------------------------------------------------------------- signals
rec raise "$PROGS/sig_raise"
same_count raise
calls() {	# $1 name, $2 function
	"$XPTRACE" decode -i "$TMP/$1" --functions --percent-limit 0 2>/dev/null | awk -v f="$2" '$NF == f { print $1 }'
}
check_eq "raise: raise, handler and work 25 calls each" "25 25 25" \
	"$(calls raise raise) $(calls raise handler) $(calls raise work)"
rec nested "$PROGS/sig_nested"
same_count nested
check_match "nested: perf sees the handlers' interrupts or starts" "^[1-9]" \
	"$(perf script -i "$TMP/nested/perf.data" --itrace=cr -F flags,sym,addr 2>/dev/null | grep -c 'hw int\|tr strt')"

# ---------------------------------------------------------------- dlopen, longjmp
rec dlopen "$PROGS/step_dlopen"
same_count dlopen
check_match "dlopen: the library's code is in the trace" "libstep_dl\.so" \
	"$("$XPTRACE" decode -i "$TMP/dlopen" --functions --metric insns --percent-limit 0 2>/dev/null)"

# ---------------------------------------------------------------- threads, fork, exec
rec tree "$PROGS/tree" 1 /bin/true
same_count tree
check_eq "tree: processes tree (3 threads) and its forked child, which execs true" \
	"tree tree tree tree true" \
	"$(awk '{ print $1, $2 }' "$TMP/tree.pinsn" | sort -u | awk '{ print $1 }' | sort | xargs)"

# valgrind loads every program at the same addresses: dash's forked child runs dash's
# code at addresses where, after its exec, true's is (the decoder's image of a process
# is per exec, not per pid)
rec exec sh -c '/bin/true; /bin/true'
same_count exec

# the conversion and decode under ASan+UBSan (the recorder finds the tool of build/)
if [ -x "$XPTRACE_ASAN" ]; then
	"$XPTRACE_ASAN" record --mode dbt -q -o "$TMP/asan" -- sh -c '/bin/true; /bin/true' >/dev/null 2>"$TMP/asan.err"
	check_eq "ASan build: record --mode dbt of sh's forks and execs exits 0, nothing on stderr" "0 " \
		"$? $(cat "$TMP/asan.err")"
	check_eq "ASan build: its decode counts perf's instructions, nothing on stderr" \
		"$(perf script -i "$TMP/asan/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l) " \
		"$("$XPTRACE_ASAN" decode -i "$TMP/asan" --functions --metric insns 2>&1 | sed -n 's/.*total \([0-9]*\).*/\1/p;/^xptrace/p') "
else
	not_ok "no ASan build at $XPTRACE_ASAN (make asan)"
fi

# ---------------------------------------------------------------- what dbt refuses
check_exit "dbt: -p is a usage error (valgrind starts the command itself)" 2 \
	"$XPTRACE" record --mode dbt -p 1 -o "$TMP/p"
"$XPTRACE" record -v -o "$TMP/auto" -- /bin/true >/dev/null 2>"$TMP/auto.err"
check_match "auto never picks dbt" "recording in (pt|lbr|sample|step) mode" "$(cat "$TMP/auto.err")"
