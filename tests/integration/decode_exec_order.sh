#!/bin/bash
# An exec COMM that reaches the session after the new program's MMAP2s (issue 29, item
# 5 b) ends only the mappings made before the exec, decided by the records' times:
# - a step trace whose COMM is moved after its MMAP2s (the same time: the reader keeps
#   their file order);
# - a sample trace whose COMM is moved two FINISHED_ROUNDs on (records of a round are
#   delivered at the end of the next one: the COMM arrives out of time order, after
#   samples of the new program).
# Every function is named as in the original trace; before, every name was an address.
. "$(dirname "$0")/../lib.sh"
"$XPTRACE" record -g -o "$TMP/s" -- "$PROGS/hot" 300 >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record hot"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }
"$XPTRACE" record --mode step -o "$TMP/st" -- "$PROGS/step_basic" >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "record step_basic"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }

# move SRC DST WHERE: DST is SRC with its exec COMM moved after the MMAP2 records that
# follow it (WHERE mmap) or after the 2nd FINISHED_ROUND that follows it (round2)
move() {
	python3 - "$@" <<'PY'
import struct, sys
src, dst, where = sys.argv[1:4]
b = bytearray(open(src, 'rb').read())
start = off = struct.unpack_from('<Q', b, 40)[0]
end = off + struct.unpack_from('<Q', b, 48)[0]
recs = []                      # (type, misc, offset, bytes with an AUXTRACE's data)
while off + 8 <= end:
    typ, misc, size = struct.unpack_from('<IHH', b, off)
    if size < 8:
        sys.exit('bad record size')
    n = size + (struct.unpack_from('<Q', b, off + 8)[0] if typ == 71 else 0)
    recs.append((typ, misc, off, n))
    off += n
comm = next(i for i, r in enumerate(recs) if r[0] == 3 and r[1] & 0x2000)   # COMM_EXEC
if where == 'mmap':
    to = comm
    while recs[to + 1][0] == 10:
        to += 1
else:
    to = [i for i, r in enumerate(recs) if r[0] == 68 and i > comm][1]
order = [r for i, r in enumerate(recs) if i != comm]
order.insert(to, recs[comm])
data = b''.join(bytes(b[o:o + n]) for _, _, o, n in order)
b[start:start + len(data)] = data
open(dst, 'wb').write(b)
print(to - comm)
PY
}
for t in st:mmap s:round2; do
	tr=${t%%:*} where=${t#*:}
	# the copy beside the trace's snapshots, as the original
	mkdir "$TMP/$tr.moved"
	for e in "$TMP/$tr"/.build-id "$TMP/$tr"/*; do
		[ "${e##*/}" = perf.data ] || ln -s "$e" "$TMP/$tr.moved/"
	done
	n=$(move "$TMP/$tr/perf.data" "$TMP/$tr.moved/perf.data" "$where")
	check_match "$tr: the exec COMM moved $n records on" '^[1-9][0-9]*$' "$n"
	"$XPTRACE" decode -i "$TMP/$tr" --functions >"$TMP/$tr.ref" 2>/dev/null
	"$XPTRACE" decode -i "$TMP/$tr.moved" --functions >"$TMP/$tr.out" 2>"$TMP/$tr.err"
	check_eq "$tr, exec COMM after the mappings: exit 0" 0 "$?"
	check_eq "$tr, exec COMM after the mappings: the functions of the original" \
		"$(cat "$TMP/$tr.ref")" "$(cat "$TMP/$tr.out")"
done
check_match "the step trace's functions are named" ' fib$' "$(cat "$TMP/st.ref")"
check_match "the sample trace's functions are named" ' hot_inner$' "$(cat "$TMP/s.ref")"
