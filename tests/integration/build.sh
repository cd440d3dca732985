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

# Which sources include src/probe/pmu.h, directly or not, according to the compiler itself
# (one -MM run: each rule's first prerequisite is its source).
expected=$(cc -MM -D_GNU_SOURCE -Isrc -I. $(find src decoders arch -name '*.c' 2>/dev/null) |
	awk '{ sub(/\\$/, ""); for (i = 1; i <= NF; i++) if ($i ~ /:$/) { c = $(i + 1); i++ } else if ($i == "src/probe/pmu.h") print c }' |
	sort -u)
touch src/probe/pmu.h
check_eq "touching src/probe/pmu.h recompiles exactly its includers" "$expected" "$(compiled)"
check_match "... which include the pmu and probe modules" 'src/probe/pmu_sysfs.c' "$expected"
# up to date again without compiling (touch only changed mtimes: the objects are right)
mk -s -t xptrace >/dev/null 2>&1
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
if [ -e /usr/lib/x86_64-linux-gnu/valgrind/libcoregrind-amd64-linux.a ]; then
	check_match "the installed binary finds --mode dbt's tool under PREFIX/lib/xptrace/dbt" \
		"^dbt engine +valgrind-.* with xptrace's tool \($TMP/inst/lib/xptrace/dbt\)" \
		"$("$TMP/inst/bin/xptrace" info 2>&1)"
fi
for doc in README.md docs/architecture.md docs/info.md docs/mode-dbt.md docs/img/timeline.png; do
	check "installed doc $doc" test -f "$TMP/inst/share/doc/xptrace/$doc"
done
# every relative link of the installed markdown (README's images, docs' links) and
# every docs/*.md or docs/img/* path they name leads to an installed file
check_eq "installed docs: no link or docs/ path leads nowhere" "" "$(cd "$TMP/inst/share/doc/xptrace" &&
	for f in README.md docs/*.md; do
		{ grep -o '](\([^)#:]*\))' "$f" | sed 's/^](//; s/)$//' | sed "s|^|$(dirname "$f")/|"
		  grep -o 'docs/\(img/\)\{0,1\}[a-z0-9-]*\.\(md\|png\)' "$f"; } |
			while read -r t; do [ -e "$t" ] || echo "$f: $t"; done
	done | sort -u)"
# A man page per command of the command table, generated from its --help text: the
# rendered page holds every line of the help, in order (issue 15).
x=$TMP/inst/bin/xptrace
cmds=$("$x" help --list commands | cut -f1)
check_eq "a man page per command, and xptrace.1" \
	"$( (for c in $cmds; do echo "xptrace-$c.1"; done; echo xptrace.1) | sort)" \
	"$(ls "$TMP/inst/share/man/man1" | sort)"
# the help's lines, trimmed, in the page's text as rendered (groff, no overstrikes)
help_in_page() {	# $1 page, $2... the help command -> the help lines missing from it
	local page=$1; shift
	groff -man -Tascii -P-cbou "$page" 2>/dev/null | sed 's/^ *//; s/ *$//' >"$TMP/page.txt"
	"$@" | sed -E 's/^usage: //; s/^ *//; s/ *$//; s/^([A-Za-z][^:]*):$/\U\1/' | grep -v '^$' |
		grep -vxFf "$TMP/page.txt"
}
if command -v groff >/dev/null; then
	for c in $cmds; do
		check_eq "man xptrace-$c holds every line of 'xptrace help $c'" "" \
			"$(help_in_page "$TMP/inst/share/man/man1/xptrace-$c.1" "$x" help "$c")"
	done
	check_eq "man xptrace holds every line of 'xptrace help'" "" \
		"$(help_in_page "$TMP/inst/share/man/man1/xptrace.1" "$x" help)"
	check_match "the page names the command and its summary" \
		"^xptrace-record - record a command or process into a trace directory$" \
		"$(groff -man -Tascii -P-cbou "$TMP/inst/share/man/man1/xptrace-record.1" | sed 's/^ *//')"
fi
# A command added to the table gets its page and completion without another edit: the
# generators read the table (a stand-in binary with one more command).
printf '#!/bin/sh\nif [ "$1 $2 $3" = "help --list commands" ]; then "%s" "$@"; printf "frob\\tfrobs the trace\\n"; exit; fi\nif [ "$1 $2" = "help frob" ]; then printf "usage: xptrace frob [--knob K]\\n\\noptions:\\n  --knob K   the knob\\n"; exit; fi\nexec "%s" "$@"\n' "$x" "$x" >"$TMP/x2"
chmod +x "$TMP/x2"
mk/man.sh "$TMP/x2" "$TMP/man2" && mk/completion.sh "$TMP/x2" >"$TMP/x2.bash"
check "a new command gets a page" test -s "$TMP/man2/xptrace-frob.1"
check_match "... and its options are completed" 'frob\)' "$(grep -A1 'frob)' "$TMP/x2.bash")"

