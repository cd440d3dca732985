#!/bin/bash
# record's options honest before anything starts (issue 27):
# - step --filter: a relative module path, perf's PT syntax ('filter fib @ ./prog') and
#   nm's addresses (hex without 0x) trace the function: its instructions as perf script
#   counts them in an unfiltered trace; bad ones fail before the directory exists;
# - --adaptive --mode step names --adaptive, not the -g it implies; --probe with
#   --mode step is a usage error (exit 2), as docs/record.md's table says.
. "$(dirname "$0")/../lib.sh"

"$XPTRACE" record -q --mode step -o "$TMP/full" -- "$PROGS/step_basic" 1 >/dev/null 2>&1
nfib=$(perf script -i "$TMP/full/perf.data" --itrace=i0ns -F ip,sym 2>/dev/null | awk '$2 == "fib"' | wc -l)
read -r lo size < <(nm -S "$PROGS/step_basic" | awk '$4 == "fib" { print $1, $2 }')
hi=$(printf '%x' $((0x$lo + 0x$size)))
lo=$(printf '%x' $((0x$lo)))	# nm's form: hex, no 0x
cd "$PROGS"
n=0
for spec in "fib@./step_basic" "filter fib @ ./step_basic" "$lo-$hi@step_basic" "filter 0x$lo/0x$size @ ./step_basic"; do
	n=$((n + 1))
	"$XPTRACE" record -q --mode step --filter "$spec" -o "$TMP/f$n" -- ./step_basic 1 >/dev/null 2>"$TMP/f$n.err"
	check_eq "--filter '$spec': exit 0, nothing said" "0 " "$? $(cat "$TMP/f$n.err")"
	check_eq "--filter '$spec': fib's $nfib instructions (perf script, unfiltered), nothing else" "fib $nfib" \
		"$("$XPTRACE" decode -i "$TMP/f$n" --functions --format jsonl 2>/dev/null | python3 -c 'import json, sys
r = [json.loads(l) for l in sys.stdin]
print(" ".join("%s %d" % (j["name"], j["base"]) for j in r if j["base"]))')"
done
# refused before the trace directory exists
bad() {	# CODE NAME SPEC MESSAGE
	check_exit "--filter '$3': $2, exit $1" "$1" "$XPTRACE" record -q --mode step --filter "$3" -o "$TMP/bad" -- ./step_basic 1
	check_eq "--filter '$3': says so" "$4" "$(cat "$TMP/.err")"
	check_eq "--filter '$3': no trace directory" "no" "$([ -e "$TMP/bad" ] && echo yes || echo no)"
}
bad 1 "unknown function" nosuch "xptrace: --filter: no function 'nosuch' in $PROGS/step_basic (check the names with nm or objdump)"
bad 1 "missing module" "fib@./nosuch" "xptrace: --filter: ./nosuch: No such file or directory (check the names with nm or objdump)"
bad 2 "a range without its module" "$lo-$hi" "xptrace: record: --filter: range $lo-$hi: say in which module (START-END@MODULE) (see 'xptrace help record')"
bad 2 "perf's stop action" "stop fib @ ./step_basic" "xptrace: record: --filter: 'stop fib @ ./step_basic': step mode traces ranges ('filter'); perf's stop filters of Intel PT it has not (see 'xptrace help record')"
cd "$TMP"

# --adaptive in step mode: the misfit is --adaptive (it implies -g, never given)
check_exit "--adaptive --mode step: usage error" 2 "$XPTRACE" record --adaptive --mode step -o "$TMP/ad" -- true
check_eq "--adaptive --mode step: names --adaptive" \
	"xptrace: record: --adaptive places probes from samples, in sample and lbr modes, and this recording is in step mode (use --mode sample (or lbr))" \
	"$(cat "$TMP/.err")"
check_exit "--probe --mode step: usage error, as docs/record.md's table" 2 "$XPTRACE" record --probe main --mode step -o "$TMP/ps" -- "$PROGS/step_basic" 1
check_match "docs/record.md: --probe's table says 2 for --mode step" '^\| `--mode step` \| 2 ' "$(grep '^| `--mode step` |' "$XP_ROOT/docs/record.md")"
