#!/bin/bash
# LBR decode on real branch stacks: a step-mode Intel PT trace of three loops run
# 24000/12000/6000 times is turned into 64-entry branch-stack samples by perf itself
# (perf inject --itrace=i100il64, one sample every 100 instructions), and xptrace decode
# --ranges of that must agree with the exact ranges of the PT trace, which perf script
# lists branch by branch: every sampled range was executed, the hot ranges rank the
# same with the same proportions, and instruction counts match objdump.
. "$(dirname "$0")/../lib.sh"

PROG=$PROGS/lbr_loops
if ! command -v perf >/dev/null; then
	not_ok "perf is needed as the oracle (apt-get install linux-perf)"
	exit 0
fi

"$XPTRACE" record -q --mode step -o "$TMP/pt" -- "$PROG"
check "step trace recorded" test -s "$TMP/pt/perf.data"
mkdir "$TMP/lbr"
perf inject -i "$TMP/pt/perf.data" --itrace=i100il64 -o "$TMP/lbr/perf.data" 2>"$TMP/inject.err"
ln -s "$TMP/pt/.build-id" "$TMP/lbr/.build-id"
nsamples=$(perf script -i "$TMP/lbr/perf.data" -F ip 2>/dev/null | wc -l)
check "perf inject made branch-stack samples" test "$nsamples" -gt 100

# Exact ranges: between consecutive taken branches of the PT trace (perf's decode).
perf script -i "$TMP/pt/perf.data" --itrace=b -F ip,addr 2>/dev/null |
	awk '{ if (have) print start, $1; start = $3; have = ($3 != "0") }' |
	sort | uniq -c | sort -k1,1nr -k2 | awk '{ print $2, $3, $1 }' >"$TMP/pt.ranges"
check "perf decoded the PT trace" test "$(wc -l <"$TMP/pt.ranges")" -gt 100

"$XPTRACE" decode -i "$TMP/lbr" --ranges --format csv >"$TMP/lbr.csv" 2>"$TMP/decode.err"
check "xptrace decode --ranges of the injected file" test "$(wc -l <"$TMP/lbr.csv")" -gt 100
# count,count%,insns,cycles,start,end,module,function -> "start end count insns function"
tail -n +2 "$TMP/lbr.csv" | awk -F, '{ sub(/^0x/, "", $5); sub(/^0x/, "", $6); print $5, $6, $1, $3, $8 }' \
	>"$TMP/lbr.ranges"

missing=$(awk 'NR == FNR { seen[$1 " " $2] = 1; next } !(($1 " " $2) in seen)' \
	"$TMP/pt.ranges" "$TMP/lbr.ranges" | wc -l)
check_eq "every sampled range is a range the PT trace executed" 0 "$missing"

check_eq "the three hottest ranges are the same, in the same order" \
	"$(head -3 "$TMP/pt.ranges" | cut -d' ' -f1,2)" "$(head -3 "$TMP/lbr.ranges" | cut -d' ' -f1,2)"
check_eq "they are the loop bodies" "loop_a loop_b loop_c" \
	"$(head -3 "$TMP/lbr.ranges" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $5 }')"
check_eq "exact counts of the loop bodies (PT)" "23998 11998 5998" \
	"$(head -3 "$TMP/pt.ranges" | awk '{ printf "%s%s", (NR > 1 ? " " : ""), $3 }')"
ratios=$(head -3 "$TMP/lbr.ranges" | awk '{ c[NR] = $3 } END { r1 = c[1] / c[2]; r2 = c[2] / c[3];
	print (r1 > 1.8 && r1 < 2.2 && r2 > 1.8 && r2 < 2.2) ? "2:1 2:1" : r1 ":1 " r2 ":1" }')
check_eq "sampled counts keep the 2:1 proportions" "2:1 2:1" "$ratios"

# Instructions per loop body from objdump, independent of capstone: the range's file
# offsets come from the MMAP2 record perf shows.
read -r start end _ insns _ <<<"$(head -1 "$TMP/lbr.ranges")"
read -r map_start map_pgoff <<<"$(perf script -i "$TMP/pt/perf.data" --show-mmap-events 2>/dev/null |
	grep -m1 'PERF_RECORD_MMAP2.*lbr_loops$' | sed -E 's/.*\[(0x[0-9a-f]+)\(0x[0-9a-f]+\) @ (0x[0-9a-f]+).*/\1 \2/')"
