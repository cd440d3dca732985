#!/bin/bash
# xptrace decode on sample traces, with the real perf as the oracle: top functions and
# percentages vs `perf report --no-children` (perf's files and xptrace's own), the
# call tree's exact structure, every output format, filters, pipe mode, symbols from
# snapshots after the binary is gone, and build-id mismatches.
. "$(dirname "$0")/../lib.sh"
W=$PROGS/dec_work

# name -> percent from perf report (summed over rows of the same symbol)
perf_pcts() {
	perf report -i "$1" --stdio --no-children --sort sym -g none --percent-limit 0 2>/dev/null |
		awk '/^ +[0-9.]+%/ { p=$1; sub("%","",p); $1=""; $2=""; sub(/^ +/,""); s[$0]+=p }
		     END { for (k in s) printf "%s\t%.2f\n", k, s[k] }' | sort -t$'\t' -k2 -nr
}
xp_pcts() {	# summed by name like perf_pcts (Rust generics share one; perf report shows no inline frames)
	"$XPTRACE" decode -i "$1" --functions --no-inline --format csv 2>/dev/null |
		awk -F, 'NR>1 && $4>0 { s[$NF]+=$4 } END { for (k in s) printf "%s\t%.2f\n", k, s[k] }' |
		sort -t$'\t' -k2 -nr
}
# every function >= 1% in perf: same function in xptrace within 0.5 pp
compare() {	# $1 label, $2 perf.data
	local bad=0 n=0
	perf_pcts "$2" >"$TMP/perf.txt"
	xp_pcts "$2" >"$TMP/xp.txt"
	while IFS=$'\t' read -r name pct; do
		awk -v p="$pct" 'BEGIN{exit !(p >= 1)}' || continue
		n=$((n + 1))
		mine=$(awk -F'\t' -v n="$name" '$1==n {print $2}' "$TMP/xp.txt")
		if [ -z "$mine" ] || ! awk -v a="$pct" -v b="$mine" 'BEGIN{d=a-b; if(d<0)d=-d; exit !(d<=0.5)}'; then
			echo "#   $name: perf $pct%, xptrace ${mine:-missing}"
			bad=1
		fi
	done <"$TMP/perf.txt"
	if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then ok "$1 ($n functions within 0.5 pp)"; else
		not_ok "$1"
		sed 's/^/#   perf: /' "$TMP/perf.txt" | head -8
		sed 's/^/#   xptrace: /' "$TMP/xp.txt" | head -8
	fi
}

perf record -q -e cpu-clock -F 999 -g -o "$TMP/p.data" "$W" 700 >/dev/null 2>&1
compare "top functions match perf report (perf record -F 999 -g)" "$TMP/p.data"

"$XPTRACE" record -q -o "$TMP/xd" -F 999 -g -- "$W" 700 >/dev/null 2>&1
compare "top functions match perf report (xptrace record)" "$TMP/xd/perf.data"

# (the functions csv of p.data, for the checks below that read it)
"$XPTRACE" decode -i "$TMP/p.data" --format csv >"$TMP/p.csv"
# kernel samples are named from kallsyms like perf's [k] rows (when there are any)
kperf=$(perf report -i "$TMP/p.data" --stdio --no-children --sort sym -g none 2>/dev/null |
	awk '$2=="[k]" {print $3}' | sort -u)
if [ -n "$kperf" ]; then
	kxp=$(awk -F, '$(NF-1)=="[kernel.kallsyms]" && $1>0 {print $NF}' "$TMP/p.csv" | sort -u)
	check_eq "kernel symbols as perf names them" "$kperf" "$kxp"
else
	ok "kernel symbols as perf names them # skip: no kernel samples"
fi

# ---- C++ and Rust names, as perf demangles them ----
cat >"$TMP/w.cc" <<'CC'
#include <cstdlib>
namespace work {
volatile unsigned long sink;
template <typename T> __attribute__((noinline)) T spin(T n)
{ T s = 0; for (T i = 0; i < n; i++) { s += i; sink = s; } return s; }
}
int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 200;
	for (int r = 0; r < rounds; r++) { work::spin<unsigned long>(300000UL); work::spin<int>(200000); }
	return 0;
}
CC
if g++ -O1 -g -fno-omit-frame-pointer -o "$TMP/wcc" "$TMP/w.cc" 2>/dev/null; then
	perf record -q -e cpu-clock -F 999 -g -o "$TMP/cc.data" "$TMP/wcc" 300 >/dev/null 2>&1
	compare "C++: demangled names and percentages match perf report" "$TMP/cc.data"
	check_match "C++: template function without return type or parameters" "^work::spin<unsigned long>	" \
		"$(cat "$TMP/xp.txt")"	# (compare's, of cc.data)
