#!/bin/bash
# decode --loops (issue 28): natural loops of the executed code with exact trip counts,
# on step traces of tests/progs/loops.c run as `loops 7 9 10 1000`, trip counts
# computed by hand from the program:
# - -O1: nested's outer loop 1 entry of 7 trips, its inner loop (depth 2) 7 entries of
#   9 trips; varying entered 10 times with 1..10 trips (55 iterations, median 5);
#   vadd and chain 1000 trips; main's loop 10; the inner loop's instructions per
#   iteration are the instructions objdump lists from its header to its back edge;
# - -O3: vadd vectorized, 4 ints a trip: 250 trips; -O2 -funroll-loops: chain
#   unrolled 8 times: 125 trips;
# - every loop of the whole trace (libc's too): its iterations are the executions of
#   its header address in perf script's instruction trace.
. "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
SRC=$XP_ROOT/tests/progs/loops.c
build_rec() {	# $1 name, $2... cc flags
	local n=$1; shift
	cc "$@" -g -static -o "$TMP/$n" "$SRC" || { not_ok "cc $* loops.c"; return 1; }
	"$XPTRACE" record --mode step -o "$TMP/$n.data" -- "$TMP/$n" 7 9 10 1000 >/dev/null 2>"$TMP/$n.err" ||
		{ not_ok "step record $n"; sed 's/^/#   /' "$TMP/$n.err"; return 1; }
}
# "function first_line depth entries iterations min median max hist" of loops.c's loops
# (first_line: the loop's smallest line, its for statement)
rows() {
	"$XPTRACE" decode -i "$TMP/$1.data" --loops --format jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["file"] and r["file"].endswith("/tests/progs/loops.c"):
        print(r["function"], r["first_line"], r["depth"], r["entries"], r["iterations"], r["trips_min"],
              r["trips_median"], r["trips_max"], r["trips_hist"])'
}
line_of() { grep -n -- "$1" "$SRC" | head -1 | cut -d: -f1; }
in_nested=$(line_of 'for (int j = 0; j < b; j++)')
out_nested=$(line_of 'for (int i = 0; i < a; i++)')

build_rec O1 -O1 || exit 0
"$XPTRACE" decode -i "$TMP/O1.data" --loops --format jsonl >"$TMP/O1.jsonl"
rows O1 | sort >"$TMP/O1.rows"
check_eq "-O1: nested's outer loop: 1 entry, 7 trips" \
	"nested $out_nested 1 1 7 7 7 7 4-7:1" "$(grep "^nested $out_nested " "$TMP/O1.rows")"
check_eq "-O1: nested's inner loop, depth 2: 7 entries of 9 trips" \
	"nested $in_nested 2 7 63 9 9 9 8-15:7" "$(grep "^nested $in_nested " "$TMP/O1.rows")"
check_eq "-O1: varying: 10 entries of 1..10 trips, 55 iterations, median 5, log2 histogram" \
	"varying $(line_of 'for (int i = 0; i < n; i++)') 1 10 55 1 5 10 1:1 2-3:2 4-7:4 8-15:3" "$(grep '^varying ' "$TMP/O1.rows")"
check_eq "-O1: vadd, chain: 1000 trips; main's loop 10" \
	"chain 1 1 1000 1000 1000 1000
main 1 1 10 10 10 10
vadd 1 1 1000 1000 1000 1000" "$(grep -E '^(vadd|chain|main) ' "$TMP/O1.rows" | cut -d' ' -f1,3-8 | sort)"
check_eq "-O1: loops.c has these 6 loops and no other" 6 "$(wc -l <"$TMP/O1.rows")"

