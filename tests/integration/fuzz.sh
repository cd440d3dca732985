#!/bin/bash
# The libFuzzer harnesses (tests/fuzz/, built by `make check` into build-fuzz/ with
# clang, ASan+UBSan): every reproducer in tests/fuzz/crashes/ (NAME-WHAT, replayed by
# harness NAME) must run clean, then each harness fuzzes for FUZZ_CHECK_SECONDS
# (default 6) on its seed corpus, all at once, and must find nothing.  The long runs
# are `make fuzz FUZZ_SECONDS=N` (tests/fuzz/README.md).
. "$(dirname "$0")/../lib.sh"
secs=${FUZZ_CHECK_SECONDS:-6}
# the jit and pmu harnesses write their input as files: tmpfs makes that 5x cheaper
if [ -d /dev/shm ] && shm=$(mktemp -d /dev/shm/xptrace-fuzz.XXXXXX); then
	trap 'rm -rf "$TMP" "$shm"' EXIT
	export TMPDIR=$shm
else
	export TMPDIR=$TMP
fi
names=()
for src in "$XP_ROOT"/tests/fuzz/fuzz_*.c; do
	n=$(basename "$src" .c)
	n=${n#fuzz_}
	if [ -x "$XP_ROOT/build-fuzz/fuzz_$n" ]; then names+=("$n"); else not_ok "fuzz_$n is built (make fuzz-build)"; fi
done

# A harness run: exit status, the executed count and coverage from libFuzzer's log.
for n in "${names[@]}"; do
	bin=$XP_ROOT/build-fuzz/fuzz_$n
	repro=("$XP_ROOT"/tests/fuzz/crashes/"$n"-*)
	if [ -e "${repro[0]}" ]; then
		"$bin" -rss_limit_mb=2048 "${repro[@]}" >"$TMP/replay-$n.log" 2>&1
		rc=$?
		if [ $rc = 0 ] && ! grep -Eq 'ERROR: |runtime error' "$TMP/replay-$n.log"; then
			ok "fuzz_$n replays its ${#repro[@]} reproducers in tests/fuzz/crashes/ without a report"
		else
			not_ok "fuzz_$n replay of tests/fuzz/crashes/$n-*: exit $rc"
			grep -E 'ERROR: |runtime error|Running: ' "$TMP/replay-$n.log" | head -5 | sed 's/^/#   /'
		fi
	fi
	"$XP_ROOT/tests/fuzz/seed.sh" "$n" "$TMP/corpus-$n"
	"$bin" -max_total_time="$secs" -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$TMP/$n-" \
		"$TMP/corpus-$n" >"$TMP/fuzz-$n.log" 2>&1 &
done
wait

for n in "${names[@]}"; do
	log=$TMP/fuzz-$n.log
	runs=$(awk '/^stat::number_of_executed_units/ {print $2}' "$log")
	cov=$(grep -oE 'cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
	if grep -Eq '^==[0-9]+==ERROR|runtime error|deadly signal|^SUMMARY' "$log" || [ -z "$runs" ] ||
		! grep -q '^Done [0-9]* runs' "$log"; then
		not_ok "fuzz_$n for ${secs}s finds nothing"
		grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -5 | sed 's/^/#   /'
		for a in "$TMP/$n-"*; do [ -e "$a" ] && cp "$a" "$XP_ROOT/build-fuzz/" && echo "#   reproducer: build-fuzz/$(basename "$a")"; done
	else
		ok "fuzz_$n for ${secs}s finds nothing ($runs runs, $cov)"
	fi
done