else
	ok "C++ demangling # skip: no g++"
fi
cat >"$TMP/r.rs" <<'RS'
mod work {
    pub struct Acc<T> { pub v: T }
    impl<T: Copy + std::ops::Add<Output = T>> Acc<T> {
        #[inline(never)]
        pub fn spin(&mut self, n: u64, one: T) { for _ in 0..n { self.v = std::hint::black_box(self.v + one); } }
    }
}
fn main() {
    let n: u64 = std::env::args().nth(1).map(|s| s.parse().unwrap()).unwrap_or(300);
    let (mut a, mut b) = (work::Acc { v: 0u64 }, work::Acc { v: 0u32 });
    for _ in 0..n { a.spin(300000, 1); b.spin(100000, 1); }
    std::hint::black_box((a.v, b.v));
}
RS
if command -v rustc >/dev/null && rustc -O -g -C force-frame-pointers=yes -o "$TMP/wrs" "$TMP/r.rs" 2>/dev/null; then
	perf record -q -e cpu-clock -F 999 -g -o "$TMP/rs.data" "$TMP/wrs" 300 >/dev/null 2>&1
	compare "Rust: demangled names and percentages match perf report" "$TMP/rs.data"
	check_match "Rust: legacy names without the hash" "^r::work::Acc<T>::spin	" "$(cat "$TMP/xp.txt")"	# (of rs.data)
else
	ok "Rust demangling # skip: no rustc"
fi

# ---- the call tree: structure the program guarantees ----
"$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --format jsonl >"$TMP/tree.jsonl"
total=$(perf report -i "$TMP/p.data" --stdio 2>/dev/null | sed -n 's/^# Samples: \([0-9]*\) .*/\1/p' | head -1)
check_eq "calltree: Base sums to the sample count" "$total" \
	"$(python3 -c 'import json,sys; print(sum(json.loads(l)["base"] for l in open(sys.argv[1])))' "$TMP/tree.jsonl")"
check_eq "calltree: keys are the lower-cased columns plus path (Samples: a tree of samples only)" \
	"base,cum,lvl,module,name,path,rl,samples" \
	"$(head -1 "$TMP/tree.jsonl" | python3 -c 'import json,sys; print(",".join(sorted(json.load(sys.stdin))))')"
check_eq "calltree: recurse nests with RL 2..4 under itself" "1 2 3 4" \
	"$(python3 -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
print(" ".join(str(r["rl"]) for r in rows if r["name"]=="recurse" and r["path"][-2:-1]!=["recurse"] or r["name"]=="recurse" and r["path"].count("recurse")==r["rl"] and r["rl"]>1))' "$TMP/tree.jsonl" | tr ' ' '\n' | sort -u | tr '\n' ' ' | sed 's/ $//')"
check_eq "calltree: work_a reached by two paths" "main/work_a main/work_b/work_a" \
	"$(python3 -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
ps=sorted("/".join(r["path"][r["path"].index("main"):]) for r in rows if r["name"]=="work_a")
print(" ".join(ps))' "$TMP/tree.jsonl")"
check_eq "calltree: Cum = Base + children's Cum, Samples = Cum with --metric samples" "ok" \
	"$(python3 -c '
import json,sys
rows=[json.loads(l) for l in open(sys.argv[1])]
bad=0
for i,r in enumerate(rows):
    kids=[]
    for s in rows[i+1:]:
        if s["lvl"]<=r["lvl"]: break
        if s["lvl"]==r["lvl"]+1: kids.append(s)
    if r["cum"]!=r["base"]+sum(k["cum"] for k in kids) or r["samples"]!=r["cum"]: bad+=1
print("ok" if not bad else "bad %d" % bad)' "$TMP/tree.jsonl")"
text=$("$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples)
check_match "calltree text: header and indented rows" "^Lvl +RL +Samples +Base +Cum +Module +Name$" "$text"
# issue 27 item 20: the header says what the columns mean for this trace
check_eq "calltree text: the legend line" \
	"# Samples: samples of cpu-clock; Base: self samples; Cum: with callees" "$(printf '%s\n' "$text" | sed -n 2p)"
check_eq "functions text: the legend line" \
	"# Samples: samples of cpu-clock; Base: self cpu-clock; Cum: with callees" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --functions | sed -n 2p)"
