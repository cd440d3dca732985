#!/bin/bash
# A perf.data written by `xptrace record` now (sample mode with callchains, step mode
# with its PT) cut at many offsets after its attrs, as a full disk, a quota or an
# interrupted copy leaves it: every cut decodes (exit 0, no sanitizer report) what lies
# before the cut and states the loss; the count (samples, instructions) never drops as
# the cut moves on and is the whole file's, perf script's, once the data is whole.
# tests/unit/test_pd_write.c cuts a synthetic file at every 8th byte; this is the
# recorder's real output, through the whole decode.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"
export ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

u64() { od -An -tu8 -j "$2" -N 8 "$1" | tr -d ' '; }	# FILE OFFSET

# count MODE DIR: samples (sample) or instructions (step) xptrace decodes.  A step
# trace cut before its first record has no AUXTRACE_INFO to say the event is PT: it
# reads as an event without samples ("# samples: ..., total 0").  Without inline frames:
# they come from the modules' DWARF, not from the file cut, and libc's (libc6-dbg,
# compressed) made two thirds of each decode under ASan.
count() {
	if [ "$1" = sample ]; then
		"$XPTRACE_ASAN" decode -i "$2" --calltree --metric samples --no-inline --format folded 2>"$TMP/err" |
			awk '{ s += $NF } END { print s + 0 }'
	else
		"$XPTRACE_ASAN" decode -i "$2" --functions --no-inline 2>"$TMP/err" |
			sed -n -e '1s/^# functions: insns, total \([0-9]*\)$/\1/p' -e '1s/^# samples: .*, total 0$/0/p'
	fi
}

# cuts MODE DIR: the offsets, then the checks at each
cuts() {
	local mode=$1 dir=$2 whole=$2/whole.data
	mv "$dir/perf.data" "$whole"
	local size attrs_end data_off data_end
	size=$(stat -c %s "$whole")
	attrs_end=$(($(u64 "$whole" 24) + $(u64 "$whole" 32)))
	data_off=$(u64 "$whole" 40)
	data_end=$((data_off + $(u64 "$whole" 48)))
	check "$mode: the attrs come before the data ($attrs_end <= $data_off)" test "$attrs_end" -le "$data_off"
	local want offs=() n prev=0 bad=() rc
	if [ "$mode" = sample ]; then
		want=$(perf script -i "$whole" -F tid 2>/dev/null | wc -l)
	else
		want=$(perf script -i "$whole" --itrace=i0ns -F ip 2>/dev/null | wc -l)
	fi
	cp "$whole" "$dir/perf.data"
	check_eq "$mode: the whole file: xptrace counts perf script's" "$want" "$(count "$mode" "$dir")"
	# just after the attrs, around the data start, 15 places in the data, around its
	# end, in the features, the last byte
	offs=("$attrs_end" $((attrs_end + 8)) $((data_off - 1)) "$data_off" $((data_off + 1)))
	for i in $(seq 1 15); do offs+=($((data_off + (data_end - data_off) * i / 16))); done
	offs+=($((data_end - 1)) "$data_end" $((data_end + 8)))
	for i in 1 2 3 4; do offs+=($((data_end + (size - data_end) * i / 5))); done
	offs+=($((size - 1)))
	for n in "${offs[@]}"; do
		head -c "$n" "$whole" >"$dir/perf.data"
		got=$(count "$mode" "$dir")
		rc=${PIPESTATUS[0]}
		if grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/err"; then
			bad+=("$n: sanitizer report: $(grep -Em1 'Sanitizer|runtime error' "$TMP/err")")
		elif [ -z "$got" ]; then
			bad+=("$n: no count: $(head -2 "$TMP/err" | tr '\n' ' ')")
		elif ! grep -Eq "truncated|report is partial|bad section|damaged" "$TMP/err"; then
			bad+=("$n: the loss is not stated: $(head -2 "$TMP/err" | tr '\n' ' ')")
		elif [ "$got" -lt "$prev" ] || [ "$got" -gt "$want" ]; then
			bad+=("$n: $got, after $prev at the cut before (whole: $want)")
		elif [ "$n" -ge "$data_end" ] && [ "$got" != "$want" ]; then
			bad+=("$n: the data is whole but $got of $want")
		fi
		prev=${got:-0}
	done
	check_eq "$mode: ${#offs[@]} cuts from byte $attrs_end to $((size - 1)) decode with the loss stated" \
		"" "$(printf '%s\n' "${bad[@]}")"
	head -c $(((data_off + data_end) / 2)) "$whole" >"$dir/perf.data"
	check "$mode: half the data: some but not all of the $want" in_range 1 $((want - 1)) "$(count "$mode" "$dir")"
}

"$XPTRACE" record -q -o sample --call-graph fp -- "$PROGS/hot" 300 >/dev/null 2>&1
check "sample: recorded" test -s sample/perf.data
cuts sample sample

"$XPTRACE" record -q -o step --mode step -- "$PROGS/step_basic" >/dev/null 2>&1
check "step: recorded" test -s step/perf.data
cuts step step
