#!/bin/bash
# The layering rule (mk/layers.txt, docs/architecture.md): every include points down
# the pipeline, no include cycle.  The checker is run on the tree, then on copies
# with one bad include each, which it must name.
. "$(dirname "$0")/../lib.sh"

cd "$XP_ROOT" || exit 1
out=$(mk/check-layers 2>&1)
check_match "the tree follows mk/layers.txt" '^check-layers: [0-9]+ files, every include points down$' "$out"

copy() {	# a fresh copy of the sources in $TMP/t
	rm -rf "$TMP/t" && mkdir -p "$TMP/t" && cp -r src decoders arch mk "$TMP/t/"
}
copy
out=$(mk/check-layers --root "$TMP/t" 2>&1)
check_match "a clean copy passes" 'every include points down' "$out"

copy
sed -i '1i #include "views/view.h"' "$TMP/t/decoders/pt/dpt_decode.c"
check_exit "a decoder including a view fails" 1 mk/check-layers --root "$TMP/t"
check_match "... naming the file, the line and both layers" \
	'^decoders/pt/dpt_decode.c:1: #include "views/view.h" goes up: decoders/pt/ \(layer 50\) may not include src/views/ \(layer 80\)$' \
	"$(cat "$TMP/.out")"

copy
sed -i '1i #include "session/sb.h"' "$TMP/t/arch/x86_64/x86_dis.h"
check_exit "arch including the session fails" 1 mk/check-layers --root "$TMP/t"
check_match "... named" '^arch/x86_64/x86_dis.h:1: #include "session/sb.h" goes up' "$(cat "$TMP/.out")"

copy
sed -i '1i #include "decoders/lbr/dlbr.h"' "$TMP/t/decoders/pt/dpt.h"
check_exit "sibling layers (pt and lbr decoders) may not include each other" 1 mk/check-layers --root "$TMP/t"

copy
printf '#include "util/b.h"\n' >"$TMP/t/src/util/a.h"
printf '#include "util/a.h"\n' >"$TMP/t/src/util/b.h"
check_exit "an include cycle inside one folder fails" 1 mk/check-layers --root "$TMP/t"
check_match "... and is shown" '^include cycle: src/util/(a|b).h -> src/util/(a|b).h -> src/util/(a|b).h$' \
	"$(cat "$TMP/.out")"

copy
mkdir -p "$TMP/t/src/misc" && printf 'int x;\n' >"$TMP/t/src/misc/x.c"
check_exit "a folder that is no layer fails" 1 mk/check-layers --root "$TMP/t"
check_match "... named" '^src/misc/x.c: folder src/misc/ is not in mk/layers.txt' "$(cat "$TMP/.out")"

copy
printf '#include "nowhere.h"\n' >>"$TMP/t/src/util/xp_err.c"
check_exit "an include of no file of the tree fails" 1 mk/check-layers --root "$TMP/t"
