#!/bin/sh
# Installs what xptrace needs when it is missing.  Usage: mk/deps.sh [build|test|bench]
#   build (default): headers and libraries to compile and link xptrace.
#   test:  also the oracles the test suite compares against (perf, callgrind_annotate).
#   bench: also hyperfine.
set -eu
need=${1:-build}
missing=""

have_header() { printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
want() { missing="$missing $1"; }

have_header intel-pt.h            || want libipt-dev
have_header perfmon/pfmlib.h      || want libpfm4-dev
have_header libelf.h              || want libelf-dev
have_header elfutils/libdw.h      || want libdw-dev
have_header capstone/capstone.h   || want libcapstone-dev
have_header cmocka.h              || want libcmocka-dev
command -v ${CC:-cc} >/dev/null   || want gcc
if [ "$need" = test ] || [ "$need" = bench ]; then
	command -v perf >/dev/null && perf version >/dev/null 2>&1 || want linux-perf
	command -v callgrind_annotate >/dev/null || want valgrind
	command -v python3 >/dev/null || want python3
fi
if [ "$need" = bench ]; then
	command -v hyperfine >/dev/null || want hyperfine
fi

[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
	echo "xptrace: missing packages:$missing: not running as root (run: sudo apt-get install -y$missing)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null
