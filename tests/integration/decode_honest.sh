#!/bin/bash
# Every report honest about what it counts (issue 27):
# - two sampling events (perf record -e A,B): Samples are the chosen event's (--metric,
#   else the first), per function as perf report -n per event; calltree Calls too;
# - --insn/--blocks --sym: a glob as --calls takes it; no match says so, exit 1.
. "$(dirname "$0")/../lib.sh"

# --- two sampling events, periods 4:1 so their sample counts differ
perf record -q -e cpu-clock/period=1000000/,task-clock/period=250000/ -o "$TMP/two.data" \
	"$PROGS/dec_work" 100 >/dev/null 2>&1
perf script -i "$TMP/two.data" -F event,ip,sym 2>/dev/null |
	awk '{sub(/\/.*/, "", $1); n[$1 " " $3]++} END {for (k in n) print k, n[k]}' | sort >"$TMP/two.perf"
per_fn() {	# METRIC_OPTION... -> "name samples" lines of decode --functions (samples > 0)
	"$XPTRACE" decode -i "$TMP/two.data" --functions --no-inline --format jsonl "$@" 2>/dev/null | python3 -c 'import json, sys
for l in sys.stdin:
    j = json.loads(l)
    if j["samples"]: print(j["name"], j["samples"])' | sort
}
check_eq "two events: Samples per function are the first event's, as perf report -n" \
	"$(awk '$1 == "cpu-clock" {print $2, $3}' "$TMP/two.perf" | sort)" "$(per_fn)"
check_eq "two events, --metric the second: its samples per function" \
	"$(awk '$1 == "task-clock" {print $2, $3}' "$TMP/two.perf" | sort)" "$(per_fn --metric task-clock/period=250000/)"
check_eq "two events: calltree Samples of spin are the first event's samples" \
	"$(awk '$1 == "cpu-clock" && $2 == "spin" {print $3}' "$TMP/two.perf")" \
	"$("$XPTRACE" decode -i "$TMP/two.data" --calltree --format jsonl 2>/dev/null | python3 -c 'import json, sys
print(sum(j["samples"] for j in map(json.loads, sys.stdin) if j["name"] == "spin"))')"
check_eq "two events: the other event is a column (its period, as perf's Event count)" \
	"$(perf script -i "$TMP/two.data" -F event,period,ip,sym 2>/dev/null | awk '$2 ~ /^task-clock/ && $4 == "spin" {s += $1} END {print s}')" \
	"$("$XPTRACE" decode -i "$TMP/two.data" --functions --format jsonl 2>/dev/null | python3 -c 'import json, sys
print(sum(j["task-clock/period=250000/"] for j in map(json.loads, sys.stdin) if j["name"] == "spin"))')"

# --- --sym on the instruction views: globs as --calls takes them; nothing matched, exit 1
"$XPTRACE" record -q --mode step -o "$TMP/st" -- "$PROGS/step_basic" 1 >/dev/null 2>&1
nfib=$(perf script -i "$TMP/st/perf.data" --itrace=i0ns -F ip,sym 2>/dev/null | awk '$2 == "fib"' | wc -l)
check_eq "--insn --sym 'fi*': fib's instructions, as many as perf script lists" "$nfib" \
	"$("$XPTRACE" decode -i "$TMP/st" --insn --sym 'fi*' -F sym 2>/dev/null | grep -c '^ *fib$')"
check_match "--blocks --sym 'fi*': fib's blocks, perf script's instruction count" "^# [0-9]+ blocks, $nfib instructions" \
	"$("$XPTRACE" decode -i "$TMP/st" --blocks --sym 'fi*' 2>&1 | head -1)"
for v in insn blocks; do
	check_exit "--$v --sym nosuch: exit 1" 1 "$XPTRACE" decode -i "$TMP/st" --$v --sym nosuch
	check_match "--$v --sym nosuch: says so" "no code of a function named 'nosuch' in the trace" "$(cat "$TMP/.err")"
	check_eq "--$v --sym nosuch: prints no report" "" "$(cat "$TMP/.out")"
done

# --- a recorder SIGKILLed right after a flush: the header's data size matches the file,
# no features (what pd_write leaves between flushes; made here from a finished trace,
# as a kill cannot be timed to the byte).  decode says it was not finalized, and a
# step trace's times stay the traced run's.
cp -r "$TMP/st" "$TMP/killed"
python3 - "$TMP/killed/perf.data" <<'PY'
import struct, sys
with open(sys.argv[1], 'r+b') as f:
    off, size = struct.unpack_from('<QQ', f.read(56), 40)	# the data section
    f.seek(72); f.write(b'\0' * 32)	# no features
    f.truncate(off + size)