check_match "calltree text: indentation by level, the module before" "^  2 +1 +[0-9]+ +[0-9]+ +[0-9]+  dec_work +    main$" "$text"
# the same default metric as --functions (the event's period, perf report's Overhead)
check_eq "calltree and functions: one default metric, cpu-clock in a unit" \
	"$("$XPTRACE" decode -i "$TMP/p.data" | head -1 | sed 's/^# samples: //')" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --calltree | head -1 | sed 's/^# sampled tree: //')"

# ---- group reads: one sampling event, the others read in every sample ----
perf record -q -e '{cpu-clock,task-clock}:S' -F 999 -g -o "$TMP/g.data" "$W" 400 >/dev/null 2>&1
want=$(perf script -i "$TMP/g.data" -F event,period 2>/dev/null |
	awk '{gsub(":","",$2); s[$2]+=$1} END{print s["cpu-clock"], s["task-clock"]}')
check_eq "group read: per-event totals equal perf script's" "$want" \
	"$("$XPTRACE" decode -i "$TMP/g.data" --format csv | tee "$TMP/g.csv" | awk -F, 'NR>1{a+=$2; b+=$6} END{print a, b}')"
check_eq "group read: a column per read event" "samples,base_ns,cum_ns,base%,cum%,task-clock,module,name" \
	"$(head -1 "$TMP/g.csv")"
check_match "group read: --metric picks the other event" "^# samples: task-clock, total [0-9]+\.[0-9]{3} (s|ms|us)$" \
	"$("$XPTRACE" decode -i "$TMP/g.data" --metric task-clock | head -1)"

# the same group as cycles+instructions (no PMU here: the file is relabelled)
python3 "$FIXTURES/perfdata/as-hardware.py" "$TMP/g.data" "$TMP/hw.data"
"$XPTRACE" decode -i "$TMP/hw.data" --format csv >"$TMP/hw.csv"
check_eq "cycles+instructions: IPC column" "samples,base,cum,base%,cum%,instructions,ipc,module,name" \
	"$(head -1 "$TMP/hw.csv")"
check_eq "IPC = instructions / cycles per function" "ok" \
	"$(awk -F, 'NR>1 && $2>0 {
		want=sprintf("%.4f", $6/$2); if (want != $7) bad++ } END {print bad ? "bad" : "ok"}' "$TMP/hw.csv")"
check_eq "cycles+instructions: totals equal perf script's" "$want" \
	"$(awk -F, 'NR>1{a+=$2; b+=$6} END{print a, b}' "$TMP/hw.csv")"

# ---- DWARF unwinding: a binary without frame pointers ----
cc -O1 -g -fomit-frame-pointer -fno-inline -o "$TMP/nofp" "$XP_ROOT/tests/progs/dec_work.c"
perf record -q -e cpu-clock -F 999 --call-graph dwarf -o "$TMP/dw.data" "$TMP/nofp" 500 >/dev/null 2>&1
compare "dwarf callchains: top functions match perf report" "$TMP/dw.data"
folded=$("$XPTRACE" decode -i "$TMP/dw.data" --calltree --metric samples --format folded)
check_match "dwarf: full stacks through callers without frame pointers" "main;work_b;work_a;spin [0-9]+$" "$folded"
# 3 levels or more: a loaded machine makes perf lose some of these 8 KiB samples, and the
# deepest stacks are the rarest (only 3 levels were left once under load)
check_match "dwarf: recursion unwound" "main(;recurse){3,};spin [0-9]+$" "$folded"
"$XPTRACE" record -q -o "$TMP/xdw" -F 999 --call-graph dwarf -- "$TMP/nofp" 500 >/dev/null 2>&1
check_match "dwarf: xptrace's own recording" "main;work_b;work_a;spin [0-9]+$" \
	"$("$XPTRACE" decode -i "$TMP/xdw" --calltree --metric samples --format folded)"

