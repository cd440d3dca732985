#!/bin/bash
# Instruction views on a trace of samples (no branch data; issue 15, item 1), against
# perf annotate on the very same perf.data:
# - --annotate SYM: per-instruction sample counts and percentages equal to `perf
#   annotate --stdio -n` and `perf annotate --stdio` (local period), source lines
#   above their instructions; jsonl the same with file and line;
# - --blocks: basic blocks found by disassembly, each with the samples of its
#   instructions: hot_inner's loop (from the target of its jne to the jne) holds the
#   sum of perf annotate's counts over those instructions;
# - a trace with probes (merged, decoded in time) weighs samples by their period;
# - --insn and --ranges need branch data: exit 1 saying which modes record it.
. "$(dirname "$0")/../lib.sh"
"$XPTRACE" record -o "$TMP/hot" -- "$PROGS/hot" 300 >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record hot"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }

# perf: "  N :   11bd:   add ..." per instruction (file address), samples then percent
perf annotate -i "$TMP/hot/perf.data" --stdio -n -s hot_inner 2>/dev/null |
	awk '$2 == ":" && $3 ~ /^[0-9a-f]+:$/ { sub(/:$/, "", $3); print $3, $1 }' >"$TMP/perf.n"
perf annotate -i "$TMP/hot/perf.data" --stdio -s hot_inner 2>/dev/null |
	awk '$2 == ":" && $3 ~ /^[0-9a-f]+:$/ { sub(/:$/, "", $3); print $3, $1 }' >"$TMP/perf.pct"
