#!/bin/bash
# The error convention (src/util/xp_err.h): product code returns 0 or a negative errno,
# never -1.  mk/check-errno is run on the tree, then on copies with one bad return
# each, which it must name.  The same for the tree's shape (mk/check-tree, at the end).
. "$(dirname "$0")/../lib.sh"

cd "$XP_ROOT" || exit 1
out=$(mk/check-errno 2>&1)
check_match "no product function returns -1" '^check-errno: [0-9]+ files, no function returns -1' "$out"

copy() {	# a fresh copy of the sources in $TMP/t
	rm -rf "$TMP/t" && mkdir -p "$TMP/t" && cp -r src decoders arch mk "$TMP/t/"
}
copy
check_exit "a clean copy passes" 0 mk/check-errno --root "$TMP/t"

copy
sed -i '0,/^\t\treturn -ENOMEM;$/s//\t\treturn -1;/' "$TMP/t/src/util/xp_map.c"
check_exit "a return -1 in util fails" 1 mk/check-errno --root "$TMP/t"
check_match "... naming the file and the line" '^src/util/xp_map.c:[0-9]+:	+return -1;   <- return a negative errno' \
	"$(cat "$TMP/.out")"

copy
sed -i '0,/^\t\treturn -EINVAL;$/s//\t\treturn xp_err("x", NULL, "y"), -1;/' "$TMP/t/decoders/pt/dpt_decode.c"
check_exit "a 'return xp_err(...), -1;' in a decoder fails" 1 mk/check-errno --root "$TMP/t"
check_match "... named" '^decoders/pt/dpt_decode.c:[0-9]+:.*\), -1;' "$(cat "$TMP/.out")"

copy
printf 'static int f(void) { return -1; }\n' >>"$TMP/t/arch/x86_64/x86_branch.c"
check_exit "a one-line function in arch fails" 1 mk/check-errno --root "$TMP/t"

# The tree holds only the project (mk/check-tree): the checkout itself, then small
# repositories with one entry out of place each, which it must name.
if git -C "$XP_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	out=$(mk/check-tree 2>&1)
	check_match "the checkout's tracked files are all in the layout" '^check-tree: [0-9]+ tracked files, all in the layout$' "$out"
else
	ok "tracked files: not a git checkout # SKIP"
fi
repo() {	# a fresh repository in $TMP/r holding a minimal layout
	rm -rf "$TMP/r" && mkdir -p "$TMP/r/src" "$TMP/r/traces/t" &&
		echo all: >"$TMP/r/Makefile" && echo 'int x;' >"$TMP/r/src/a.c" &&
		head -c 1100000 /dev/zero >"$TMP/r/traces/t/perf.data" &&
		git -C "$TMP/r" init -q && git -C "$TMP/r" add -A
}
repo
check_exit "a repository in the layout passes (a 1.1 MB trace under traces/ too)" 0 mk/check-tree --root "$TMP/r"
repo
mkdir -p "$TMP/r/z1.1/.build-id" && echo x >"$TMP/r/z1.1/.build-id/ab" && echo >"$TMP/r/z1.1.err" &&
	git -C "$TMP/r" add -A
check_exit "a debugging run's leftovers at the top level fail" 1 mk/check-tree --root "$TMP/r"
check_eq "... each named" "z1.1 z1.1.err" "$(awk '/<- not part of the layout/ {printf "%s%s", s, $1; s=" "}' "$TMP/.out")"
repo
head -c 1100000 /dev/zero >"$TMP/r/src/big.bin" && git -C "$TMP/r" add -A
check_exit "a file over 1 MB outside traces/ fails" 1 mk/check-tree --root "$TMP/r"
check_match "... named with its size" '^src/big.bin   <- 1100000 bytes' "$(cat "$TMP/.out")"
