#!/bin/bash
# The README's quick tour, run as written: every command of its code blocks (from
# "## Quick tour" to "Other targets"), in order, with ./prog = tests/progs/tour.c, and
# each must exit as the README says: 0, or 1 for the PT/LBR lines on a machine whose
# `xptrace info` calls those modes unavailable.  Then `make demo`'s script.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
mkdir -p "$TMP/tour/bin"
cd "$TMP/tour" || exit 1

# ./prog and what the tour names besides: ./server (the same program), the O0/O2
# builds of diff, a raw PT trace with its PIE, flamegraph.pl (a stand-in that checks
# it is fed folded stacks and writes an SVG)
cc -O1 -g -fno-omit-frame-pointer -fno-inline -o prog "$XP_ROOT/tests/progs/tour.c"
cc -O0 -g -o prog-O0 "$XP_ROOT/tests/progs/tour.c"
cc -O2 -g -o prog-O2 "$XP_ROOT/tests/progs/tour.c"
ln -s prog server
ln -s "$XPTRACE" xptrace
cp "$XP_ROOT/traces/pt-spin/trace.pt" "$XP_ROOT/traces/pt-spin/ptspin" .
cat >bin/flamegraph.pl <<'EOF'
#!/bin/sh
# folded stacks in ("frame;frame;... COUNT"), an SVG out
awk 'NF != 2 || $2 !~ /^[0-9]+$/ { bad++ } END { exit bad || !NR }' || exit 1
echo '<svg xmlns="http://www.w3.org/2000/svg"></svg>'
EOF
chmod +x bin/flamegraph.pl
PATH=$TMP/tour/bin:$PATH

# The tour's commands: lines of its indented blocks starting with ./xptrace or perf,
# without their comments; "hw" for the PT/LBR block.
tour=$(awk '
	/^## Quick tour/ { on = 1 }
	/^Other targets/ { on = 0 }
	!on { next }
	/^On Intel hardware with PT or LBR/ { hw = 1 }
	/^Instruction-level views/ { hw = 0 }
	/^    (\.\/xptrace|perf) / {
		line = substr($0, 5)
		sub(/  +#.*/, "", line)
		print (hw ? "hw" : "-") "\t" line
	}' "$XP_ROOT/README.md")
check "the tour lists commands ($(wc -l <<<"$tour"))" test "$(wc -l <<<"$tour")" -ge 25
# every command of xptrace's table is in the tour (a new command needs its line)
for c in $("$XPTRACE" help --list commands | cut -f1); do
	check "the tour runs xptrace $c" grep -Eq "^[-hw]+	\./xptrace $c( |\$)" <<<"$tour"
done

info=$("$XPTRACE" info 2>/dev/null)
hw_rc() {	# the README's exit status of a PT/LBR line here
	local m
	m=$(sed -n 's/.*--mode \([a-z]*\).*/\1/p' <<<"$1")
	grep -Eq "^  $m +available" <<<"$info" && echo 0 || echo 1
}

# PID: a ./prog started for the line that names it (started earlier, a loaded machine
# let it end before the line ran); TID: a thread in xptrace.data
victim=
trap 'kill $victim 2>/dev/null; rm -rf "$TMP"' EXIT
n=0
while IFS=$'\t' read -r kind cmd; do
	want=0
	[ "$kind" = hw ] && want=$(hw_rc "$cmd")
	tid=
	[[ $cmd == *TID* ]] && tid=$(perf script -i xptrace.data/perf.data -F tid 2>/dev/null | awk 'NF { print $1; exit }')
	if [[ $cmd == *PID* ]]; then
		./prog 100000 >/dev/null &
		victim=$!
	fi
	run=${cmd//PID/$victim}
	run=${run//TID/${tid:-0}}
	(set -o pipefail; eval "$run") >"$TMP/out.$n" 2>"$TMP/err.$n"
	rc=$?
	[[ $cmd == *PID* ]] && kill $victim 2>/dev/null
	if [ "$rc" = "$want" ] && [ "$kind" = hw ] && [ "$rc" = 1 ] &&
	   ! grep -Eq '^xptrace: record --mode: (pt|lbr): .* \(use --mode [a-z]+ instead\)$' "$TMP/err.$n"; then
		not_ok "tour: $cmd  (exit 1, but not for the mode the README says is missing)"
		sed 's/^/#   | /' "$TMP/err.$n" | head -8
	elif [ "$rc" = "$want" ]; then
		ok "tour: $cmd  (exit $rc)"
	else
		not_ok "tour: $cmd  (exit $rc, the README says $want)"
		sed 's/^/#   | /' "$TMP/err.$n" | head -8
	fi
	n=$((n + 1))
done <<<"$tour"
kill $victim 2>/dev/null
check "flamegraph.pl was fed folded stacks and wrote an SVG" grep -q '<svg' flame.svg
check "--annotate hot_loop listed its instructions" \
	grep -q 'hot_loop at 0x' "$TMP/out.$(grep -n -m1 -- '--annotate hot_loop' <<<"$tour" | cut -d: -f1 | awk '{ print $1 - 1 }')"

# make demo (its script, into a private build directory): the best mode, the step
# tracer and an instruction-level view, then info last
out=$(cd "$XP_ROOT" && DEMO_OUT="$TMP/demo" mk/demo.sh 2>&1)
check_eq "make demo: exit 0" 0 $?
check_eq "make demo: what it shows, in order" \
"demo: xptrace record -g -- build/progs/hot 500
demo: xptrace decode -i DIR/demo.data --functions
demo: xptrace decode -i DIR/demo.data --calltree --percent-limit 1
demo: xptrace record --mode step -- build/progs/step_bench
demo: xptrace decode -i DIR/demo-step.data --functions --percent-limit 3
demo: xptrace decode -i DIR/demo-step.data --annotate hash
demo: xptrace info" \
	"$(sed -n 's/   (.*//; s|'"$TMP/demo"'|DIR|g; /^demo: /p' <<<"$out")"
check_match "make demo: the step view has per-instruction counts and taken %" \
	"^ +[0-9]+ +- +>?0x[0-9a-f]+ +j[a-z]+ .* [0-9.]+%$" "$out"
check_match "make demo: info's modes come last" "best mode: [a-z]+$" "$(tail -1 <<<"$out")"