# ---- other formats ----
"$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --format folded >"$TMP/f.folded"
check_eq "folded: counts sum to the samples" "$total" "$(awk '{s+=$NF} END{print s}' "$TMP/f.folded")"
check_match "folded: root-first frames" "main;work_b;work_a;spin [0-9]+$" "$(cat "$TMP/f.folded")"
"$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --format callgrind -o "$TMP/cg.out"
cga=$(callgrind_annotate "$TMP/cg.out" 2>&1)
check_match "callgrind: loads in callgrind_annotate" "PROGRAM TOTALS|Ir|samples" "$cga"
if printf '%s\n' "$cga" | grep -qi "warning"; then not_ok "callgrind_annotate warns"; printf '%s\n' "$cga" | grep -i warning | head -3; else ok "callgrind_annotate without warnings"; fi
check_match "callgrind: fn=/cfn=/calls= lines" "^calls=[0-9]+ " "$(grep -A1 '^cfn=' "$TMP/cg.out")"
check_eq "callgrind: a sample tree's header says calls= counts samples" \
	"desc: Calls: calls= counts the samples through a call arc, not calls" "$(grep '^desc:' "$TMP/cg.out")"
check_eq "callgrind: total is the sample count" "$total" \
	"$(sed -n 's/^summary: \([0-9]*\).*/\1/p' "$TMP/cg.out")"
csv=$(head -1 "$TMP/p.csv")
check_eq "csv header (cpu-clock periods: integer ns)" "samples,base_ns,cum_ns,base%,cum%,module,name" "$csv"
check_match "functions jsonl" '^\{"samples":[0-9]+,"base_ns":[0-9]+,"cum_ns":[0-9]+,"base%":[0-9.]+,"cum%":[0-9.]+,"module":"dec_work","name":"spin"\}$' \
	"$("$XPTRACE" decode -i "$TMP/p.data" --format jsonl | head -1)"
check_eq "functions: main's Cum% is 100 minus kernel/libc-only samples" "main" \
	"$(awk -F, '$NF=="main" && $5>95 {print $NF}' "$TMP/p.csv")"

# ---- filters and metrics ----
tid=$(perf script -i "$TMP/p.data" -F tid 2>/dev/null | head -1 | tr -d ' ')
check_eq "--tid keeps that thread" "$total" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --tid "$tid" --format folded | awk '{s+=$NF} END{print s}')"
check_eq "--tid of another thread: empty" "" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --tid 1 --format folded)"
check_eq "--comm" "$total" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --calltree --metric samples --comm dec_work --format folded | awk '{s+=$NF} END{print s}')"
check_match "--metric samples" "^# samples: samples, total $total$" "$("$XPTRACE" decode -i "$TMP/p.data" --metric samples)"
check_exit "unknown metric is a usage error" 2 "$XPTRACE" decode -i "$TMP/p.data" --metric cycles
check_match "unknown metric lists what there is" "no metric 'cycles' in this trace \(have: samples, cpu-clock\)" "$(cat "$TMP/.err")"
check_eq "--percent-limit hides small rows" "0" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --percent-limit 5 --format csv | awk -F, 'NR>1 && $4<5' | wc -l)"
check_exit "folded is not a functions format" 2 "$XPTRACE" decode -i "$TMP/p.data" --functions --format folded
check_match "--per-thread titles each thread" "^# thread $tid \(dec_work\)" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --calltree --per-thread)"

# ---- threads, a forked child that execs: per-thread trees, names and maps over time ----
"$XPTRACE" record -q -o "$TMP/xt" -F 999 -g -- "$PROGS/tree" 300 "$W" 300 >/dev/null 2>&1
check_eq "per-thread sample counts equal perf script's" \
	"$(perf script -i "$TMP/xt/perf.data" -F tid 2>/dev/null | awk '{c[$1]++} END{for (t in c) print t, c[t]}' | sort)" \
	"$("$XPTRACE" decode -i "$TMP/xt" --calltree --metric samples --per-thread --format jsonl |
		python3 -c 'import json,sys,collections
c=collections.Counter()
for l in sys.stdin:
    r=json.loads(l); c[r["tid"]]+=r["base"]
print("\n".join("%d %d" % kv for kv in sorted(c.items())))' | sort)"
child=$(perf script -i "$TMP/xt/perf.data" -F comm,tid 2>/dev/null | awk '$1=="dec_work" {print $2; exit}')
folded=$("$XPTRACE" decode -i "$TMP/xt" --calltree --metric samples --tid "$child" --format folded)
check_match "exec: the child's code before exec symbolized from the old binary" "main;child_spin [0-9]+$" "$folded"
check_match "exec: and after it from the new one" "main;work_b;work_a;spin [0-9]+$" "$folded"
check_eq "--comm selects by the name at the sample's time" \
	"$(perf script -i "$TMP/xt/perf.data" -F comm 2>/dev/null | grep -c '^ *dec_work *$')" \
	"$("$XPTRACE" decode -i "$TMP/xt" --calltree --metric samples --comm dec_work --format folded | awk '{s+=$NF} END{print s}')"
