#!/bin/bash
# A trace with nothing to report (issue 29, item 4): `record -F 1 -- /bin/true` ends
# before its first sample.  Every view and format decodes it, and `diff` compares it with
# itself, under ASan+UBSan without a runtime error (UBSan aborts on the first: an empty array passed as NULL to qsort,
# memcpy or memcmp, whose pointers are declared non-null even for a count of 0).
. "$(dirname "$0")/../lib.sh"
"$XPTRACE" record -F 1 -o "$TMP/z" -- /bin/true >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record /bin/true"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }
check_match "the trace has no sample" "recorded 0 cpu-clock samples" "$(cat "$TMP/rec.err")"

if [ ! -x "$XPTRACE_ASAN" ]; then
	not_ok "no ASan build at $XPTRACE_ASAN (make asan)"
	exit 0
fi
while read -r view; do
	# shellcheck disable=SC2086 # a view is a list of options
	"$XPTRACE_ASAN" decode -i "$TMP/z" $view -o "$TMP/out" >/dev/null 2>"$TMP/err"
	check_eq "0 samples, ASan+UBSan: decode $view: no runtime error" "" \
		"$(grep -m1 'runtime error\|AddressSanitizer' "$TMP/err")"
done <<'EOF'
--functions
--functions --format jsonl
--functions --format csv
--functions --per-process
--functions --srcline
--calltree
--calltree --per-thread
--calltree --format folded
--calltree --format callgrind
--calltree --format svg
--calltree --format pprof
--calltree --format jsonl
--routines
--arcs
--blocks
--blocks --format jsonl
--blocks --format callgrind
--annotate main
--probes
--calls --format chrome
EOF
"$XPTRACE_ASAN" diff "$TMP/z" "$TMP/z" >/dev/null 2>"$TMP/err"
check_eq "0 samples, ASan+UBSan: diff of the trace with itself: no runtime error" "" \
	"$(grep -m1 'runtime error\|AddressSanitizer' "$TMP/err")"
