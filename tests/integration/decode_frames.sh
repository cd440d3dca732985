#!/bin/bash
# Caller frames of sampled callchains are named by their call, not by their return
# address.  tests/progs/noreturn.c: ends_here's last instruction calls spin, which
# never returns, so the return address in every callchain is the first byte of the
# next function, after (nm: ends_here ends where after begins).  perf names that frame
# after+0x0; the caller is ends_here, and xptrace names it so, from frame-pointer and
# from DWARF callchains alike, with perf's sample counts.
. "$(dirname "$0")/../lib.sh"
P=$PROGS/noreturn

read -r e_lo e_size < <(nm -S "$P" | awk '$4 == "ends_here" { print $1, $2 }')
a_lo=$(nm "$P" | awk '$3 == "after" { print $1 }')
check_eq "nm: ends_here ends where after begins (its call is its last instruction)" \
	"$((0x$a_lo))" "$((0x$e_lo + 0x$e_size))"

for cg in fp dwarf; do
	d=$TMP/$cg
	"$XPTRACE" record -q --call-graph "$cg" -o "$d" -- "$P" 300 >/dev/null 2>&1
	# perf: the samples in spin (their leaf) with after+0x0 above it (samples in the
	# vdso's clock_gettime below spin are left out: perf's DWARF unwinding of the vdso
	# fails now and then)
	n=$(perf script -i "$d/perf.data" -F ip,sym,symoff 2>/dev/null | awk '
		/^$/ { if (s && a) n++; k = s = a = 0; next }
		++k == 1 && $2 ~ /^spin\+/ { s = 1; next }
		k == 2 && s { a = ($2 == "after+0x0") }
		END { if (s && a) n++; print n + 0 }')
	check "$cg: perf names the caller frame after+0x0, its return address ($n samples)" test "$n" -gt 100
	check_eq "$cg: --calltree: main -> ends_here -> spin: Base those $n samples; no frame is after" \
		"$n 0" "$("$XPTRACE" decode -i "$d" --calltree --metric samples --format jsonl --percent-limit 0 | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
print(sum(x["base"] for x in r if x["path"][-3:] == ["main", "ends_here", "spin"]),
      sum(1 for x in r if "after" in x["path"]))')"
done
