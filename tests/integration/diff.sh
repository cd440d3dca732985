#!/bin/bash
# xptrace diff on step traces of tests/progs/diff_work.c built three ways (-O0; -O2;
# -O0 with one more trip of hot's loop), static and at paths of one length so the
# traces differ only where the program does:
#   - per-function A and B equal perf script's instruction counts of each trace
#     (perf decodes our PT) and each trace's own --functions Base;
#   - one more trip shows up in hot only: +10 calls x 10 instructions of its -O0 body;
#   - --lines: per file:line counts equal perf script's per-ip counts put on lines by
#     binutils' addr2line; one more trip changes hot's loop lines only;
#   - --blocks: named by function and line range, their sum the trace's total;
#   - sampled traces: shares with their binomial error, noise marked;
#   - --blocks of two runs of a PIE match by ELF address; --metric time in a unit, with
#     the traced-run caveat;
#   - usage errors exit 2.
. "$(dirname "$0")/../lib.sh"
SRC=$XP_ROOT/tests/progs/diff_work.c
for v in "O0 -O0 1000" "O2 -O2 1000" "T1 -O0 1001"; do
	set -- $v
	mkdir -p "$TMP/$1"
	cc -g "$2" -DTRIPS="$3" -static -fno-pie -no-pie -o "$TMP/$1/dw" "$SRC" ||
		{ not_ok "build diff_work $1"; exit 1; }
	"$TMP/$1/dw" >/dev/null 2>&1
	want=$?	# record passes the program's exit status on, as perf record
	setarch -R "$XPTRACE" record -q --mode step -o "$TMP/t$1" -- "$TMP/$1/dw" 2>"$TMP/$1.err"
	check_eq "step record of $1 (exit: the program's, $want)" "$want" "$?"
	perf script -i "$TMP/t$1/perf.data" --itrace=i0ns -F ip,sym 2>/dev/null | awk '{n[$2]++} END {for (s in n) print s, n[s]}' |
		sort >"$TMP/$1.perf"
	"$XPTRACE" decode -i "$TMP/t$1" --functions --format jsonl 2>/dev/null |
		python3 -c 'import json, sys
for l in sys.stdin:
    j = json.loads(l); print(j["name"], j["base"])' | sort >"$TMP/$1.fn"
done

"$XPTRACE" diff "$TMP/tO0" "$TMP/tT1" --format jsonl >"$TMP/trip.jsonl" 2>"$TMP/trip.err"
check_eq "diff one more trip: exit 0" 0 "$?"
row() {	# FILE NAME -> "a b delta"
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["name"] == sys.argv[2]: print(j["a"], j["b"], j["delta"])' "$1" "$2"
}
pa=$(awk '$1 == "hot" {print $2}' "$TMP/O0.perf")
pb=$(awk '$1 == "hot" {print $2}' "$TMP/T1.perf")
check_eq "one more trip: hot's A and B are perf script's counts, delta +10 x 10" "$pa $pb 100" "$(row "$TMP/trip.jsonl" hot)"
check_eq "one more trip: no other function changed" "hot" \
	"$(python3 -c 'import json, sys
print(" ".join(j["name"] for j in map(json.loads, open(sys.argv[1])) if j["delta"]))' "$TMP/trip.jsonl")"

"$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" --format jsonl >"$TMP/opt.jsonl" 2>/dev/null
for f in hot other main; do
	want="$(awk -v f=$f '$1 == f {print $2}' "$TMP/O0.perf") $(awk -v f=$f '$1 == f {print $2}' "$TMP/O2.perf")"
	got=$(row "$TMP/opt.jsonl" $f | cut -d' ' -f1-2)
	check_eq "-O0 vs -O2: $f's A and B are perf script's counts" "$want" "$got"
	check_eq "-O0 vs -O2: $f's A and B are each trace's --functions Base" \
		"$(awk -v f=$f '$1 == f {print $2}' "$TMP/O0.fn") $(awk -v f=$f '$1 == f {print $2}' "$TMP/O2.fn")" "$got"
done
check_eq "-O0 vs -O2: the sums of A and B are the traces' instruction totals" \
	"$(awk '{s += $2} END {print s}' "$TMP/O0.perf") $(awk '{s += $2} END {print s}' "$TMP/O2.perf")" \
	"$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
print(sum(j["a"] for j in r), sum(j["b"] for j in r))' "$TMP/opt.jsonl")"
"$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" >"$TMP/opt.txt"
check_match "text: header with both totals and the change" \
	"^# diff functions: insns; A .*tO0 total $(awk '{s += $2} END {print s}' "$TMP/O0.perf"), B .*tO2 total [0-9]+, delta -[0-9]+ \(-[0-9.]+%\)$" \
	"$(head -1 "$TMP/opt.txt")"
