# Helpers for integration tests (bash).  Each check prints "ok - NAME" or
# "not ok - NAME" with the evidence; tests/run.sh counts those lines.
set -u
XP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
XPTRACE=${XPTRACE:-$XP_ROOT/xptrace}
XPTRACE_ASAN=${XPTRACE_ASAN:-$XP_ROOT/build-asan/xptrace}
PROGS=$XP_ROOT/build/progs
FIXTURES=$XP_ROOT/tests/fixtures
TMP=$(mktemp -d /tmp/xptrace-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }

# check NAME CMD...: passes when CMD exits 0.
check() {
	local name=$1; shift
	if "$@"; then ok "$name"; else not_ok "$name (command failed: $*)"; fi
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" == "$3" ]; then ok "$1"; else
		not_ok "$1"
		echo "#   expected: $2"
		echo "#   actual:   $3"
	fi
}

# check_match NAME REGEX TEXT (grep -E)
check_match() {
	if printf '%s\n' "$3" | grep -Eq -- "$2"; then ok "$1"; else
		not_ok "$1"
		echo "#   pattern: $2"
		printf '%s\n' "$3" | head -20 | sed 's/^/#   | /'
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