lo=$(( 0x$start - map_start + map_pgoff ))
hi=$(( 0x$end - map_start + map_pgoff ))
want=0
for a in $(objdump -d --no-show-raw-insn "$PROG" | sed -nE 's/^ +([0-9a-f]+):.*/\1/p'); do
	(( 16#$a >= lo && 16#$a <= hi )) && want=$((want + 1))
done
check_eq "instructions of the hottest range match objdump" "$want" "$insns"

# The samples themselves: one every 100 instructions, so a loop body of 6 instructions
# run 24000 times holds 1440 of them (±1 for where the period starts).
"$XPTRACE" decode -i "$TMP/lbr" --functions --format csv >"$TMP/fn.csv" 2>/dev/null
got=$(awk -F, '$NF == "loop_a" || $NF == "loop_b" || $NF == "loop_c" { printf "%s=%s ", $NF, $1 }' "$TMP/fn.csv")
want=""
for f in loop_a:24000 loop_b:12000 loop_c:6000; do
	n=$(( insns * ${f#*:} / 100 ))
	c=$(awk -F, -v f="${f%%:*}" '$NF == f { print $1 }' "$TMP/fn.csv")
	if [ -n "$c" ] && [ $((c - n)) -ge -1 ] && [ $((c - n)) -le 1 ]; then want="$want${f%%:*}=$c "; else want="$want${f%%:*}=~$n "; fi
done
check_eq "samples per loop = instructions / 100" "$want" "$got"
check_eq "the sampled call tree has no edges made up from branch-stack windows (inline frames aside)" 0 \
	"$("$XPTRACE" decode -i "$TMP/lbr" --calltree --format csv 2>/dev/null | awk -F, 'NR > 1 && $1 > 1 && $NF !~ / \[inline\]$/' | wc -l)"

# --loops on the branch stacks: iterations estimated (back edges taken in each window,
# scaled by the period, 100 instructions, over the window's instructions) against the
# step trace's exact ones, within 1% (measured: 0.03%, 0.01%, 0.13% off); every row
# says it is an estimate.
"$XPTRACE" decode -i "$TMP/pt" --loops --format jsonl >"$TMP/loops.exact"
"$XPTRACE" decode -i "$TMP/lbr" --loops --format jsonl >"$TMP/loops.est"
iters() {	# "function:first_line=iterations" of loop_a, loop_b, loop_c
	python3 -c '
import json, sys
r = {x["function"]: x for x in map(json.loads, open(sys.argv[1]))}
print(" ".join("%s:%d=%d" % (f, r[f]["first_line"], r[f]["iterations"]) for f in ("loop_a", "loop_b", "loop_c") if f in r))' "$1"
}
check_eq "exact --loops of the step trace: 24000, 12000, 6000 iterations" \
	"loop_a:7=24000 loop_b:13=12000 loop_c:19=6000" "$(iters "$TMP/loops.exact")"
check_eq "estimated --loops of the branch stacks: the same loops (function, first line), iterations within 1%" \
	"$(iters "$TMP/loops.exact")" "$(python3 -c '
import sys
ex = dict(x.split("=") for x in sys.argv[1].split())
out = []
for x in sys.argv[2].split():
    k, v = x.split("=")
    out.append("%s=%s" % (k, ex[k] if k in ex and abs(int(v) - int(ex[k])) <= 0.01 * int(ex[k]) else v))
print(" ".join(out))' "$(iters "$TMP/loops.exact")" "$(iters "$TMP/loops.est")")"
check_eq "every estimated row says \"estimated\": true" "$(wc -l <"$TMP/loops.est")" "$(grep -c '"estimated":true' "$TMP/loops.est")"
check_match "text: a header line says the loops are estimated" '^# loops: estimated from sampled branch stacks' \
	"$("$XPTRACE" decode -i "$TMP/lbr" --loops | head -1)"
check_exit "diff --loops refuses branch stacks (no trip counts)" 1 "$XPTRACE" diff --loops "$TMP/lbr" "$TMP/pt"
