# Helpers for integration tests (bash).  Each check prints "ok - NAME" or
# "not ok - NAME" with the evidence; tests/run.sh counts those lines.
set -u
XP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XPTRACE=${XPTRACE:-$XP_ROOT/xptrace}
XPTRACE_ASAN=${XPTRACE_ASAN:-$XP_ROOT/build-asan/xptrace}
PROGS=$XP_ROOT/build/progs
FIXTURES=$XP_ROOT/tests/fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/xptrace-test.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# Nothing of the machine's user leaks in: xptrace's and perf's ~/.debug, perf's
# configuration.  rustup's rustc finds its toolchains through HOME: those stay reachable.
export RUSTUP_HOME=${RUSTUP_HOME:-$HOME/.rustup} CARGO_HOME=${CARGO_HOME:-$HOME/.cargo}
export HOME=$TMP/home
mkdir -p "$HOME"
unset PERF_BUILDID_DIR PERF_CONFIG
export PERF_CONFIG_NOSYSTEM=1

# perf as an oracle reads a trace's own snapshots: for `-i DIR/perf.data` where DIR is
# a trace directory of xptrace's (it holds .build-id/), DIR is perf's build-id
# directory, as `perf --buildid-dir DIR` takes it.  Other inputs use the test's own
# (empty) ~/.debug.
perf() {
	local a prev='' in=''
	for a in "$@"; do
		case $prev in -i | --input) in=$a ;; esac
		case $a in --input=*) in=${a#--input=} ;; --buildid-dir | --buildid-dir=*) in='' ; break ;; esac
		prev=$a
	done
	if [ -n "$in" ] && [ "$in" != - ]; then
		[ -d "$in" ] || in=$(dirname "$in")
		if [ -d "$in/.build-id" ]; then
			set -- --buildid-dir "$in" "$@"
		fi
	fi
	command perf "$@"
}

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name (command failed: $*)"; fi
}

# check_eq NAME EXPECTED ACTUAL; returns 1 when it fails (`check_eq ... || more detail`)
check_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else
		not_ok "$1"
		# every line marked: tests/run.sh's summary shows a failure's "#" lines
		printf '%s\n' "$2" | sed '1s/^/#   expected: /; 2,$s/^/#   |         /'
		printf '%s\n' "$3" | sed '1s/^/#   actual:   /; 2,$s/^/#   |         /'
		return 1
	fi
}

# check_match NAME REGEX TEXT (grep -E)
check_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else
		not_ok "$1"
		echo "#   pattern: $2"
		printf '%s\n' "$3" | head -20 | sed 's/^/#   | /'
		return 1
	fi
}

# check_exit NAME CODE CMD...: passes when CMD exits with CODE.
check_exit() {
	local name=$1 want=$2 rc; shift 2
	"$@" >"$TMP/.out" 2>"$TMP/.err"
	rc=$?
	if [ "$rc" = "$want" ]; then ok "$name"; else
		not_ok "$name (exit $rc, expected $want)"
		sed 's/^/#   | /' "$TMP/.err" | head -10
	fi
}