check_eq "vdso symbols from the snapshot store" "" \
	"$(printf '%s\n' "$folded" | grep -E 'clock_gettime[^;]*;0x' || true)"

# ---- pipe mode ----
perf record -q -e cpu-clock -F 999 -g -o - "$W" 300 2>/dev/null >"$TMP/pipe.data"
check_match "pipe mode from stdin" "dec_work +spin$" "$("$XPTRACE" decode -i - <"$TMP/pipe.data" | sed -n 4p)"
check_match "pipe mode file" "dec_work +spin$" "$("$XPTRACE" decode -i "$TMP/pipe.data" | sed -n 4p)"
# a pipe carries no build-ids: kernel addresses are named from /proc/kallsyms, as in
# file mode and by perf, when the recorded kernel map's _text is this boot's.  dd's
# time is mostly in the kernel; each kernel sample's leaf is the symbol perf names
# (compared by address: kallsyms aliases, __pi___x86_indirect_thunk_rax and
# __x86_indirect_thunk_rax, are one function)
perf record -q -e cpu-clock -F 999 -g -o - -- dd if=/dev/zero of=/dev/null bs=1 count=300000 2>/dev/null >"$TMP/kpipe.data"
perf script -i "$TMP/kpipe.data" -F ip,sym -G 2>/dev/null | awk '$1 ~ /^ffff/ { print $2 }' >"$TMP/kpipe.perf"
"$XPTRACE" decode -i - --format jsonl <"$TMP/kpipe.data" >"$TMP/kpipe.jsonl" 2>/dev/null
check_eq "pipe mode: kernel samples named as perf names them, none left raw" "same" "$(python3 - "$TMP/kpipe.perf" "$TMP/kpipe.jsonl" <<'PY'
import collections, json, sys
addr = {}
for l in open("/proc/kallsyms"):
    a, t, n = l.split()[:3]
    addr.setdefault(n, a)
perf = collections.Counter(addr.get(n, n) for n in open(sys.argv[1]).read().split())
xp = collections.Counter()
for l in open(sys.argv[2]):
    r = json.loads(l)
    if r["module"] == "[kernel.kallsyms]" and r["samples"]:
        xp[addr.get(r["name"], r["name"])] += r["samples"]
print("same" if perf == xp and sum(perf.values()) > 50 else "perf %s xptrace %s" % (sorted(perf.items())[:5], sorted(xp.items())[:5]))
PY
)"

# ---- symbols after the binary is gone: the trace's snapshot store ----
cp "$W" "$TMP/gone"
"$XPTRACE" record -q -o "$TMP/snap" -F 999 -g -- "$TMP/gone" 300 >/dev/null 2>&1
rm -f "$TMP/gone"
rm -rf "$HOME/.debug"
check_match "symbols from the snapshot store after delete" "gone +spin$" "$("$XPTRACE" decode -i "$TMP/snap" | sed -n 4p)"
check_match "callers too" "work_b" "$("$XPTRACE" decode -i "$TMP/snap" --calltree)"
check_match "perf.data path inside the trace dir finds the store" "gone +spin$" \
	"$("$XPTRACE" decode -i "$TMP/snap/perf.data" | sed -n 4p)"

# ---- perf's cache (~/.debug), then a changed binary at the recorded path ----
cp "$W" "$TMP/chg"
perf record -q -e cpu-clock -F 999 -g -o "$TMP/c.data" "$TMP/chg" 300 >/dev/null 2>&1
rm -f "$TMP/chg"
check_match "symbols from ~/.debug after delete" "chg +spin$" "$("$XPTRACE" decode -i "$TMP/c.data" | sed -n 4p)"
rm -rf "$HOME/.debug"
cc -O1 -g -fno-omit-frame-pointer -DCHANGED -o "$TMP/chg" "$XP_ROOT/tests/progs/dec_work.c"
out=$("$XPTRACE" decode -i "$TMP/c.data" 2>&1)
check_match "build-id mismatch is reported" "xptrace: $TMP/chg: build-id mismatch \(trace has [0-9a-f]{40}, file has [0-9a-f]{40}\)" "$out"
check_match "the changed file's symbols are not used" "chg +0x[0-9a-f]+$" "$(printf '%s\n' "$out" | grep -v '^xptrace:' | sed -n 4p)"

