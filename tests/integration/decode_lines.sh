#!/bin/bash
# decode --lines (issue 28): per source line and function, the metric's count.
# - step trace of tests/progs/loops.c (static, -O1): every line of loops.c has exactly
#   callgrind's self Ir of that line (the file has no string instructions; valgrind
#   runs the same deterministic program);
# - the lines' total is --functions' total, --sym NAME's lines sum to NAME's Base;
# - a cpu-clock sample trace: the lines' samples sum to --functions' samples.
. "$(dirname "$0")/../lib.sh"
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
SRC=$XP_ROOT/tests/progs/loops.c
cc -O1 -g -static -o "$TMP/loops" "$SRC" || { not_ok "cc -static loops.c"; exit 0; }
"$XPTRACE" record --mode step -o "$TMP/step" -- "$TMP/loops" >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "step record"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }

"$XPTRACE" decode -i "$TMP/step" --lines --format jsonl >"$TMP/lines.jsonl"
# "LINE COUNT" of loops.c's lines in --lines jsonl
of_file() {
	python3 -c '
import json, sys
t = {}
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["file"] and r["file"].endswith("/tests/progs/loops.c"):
        t[r["line"]] = t.get(r["line"], 0) + r["base"]
for k in sorted(t):
    print(k, t[k])' "$1"
}
of_file "$TMP/lines.jsonl" >"$TMP/xp.lines"
check_eq "--lines gives loops.c's 26 executed lines" 26 "$(wc -l <"$TMP/xp.lines")"
if command -v valgrind >/dev/null; then
	valgrind -q --tool=callgrind --callgrind-out-file="$TMP/cg.out" "$TMP/loops" 2>"$TMP/vg.err"
	python3 "$XP_ROOT/tests/integration/lib/callgrind_lines.py" "$TMP/cg.out" tests/progs/loops.c >"$TMP/cg.lines"
	check_eq "--lines per line of loops.c = callgrind's self Ir per line" \
		"$(cat "$TMP/cg.lines")" "$(cat "$TMP/xp.lines")"
else
	ok "valgrind missing # SKIP"
fi

sum_base() { python3 -c 'import json, sys; print(sum(json.loads(l)["base"] for l in open(sys.argv[1])))' "$1"; }
"$XPTRACE" decode -i "$TMP/step" --format jsonl >"$TMP/fn.jsonl"
check_eq "--lines' total = --functions' total (insns)" "$(sum_base "$TMP/fn.jsonl")" "$(sum_base "$TMP/lines.jsonl")"
total=$("$XPTRACE" decode -i "$TMP/step" | sed -n 's/^# functions: insns, total //p')
check_eq "text header: the metric and the total, as --functions says it" \
	"# lines: insns, total $total" "$("$XPTRACE" decode -i "$TMP/step" --lines | head -1)"
"$XPTRACE" decode -i "$TMP/step" --lines --sym nested --format jsonl >"$TMP/nested.jsonl"
check_eq "--sym nested: nested's lines only" nested \
	"$(python3 -c 'import json, sys; print(*sorted({json.loads(l)["function"] for l in open(sys.argv[1])}))' "$TMP/nested.jsonl")"
check_eq "--sym nested: its lines sum to nested's Base" \
	"$(python3 -c 'import json, sys; print(*[json.loads(l)["base"] for l in open(sys.argv[1]) if json.loads(l)["name"] == "nested"])' "$TMP/fn.jsonl")" \
	"$(sum_base "$TMP/nested.jsonl")"
check_exit "--lines --metric time: a usage error (instructions or samples only)" 2 \
	"$XPTRACE" decode -i "$TMP/step" --lines --metric time

"$XPTRACE" record --mode sample -F 2000 -o "$TMP/smp" -- "$PROGS/hot" 300 >/dev/null 2>"$TMP/smp.err" ||
	{ not_ok "sample record"; sed 's/^/#   /' "$TMP/smp.err"; exit 0; }
"$XPTRACE" decode -i "$TMP/smp" --lines --format jsonl >"$TMP/slines.jsonl"
"$XPTRACE" decode -i "$TMP/smp" --format jsonl >"$TMP/sfn.jsonl"
sum_samples() { python3 -c 'import json, sys; print(sum(json.loads(l)["samples"] for l in open(sys.argv[1])))' "$1"; }
check_eq "sample trace: --lines' samples = --functions' samples" \
	"$(sum_samples "$TMP/sfn.jsonl")" "$(sum_samples "$TMP/slines.jsonl")"
check_match "sample trace: hot's lines have samples" '"file":"[^"]*/hot\.c","line":[0-9]+' "$(cat "$TMP/slines.jsonl")"