# bash completion: commands, options, modes, views and formats, from the same tables
comp() {	# WORDS... (the last is the word being completed) -> the candidates, sorted
	bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _xptrace
		printf "%s\n" "${COMPREPLY[@]}" | sort -u' _ "$TMP/inst/share/bash-completion/completions/xptrace" xptrace "$@"
}
check_eq "completion: commands" "$(printf '%s\n' $cmds --help --version help | sort)" "$(comp "")"
check_eq "completion: record --mode" "$("$x" help --list modes | sort)" "$(comp record --mode "")"
check_eq "completion: decode --format" "$("$x" help --list formats | sort)" "$(comp decode --format "")"
# --metric: the metrics decode names for the trace (-i, or xptrace.data); --probe takes
# function names: neither offers file names
# (the completion runs the binary it completes for: COMP_WORDS[0], the installed one)
compx() { bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _xptrace
	printf "%s\n" "${COMPREPLY[@]}" | sort -u' _ "$TMP/inst/share/bash-completion/completions/xptrace" "$x" "$@"; }
check_eq "completion: decode -i TRACE --metric, the trace's metrics (a step trace: insns, time)" \
	"insns time" "$(compx decode -i "$src/traces/step-basic" --metric "" | tr '\n' ' ' | sed 's/ $//')"
check_eq "completion: --metric without a trace here: nothing, no file names" "" "$(cd "$TMP" && compx decode --metric "")"
check_eq "completion: record --probe: no file names" "" "$(cd "$src" && comp record --probe "")"
check_eq "completion: decode -- offers every view" "" \
	"$("$x" help --list views | grep -vxFf <(comp decode --))"
for c in $cmds; do
	check_eq "completion: $c's options are its --help's" \
		"$(mk/help-options.sh "$x" "$c" | grep '^--' | sort)" "$(comp "$c" --)"
done
# description text is no option: selftest's help mentions perf script --itrace
check_eq "completion: selftest offers only its own options" \
	"--format --json --keep --mode --output --workload --xptrace" "$(comp selftest -- | tr '\n' ' ' | sed 's/ $//')"
# each command's --format and --mode: what that command takes (diff: tables only;
# selftest: no auto), and each value offered is one the command accepts
check_eq "completion: diff --format, the table formats" "csv jsonl text" "$(comp diff --format "" | tr '\n' ' ' | sed 's/ $//')"
for c in info selftest; do
	check_eq "completion: $c --format, text or JSON lines" "jsonl text" "$(comp $c --format "" | tr '\n' ' ' | sed 's/ $//')"
done
for f in $(comp diff --format ""); do
	check_eq "diff --format $f is accepted (the missing trace is the error)" 1 \
		"$(cd "$TMP" && "$x" diff --format "$f" nosuch1 nosuch2 >/dev/null 2>&1; echo $?)"
done
check_exit "diff --format chrome, not offered, is refused" 2 "$x" diff --format chrome nosuch1 nosuch2
check_eq "completion: selftest --mode, no auto" "lbr pt sample step" "$(comp selftest --mode "" | tr '\n' ' ' | sed 's/ $//')"
check_exit "selftest --mode auto, not offered, is refused" 2 "$x" selftest --mode auto
check_eq "completion: record --mode, auto too" "auto dbt lbr pt sample step" "$(comp record -m "" | tr '\n' ' ' | sed 's/ $//')"
check_eq "completion: decode --format, every format" "$("$x" help --list formats | sort)" "$(comp decode --format "")"
check_eq "completion: record --ad" "--adaptive
--adaptive-depth
--adaptive-interval" "$(comp record --ad)"
check_eq "completion: decode -F, perf script's fields" "$("$x" help --list fields | sort)" \
	"$(comp decode --insn -F "")"
check_eq "completion: decode -F ip,s: the last of the list" "ip,srcline ip,sym ip,symoff" \
	"$(comp decode --insn -F ip,s | tr '\n' ' ' | sed 's/ $//')"
check_eq "completion: decode --fields -ti: with its sign" "-tid -time" \
	"$(comp decode --insn --fields -ti | tr '\n' ' ' | sed 's/ $//')"
check_eq "completion: help COMMAND" "$(printf '%s\n' $cmds | sort)" "$(comp help "")"
check_eq "completion: the recorded command after --" "sh" "$(comp record -o t -- sh | grep -x sh)"

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
	"xptrace: missing packages: libipt-dev libpfm4-dev libelf-dev libdw-dev libcapstone-dev libcmocka-dev libprotobuf-c-dev zlib1g-dev libdeflate-dev: not running as root (run: sudo apt-get install -y libipt-dev libpfm4-dev libelf-dev libdw-dev libcapstone-dev libcmocka-dev libprotobuf-c-dev zlib1g-dev libdeflate-dev)" \
	"$err"
out=$("$XP_ROOT/mk/deps.sh" 2>&1); rc=$?
check_eq "deps with everything installed: exit 0, silent" "0:" "$rc:$out"
