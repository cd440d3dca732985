#!/bin/bash
# Runs each libFuzzer harness (build-fuzz/fuzz_*) for $1 seconds on its corpus in
# build-fuzz/corpus/NAME, seeded from the fixtures and shipped traces.  Exits 1 when a
# harness finds a crash (the reproducer is left as build-fuzz/crash-*).
# Usage: tests/fuzz/run.sh SECONDS [NAME...]
set -u
cd "$(dirname "$0")/../.."
secs=${1:-60}; shift || true
names=("$@")
[ ${#names[@]} = 0 ] && for b in build-fuzz/fuzz_*; do [ -x "$b" ] && names+=("${b#build-fuzz/fuzz_}"); done
seed() {	# $1 name $2 corpus dir
	case $1 in
	perfdata) cp tests/fixtures/perfdata/*.data "$2"/ 2>/dev/null
		for t in traces/*/perf.data; do cp "$t" "$2/$(basename "$(dirname "$t")").data"; done ;;
	esac
}
rc=0
for n in "${names[@]}"; do
	c=build-fuzz/corpus/$n
	[ -d "$c" ] || { mkdir -p "$c" && seed "$n" "$c"; }
	"build-fuzz/fuzz_$n" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=1048576 \
		-print_final_stats=1 -artifact_prefix=build-fuzz/ "$c" >"build-fuzz/fuzz_$n.log" 2>&1 || rc=1
	echo "fuzz_$n: $(grep -E '^stat::number_of_executed_units' "build-fuzz/fuzz_$n.log" | awk '{print $2}') runs, $(grep -oE 'cov: [0-9]+' "build-fuzz/fuzz_$n.log" | tail -1), exit $rc"
done
exit $rc
