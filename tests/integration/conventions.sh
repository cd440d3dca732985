#!/bin/bash
# The error convention (src/util/xp_err.h): product code returns 0 or a negative errno,
# never -1.  mk/check-errno is run on the tree, then on copies with one bad return
# each, which it must name.
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