"$XPTRACE" decode -i "$TMP/hot" --annotate hot_inner --format jsonl >"$TMP/xp.jsonl"
check_exit "--annotate on samples exits 0" 0 "$XPTRACE" decode -i "$TMP/hot" --annotate hot_inner
# both as offset -> value, the offsets from the function's first instruction
rel() { python3 -c '
import sys
rows = [l.split() for l in open(sys.argv[1])]
for a, v in rows:
    print(int(a, 16) - int(rows[0][0], 16), v)' "$1"; }
xp() { python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["offset"], r[sys.argv[2]] if sys.argv[2] != "percent" else "%.2f" % r["percent"])' "$TMP/xp.jsonl" "$1"; }
check_match "perf annotate has hot_inner's instructions" '^[0-9]+ [0-9]+$' "$(rel "$TMP/perf.n" | head -1)"
check_eq "samples per instruction = perf annotate -n" "$(rel "$TMP/perf.n")" "$(xp samples)"
check_eq "percent per instruction = perf annotate (local period)" "$(rel "$TMP/perf.pct")" "$(xp percent)"
hot=$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
print(sum(r["samples"] for r in rows))' "$TMP/xp.jsonl")
check_match "the header counts hot_inner's samples" "^# hot_inner at 0x[0-9a-f]+: $hot samples, cpu-clock " \
	"$("$XPTRACE" decode -i "$TMP/hot" --annotate hot_inner)"
# source: the loop body's line (hot.c: "x = x * 2862933555777941757UL ...") above its
# multiply, as the DWARF line table says (perf annotate prints the same line there)
out=$("$XPTRACE" decode -i "$TMP/hot" --annotate hot_inner)
check_match "source line above the loop body" "hot\.c:14\s+x = x \* 2862933555777941757UL" "$out"
# the instructions of line 14, as perf annotate groups them: movabs, mov, imul, add
check_eq "line 14's instructions below it" "movabsq movl imulq addq" \
	"$(printf '%s\n' "$out" | awk '/hot\.c:14[ \t]/ { on = 1; next } on && / : / { exit } on { printf "%s%s", s, $4; s = " " }')"
check_match "jsonl: file and line of each instruction" '"insn":"imulq %rsi, %rax","file":"[^"]*/tests/progs/hot\.c","line":14' \
	"$(cat "$TMP/xp.jsonl")"
# (_fini: a few instructions once at exit; main's loop got a sample on a loaded machine)
check_exit "--annotate of a function without samples fails" 1 "$XPTRACE" decode -i "$TMP/hot" --annotate _fini
check_match "... saying so" "_fini: no sample of this function in the trace" "$(cat "$TMP/.err")"

# --blocks: the loop is perf annotate's "jne TARGET <hot_inner+0xN>" back to TARGET
perf annotate -i "$TMP/hot/perf.data" --stdio -n -s hot_inner 2>/dev/null >"$TMP/perf.ann"
want=$(python3 - "$TMP/perf.ann" <<'PY'
import re, sys
rows, tgt, jne = [], None, None
for l in open(sys.argv[1]):
    m = re.match(r"\s*(\d+)\s*:\s+([0-9a-f]+):\s+(\S+)\s*(\S*)", l)
    if m:
        a = int(m.group(2), 16)
        rows.append((a, int(m.group(1))))
        if m.group(3) == "jne":
            tgt, jne = int(m.group(4), 16), a
print("+0x%x %d %d" % (tgt - rows[0][0], sum(n for a, n in rows if tgt <= a <= jne),
                       sum(1 for a, n in rows if tgt <= a <= jne)))
PY
)
got=$("$XPTRACE" decode -i "$TMP/hot" --blocks --format jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if (r["sym"] or "").startswith("hot_inner+"):
        print(r["sym"][len("hot_inner"):], r["samples"], r["insns"]); break')
check_eq "--blocks: hot_inner's loop block, its samples and instructions (perf annotate: $want)" "$want" "$got"
read -r off n k <<<"$want"
out=$("$XPTRACE" decode -i "$TMP/hot" --blocks)
check_match "--blocks text: the hottest block is hot_inner's loop" \
	"^0x[0-9a-f]+ +0x[0-9a-f]+ +hot_inner\\$off +$n +[0-9.]+ +$k " "$(printf '%s\n' "$out" | sed -n 3p)"

check_eq "--blocks --sym cold_path: its blocks only" "cold_path" \
	"$("$XPTRACE" decode -i "$TMP/hot" --blocks --sym cold_path --format jsonl | sed 's/.*"sym":"\([^+"]*\).*/\1/' | sort -u)"

# --blocks --format callgrind: per instruction; callgrind_annotate's total of
# hot_inner is perf annotate's
"$XPTRACE" decode -i "$TMP/hot" --blocks --format callgrind -o "$TMP/hot.cg"
check_match "--blocks callgrind on samples: positions instr line" '^positions: instr line$' "$(cat "$TMP/hot.cg")"
check_eq "--blocks callgrind on samples: hot_inner's samples = perf annotate's" \
	"$(awk '{ s += $2 } END { print s }' "$TMP/perf.n")" \
	"$(callgrind_annotate --inclusive=no "$TMP/hot.cg" | awk '/hot\.c:hot_inner / { gsub(",", "", $1); print $1; exit }')"

# a merged trace (probe events next to samples, decoded in time): the sample views
# still weigh samples by their period; hot_inner's samples = perf script's count
if "$XPTRACE" record --probe hot_outer -o "$TMP/pr" -- "$PROGS/hot" 150 >/dev/null 2>&1; then
	n=$(perf script -i "$TMP/pr/perf.data" -F event,ip,sym 2>/dev/null |
		awk '$1 == "cpu-clock:" && $NF == "hot_inner"' | wc -l)
	check_match "merged trace: --annotate counts hot_inner's $n cpu-clock samples" \
		"^# hot_inner at 0x[0-9a-f]+: $n samples, cpu-clock " "$("$XPTRACE" decode -i "$TMP/pr" --annotate hot_inner)"
else
	not_ok "record --probe hot_outer"
fi

# decode -j (the file read on a second thread): the same bytes as -j1, probes too
for in in "$TMP/hot" "$TMP/pr"; do
	for view in "--annotate hot_inner" "--annotate hot_inner --format jsonl" "--blocks" "--blocks --format jsonl" \
		"--blocks --format callgrind" "--calltree" "--functions --format jsonl" "--calls --format chrome" "--calls --format jsonl"; do
		# shellcheck disable=SC2086
		check_eq "${in#"$TMP"/}: $view -j2 as -j1" "$("$XPTRACE" decode -i "$in" $view -j1 2>&1 | md5sum)" \
			"$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode -i "$in" $view -j2 2>&1 | md5sum)"
	done
done

for v in insn ranges; do
	check_exit "--$v on samples exits 1" 1 "$XPTRACE" decode -i "$TMP/hot" --$v
	check_match "--$v says which modes record branch data" \
		"^xptrace: --$v: this trace has no branch data .*record with --mode step, pt or lbr" "$(cat "$TMP/.err")"
done
