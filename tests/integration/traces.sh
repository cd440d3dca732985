#!/bin/bash
# Every trace shipped in traces/ decodes, to the instruction count its README states,
# with xptrace and (perf.data traces) with perf script, reading the modules from the
# trace's own snapshots.  A trace without a figure here fails: add it with its README.
. "$(dirname "$0")/../lib.sh"

declare -A insns=([pt-spin]=602 [step-basic]=115918 [step-thread]=114434)

for dir in "$XP_ROOT"/traces/*/; do
	name=$(basename "$dir")
	want=${insns[$name]:-}
	if [ -z "$want" ]; then
		not_ok "$name: no instruction count in tests/integration/traces.sh"
		continue
	fi
	check_match "$name: README states $want instructions" "\b$want\b" "$(cat "$dir/README.md")"
	if [ -f "$dir/perf.data" ]; then
		head=$("$XPTRACE" decode -i "$dir" --functions 2>"$TMP/err" | head -1)
		check_eq "$name: xptrace decode, no message" "" "$(cat "$TMP/err")"
		n=$(perf --buildid-dir "$dir" script -i "$dir/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l)
		check_eq "$name: perf script instructions" "$want" "$n"
	else
		head=$(cd "$dir" && "$XPTRACE" decode --pt trace.pt --elf ptspin:0x555555554000 --functions | head -1)
	fi
	check_eq "$name: xptrace decode instructions" "# functions: insns, total $want" "$head"
done

# in=(): the decode's input options for a trace directory: its perf.data, or its raw
# trace with the ptspin binary beside it
input_of() {
	if [ -f "$1/perf.data" ]; then
		in=(-i "$1")
	else
		in=(--pt "$1/trace.pt" --elf "$1/ptspin:0x555555554000")
	fi
}

# decode -j: every report the same on any number of threads (small pieces, so that
# these short traces are cut: 4 KiB, the PSB period of most of them).  Each -j2 report's
# digest is kept: the --pt-decoder comparison below makes the same decode
declare -A j2=()
for dir in "$XP_ROOT"/traces/*/; do
	name=$(basename "$dir")
	input_of "$dir"
	for view in "--blocks" "--functions" "--calltree" "--insn --format jsonl" "--insn" \
		"--calltree --format callgrind" "--blocks --format callgrind"; do
		# shellcheck disable=SC2086
		one=$("$XPTRACE" decode "${in[@]}" $view -j1 2>&1 | md5sum)
		for j in 2 4; do
			# shellcheck disable=SC2086
			out=$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode "${in[@]}" $view -j$j 2>&1 | md5sum)
			[ "$j" = 2 ] && j2["$name $view"]=$out
			check_eq "$name: $view -j$j as -j1" "$one" "$out"
		done
	done
done

# --pt-decoder: the packet walker (the default) and libipt's block decoder alone give
# every report byte for byte, on one thread and in small pieces
for dir in "$XP_ROOT"/traces/*/; do
	name=$(basename "$dir")
	input_of "$dir"
	for view in "--blocks" "--calltree" "--insn --format jsonl" "--calls --format jsonl" "--ranges" \
		"--blocks --format callgrind"; do
		for j in 1 2; do
			fast=${j2["$name $view"]:-}
			# shellcheck disable=SC2086
			[ "$j" = 2 ] && [ -n "$fast" ] ||
				fast=$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode "${in[@]}" $view -j$j 2>&1 | md5sum)
			# shellcheck disable=SC2086
			check_eq "$name: $view -j$j: --pt-decoder fast as libipt" \
				"$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode "${in[@]}" $view -j$j --pt-decoder libipt 2>&1 | md5sum)" \
				"$fast"
		done
	done
done
