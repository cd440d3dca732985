#!/bin/bash
# SIGKILL of `xptrace record` at several moments, sample and step mode: what reached
# the disk decodes with xptrace and with perf script (attrs come before the data, the
# header's data size follows every flush, step mode streams its PT).  Once, the
# file held a header and nothing readable.  perf reads up to the header's data size,
# xptrace on to the end of the file: cut to the data size, both count the same.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"

# data_end FILE: the data section's end by the header (offset + size).
data_end() { od -An -tu8 -j 40 -N 16 "$1" | awk '{ print $1 + $2 }'; }

# killed NAME WHEN RECORD-ARGS...: SIGKILL once the first records reached the disk
# (the start takes long on a loaded machine) and then WHEN: SECONDS more, or, as
# BYTES+b, once the header's data section ends past BYTES (step mode: a faster tracer
# or a quieter machine writes more per second, and perf script takes ~0.3 s a million
# instructions); then NAME.cut: perf.data cut to the header's data size.
killed() {
	local name=$1 after=$2 upto=131176; shift 2
	[[ $after == *b ]] && upto=${after%b} after=0
	"$XPTRACE" record -q -o "$name" "$@" >/dev/null 2>&1 &
	local xp=$!
	for _ in $(seq 400); do
		[ -f "$name/perf.data" ] && [ "$(data_end "$name/perf.data")" -gt "$upto" ] && break
		sleep 0.05
	done
	sleep "$after"
	kill -KILL "$xp"
	wait "$xp" 2>/dev/null
	check "$name: perf.data is there" test -s "$name/perf.data"
	cp "$name/perf.data" "$name.cut"
	truncate -s "$(data_end "$name/perf.data")" "$name.cut"
}

for t in 0.3 0.8 1.5; do
	killed "sample$t" "$t" --mode sample -- "$PROGS/hot" 20000
	out=$("$XPTRACE" decode -i "sample$t" --functions 2>"$TMP/err")
	check_eq "sample, killed after $t s: xptrace decodes it (exit 0)" 0 $?
	check_match "sample, killed after $t s: hot_inner is there" " hot_inner$" "$out"
	perf_clean "sample, killed after $t s" "sample$t/perf.data"
	n=$(perf script -i "sample$t/perf.data" 2>/dev/null | wc -l)
	check "sample, killed after $t s: perf script has samples ($n)" in_range 1 1000000 "$n"
	ours=$("$XPTRACE" decode -i "sample$t.cut" --functions 2>/dev/null | awk 'NR > 2 { s += $1 } END { print s }')
	check_eq "sample, killed after $t s: xptrace and perf script count the same samples" "$n" "$ours"
done

# perf ends the cut trace one loop iteration (hot_inner: 5 instructions) before the
# last TNT bit, xptrace at it: perf's instructions are exactly the first ones of ours.
# perf reads up to the header's data size: its stream of the killed file is that of
# the cut one (read once)
for t in 0.3 0.8 1.5; do
	killed "step$t" "$(awk -v t="$t" 'BEGIN { printf "%db", 131176 + t * 100000 }')" --mode step -- "$PROGS/hot" 20000
	head=$("$XPTRACE" decode -i "step$t" --functions 2>"$TMP/err" | head -1)
	check_match "step, killed at moment $t: xptrace decodes instructions" "^# functions: insns, total [1-9]" "$head"
	if [ "$t" != 0.3 ]; then	# the later ones: millions of instructions, each one compared at 0.3
		p=$(perf script -i "step$t/perf.data" --itrace=i1000i -F ip 2>/dev/null | wc -l)
		check "step, killed at moment $t: perf script decodes instructions (one in 1000: $p)" in_range 1 1000000000 "$p"
		continue
	fi
	perf script -i "step$t/perf.data" --itrace=i0ns -F ip 2>/dev/null | awk '{ print $1 }' >"$TMP/perf.ip"
	p=$(wc -l <"$TMP/perf.ip")
	check "step, killed at moment $t: perf script decodes instructions ($p)" in_range 1 1000000000 "$p"
	mkdir -p "step$t.c" && cp -r "step$t/." "step$t.c/" && mv "step$t.cut" "step$t.c/perf.data"
	"$XPTRACE" decode -i "step$t.c" --insn --format jsonl 2>/dev/null |
		awk -F'"ip":"0x' 'NF > 1 { split($2, a, "\""); print a[1] }' >"$TMP/ours.ip"
	o=$(wc -l <"$TMP/ours.ip")
	check "step, killed at moment $t: xptrace has perf's $p instructions and at most 5 more ($o)" in_range "$p" "$((p + 5))" "$o"
	check_eq "step, killed at moment $t: perf's instructions are the first of xptrace's" \
		"$(md5sum <"$TMP/perf.ip")" "$(head -n "$p" "$TMP/ours.ip" | md5sum)"
done

# High data rates: when the 256 KiB write buffer fills faster than the timed flushes
# come (every 100 ms), every flush was a full buffer's, cut in the middle of a record,
# and the header's data size was never written: perf said "data size field is 0 ...
# failed to process sample" and printed no rows, exit 0 (--call-graph dwarf at 4 kHz
# writes ~15 MB/s, -g at one sample every 10 us ~5 MB/s); or it still said the data of
# an early timed flush, and perf read the first 100 ms of a 15 MB file.  SIGKILL once
# perf.data holds BYTES (whatever the header says), at two sizes: the header's data
# size must cover all that reached the disk but the write the kill interrupted (at most
# the 256 KiB buffer).
killed_at() {	# NAME BYTES RECORD-ARGS...
	local name=$1 upto=$2 xp; shift 2
	"$XPTRACE" record -q -o "$name" "$@" >/dev/null 2>&1 &
	xp=$!
	for _ in $(seq 600); do
		[ "$(stat -c %s "$name/perf.data" 2>/dev/null || echo 0)" -gt "$upto" ] && break
		sleep 0.05
	done
	kill -KILL "$xp"
	wait "$xp" 2>/dev/null
}
for how in dwarf fp; do
	case $how in
	dwarf) args=(--call-graph dwarf -F 4000) ;;
	fp) args=(-g -c 10000) ;;
	esac
	for mb in 1 5; do
		what="$how, killed at $mb MB"
		killed_at "fast" $((mb * 1000000)) "${args[@]}" -- "$PROGS/hot" 20000
		gap=$(($(stat -c %s fast/perf.data) - $(data_end fast/perf.data)))
		check "$what: the header's data size covers what reached the disk but <= 256 KiB ($gap B past it)" \
			in_range 0 262144 "$gap"
		perf report -i fast/perf.data --stdio --no-children --sort sym -g none >"$TMP/rep" 2>"$TMP/reperr"
		check_eq "$what: perf report exits 0" 0 $?
		check_match "$what: perf report has a row for hot_inner" '^ +[0-9.]+% +\[\.\] hot_inner$' "$(cat "$TMP/rep")"
		check_eq "$what: perf reads up to a whole record (no 'data size field is 0', no 'failed to process')" \
			"" "$(grep -E 'data size field is 0|failed to process' "$TMP/reperr")"
		out=$("$XPTRACE" decode -i fast --functions 2>/dev/null)
		check_match "$what: xptrace decodes it, hot_inner there" " hot_inner$" "$out"
		rm -rf fast
	done
done
