#!/bin/bash
# decode's options do what they say on every view (issue 15, items 8-14): --tid, --comm
# and --time filter every view, a view refuses what it cannot honour (exit 2), a filter
# that matches nothing exits 1, a metric the trace has no data for is refused,
# step-mode times are said to be the traced run's, one default view (hot functions)
# and a default limit for large trees, Calls count every call, times in units, and
# the process of each row (--per-process, folded --per-thread).
# Expected values: hand counts of the shipped traces (traces/step-*), the unfiltered
# stream of the same trace, addr2line, and perf report / perf script on the same file.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
SB=$XP_ROOT/traces/step-basic
ST=$XP_ROOT/traces/step-thread

# ---- a sample trace of two processes: tree (two threads) and its child, which
# spins as `tree` and then execs dec_work ----
"$XPTRACE" record -q -o "$TMP/s" -F 999 -g -- "$PROGS/tree" 150 "$PROGS/dec_work" 150 >/dev/null 2>&1
check_eq "sample trace recorded" 0 $?
S=$TMP/s
PD=$S/perf.data

in_range() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }
# sum of the Samples column of a csv report
samples() { awk -F, 'NR > 1 { s += $1 } END { print s + 0 }'; }
# sum of Lvl-1 Cum of a jsonl tree (key $1)
lvl1() { python3 -c '
import json, sys
print(sum(r[sys.argv[1]] for r in map(json.loads, sys.stdin) if r["lvl"] == 1))' "$1"; }

# ---- (8) every filter on every view ----
# the window: the middle of step-basic; the instructions in it counted on the
# unfiltered instruction stream
A=7917.900000000
B=7918.100000000
want=$("$XPTRACE" decode -i "$SB" --insn --format jsonl | python3 -c '
import json, sys
a, b = 7917900000000, 7918100000000
print(sum(1 for r in map(json.loads, sys.stdin) if "ip" in r and a <= r.get("time", 0) <= b))')
check "--time window: part of the trace ($want of 115918 instructions)" in_range 1000 100000 "$want"
check_eq "--time A-B --functions: total = the window's instructions" "# functions: insns, total $want" \
	"$("$XPTRACE" decode -i "$SB" --functions --time "$A-$B" | head -1)"
check_eq "--time A-B --calltree: Lvl-1 Cum = the window's instructions" "$want" \
	"$("$XPTRACE" decode -i "$SB" --calltree --time "$A-$B" --format jsonl | lvl1 cum)"
check_eq "--time A-B --routines: total = the window's instructions" "# routines: insns, total $want" \
	"$("$XPTRACE" decode -i "$SB" --routines --time "$A-$B" | head -1)"
check_eq "--time A-B --arcs: total = the window's instructions" "# arcs: insns, total $want" \
	"$("$XPTRACE" decode -i "$SB" --arcs --time "$A-$B" | head -1)"
# --arcs counts a recursive arc once (issue 27 item 20): step_basic's fib(8) runs 67
# activations, 33 inner ones of 19 instructions and 34 leaves of 12 (1035 in all); the
# arc fib -> fib holds every activation but the outermost: Cum 1035 - 19 = 1016, not
# the sum over its depths.  fib's own row: Cum 1035 as --routines and --functions.
check_eq "--arcs: fib's caller rows (main, fib), self and callee: calls, Base, Cum" \
	"caller main 1 19 1035
caller fib 66 1016 1016
self fib 67 1035 1035
callee fib 66 1016 1016" "$("$XPTRACE" decode -i "$SB" --arcs --format jsonl | python3 -c '
import json, sys
for r in map(json.loads, sys.stdin):
    if r["routine"] == "fib":
        print(r["role"], r["name"], r["calls"], r["base"], r["cum"])')"
check_match "--time A-B --blocks: the window's instructions" "blocks, $want instructions," \
	"$("$XPTRACE" decode -i "$SB" --blocks --time "$A-$B" | head -1)"
# samples: perf script's samples in [first, middle] of the trace
perf script -i "$PD" -F tid,time -G --ns 2>/dev/null | tr -d ':' >"$TMP/st.txt"
read -r t0 tm <<<"$(awk '{ t[NR] = $2 } END { print t[1], t[int(NR / 2)] }' "$TMP/st.txt")"
n=$(awk -v a="$t0" -v b="$tm" '$2 >= a && $2 <= b' "$TMP/st.txt" | wc -l)
check_eq "--time on samples: --functions counts perf script's samples in the window ($n)" "$n" \
	"$("$XPTRACE" decode -i "$S" --functions --time "$t0-$tm" --format csv | samples)"
check_eq "--time on samples: --calltree too" "$n" \
	"$("$XPTRACE" decode -i "$S" --calltree --metric samples --time "$t0-$tm" --format folded | awk '{ s += $NF } END { print s }')"
# perf's percentages of the trace's span: the samples perf script --time keeps
for pct in 10%-60% 20%/2 30%; do
	check_eq "--time $pct on samples: perf script --time $pct's samples" \
		"$(perf script -i "$PD" --time "$pct" -F time -G 2>/dev/null | grep -c .)" \
		"$("$XPTRACE" decode -i "$S" --functions --time "$pct" --format csv | samples)"
done
# +S: seconds after the first sample (HEADER_SAMPLE_TIME's first), as absolute times
first=$(perf report -i "$PD" --header-only 2>/dev/null | sed -n 's/^# time of first sample : \([0-9.]*\)$/\1/p')
read -r ra rb <<<"$(python3 -c 'import sys; f = float(sys.argv[1]); print("%.6f %.6f" % (f + 0.05, f + 0.15))' "$first")"
check_eq "--time +0.05-+0.15: perf script's samples from $ra to $rb" \
	"$(perf script -i "$PD" --time "$ra,$rb" -F time -G 2>/dev/null | grep -c .)" \
	"$("$XPTRACE" decode -i "$S" --functions --time +0.05-+0.15 --format csv | samples)"
check_exit "--time 10% on a step trace (no sample times): a usage error" 2 "$XPTRACE" decode -i "$SB" --time 10%
check_exit "--time 10%/11: a usage error" 2 "$XPTRACE" decode -i "$S" --time 10%/11
# --tid and --comm: perf script's samples of that thread / name
tid=$(awk '{ print $1 }' "$TMP/st.txt" | sort | uniq -c | sort -k2n | awk 'NR == 2 { print $2 }')
check_eq "--tid on samples: perf script's samples of thread $tid" "$(awk -v t="$tid" '$1 == t' "$TMP/st.txt" | wc -l)" \
	"$("$XPTRACE" decode -i "$S" --functions --tid "$tid" --format csv | samples)"
check_eq "--comm dec_work: perf script's samples named so (after the exec)" \
	"$(perf script -i "$PD" -F comm -G 2>/dev/null | grep -cw dec_work)" \
	"$("$XPTRACE" decode -i "$S" --functions --comm dec_work --format csv | samples)"

# what a view cannot honour is refused (exit 2), naming the views that take it
for vo in "calltree --sym main" "functions --sym main" "routines --sym main" "arcs --sym main" \
	  "calltree --srcline" "blocks --srcline" "blocks --percent-limit 5" \
	  "insn --percent-limit 5" "functions --per-thread" "blocks --per-thread" "calltree --per-process" \
	  "probes --tid 1" "functions --syntax intel" "blocks --no-compensate"; do
	# shellcheck disable=SC2086
	check_exit "--$vo: refused (usage error)" 2 "$XPTRACE" decode -i "$SB" --$vo
done
# raw PT's options (--cpu F/M/S, --elf, ...) on a perf.data were ignored
check_exit "--cpu on a perf.data trace: refused (raw PT's option)" 2 "$XPTRACE" decode -i "$SB" --cpu 6/158
check_eq "--cpu: says whose option it is" \
	"xptrace: decode: --cpu is an option of the pt-raw decoder; this trace is decoded by the pt decoder (see 'xptrace help decode')" \
	"$(cat "$TMP/.err")"
check_match "--sym on a tree: says which views take it" \
	"^xptrace: decode: --sym does not apply to --calltree \(it does to --calls, --insn, --blocks, --annotate, --lines, --loops\)" \
	"$("$XPTRACE" decode -i "$SB" --calltree --sym main 2>&1)"

# ---- (9) --srcline, nothing matched, metrics ----
E=$(echo "$SB"/work/wt/crash/build/progs/step_basic/*/elf)
for f in fib deep main; do
	line=$(addr2line -e "$E" "$(nm "$E" | awk -v f=$f '$3 == f { print $1 }')")
	check_eq "--functions --srcline: $f at addr2line's $line" "$line" \
		"$("$XPTRACE" decode -i "$SB" --functions --srcline --format csv | awk -F, -v f=$f '$(NF-1) == f { print $NF }')"
done
# --annotate --srcline (exact trace): each instruction's file:line = addr2line's of its
# address in the ELF (nm's start + the listing's offset), the text above them
fa=$(nm "$E" | awk '$3 == "fib" { print $1 }')
"$XPTRACE" decode -i "$SB" --annotate fib --srcline --format jsonl >"$TMP/ann.jsonl"
python3 -c '
import json, sys
for r in map(json.loads, open(sys.argv[1])): print(hex(int(sys.argv[2], 16) + r["offset"]))' "$TMP/ann.jsonl" "$fa" |
	addr2line -e "$E" | sed 's/ (discriminator [0-9]*)$//' >"$TMP/ann.want"
check_eq "--annotate fib --srcline: every instruction at addr2line's file:line ($(sort -u "$TMP/ann.want" | wc -l) lines)" \
	"$(cat "$TMP/ann.want")" \
	"$(python3 -c '
import json, sys
for r in map(json.loads, open(sys.argv[1])): print("%s:%d" % (r["file"], r["line"]))' "$TMP/ann.jsonl")"
check_eq "--annotate fib --srcline text: a source line wherever the position changes" \
	"$(uniq "$TMP/ann.want" | sed 's|.*/||')" \
	"$("$XPTRACE" decode -i "$SB" --annotate fib --srcline | sed -n 's/^ *: \([^ ]*:[0-9]*\)  .*/\1/p')"
check_eq "--annotate fib --srcline: the same counts as without" \
	"$("$XPTRACE" decode -i "$SB" --annotate fib | awk '/^ +[0-9]+ / { print $1 }')" \
	"$("$XPTRACE" decode -i "$SB" --annotate fib --srcline | awk '/^ +[0-9]+ / { print $1 }')"
check_eq "--annotate without --srcline: no file in jsonl" 0 \
	"$("$XPTRACE" decode -i "$SB" --annotate fib --format jsonl | grep -c '"file"')"
hot=$("$XPTRACE" decode -i "$S" --functions --format csv | awk -F, 'NR == 2 { print $NF }')
check_exit "--annotate $hot on samples takes --srcline (its source lines are always there)" 0 \
	"$XPTRACE" decode -i "$S" --annotate "$hot" --srcline
for v in functions calltree routines insn blocks "annotate main" ranges; do
	# shellcheck disable=SC2086
	check_exit "--$v --tid 999999: nothing matched, exit 1" 1 "$XPTRACE" decode -i "$SB" --$v --tid 999999
	check_eq "--$v --tid 999999: says so, no empty report" \
		"xptrace: decode: nothing in the trace matched --tid 999999 (see the threads with --calltree --per-thread, the times with --insn)|" \
		"$(cat "$TMP/.err")|$(cat "$TMP/.out")"
done
check_exit "--comm nosuch: exit 1" 1 "$XPTRACE" decode -i "$SB" --comm nosuch
check_match "--comm nosuch: says so" "nothing in the trace matched --comm nosuch" "$(cat "$TMP/.err")"
check_exit "--time outside the trace: exit 1" 1 "$XPTRACE" decode -i "$SB" --calltree --time 1-2
check_exit "samples --tid 999999: exit 1" 1 "$XPTRACE" decode -i "$S" --tid 999999
check_exit "step trace --metric cycles (no CYC): refused" 2 "$XPTRACE" decode -i "$SB" --metric cycles
check_eq "step trace: the metrics it has" \
	"xptrace: decode: no metric 'cycles' in this trace (have: insns, time) (see 'xptrace help decode')" \
	"$(cat "$TMP/.err")"
check_exit "sample trace --metric cycles: refused" 2 "$XPTRACE" decode -i "$S" --metric cycles
check_match "sample trace: the metrics it has" "no metric 'cycles' in this trace \(have: samples, cpu-clock\)" \
	"$(cat "$TMP/.err")"

# ---- (10) step mode's times are the traced run's ----
out=$("$XPTRACE" decode -i "$SB" --functions --metric time)
check_match "--metric time on a step trace: the header says traced, not native" \
	"^# time: of the traced run \(step mode stops the program at its branches\), not native times; --metric insns counts exactly$" "$out"
check_match "--metric time on a step trace: jsonl keys say traced ns" '^\{"calls":[0-9]+,"base_traced_ns":[0-9]+,"cum_traced_ns":[0-9]+,' \
	"$("$XPTRACE" decode -i "$SB" --functions --metric time --format jsonl | head -1)"
check_eq "sample trace: no such line" "" "$("$XPTRACE" decode -i "$S" --functions | grep 'traced run')"

# ---- (11) one default view; the default limit of large trees ----
check_eq "step trace: the default view is --functions" "$("$XPTRACE" decode -i "$SB" --functions | md5sum)" \
	"$("$XPTRACE" decode -i "$SB" | md5sum)"
check_eq "sample trace: the default view is --functions" "$("$XPTRACE" decode -i "$S" --functions | md5sum)" \
	"$("$XPTRACE" decode -i "$S" | md5sum)"
check_eq "raw PT: the default view is --functions" \
	"$(cd "$XP_ROOT/traces/pt-spin" && "$XPTRACE" decode --pt trace.pt --elf ptspin:0x555555554000 --functions | md5sum)" \
	"$(cd "$XP_ROOT/traces/pt-spin" && "$XPTRACE" decode --pt trace.pt --elf ptspin:0x555555554000 | md5sum)"
# the tree's nodes: jsonl keeps every one
nodes=$("$XPTRACE" decode -i "$SB" --calltree --format jsonl | wc -l)
check "step-basic's tree: over 200 nodes ($nodes)" in_range 201 100000 "$nodes"
out=$("$XPTRACE" decode -i "$SB" --calltree)
check_eq "a $nodes-node tree: the default limit in the header" \
	"# nodes under 0.5% of the total hidden (the default for trees of over 200 nodes; this one has $nodes): --percent-limit 0 shows them" \
	"$(printf '%s\n' "$out" | sed -n 3p)"
check_eq "a $nodes-node tree: every node shown has Cum >= 0.5 % of 115918" "0" \
	"$(printf '%s\n' "$out" | awk 'NR > 4 && $5 < 579.59' | wc -l)"
# (at most a quarter shown: 109 of 660 with ld.so's and libc's inline nodes, libc6-dbg)
check "a $nodes-node tree: the limit hides most of it" in_range 10 $((nodes / 4)) "$(printf '%s\n' "$out" | tail -n +5 | wc -l)"
check_eq "--percent-limit 0: every node" "$nodes" "$("$XPTRACE" decode -i "$SB" --calltree --percent-limit 0 | tail -n +4 | wc -l)"

# ---- (12) Calls = every call; trees keep per-node counts ----
fn=$("$XPTRACE" decode -i "$SB" --functions --format csv)
check_eq "--functions: fib(8) made 67 calls" "67" "$(printf '%s\n' "$fn" | awk -F, '$NF == "fib" { print $1 }')"
check_eq "--functions: deep(5) made 6 calls" "6" "$(printf '%s\n' "$fn" | awk -F, '$NF == "deep" { print $1 }')"
check_eq "--calltree: fib's nodes keep their own counts (RL 1..8)" "1 2 4 8 16 22 12 2" \
	"$("$XPTRACE" decode -i "$SB" --calltree --format csv | awk -F, '$NF == "fib" { printf "%s%s", s, $3; s = " " }')"

# ---- (13) times in units ----
count=$(perf report -i "$PD" --stdio 2>/dev/null | sed -n 's/^# Event count (approx.): //p')
total=$(awk -v n="$count" 'BEGIN { if (n >= 1e10) printf "%.3f s", n / 1e9; else if (n >= 1e7) printf "%.3f ms", n / 1e6;
	else if (n >= 1e4) printf "%.3f us", n / 1e3; else printf "%d ns", n }')
unit=${total##* }
out=$("$XPTRACE" decode -i "$S" --functions)
check_eq "cpu-clock: the total in $unit = perf report's event count $count ns" "# samples: cpu-clock, total $total" \
	"$(printf '%s\n' "$out" | head -1)"
check_match "cpu-clock: Base and Cum headers name the unit" "^  Samples +Base\($unit\) +Cum\($unit\) +Base% +Cum%" \
	"$(printf '%s\n' "$out" | grep -v '^#' | head -1)"
check_eq "csv: integer ns under base_ns, summing to perf's event count" "$count" \
	"$("$XPTRACE" decode -i "$S" --functions --format csv | awk -F, 'NR == 1 && $2 != "base_ns" { exit } NR > 1 { s += $2 } END { print s }')"
check_match "--calltree --metric cpu-clock: unit in the header" "^Lvl +RL +Samples +Base\($unit\) +Cum\($unit\) +Module +Name$" \
	"$("$XPTRACE" decode -i "$S" --calltree --metric cpu-clock | sed -n 3p)"
check_match "--routines --metric cpu-clock: unit in the header" "Base\($unit\) +Cum\($unit\) +CumRec\($unit\)" \
	"$("$XPTRACE" decode -i "$S" --routines --metric cpu-clock | sed -n 3p)"
check_match "insns are counts: no unit" "^# functions: insns, total 115918$" "$("$XPTRACE" decode -i "$SB" | head -1)"

# ---- (14) the process of each row ----
# vdso samples left out on both sides: perf now and then names nothing ([unknown]) in the
# vdso of the exec'd child, where xptrace reads the snapshot (seen once in CI)
# (the dso is cut off whole: its path may hold spaces)
perf script -i "$PD" -F pid,tid,ip,sym,dso -G 2>/dev/null |
	awk '{ d = ""; if (match($0, / \([^()]*\)$/)) { d = substr($0, RSTART + 1); $0 = substr($0, 1, RSTART - 1) } }
	d != "([vdso])" { split($1, p, "/"); n[p[1] " " $NF]++ }
	END { for (k in n) print k, n[k] }' | sort >"$TMP/perf.pp"
"$XPTRACE" decode -i "$S" --per-process --no-inline --format csv | awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
	$1 > 0 && $c["module"] != "[vdso]" { print $c["pid"], $c["name"], $1 }' | sort >"$TMP/xp.pp"
check_eq "--per-process: samples per (pid, function) = perf script's" "$(cat "$TMP/perf.pp")" "$(cat "$TMP/xp.pp")"
# the default view of a trace of several processes says so (perf script's pids, each
# by its last name: the child exec'd dec_work); one process: no such line
check_eq "--functions of two processes: the header names them" \
	"# $(perf script -i "$PD" -F pid 2>/dev/null | sort -u | grep -c .) processes (tree, dec_work), their functions merged: --per-process shows each one's" \
	"$("$XPTRACE" decode -i "$S" | grep '^# .* processes')"
check_eq "--functions of one process: no such line" "" "$("$XPTRACE" decode -i "$SB" | grep '^# .* processes')"
check "--per-process: two processes" test "$(awk '{ print $1 }' "$TMP/xp.pp" | sort -u | wc -l)" = 2
check_match "--per-process text: Pid and Comm columns, the exec'd name" "^ +[0-9]+ +[0-9.]+ +[0-9.]+ +[0-9.]+% +[0-9.]+% +[0-9]+ +dec_work +dec_work +spin$" \
	"$("$XPTRACE" decode -i "$S" --per-process)"
# folded --per-thread: comm-pid/tid first, as stackcollapse-perf.pl --tid; the samples
# of each thread as perf script counts them
perf script -i "$PD" -F pid,tid -G 2>/dev/null | awk '{ n[$1]++ } END { for (k in n) print k, n[k] }' | sort >"$TMP/perf.th"
"$XPTRACE" decode -i "$S" --calltree --metric samples --per-thread --format folded |
	awk '{ split($1, f, ";"); sub(/^[^-]*-/, "", f[1]); n[f[1]] += $NF } END { for (k in n) print k, n[k] }' | sort >"$TMP/xp.th"
check_eq "folded --per-thread: each stack under comm-pid/tid, samples per thread = perf script's" \
	"$(cat "$TMP/perf.th")" "$(cat "$TMP/xp.th")"
pid=$(awk 'NR == 1 { split($1, p, "/"); print p[1] }' "$TMP/perf.th")
check_match "folded --per-thread: the comm is the thread's" "^tree-$pid/[0-9]+;" \
	"$("$XPTRACE" decode -i "$S" --calltree --per-thread --format folded)"
check_eq "step-thread folded --per-thread: two threads, main's and the second's" \
	"step_thread-17939/17939 step_thread-17939/17940" \
	"$("$XPTRACE" decode -i "$ST" --calltree --per-thread --format folded | cut -d';' -f1 | sort -u | tr '\n' ' ' | sed 's/ $//')"
check_eq "step-thread folded --per-thread: thread 17940's instructions = its --tid total" \
	"$("$XPTRACE" decode -i "$ST" --functions --tid 17940 | sed -n 's/^# functions: insns, total //p')" \
	"$("$XPTRACE" decode -i "$ST" --calltree --per-thread --format folded | awk '/^step_thread-17939\/17940;/ { s += $NF } END { print s }')"

# ---- --functions --sort, --calls --depth (issue 27 item 24) ----
fc=$("$XPTRACE" decode -i "$S" --functions --format csv --percent-limit 0 | tail -n +2)
check_eq "--sort name: the rows in strcmp order of their names (sort's)" \
	"$(printf '%s\n' "$fc" | LC_ALL=C sort -t, -k7,7 -k6,6 | cut -d, -f6,7)" \
	"$("$XPTRACE" decode -i "$S" --functions --sort name,module --format csv --percent-limit 0 | tail -n +2 | cut -d, -f6,7)"
check_eq "--sort cum: the same rows, Cum never growing down the list (sort -n's order)" \
	"$(printf '%s\n' "$fc" | sort -t, -k3,3nr | cut -d, -f3)" \
	"$("$XPTRACE" decode -i "$S" --functions --sort cum --format csv --percent-limit 0 | tail -n +2 | cut -d, -f3)"
check_exit "--sort bogus: a usage error" 2 "$XPTRACE" decode -i "$S" --functions --sort bogus
"$XPTRACE" decode -i "$SB" --calls --format jsonl >"$TMP/calls.all"
for d in 1 2 3; do
	check_eq "--calls --depth $d: exactly the calls of the full listing at depth < $d" \
		"$(python3 -c 'import json, sys
print(sum(1 for l in open(sys.argv[1]) if json.loads(l)["depth"] < int(sys.argv[2])))' "$TMP/calls.all" "$d")" \
		"$("$XPTRACE" decode -i "$SB" --calls --depth "$d" --format jsonl | grep -c .)"
done
check_exit "--calls --depth 0: a usage error" 2 "$XPTRACE" decode -i "$SB" --calls --depth 0