check_match "text: the biggest change first, signed" "^ +100110 +70050 +-30060 +-30.03% +10 +10 +hot$" "$(sed -n 3p "$TMP/opt.txt")"
total=$(awk '{s += $2} END {print s}' "$TMP/O0.perf")
check_eq "--threshold 1 hides changes under 1 % of A's total" "hot" \
	"$("$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" --threshold 1 --format csv | tail -n +2 | cut -d, -f8 | tr '\n' ' ' | sed 's/ $//')"
check_eq "csv header" "a,b,delta,delta%,calls_a,calls_b,status,name" \
	"$("$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" --format csv | head -1)"

# --lines against perf script + addr2line: every line of diff_work.c
for k in O0 O2; do
	perf script -i "$TMP/t$k/perf.data" --itrace=i0ns -F ip 2>/dev/null | awk '{n[$1]++} END {for (a in n) print a, n[a]}' >"$TMP/$k.ips"
	awk '{print "0x" $1}' "$TMP/$k.ips" | addr2line -e "$TMP/$k/dw" | sed 's/ (discriminator [0-9]*)//' |
		paste - "$TMP/$k.ips" | awk -F'\t' '$1 ~ /diff_work.c:/ {split($2, c, " "); n[$1] += c[2]} END {for (l in n) print l, n[l]}' |
		sort >"$TMP/$k.lines"
done
"$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" --lines --format jsonl >"$TMP/lines.jsonl" 2>"$TMP/lines.err"
check_eq "--lines: exit 0" 0 "$?"
for side in a b; do
	k=$([ $side = a ] && echo O0 || echo O2)
	check_eq "--lines: $k's instructions per line of diff_work.c are perf script's put on lines by addr2line" 		"$(cat "$TMP/$k.lines")" 		"$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if "diff_work.c:" in j["name"] and j[sys.argv[2]]: print(j["name"], j[sys.argv[2]])' "$TMP/lines.jsonl" $side | sort)"
done
check_eq "--lines, one more trip: only hot's loop lines change, by 100 in all" "diff_work.c:11 diff_work.c:12 100" 	"$("$XPTRACE" diff "$TMP/tO0" "$TMP/tT1" --lines --format jsonl | python3 -c 'import json, sys
r = [j for j in map(json.loads, sys.stdin) if j["delta"]]
print(" ".join(sorted(j["name"].rsplit("/", 1)[-1] for j in r)), sum(j["delta"] for j in r))')"
"$XPTRACE" diff "$TMP/tO0" "$TMP/tO2" --blocks --format jsonl >"$TMP/blocks.jsonl" 2>/dev/null
check_eq "--blocks: the blocks' sums are the traces' totals" 	"$(awk '{s += $2} END {print s}' "$TMP/O0.perf") $(awk '{s += $2} END {print s}' "$TMP/O2.perf")" 	"$(python3 -c 'import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
print(sum(j["a"] for j in r), sum(j["b"] for j in r))' "$TMP/blocks.jsonl")"
check_match "--blocks: hot's loop named by function and lines" '"name":"hot [^"]*diff_work.c:1[12]-12"' "$(cat "$TMP/blocks.jsonl")"

