#!/bin/bash
# Runs every test: cmocka unit tests (plain and ASan+UBSan builds) and the integration
# scripts under tests/integration/ (TAP-style "ok"/"not ok" lines, see tests/lib.sh).
# Prints each suite's result and a final "N passed, N failed" line; exits 1 on any failure.
# Usage: tests/run.sh [PATTERN]   (only suites whose name contains PATTERN)
set -u
cd "$(dirname "$0")/.."
pattern=${1:-}
passed=0
failed=0
failed_suites=()
logdir=build/test-logs
mkdir -p "$logdir"

count_cmocka() {	# $1 log -> sets p f
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	p=${p:-0}
	f=${f:-0}
}

run_unit() {	# $1 binary, $2 label
	local bin=$1 label=$2 log rc
	log="$logdir/$label.log"
	CMOCKA_MESSAGE_OUTPUT=stdout "$bin" >"$log" 2>&1
	rc=$?
	count_cmocka "$log"
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then f=1; fi	# crashed before the summary
	report "$label" "$log"
}

run_integration() {	# $1 script
	local script=$1 label log rc
	label="integration/$(basename "$script" .sh)"
	log="$logdir/${label//\//_}.log"
	timeout 600 bash "$script" >"$log" 2>&1
	rc=$?
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $label exited $rc" >>"$log"
		f=1
	fi
	report "$label" "$log"
}

report() {	# $1 label, $2 log; uses p f
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" = 0 ]; then
		printf '%-44s %4d passed\n' "$1" "$p"
	else
		printf '%-44s %4d passed, %d FAILED  (log: %s)\n' "$1" "$p" "$f" "$2"
		failed_suites+=("$1")
		grep -E '^\[  (FAILED|ERROR) \]|^not ok|ERROR|error:|Assertion|runtime error|AddressSanitizer' "$2" | head -20 | sed 's/^/    /'
	fi
}

mk/deps.sh test || exit 1

for build in build build-asan; do
	for bin in "$build"/tests/test_*; do
		[ -x "$bin" ] || continue
		label="$build/$(basename "$bin")"
		[[ -z "$pattern" || "$label" == *"$pattern"* ]] || continue
		run_unit "$bin" "${label//\//_}"
	done
done
for script in tests/integration/*.sh; do
	[ -f "$script" ] || continue
	[[ -z "$pattern" || "$script" == *"$pattern"* ]] || continue
	run_integration "$script"
done

echo
if [ ${#failed_suites[@]} -gt 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
