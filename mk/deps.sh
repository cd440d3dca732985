#!/bin/sh
# Installs what xptrace needs when it is missing.  Usage: mk/deps.sh [build|test|bench]
#   build (default): headers and libraries to compile and link xptrace.
#   test:  also the oracles the test suite compares against (perf, callgrind_annotate)
#          and clang with its libFuzzer runtime (the harnesses in tests/fuzz/),
#          the consumers of the exports (chromium, go tool pprof; speedscope and
#          puppeteer-core from npm into build/node, not committed).
#   bench: also hyperfine.
set -eu
need=${1:-build}
missing=""

have_header() { printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
# Links an empty program against -l$1 (a header without its library is still missing).
have_lib() {
	out=$(mktemp "${TMPDIR:-/tmp}/xptrace-deps.XXXXXX") || return 1
	printf 'int main(void) { return 0; }\n' | ${CC:-cc} -x c - -o "$out" "-l$1" >/dev/null 2>&1
	rc=$?
	rm -f "$out"
	return $rc
}
# Links an empty libFuzzer harness (clang's -fsanitize=fuzzer runtime).
have_fuzzer() {
	command -v clang >/dev/null || return 1
	out=$(mktemp "${TMPDIR:-/tmp}/xptrace-deps.XXXXXX") || return 1
	printf '#include <stddef.h>\n#include <stdint.h>\nint LLVMFuzzerTestOneInput(const uint8_t *d, size_t n) { (void)d; (void)n; return 0; }\n' |
		clang -fsanitize=fuzzer,address,undefined -x c - -o "$out" >/dev/null 2>&1
	rc=$?
	rm -f "$out"
	return $rc
}
want() { missing="$missing $1"; }
# header library package
need_dev() { have_header "$1" && have_lib "$2" || want "$3"; }

need_dev intel-pt.h          ipt      libipt-dev
need_dev perfmon/pfmlib.h    pfm      libpfm4-dev
need_dev libelf.h            elf      libelf-dev
need_dev elfutils/libdw.h    dw       libdw-dev
need_dev capstone/capstone.h capstone libcapstone-dev
need_dev cmocka.h            cmocka   libcmocka-dev
need_dev protobuf-c/protobuf-c.h protobuf-c libprotobuf-c-dev
need_dev zlib.h              z        zlib1g-dev
need_dev libdeflate.h        deflate  libdeflate-dev
command -v ${CC:-cc} >/dev/null   || want gcc
# --mode dbt's tool links against valgrind's static core and VEX (Debian's valgrind
# package ships them with the tool headers); the recorder runs valgrind itself
{ [ -e /usr/include/valgrind/pub_tool_basics.h ] && command -v valgrind >/dev/null &&
  ls /usr/lib/x86_64-linux-gnu/valgrind/libcoregrind-amd64-linux.a >/dev/null 2>&1; } || want valgrind
if [ "$need" = test ] || [ "$need" = bench ]; then
	command -v perf >/dev/null && perf version >/dev/null 2>&1 || want linux-perf
	command -v callgrind_annotate >/dev/null || want valgrind
	command -v python3 >/dev/null || want python3
	[ -x /usr/bin/time ] || want time	# tests/run.sh: each suite's CPU seconds
	# clang alone (no recommends) lacks the sanitizer and libFuzzer runtimes
	command -v clang >/dev/null || want clang
	have_fuzzer || want libclang-rt-dev
	command -v groff >/dev/null || want groff-base	# the man pages (tests/integration/build.sh)
	# ld.so's labels (_start, _dl_start_user) and libc's local symbols, as perf sees them
	dpkg -s libc6-dbg >/dev/null 2>&1 || want libc6-dbg
	command -v chromium >/dev/null || want chromium
	command -v go >/dev/null || want golang-go
	command -v node >/dev/null || want nodejs
	command -v npm >/dev/null || want npm
fi
if [ "$need" = bench ]; then
	command -v hyperfine >/dev/null || want hyperfine
fi

# The npm packages of the test level, pinned, into build/node (tests/integration/export.sh
# finds them there); a failed install leaves those checks skipped, said so.
npm_packages() {
	{ [ "$need" = test ] || [ "$need" = bench ]; } || return 0
	root=$(cd "$(dirname "$0")/.." && pwd)
	[ -d "$root/build/node/node_modules/speedscope" ] && [ -d "$root/build/node/node_modules/puppeteer-core" ] &&
		return 0
	command -v npm >/dev/null || return 0
	echo "deps: npm install speedscope puppeteer-core (into build/node)" >&2
	mkdir -p "$root/build/node"
	PUPPETEER_SKIP_DOWNLOAD=1 npm install --no-audit --no-fund --prefix "$root/build/node" \
		speedscope@1.25.0 puppeteer-core@24.43.1 >/dev/null 2>&1 ||
		echo "deps: npm install failed: export.sh will skip its speedscope and flame graph checks" >&2
}

if [ -z "$missing" ]; then
	npm_packages
	exit 0
fi

if [ "$(id -u)" != 0 ]; then
	echo "xptrace: missing packages:$missing: not running as root (run: sudo apt-get install -y$missing)" >&2
	exit 1
fi
echo "deps: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get -o DPkg::Lock::Timeout=600 update -qq >/dev/null
# shellcheck disable=SC2086
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
npm_packages
