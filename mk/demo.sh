#!/bin/sh
# `make demo`: shows what this machine can record, records the demo workload in the
# best mode it has (--mode auto) and summarizes the capture in one line.
set -e
cd "$(dirname "$0")/.."
./xptrace info

dir=build/demo.data
log=build/demo.record.log
# tests/progs/hot.c: hot_inner ~75% of the time, cold_path ~25%, called from hot_outer.
./xptrace record --mode auto -f -g -o "$dir" -- build/progs/hot 500 >/dev/null 2>"$log" || {
	cat "$log" >&2
	exit 1
}
mode=$(sed -n 's/^xptrace: mode auto: recording in \([a-z]*\) mode$/\1/p' "$log")
events=$(sed -n 's/^xptrace: events: \([^ ]*\).*/\1/p' "$log")
summary=$(sed -n 's/^xptrace: recorded \(.*\)$/\1/p' "$log")
echo "demo: recorded build/progs/hot in ${mode:-?} mode${events:+ ($events)}: $summary"

# the decode side: hot functions, then the call tree (nodes >= 1 % of the samples)
echo
echo "demo: xptrace decode -i $dir   (hot functions)"
./xptrace decode -i "$dir" --functions --percent-limit 1
echo
echo "demo: xptrace decode -i $dir --calltree --percent-limit 1"
./xptrace decode -i "$dir" --calltree --percent-limit 1
