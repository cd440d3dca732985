#!/bin/bash
# The CLI contract: exit codes, help for every command, error message shape.
. "$(dirname "$0")/../lib.sh"

check_exit "no command is a usage error" 2 "$XPTRACE"
check_eq "no command: overview, then the error line" \
	"usage: xptrace [--version] [--help] COMMAND [ARGS...]|xptrace: usage: no command given (see 'xptrace help')" \
	"$(sed -n '1p;$p' "$TMP/.err" | paste -sd'|')"
check_exit "unknown global option is a usage error" 2 "$XPTRACE" --frobnicate
check_eq "unknown global option message" "xptrace: usage: unknown option '--frobnicate' (see 'xptrace help')" "$(cat "$TMP/.err")"
check_exit "help exits 0" 0 "$XPTRACE" help
check_eq "help lists every command" "info record decode diff selftest" \
	"$(sed -n '/^commands:/,/^$/s/^  \([a-z]*\) .*/\1/p' "$TMP/.out" | paste -sd' ')"
check_exit "--help exits 0" 0 "$XPTRACE" --help
check_exit "unknown command is a usage error" 2 "$XPTRACE" frobnicate
check_match "unknown command message shape" "^xptrace: usage: unknown command 'frobnicate' \(see 'xptrace help'\)$" \
	"$("$XPTRACE" frobnicate 2>&1)"
check_eq "--version" "xptrace $(cat "$XP_ROOT/VERSION")" "$("$XPTRACE" --version)"
for cmd in info record decode diff selftest; do
	check_exit "$cmd --help exits 0" 0 "$XPTRACE" "$cmd" --help
	check_match "$cmd --help prints usage" "^usage: xptrace $cmd" "$("$XPTRACE" "$cmd" --help)"
	check_eq "help $cmd equals $cmd --help" "$("$XPTRACE" "$cmd" --help)" "$("$XPTRACE" help "$cmd")"
done
check_exit "help of an unknown command is a usage error" 2 "$XPTRACE" help frobnicate
# decode -j N: threads, 1 to 1024, as -j N, -jN or --jobs N
PTS=(--pt "$XP_ROOT/traces/pt-spin/trace.pt" --elf "$XP_ROOT/traces/pt-spin/ptspin:0x555555554000")
check_exit "decode -j 0 is a usage error" 2 "$XPTRACE" decode "${PTS[@]}" --blocks -j 0
check_match "decode -j 0 says what it takes" "-j 0: expected a number of threads, 1 to 1024" "$(cat "$TMP/.err")"
check_exit "decode -jx is a usage error" 2 "$XPTRACE" decode "${PTS[@]}" --blocks -jx
for j in "-j 3" "-j3" "--jobs 3" "--jobs=3"; do
	# shellcheck disable=SC2086
	check_eq "decode $j: the -j1 report" "$("$XPTRACE" decode "${PTS[@]}" --blocks -j1)" \
		"$("$XPTRACE" decode "${PTS[@]}" --blocks $j)"
done

# docs/decode.md's option table says which views honour --sym: the views the binary
# lets take it (the others refuse it, exit 2), no more, no fewer
took=$(for v in $("$XPTRACE" help --list views | cut -f1); do
	arg=; [ "$v" = --annotate ] && arg=main
	"$XPTRACE" decode -i "$XP_ROOT/traces/step-basic" $v $arg --sym main >/dev/null 2>&1
	[ $? != 2 ] && echo "$v"
done | sort | paste -sd' ')
check_eq "docs/decode.md: the --sym row names the views that take --sym" "$took" \
	"$(grep '^| `--sym NAME` |' "$XP_ROOT/docs/decode.md" | cut -d'|' -f3 | grep -o -- '--[a-z]*' | sort -u | paste -sd' ')"
# its Formats list: each format's bullet once, no line cut off from its bullet
check_eq "docs/decode.md Formats: one bullet per format and view, no orphan lines" "" \
	"$(sed -n '/^## Formats/,/^## /p' "$XP_ROOT/docs/decode.md" | awk '
		/^- / { v = $0; sub(/^[^(]*/, "", v); match(v, /--[a-z]+/)
			k = $2 " " substr(v, RSTART, RLENGTH); if (seen[k]++) print "twice: " k }
		/^  [^ ]/ && prev !~ /^(- |  [^ ])/ { print "orphan: " $0 }
		{ prev = $0 }')"
