#!/bin/bash
# The build contract, checked on a private copy of the tree (never the repo itself):
# up-to-date detection, header dependency tracking (the compiler's -MM as the oracle),
# `make install PREFIX=/DESTDIR=`, `make clean`, and `make deps` as a normal user.
. "$(dirname "$0")/../lib.sh"

src=$TMP/tree
mkdir -p "$src"
# The sources (tracked and new, not ignored) plus this build's objects, mtimes kept.
if git -C "$XP_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	(cd "$XP_ROOT" && git ls-files -co --exclude-standard -z | tar --null -cf - -T -) | tar -xf - -C "$src"
else
	(cd "$XP_ROOT" && tar --exclude=./build --exclude=./build-asan --exclude=./xptrace -cf - .) | tar -xf - -C "$src"
fi
(cd "$XP_ROOT" && { echo xptrace; echo build/.deps-ok; echo build/libxptrace.a
	find build -path build/tests -prune -o \( -name '*.o' -o -name '*.d' \) -print; } |
	tar -cf - -T -) | tar -xf - -C "$src"
cd "$src" || exit 1

# Independent of the make that runs this test (its jobserver and flags).
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES
mk() { make --no-print-directory "$@"; }
# The sources `make` would compile (from the dry run's compiler command lines).
compiled() { mk -n xptrace | sed -n 's/.* -c -o [^ ]* \([^ ]*\.c\)$/\1/p' | sort; }

check "a fresh copy of a built tree is up to date (make -q)" mk -q xptrace

# Which sources include src/probe/pmu.h, directly or not, according to the compiler itself.
expected=$(for c in $(find src decoders arch -name '*.c' 2>/dev/null); do
	cc -MM -D_GNU_SOURCE -Isrc -I. "$c" | tr ' \\' '\n\n' | grep -qx 'src/probe/pmu.h' && echo "$c"
done | sort)
touch src/probe/pmu.h
check_eq "touching src/probe/pmu.h recompiles exactly its includers" "$expected" "$(compiled)"
check_match "... which include the pmu and probe modules" 'src/probe/pmu_sysfs.c' "$expected"
mk -s xptrace >/dev/null 2>&1
touch src/probe/probe_file.c
check_eq "touching one .c recompiles only it" "src/probe/probe_file.c" "$(compiled)"
echo 9.9.9 >VERSION
check_match "changing VERSION recompiles (the version is compiled in)" 'src/cli/xptrace.c' "$(compiled)"

# install: into a prefix, and staged with DESTDIR.
mk -s -j2 install PREFIX="$TMP/inst" >/dev/null 2>"$TMP/install.err"
check_eq "make install PREFIX=: exit status and no errors" "" "$(cat "$TMP/install.err")"
check_eq "installed binary runs" "xptrace 9.9.9" "$("$TMP/inst/bin/xptrace" --version 2>&1)"
check_match "installed binary runs info on a fixture" '^  pt +available: cycle-accurate mode: yes' \
	"$("$TMP/inst/bin/xptrace" info --sysfs-root "$src/tests/fixtures/sysfs/intel-skylake")"
for doc in README.md architecture.md info.md; do
	check "installed doc $doc" test -f "$TMP/inst/share/doc/xptrace/$doc"
done
mk -s install DESTDIR="$TMP/stage" PREFIX=/usr >/dev/null 2>&1
check "make install DESTDIR= PREFIX=/usr stages under DESTDIR" test -x "$TMP/stage/usr/bin/xptrace"

# clean: removes every build output, keeps every source.
nsrc=$(find . -path ./build -prune -o -path ./build-asan -prune -o -type f ! -name xptrace -print | wc -l)
check "make clean exits 0" mk -s clean
check "make clean removes build/ and ./xptrace" test ! -e build -a ! -e build-asan -a ! -e xptrace
check_eq "make clean keeps the sources" "$nsrc" "$(find . -type f | wc -l)"

# deps: a normal user with a missing toolchain gets the exact apt-get line, exit 1.
# (CC=false makes every header probe fail; nobody cannot install.)
cd / || exit 1
if [ "$(id -u)" = 0 ]; then as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups); else as_user=(); fi
err=$("${as_user[@]}" env CC=false sh -s <"$XP_ROOT/mk/deps.sh" 2>&1 >/dev/null); rc=$?
check_eq "deps as a normal user with packages missing: exit 1" 1 "$rc"
check_eq "deps as a normal user: the exact command to run" \
	"xptrace: missing packages: libipt-dev libpfm4-dev libelf-dev libdw-dev libcapstone-dev libcmocka-dev: not running as root (run: sudo apt-get install -y libipt-dev libpfm4-dev libelf-dev libdw-dev libcapstone-dev libcmocka-dev)" \
	"$err"
out=$("$XP_ROOT/mk/deps.sh" 2>&1); rc=$?
check_eq "deps with everything installed: exit 0, silent" "0:" "$rc:$out"
