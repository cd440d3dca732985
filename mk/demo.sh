#!/bin/sh
# `make demo`: records the demo workload in the best mode this machine has (--mode
# auto) and reports it, then records a small program with the step tracer (exact
# instruction stream as real Intel PT, on any x86-64) and shows an instruction-level
# view of it; what this machine can record (`xptrace info`) comes last.
# `make demo V=1` also shows the recordings' own notes.
set -e
cd "$(dirname "$0")/.."
V=${V:-0}
out=${DEMO_OUT:-build}	# where the traces go (tests: a private directory)
mkdir -p "$out"

record() {	# LOG ARGS...: a recording, its notes shown with V=1 or when it fails
	log=$1
	shift
	./xptrace record -f "$@" >/dev/null 2>"$log" || {
		cat "$log" >&2
		exit 1
	}
	[ "$V" = 0 ] || cat "$log"
}

dir=$out/demo.data
log=$out/demo.record.log
# tests/progs/hot.c: hot_inner ~75% of the time, cold_path ~25%, called from hot_outer.
record "$log" --mode auto -g -o "$dir" -- build/progs/hot 500
mode=$(sed -n 's/^xptrace: mode auto: recording in \([a-z]*\) mode.*/\1/p' "$log")
summary=$(sed -n 's/^xptrace: recorded \(.*\)$/\1/p' "$log")
echo "demo: xptrace record -g -- build/progs/hot 500   (${mode:-?} mode: $summary)"

# the decode side: hot functions, then the call tree (nodes >= 1 % of the samples)
echo
echo "demo: xptrace decode -i $dir --functions   (hot functions)"
./xptrace decode -i "$dir" --functions --percent-limit 1
echo
echo "demo: xptrace decode -i $dir --calltree --percent-limit 1"
./xptrace decode -i "$dir" --calltree --percent-limit 1

# Every branch, not samples: the step tracer (tests/progs/step_bench.c sorts through
# a comparison callback, hashes strings, sieves primes).
sdir=$out/demo-step.data
slog=$out/demo-step.record.log
record "$slog" --mode step -o "$sdir" -- build/progs/step_bench
summary=$(sed -n 's/^xptrace: recorded \(.*\)$/\1/p' "$slog")
echo
echo "demo: xptrace record --mode step -- build/progs/step_bench   ($summary)"
echo
echo "demo: xptrace decode -i $sdir --functions --percent-limit 3   (exact instruction counts)"
./xptrace decode -i "$sdir" --functions --percent-limit 3
echo
echo "demo: xptrace decode -i $sdir --annotate hash   (every instruction of hash: count, branch taken %)"
./xptrace decode -i "$sdir" --annotate hash

echo
echo "demo: xptrace info   (what this machine can record, and why not)"
./xptrace info