PY
"$XPTRACE" decode -i "$TMP/killed" --functions --metric time >"$TMP/killed.out" 2>"$TMP/killed.err"
check_eq "killed at a flush: decodes (exit 0)" 0 $?
check_match "killed at a flush: says the recording was not finalized" "killed/perf.data: header has no features \(recording was not finalized\)" \
	"$(cat "$TMP/killed.err")"
check_match "killed at a flush: a step trace's --metric time is still the traced run's" "^# time: of the traced run .*not native" \
	"$(sed -n 3p "$TMP/killed.out")"
check_eq "killed at a flush: the same instructions as the finished trace" \
	"$("$XPTRACE" decode -i "$TMP/st" --functions 2>/dev/null | head -1)" \
	"$("$XPTRACE" decode -i "$TMP/killed" --functions 2>/dev/null | head -1)"

# --- probe compensation: said only where it applies
for v in functions calltree routines; do
	check_exit "--$v --no-compensate on a trace without probes: usage error" 2 "$XPTRACE" decode -i "$TMP/st" --$v --no-compensate
	check_match "... saying the trace has no probes" "no-compensate: this trace has no probes" "$(cat "$TMP/.err")"
done
"$XPTRACE" record -q -o "$TMP/pr" --probe fib -- "$PROGS/step_basic" 1 >/dev/null 2>&1
check_match "probe trace in time: the compensation is said" "^# probe overhead compensated: [0-9]+ ns per probed call" \
	"$("$XPTRACE" decode -i "$TMP/pr" --calltree 2>/dev/null | sed -n 3p)"
for v in calltree functions routines; do
	check_eq "probe trace, --$v --metric samples: no claim of compensated ns" "" \
		"$("$XPTRACE" decode -i "$TMP/pr" --$v --metric samples 2>/dev/null | grep 'probe overhead')"
done

# --- chrome export of a step trace: it has timestamps (--metric time), and says so
"$XPTRACE" decode -i "$TMP/st" --calls --format chrome -o "$TMP/c.json" 2>/dev/null
check_eq "chrome, step trace: the instruction clock, saying --metric time gives timestamps" \
	"instructions (1 us = 1 instruction; --metric time: the trace's timestamps)" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["otherData"]["clock"])' "$TMP/c.json")"
"$XPTRACE" decode -i "$TMP/st" --calls --format chrome --metric time -o "$TMP/ct.json" 2>/dev/null
check_match "chrome --metric time, step trace: the perf clock of the traced run" "^perf clock \(CLOCK_MONOTONIC\) of the traced run .*not native" \
	"$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["otherData"]["clock"])' "$TMP/ct.json")"
span=$(perf script -i "$TMP/st/perf.data" --itrace=i0ns -F time --ns 2>/dev/null | tr -d ' :' | sed -n '1p;$p' | tr '\n' ' ')
check_eq "chrome --metric time: every call within perf script's first and last instruction time" "ok" \
	"$(python3 -c 'import json, sys
a, b = (round(float(x) * 1e9) for x in sys.argv[2].split())
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e["ph"] == "X"]
bad = [e["name"] for e in ev if not a <= round(e["ts"] * 1000) <= b]
print("ok" if ev and not bad else "off: %d of %d %s" % (len(bad), len(ev), bad[:3]))' "$TMP/ct.json" "$span")"

# --- --time: every view counts the instructions --insn lists.  Two threads spinning
# (step_async): a block of one thread that the other's trace runs in the middle of
# has its head and tail at two times; a window edge between them.
"$XPTRACE" record -q --mode step -o "$TMP/as" -- "$PROGS/step_async" >/dev/null 2>&1
read -r ta tb < <("$XPTRACE" decode -i "$TMP/as" --insn -F tid,time,ip,disasm 2>/dev/null | awk '{
	t = $2; sub(":", "", t)
	if (($1 in last) && last[$1] != t && prev[$1] !~ /^(j|call|ret|syscall|sysret|int|iret|hlt|ud2)/) { print last[$1], t; exit }
	last[$1] = t; prev[$1] = $4 }')
if [ -z "$tb" ]; then
	not_ok "step_async: a block cut by a change of time (none found)"
else
	for w in "$tb-" "-$ta"; do
		n=$("$XPTRACE" decode -i "$TMP/as" --insn --time "$w" --format jsonl 2>/dev/null | grep -c '"ip"')
		check_eq "--time $w (a block's tail after it): --blocks, --functions, --calltree count --insn's instructions" \
			"$n $n $n" \
			"$("$XPTRACE" decode -i "$TMP/as" --blocks --time "$w" 2>/dev/null | head -1 | awk '{print $4}') $("$XPTRACE" decode -i "$TMP/as" --functions --time "$w" 2>/dev/null | head -1 | awk '{print $NF}') $("$XPTRACE" decode -i "$TMP/as" --calltree --time "$w" 2>/dev/null | head -1 | awk '{print $NF}')"
	done
fi
