#!/bin/bash
# Runs each libFuzzer harness (build-fuzz/fuzz_*) for $1 seconds on its corpus in
# build-fuzz/corpus/NAME, seeded from the fixtures and shipped traces.  Exits 1 when a
# harness finds a crash (the reproducer is left as build-fuzz/crash-*: fix the defect and
# check it in as tests/fuzz/crashes/NAME-WHAT, which `make check` replays).  Harnesses
# that write files (jit, pmu) write them under $TMPDIR, /dev/shm when it exists.
# Usage: tests/fuzz/run.sh SECONDS [NAME...]
set -u
cd "$(dirname "$0")/../.."
[ -z "${TMPDIR:-}" ] && [ -d /dev/shm ] && [ -w /dev/shm ] && export TMPDIR=/dev/shm
secs=${1:-60}; shift || true
names=("$@")
[ ${#names[@]} = 0 ] && for b in build-fuzz/fuzz_*; do [ -x "$b" ] && names+=("${b#build-fuzz/fuzz_}"); done
rc=0
for n in "${names[@]}"; do
	c=build-fuzz/corpus/$n
	[ -d "$c" ] || tests/fuzz/seed.sh "$n" "$c"
	# perf.data inputs past 8 KB are the step traces, whose PT decode takes 100 ms
	# (README: Long runs)
	opts=()
	[ "$n" = perfdata ] && opts=(-max_len=8192)
	# the entropic schedule's bookkeeping was a sixth of this harness's time; without
	# it, it reached more coverage in equal CPU time (README: Speed)
	[ "$n" = perfdata ] && opts+=(-entropic=0)
	"build-fuzz/fuzz_$n" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 "${opts[@]}" \
		-artifact_prefix=build-fuzz/ "$c" >"build-fuzz/fuzz_$n.log" 2>&1
	r=$?
	[ $r = 0 ] || rc=1
	echo "fuzz_$n: $(awk '/^stat::number_of_executed_units/ {print $2}' "build-fuzz/fuzz_$n.log") runs," \
		"$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "build-fuzz/fuzz_$n.log" | tail -1), exit $r (log: build-fuzz/fuzz_$n.log)"
done
exit $rc