# sampled: a trace against itself changes nothing, every row within the error, the
# error of the top row 1.96 sqrt(2 p (1 - p) / n)
"$XPTRACE" record -q -F 999 -o "$TMP/s" -- "$PROGS/dec_work" 300 >/dev/null 2>&1
"$XPTRACE" diff "$TMP/s" "$TMP/s" --format jsonl >"$TMP/s.jsonl" 2>/dev/null
n=$("$XPTRACE" decode -i "$TMP/s" --functions --format jsonl 2>/dev/null | python3 -c 'import json, sys
print(sum(json.loads(l)["samples"] for l in sys.stdin))')
check_eq "sampled, A against A: no change, all within noise, error from the samples" "ok" \
	"$(python3 -c 'import json, math, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
n = int(sys.argv[2])
bad = [r["name"] for r in rows if r["delta"] != 0 or not r["noise"] or
       abs(r["error"] - 100 * 1.96 * math.sqrt(2 * (r["a%"] / 100) * (1 - r["a%"] / 100) / n)) > 0.001]
print("ok" if rows and not bad else "off: %s (%d rows)" % (bad, len(rows)))' "$TMP/s.jsonl" "$n")"

check_exit "one trace: usage error" 2 "$XPTRACE" diff "$TMP/tO0"
check_exit "unknown option: usage error" 2 "$XPTRACE" diff --bogus "$TMP/tO0" "$TMP/tO2"
"$XPTRACE" diff "$TMP/tO0" "$TMP/s" >/dev/null 2>"$TMP/kinds.err"
check_eq "exact against sampled: usage error" 2 "$?"
check_match "exact against sampled: says what each counts" "A counts insns, B counts .*\(sampled\)" "$(cat "$TMP/kinds.err")"
check_exit "--blocks of sampled traces: usage error" 2 "$XPTRACE" diff --blocks "$TMP/s" "$TMP/s"
check_exit "--lines --metric time: usage error" 2 "$XPTRACE" diff --lines --metric time "$TMP/tO0" "$TMP/tO2"
check_exit "missing trace: exit 1" 1 "$XPTRACE" diff "$TMP/tO0" "$TMP/nonexistent"

# Blocks without line information are named by their ELF address: two runs of one PIE,
# loaded at two addresses (ASLR), are the same blocks.  _start's first block holds
# _start's every instruction perf script lists (ld.so's and the program's _start both).
for k in r1 r2; do
	"$XPTRACE" record -q --mode step -o "$TMP/$k" -- "$PROGS/step_basic" 1 >/dev/null 2>&1
done
"$XPTRACE" diff --blocks "$TMP/r1" "$TMP/r2" --format jsonl >"$TMP/runs.jsonl" 2>/dev/null
# (only the program's own blocks must all match: libc and the vDSO have paths that
# depend on timing, e.g. the vDSO's clock read retried when the kernel updated it
# meanwhile, and one such block new or gone was seen in CI)
check_eq "--blocks, two runs of one PIE: no block of the program new or gone, none named by a runtime address" "0 0" \
	"$(nm --defined-only "$PROGS/step_basic" | awk '$2 ~ /^[tT]$/ { print $3 }' | python3 -c 'import json, re, sys
own = set(sys.stdin.read().split())
r = [json.loads(l) for l in open(sys.argv[1])]
print(sum(1 for j in r if j["status"] and re.split(r"[+ ]", j["name"])[0] in own),
      sum(1 for j in r if re.search(r"\+0x[0-9a-f]{9,}$", j["name"])))' "$TMP/runs.jsonl")"
n_start=$(perf script -i "$TMP/r1/perf.data" --itrace=i0ns -F ip,sym 2>/dev/null | awk '$2 == "_start"' | wc -l)
check_eq "--blocks: _start+0x0 counts perf script's _start instructions in both runs" "$n_start $n_start" \
	"$(python3 -c 'import json, sys
for j in map(json.loads, open(sys.argv[1])):
    if j["name"] == "_start+0x0": print(j["a"], j["b"])' "$TMP/runs.jsonl")"

# --metric time: in a named unit, with the traced-run caveat, as decode prints them
"$XPTRACE" diff --metric time "$TMP/r1" "$TMP/r2" >"$TMP/time.txt" 2>&1
"$XPTRACE" diff --metric time "$TMP/r1" "$TMP/r2" --format jsonl >"$TMP/time.jsonl" 2>/dev/null
check_match "--metric time: totals in a unit" '^# diff functions: time; A .* total [0-9]+\.[0-9]{3} (s|ms|us), B .* total [0-9.]+ (s|ms|us), delta [-+][0-9.]+ (s|ms|us) ' \
	"$(head -1 "$TMP/time.txt")"
check_match "--metric time: a step trace's times are the traced run's" '^# time: of the traced runs .*not native' \
	"$(sed -n 2p "$TMP/time.txt")"
check_match "--metric time: columns name the unit" '^ +A\((s|ms|us)\) +B\((s|ms|us)\) +Delta\((s|ms|us)\) ' "$(sed -n 3p "$TMP/time.txt")"
"$XPTRACE" decode -i "$TMP/r1" --functions --no-inline --metric time --format jsonl 2>/dev/null >"$TMP/r1.time"
check_eq "--metric time jsonl: integer ns, A of every function the trace's own --functions base_traced_ns" "ok" \
	"$(python3 -c 'import json, sys
d = {}
for j in map(json.loads, open(sys.argv[1])): d[j["name"]] = d.get(j["name"], 0) + j["base_traced_ns"]
r = [json.loads(l) for l in open(sys.argv[2])]
bad = [j["name"] for j in r if j["a_traced_ns"] != d.get(j["name"], 0)]
print("ok" if r and not bad else "off: %s" % bad[:5])' "$TMP/r1.time" "$TMP/time.jsonl")"