# ---- decode -j: the file read and ordered on a second thread, decoded in order on the
# first: every view and format the same bytes whatever -j (small chunks between the two
# threads with XPTRACE_PIECE_SIZE, so these short traces cross many of them).  Each
# trace in 4 of the 10 views, each view on 4 traces, rotating (all 100 pairs took half
# the suite's time) ----
views=("--functions" "--calltree --metric samples" "--calltree --metric samples --format folded"
	"--calltree --metric samples --format callgrind" "--calltree --format pprof" "--functions --format jsonl"
	"--calls --format chrome" "--blocks" "--annotate spin" "--calltree --per-thread")
k=0
for in in "$TMP/p.data" "$TMP/xd" "$TMP/g.data" "$TMP/hw.data" "$TMP/dw.data" "$TMP/xdw" "$TMP/xt" \
	"$TMP/pipe.data" "$TMP/snap" "$TMP/c.data"; do
	for v in 0 1 2 3; do
		view=${views[$(((k + 3 * v) % 10))]}
		# shellcheck disable=SC2086
		one=$("$XPTRACE" decode -i "$in" $view -j1 2>&1 | md5sum)
		# shellcheck disable=SC2086
		check_eq "${in#"$TMP"/}: $view -j2 as -j1" "$one" \
			"$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode -i "$in" $view -j2 2>&1 | md5sum)"
	done
	check_eq "${in#"$TMP"/}: -j4 as -j1" "$("$XPTRACE" decode -i "$in" -j1 2>&1 | md5sum)" \
		"$("$XPTRACE" decode -i "$in" -j4 2>&1 | md5sum)"
	k=$((k + 1))
done
# -v says it: two threads (the reader, the decode), one with -j1 or from a pipe
check_match "-v -j2: decoded on two threads, one a worker" \
	"^xptrace: decoded on 2 threads \(-j2: 1 worker and the thread building the report\)$" \
	"$("$XPTRACE" decode -i "$TMP/p.data" -v -j2 2>&1 >/dev/null)"
check_match "-v -j1: on one" "^xptrace: decoded on 1 thread \(-j1\)$" \
	"$("$XPTRACE" decode -i "$TMP/p.data" --verbose -j1 2>&1 >/dev/null)"
check_match "-v -j2 from a pipe: on one (its attrs come as it is read)" "^xptrace: decoded on 1 thread \(-j2\)$" \
	"$("$XPTRACE" decode -i - -v -j2 <"$TMP/pipe.data" 2>&1 >/dev/null)"

# ---- errors ----
check_exit "missing trace" 1 "$XPTRACE" decode -i "$TMP/nope"
check_match "missing trace message" "^xptrace: $TMP/nope: No such file or directory \(give a trace directory or perf.data file with -i\)$" "$(cat "$TMP/.err")"
(cd "$TMP" && check_exit "default xptrace.data missing" 1 "$XPTRACE" decode)
check_match "default trace message" "record one with .xptrace record." "$(cat "$TMP/.err")"
head -c 200 /dev/zero >"$TMP/bad.data"
check_exit "not a perf.data" 1 "$XPTRACE" decode -i "$TMP/bad.data"
check_match "not a perf.data message" "not a perf.data file \(bad magic\)" "$(cat "$TMP/.err")"
check_exit "unknown option" 2 "$XPTRACE" decode --frobnicate
check_exit "two views" 2 "$XPTRACE" decode --calltree --functions

# ---- the same views on an exact trace (step mode: every call) ----
if "$XPTRACE" record -q --mode step -o "$TMP/xs" -- "$W" 5 >/dev/null 2>&1; then
	calls=$("$XPTRACE" decode -i "$TMP/xs" --functions --format csv |
		awk -F, '$NF ~ /^(spin|work_a|work_b|recurse)$/ {c[$NF]=$1} END {print c["work_b"], c["work_a"], c["recurse"], c["spin"]}')
	read -r b a r sp <<<"$calls"
	check_eq "exact trace: --functions Calls, every call (one loop = b, 2a, 4 recurse: recurse(3) recurses, 7 spin)" \
		"$b $((2 * b)) $((4 * b)) $((7 * b))" "$calls"
	check_match "exact trace: recursion in the call tree with exact calls" \
		"^ +[0-9]+ +4 +$b +[0-9]+ +[0-9]+ +dec_work +recurse$" "$("$XPTRACE" decode -i "$TMP/xs" --calltree --percent-limit 0 | sed 's/  */ /g; s/^/ /')"
else
	ok "exact trace views # skip: step mode unavailable"
fi
