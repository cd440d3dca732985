#!/bin/bash
# Runs every test: cmocka unit tests (plain and ASan+UBSan builds) and the integration
# scripts under tests/integration/ (TAP-style "ok"/"not ok" lines, see tests/lib.sh).
# Suites run in parallel (XP_TEST_JOBS at once, default: cores + 1; most of a suite's
# time is spent waiting on traced programs), each into its own log; results are
# printed in a fixed order with a final "N passed, N failed" line; exits 1 on any
# failure.
# Usage: tests/run.sh [PATTERN]   (only suites whose name contains PATTERN)
set -u
cd "$(dirname "$0")/.."
pattern=${1:-}
jobs_max=${XP_TEST_JOBS:-$(($(nproc) + 1))}
passed=0
failed=0
failed_suites=()
logdir=build/test-logs
# Each suite's wall time in the previous run (tenths of s), to start the longest first
declare -A took=()
for f in "$logdir"/*.time; do
	[ -f "$f" ] && took[$(basename "$f" .time)]=$(awk '{ printf "%d", ($2 - $1) * 10 }' "$f")
done
rm -rf "$logdir"
mkdir -p "$logdir"

count_cmocka() {	# $1 log -> sets p f
	p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test.*/\1/p' "$1" | tail -1)
	p=${p:-0}
	f=${f:-0}
}

# One suite, in the background: its log and, when it ends, its exit status.
start_unit() {	# $1 binary, $2 label
	local t0=$EPOCHREALTIME
	CMOCKA_MESSAGE_OUTPUT=stdout /usr/bin/time -f '%U %S' -o "$logdir/$2.cpu" "$1" >"$logdir/$2.log" 2>&1
	echo $? >"$logdir/$2.rc"
	echo "$t0 $EPOCHREALTIME" >"$logdir/$2.time"
}
start_integration() {	# $1 script, $2 label
	local t0=$EPOCHREALTIME
	/usr/bin/time -f '%U %S' -o "$logdir/$2.cpu" timeout 600 bash "$1" >"$logdir/$2.log" 2>&1
	echo $? >"$logdir/$2.rc"
	echo "$t0 $EPOCHREALTIME" >"$logdir/$2.time"
}

report() {	# $1 label, $2 log; uses p f
	passed=$((passed + p))
	failed=$((failed + f))
	if [ "$f" = 0 ]; then
		printf '%-44s %4d passed\n' "$1" "$p"
	else
		printf '%-44s %4d passed, %d FAILED  (log: %s)\n' "$1" "$p" "$f" "$2"
		failed_suites+=("$1")
		# each failed check with the lines that say why (expected/actual, a pattern)
		awk '/^not ok|^\[  (FAILED|ERROR) \]|ERROR|error:|Assertion|runtime error|AddressSanitizer/ { n = 12; print; next }
		     n > 0 && /^#/ { n--; print; next } { n = 0 }' "$2" | head -40 | sed 's/^/    /'
	fi
}

mk/deps.sh test || exit 1

# The suites see a machine without its user's caches, as a fresh machine would: HOME
# is a new empty directory (xptrace's and perf's ~/.debug, perf's configuration).
# rustup's rustc finds its toolchains through HOME: those stay reachable.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$PWD/build/test-home
rm -rf "$HOME"
mkdir -p "$HOME"
unset PERF_BUILDID_DIR PERF_CONFIG
export PERF_CONFIG_NOSYSTEM=1

# What a run may leave in the checkout: only build trees.  Anything else new afterwards
# is a test writing where it must not (reported as a failed suite).
outside_build() {
	git status --porcelain --ignored --untracked-files=normal 2>/dev/null |
		grep -Ev '^(\?\?|!!) (build|build-asan|build-fuzz)/$|^(\?\?|!!) xptrace$' | sort
}
tree_before=$(outside_build)