# the inner loop's instructions: objdump's from its header to the branch back to it
hdr=$(python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["function"] == "nested" and r["depth"] == 2:
        print(r["header"][2:], "%.3f" % r["insns_per_iter"], r["parent"] is not None)' "$TMP/O1.jsonl")
want=$(objdump -d --no-show-raw-insn "$TMP/O1" | awk -v h="${hdr%% *}" '
	/<nested>:/ { on = 1; next } on && /^$/ { exit }
	on && $1 == h ":" { c = 1 } c && /^ +[0-9a-f]+:/ { n++; if ($0 ~ ("j[a-z]+ +" h " ")) { print n; exit } }')
check_eq "-O1: inner loop's instructions per iteration = objdump's count from header to back edge, in the outer loop" \
	"$want.000 True" "${hdr#* }"

# perf's instruction trace: how often each header address ran
if command -v perf >/dev/null; then
	perf script -i "$TMP/O1.data/perf.data" --itrace=i1i -F ip 2>/dev/null | awk '{ c[$1]++ } END { for (a in c) print a, c[a] }' >"$TMP/perf.ips"
	check_eq "every loop of the trace (libc's too): iterations = perf's executions of its header" "" \
		"$(python3 -c '
import json, sys
runs = dict(l.split() for l in open(sys.argv[2]))
for l in open(sys.argv[1]):
    r = json.loads(l)
    n = int(runs.get(r["header"][2:], 0))
    if n != r["iterations"]:
        print(r["function"], r["header"], r["iterations"], "perf:", n)' "$TMP/O1.jsonl" "$TMP/perf.ips")"
	check_match "the trace has libc loops too" '"function":"(__tunables_init|getenv|_dl_aux_init)"' "$(cat "$TMP/O1.jsonl")"
else
	ok "perf missing # SKIP"
fi

build_rec O3 -O3 || exit 0
check_eq "-O3: vadd vectorized: 1 entry of 1000/4 = 250 trips" "vadd 1 1 250 250 250 250" \
	"$(rows O3 | grep '^vadd ' | cut -d' ' -f1,3-8)"
build_rec unroll -O2 -funroll-loops || exit 0
check_eq "-O2 -funroll-loops: chain unrolled 8 times: 1000/8 = 125 trips" "chain 1 1 125 125 125 125" \
	"$(rows unroll | grep '^chain ' | cut -d' ' -f1,3-8)"

check_eq "diff --loops -O1 -O3: vadd's iterations drop by the vector width, the inner loop's from 7 x 9 to 7 x 2" \
	"1000 250 1 1 vadd loops.c:$(($(line_of 'void vadd(') + 2))
63 14 7 7 nested loops.c:$in_nested depth 2" \
	"$("$XPTRACE" diff --loops "$TMP/O1.data" "$TMP/O3.data" --format jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"].startswith(("vadd ", "nested ")) and r["a"] != r["b"]:
        print(r["a"], r["b"], r["entries_a"], r["entries_b"], r["name"])')"
check_eq "text: the loops of --sym nested, the inner one indented under the outer" \
	"nested loops.c:$out_nested|  nested loops.c:$in_nested" \
	"$("$XPTRACE" decode -i "$TMP/O1.data" --loops --sym nested | sed -n '3,$p' | sed 's/.*%  //; s/ *[0-9-]*:[0-9]*$//' | paste -sd'|')"
"$XPTRACE" record --mode sample -o "$TMP/smp" -- "$TMP/O1" >/dev/null 2>&1
check_exit "--loops on a trace without branches: fails, naming the modes" 1 "$XPTRACE" decode -i "$TMP/smp" --loops
check_match "... the message names step" "mode step" "$(cat "$TMP/.err")"

# cycles per iteration (PT with CYC): a trace of ptspin's spin(300) from the generator
# the tests share (tests/unit/pt_gen.h, CYC before each TIP and TNT); the oracle sums
# --blocks' cycles of spin's blocks from the loop's header to its jnz (the back
# edge) and divides by the header's executions in --insn
cc -std=gnu11 -O2 -D_GNU_SOURCE -I"$XP_ROOT/src" -I"$XP_ROOT" -I"$XP_ROOT/tests/unit" -o "$TMP/gen" \
	"$XP_ROOT/bench/decode-speed-gen.c" "$XP_ROOT/build/libxptrace.a" \
	-lipt -lpfm -ldw -lelf -lcapstone -lpthread -ldl -lm && mkdir -p "$TMP/cyc" &&
	"$TMP/gen" "$PROGS/ptspin" 300 "$TMP/cyc" cyc >/dev/null || not_ok "cyc trace generator"
"$XPTRACE" decode -i "$TMP/cyc" --loops --format jsonl >"$TMP/cyc.loops"
"$XPTRACE" decode -i "$TMP/cyc" --blocks --metric cycles --format jsonl >"$TMP/cyc.blocks"
"$XPTRACE" decode -i "$TMP/cyc" --insn --format jsonl >"$TMP/cyc.insn"
want=$(python3 -c '
import json, sys
blocks = [json.loads(l) for l in open(sys.argv[1])]
hdr = int([json.loads(l) for l in open(sys.argv[3])][0]["header"], 16)
jnz = [b for b in blocks if b["sym"].startswith("spin+") and b["taken"]][0]
body = [b for b in blocks if b["sym"].startswith("spin+") and hdr <= int(b["start"], 16) <= int(jnz["end"], 16)]
iters = sum(1 for l in open(sys.argv[2]) if json.loads(l).get("ip") == hex(hdr))
cyc = sum(b["cycles"] for b in body)
print("spin", iters, cyc, "%.3f" % (cyc / iters))' "$TMP/cyc.blocks" "$TMP/cyc.insn" "$TMP/cyc.loops")
check_eq "CYC: cycles per iteration = the body's --blocks cycles / the header's executions" \
	"$want" "$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["function"], r["iterations"], r["cycles"], "%.3f" % r["cycles_per_iter"])' "$TMP/cyc.loops")"
check_match "... the oracle saw 300 iterations and some cycles" '^spin 300 [1-9][0-9]* [0-9.]+$' "$want"
check_match "CYC: text has the Cycles/iter column" 'Insns/iter  Cycles/iter   Share%' \
	"$("$XPTRACE" decode -i "$TMP/cyc" --loops | sed -n 2p)"
E="$XP_ROOT/traces/pt-spin/ptspin:0x555555554000"
check_eq "no CYC: no Cycles/iter column, jsonl cycles null" "Insns/iter Share% null null" \
	"$("$XPTRACE" decode --pt "$XP_ROOT/traces/pt-spin/trace.pt" --elf "$E" --loops | sed -n 2p | grep -o 'Insns/iter.*Share%' | tr -s ' ') $(
	"$XPTRACE" decode --pt "$XP_ROOT/traces/pt-spin/trace.pt" --elf "$E" --loops --format jsonl | python3 -c '
import json, sys
r = json.loads(sys.stdin.readline()); print(json.dumps(r["cycles"]), json.dumps(r["cycles_per_iter"]))')"