# Integration scripts first: they are the long ones.
# A script with a line "# run.sh: alone" measures time against the program's own: it
# runs last, by itself, when the other suites no longer load the cores.
suites=() alone=()
for script in tests/integration/*.sh; do
	[ -f "$script" ] || continue
	[[ -z "$pattern" || "$script" == *"$pattern"* ]] || continue
	if grep -q '^# run.sh: alone' "$script"; then
		alone+=("integration $script integration/$(basename "$script" .sh)")
	else
		suites+=("integration $script integration/$(basename "$script" .sh)")
	fi
done
for build in build build-asan; do
	for bin in "$build"/tests/test_*; do
		[ -x "$bin" ] || continue
		label="$build/$(basename "$bin")"
		[[ -z "$pattern" || "$label" == *"$pattern"* ]] || continue
		suites+=("unit $bin ${label//\//_}")
	done
done

# Longest first: the run ends with the last suite started, which should be a short
# one.  Suites the previous run did not time (a fresh clone) take these wall times (s,
# a full run on a 2-core VM), the unit tests among them: started last, the ASan
# pt_fast alone outlasted every other suite by 10 s.
for l in integration_record_adaptive:72 integration_decode_samples:45 integration_export:34 \
	integration_step_unwind:33 integration_step:28 integration_readme_tour:25 \
	integration_decode_insn_fields:25 integration_step_fault:23 integration_dbt:22 integration_selftest:22 \
	integration_decode_views:21 integration_record_probe:20 integration_hermetic:20 integration_traces:19 \
	integration_diff:18 build-asan_test_pt_fast:17 build_test_pt_fast:16 integration_record_errors:16 \
	integration_decode_pt:16 build-asan_test_par:16 integration_record_killed:16 integration_decode_merged:15 \
	integration_decode_corrupt:15 integration_decode_jit:14; do
	[ -n "${took[${l%:*}]:-}" ] || took[${l%:*}]=$((${l#*:} * 10))
done
listed=("${suites[@]}")
mapfile -t suites < <(for s in "${suites[@]}"; do
	read -r kind what label <<<"$s"
	echo "${took[${label//\//_}]:-0} $s"
done | sort -s -k1,1nr | cut -d' ' -f2-)
for s in "${suites[@]}"; do
	read -r kind what label <<<"$s"
	while [ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]; do
		wait -n
	done
	"start_$kind" "$what" "${label//\//_}" &
done
wait
for s in "${alone[@]}"; do
	read -r kind what label <<<"$s"
	"start_$kind" "$what" "${label//\//_}"
done
suites=("${listed[@]}" "${alone[@]}")

# Reported in the usual order: unit tests, then integration scripts.
for s in "${suites[@]}"; do
	read -r kind what label <<<"$s"
	[ "$kind" = unit ] || continue
	log="$logdir/$label.log"
	count_cmocka "$log"
	if [ "$(cat "$logdir/$label.rc" 2>/dev/null)" != 0 ] && [ "$f" = 0 ]; then f=1; fi	# crashed before the summary
	report "$label" "$log"
done
for s in "${suites[@]}"; do
	read -r kind what label <<<"$s"
	[ "$kind" = integration ] || continue
	log="$logdir/${label//\//_}.log"
	rc=$(cat "$logdir/${label//\//_}.rc" 2>/dev/null || echo 1)
	p=$(grep -c '^ok ' "$log")
	f=$(grep -c '^not ok ' "$log")
	if [ "$rc" != 0 ] && [ "$f" = 0 ]; then
		echo "not ok - $label exited $rc" >>"$log"
		f=1
	fi
	report "$label" "$log"
done

tree_after=$(outside_build)
p=1 f=0
if [ "$tree_after" != "$tree_before" ]; then
	p=0 f=1
	comm -13 <(printf '%s\n' "$tree_before") <(printf '%s\n' "$tree_after") |
		sed 's/^/not ok - written outside build\/: /' >"$logdir/tree.log"
fi
[ -e "$logdir/tree.log" ] || echo "ok - nothing written in the checkout outside build/" >"$logdir/tree.log"
report "the checkout after the run" "$logdir/tree.log"

# the longest suites (wall seconds each), to keep the whole run short
echo
cat "$logdir"/*.time 2>/dev/null | paste -d' ' - <(ls "$logdir"/*.time 2>/dev/null | xargs -rn1 basename) |
	awk '{ printf "%6.1f s  %s\n", $2 - $1, substr($3, 1, length($3) - 5) }' | sort -rn | head -5 |
	sed 's/^/slowest: /'
# and CPU seconds (user + system, its programs' too): what the cores give the run
for f in "$logdir"/*.cpu; do
	[ -f "$f" ] && awk -v n="$(basename "$f" .cpu)" 'NF == 2 { printf "%6.1f s  %s\n", $1 + $2, n }' "$f"
done | sort -rn | head -5 | sed 's/^/most CPU: /'
if [ ${#failed_suites[@]} -gt 0 ]; then
	echo "failed suites: ${failed_suites[*]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ] && [ "$passed" -gt 0 ]
