#!/bin/bash
# JIT code in sample traces: build/progs/jit writes code at run time, describes it in
# a jitdump (loads, a debug-info record, a JIT_CODE_MOVE) and a perf map.  The oracle
# is the real perf on the very same perf.data (xptrace's sample mode records on
# CLOCK_MONOTONIC, the jitdump clock, so `perf inject --jit` takes it): per-function
# sample counts and call paths must be equal; the shares are also checked against the
# program's known work (3:1:2:1).  Then: decoding after the JIT's files are gone (the
# copies kept in DIR/jit/), a trace on another clock (timeless), and cut or corrupt
# dumps under ASan.
. "$(dirname "$0")/../lib.sh"
mkdir -p "$TMP/run"
# every run of the JIT leaves /tmp/perf-PID.map (perf's convention): removed at the end
cleanup() {
	local d p
	for d in "$TMP"/run/jit-*.dump; do
		p=${d##*/jit-}
		rm -f "/tmp/perf-${p%.dump}.map"
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
J=$PROGS/jit
UNITS=120000000

cd "$TMP/run" || exit 1
"$XPTRACE" record -g -o "$TMP/tr" -- "$J" "$TMP/run" $UNITS >/dev/null 2>"$TMP/rec.err"
dump=$(ls "$TMP/run"/jit-*.dump 2>/dev/null | head -1)
pid=$(basename "$dump" .dump)
pid=${pid#jit-}
check_match "the program wrote its jitdump" '^[0-9]+$' "$pid"
check "record keeps the jitdump in DIR/jit/" cmp -s "$dump" "$TMP/tr/jit/jit-$pid.dump"
check "record keeps the perf map in DIR/jit/" cmp -s "/tmp/perf-$pid.map" "$TMP/tr/jit/perf-$pid.map"
check_match "record says so" "modules snapshotted, 2 JIT files kept, " "$(cat "$TMP/rec.err")"

# perf's view: injected ELF files for the jitdump (names, jitted-PID-INDEX.so), its
# perf-map reading for the rest ("[JIT] tid PID") on the original file
perf inject --jit -i "$TMP/tr/perf.data" -o "$TMP/inj.data" 2>"$TMP/inject.err"
perf script -i "$TMP/inj.data" -G -F ip,sym,dso 2>/dev/null |
	awk '$2 ~ /^jit_/ { n=split($3, p, "/"); m=p[n]; sub(/\)$/, "", m); c[m "," $2]++ }
	     END { for (k in c) print c[k] "," k }' | sort >"$TMP/perf.counts"
perf script -i "$TMP/tr/perf.data" -G -F ip,sym 2>/dev/null |
	awk -v pid="$pid" '$2 == "map_only" { n++ } END { if (n) print n ",[JIT] tid " pid ",map_only" }' \
	>>"$TMP/perf.counts"
sort -o "$TMP/perf.counts" "$TMP/perf.counts"
"$XPTRACE" decode -i "$TMP/tr" --functions --format csv 2>"$TMP/dec.err" >"$TMP/fn.csv"
awk -F, '$1 > 0 && ($7 ~ /^jit_/ || $7 == "map_only") { print $1 "," $6 "," $7 }' "$TMP/fn.csv" |
	sort >"$TMP/xp.counts"
check_eq "JIT function sample counts equal perf inject --jit + perf script's" \
	"$(cat "$TMP/perf.counts")" "$(cat "$TMP/xp.counts")"
check_eq "every JIT function is named (perf: 4 names)" 4 "$(wc -l <"$TMP/xp.counts")"
check_match "module names as perf's: jitted-PID-INDEX.so" "^[0-9]+,jitted-$pid-4.so,jit_moved$" \
	"$(cat "$TMP/xp.counts")"
# perf's injected file names the code through the ELF files inject wrote: the same
"$XPTRACE" decode -i "$TMP/inj.data" --functions --format csv 2>/dev/null |
	awk -F, '$1 > 0 && ($7 ~ /^jit_/ || $7 == "map_only") { print $1 "," $6 "," $7 }' | sort >"$TMP/inj.counts"
check_eq "perf inject --jit's output decodes to the same functions" "$(cat "$TMP/xp.counts")" \
	"$(cat "$TMP/inj.counts")"

# shares from the program's work: hot 3, cold 1, moved 1+1 (both places), map_only 1,
# among the samples in the JIT's code (jitted-*.so, the perf map's [JIT], anonymous
# code): the kernel's part varies with the machine (one run had 13 % of its samples in
# irqentry_exit_to_user_mode, and every share 13 % low)
JIT_ROWS='NR > 1 && ($6 ~ /^jitted-/ || $6 ~ /^\[JIT\]/ || $6 == "anon")'
# jshare NAME CSV: NAME's samples in % of the JIT code's
jshare() {
	awk -F, -v n="$1" "$JIT_ROWS"' { t += $1; if ($7 == n) s += $1 }
		END { if (s) printf "%.4f\n", 100 * s / t }' "$2"
}
share() { jshare "$1" "$TMP/fn.csv"; }
# near GOT WANT CSV: GOT% within 4 standard deviations of the sampling error of a
# WANT% share among the JIT code's samples of the CSV (~1000: 6 points for 43%, 4 for 14%)
near() {
	awk -F, -v a="$1" -v b="$2" "$JIT_ROWS"' { n += $1 }
		END { p = b / 100; tol = 400 * sqrt(p * (1 - p) / (n ? n : 1)); if (tol < 2) tol = 2
		      d = a - b; if (d < 0) d = -d; exit !(a != "" && d <= tol) }' "$3"
}
for f in jit_hot:42.86 jit_cold:14.29 jit_moved:28.57 map_only:14.29; do
	name=${f%%:*} want=${f#*:}
	got=$(share "$name")
	if near "${got:-x}" "$want" "$TMP/fn.csv"; then ok "$name: $got% of the samples (work: $want%)"; else
		not_ok "$name: ${got:-missing}% of the samples, expected $want% (+- 4 sigma)"
	fi
done

# call paths: the sampled tree's folded stacks equal perf's callchains on the same file
perf script -i "$TMP/inj.data" -F ip,sym 2>/dev/null |
	awk 'NF == 0 { if (s != "" && s ~ /jit_|map_only/) c[s]++; s = ""; next }
	     { s = (s == "" ? $2 : $2 ";" s) }
	     END { if (s != "" && s ~ /jit_|map_only/) c[s]++; for (k in c) print k " " c[k] }' |
	grep -v map_only | sort >"$TMP/perf.folded"
"$XPTRACE" decode -i "$TMP/tr" --calltree --metric samples --format folded 2>/dev/null | grep -E 'jit_' | sort >"$TMP/xp.folded"
check_eq "JIT call paths and counts equal perf's callchains (main;jit_outer;jit_hot ...)" \
	"$(cat "$TMP/perf.folded")" "$(cat "$TMP/xp.folded")"
check_match "jit_outer calls jit_hot and jit_cold" "main;jit_outer;jit_cold [0-9]+" "$(cat "$TMP/xp.folded")"

# offline: the JIT's own files are gone, the trace directory has the copies
before=$(cat "$TMP/xp.counts")
rm -f "$dump" "/tmp/perf-$pid.map"
"$XPTRACE" decode -i "$TMP/tr" --functions --format csv 2>/dev/null |
	awk -F, '$1 > 0 && ($7 ~ /^jit_/ || $7 == "map_only") { print $1 "," $6 "," $7 }' | sort >"$TMP/xp2.counts"
check_eq "after the JIT's files are deleted: the same names from DIR/jit/" "$before" "$(cat "$TMP/xp2.counts")"
mv "$TMP/tr" "$TMP/moved-tr"
"$XPTRACE" decode -i "$TMP/moved-tr" --functions --format csv 2>/dev/null |
	awk -F, '$1 > 0 && ($7 ~ /^jit_/ || $7 == "map_only") { print $1 "," $6 "," $7 }' | sort >"$TMP/xp3.counts"
check_eq "a moved trace directory decodes the same" "$before" "$(cat "$TMP/xp3.counts")"

# perf record OUT ARGS...: the shares below are the work's only if perf kept every
# sample; on a loaded machine its ring can overflow (LOST records: a stretch of the run
# without samples), so such a recording is made again, up to 3 times.
perf_rec() {
	local out=$1 try
	shift
	for try in 1 2 3; do
		perf record -q "$@" -o "$out" -- "$J" "$TMP/run" $UNITS >/dev/null 2>&1
		perf report -i "$out" --stats 2>/dev/null | grep -q 'LOST' || return 0
		echo "#   $out: perf lost samples (try $try)"
	done
}
# on failure: what xptrace and perf saw
why() {	# $1 perf.data, $2 xptrace's csv
	head -6 "$2" | sed 's/^/#   xptrace: /'
	perf report -i "$1" --stdio --no-children --sort sym -g none 2>/dev/null | grep '%' | head -6 | sed 's/^/#   perf: /'
}

# perf record without -k mono: the trace's clock is not the dump's, so the dump is
# applied timeless (its final state): loaded code is named, but jit_moved's first
# place (moved away at the end) is not.  Which place a sample is in is perf's word:
# the code is page-aligned, the first place at +0x3xx, the second at +0x8xx.  (A
# share of 1/7 per place once failed: the two places run in the two halves of the
# run, and a loaded VM ran the first half 1.8 times slower per unit of work.)
perf_rec "$TMP/p.data" -e cpu-clock -g
"$XPTRACE" decode -i "$TMP/p.data" --functions --format csv >"$TMP/p.csv" 2>/dev/null
hot=$(jshare jit_hot "$TMP/p.csv")
if near "${hot:-x}" 42.86 "$TMP/p.csv"; then ok "another clock: loaded code named (jit_hot $hot%)"; else
	not_ok "another clock: jit_hot ${hot:-missing}% (want 42.86)"
	why "$TMP/p.data" "$TMP/p.csv"
fi
places=$(perf script -i "$TMP/p.data" -F ip,dso -G 2>/dev/null |
	awk '$2 ~ /perf-[0-9]+\.map/ { o = substr($1, length($1) - 2, 1); a += o == "3"; b += o == "8" }
	     END { print a + 0, b + 0 }')
xp=$(awk -F, '$6 == "anon" && $7 ~ /^0x[0-9a-f]*3[0-9a-f][0-9a-f]$/ { a += $1 } $7 == "jit_moved" { b += $1 }
	     END { print a + 0, b + 0 }' "$TMP/p.csv")
check_eq "another clock: jit_moved named at its second place only (samples at the first, unnamed, and at the second: perf's)" \
	"$places" "$xp"
check "another clock: both places have samples ($places)" test "${places% *}" -gt 50 -a "${places#* }" -gt 50
# perf record -k mono: exact times again, like xptrace's own recording
perf_rec "$TMP/k.data" -k mono -e cpu-clock -g
"$XPTRACE" decode -i "$TMP/k.data" --functions --format csv >"$TMP/k.csv" 2>/dev/null
moved=$(jshare jit_moved "$TMP/k.csv")
if near "${moved:-x}" 28.57 "$TMP/k.csv"; then ok "perf record -k mono: jit_moved $moved% (both places)"; else
	not_ok "perf record -k mono: jit_moved ${moved:-missing}%, expected 28.57"
	why "$TMP/k.data" "$TMP/k.csv"
fi

# cut and corrupt dumps (ASan build): never a crash, a partial result at worst.  24
# cuts (an odd stride: every byte offset within a field) and 24 words across the dump (fuzz_jit
# mutates dumps by the million: tests/fuzz).  Without inline frames: they come from the
# ELF modules' DWARF, not from the dump, and libc's (libc6-dbg, compressed) made most of
# each decode under ASan
dump=$(ls "$TMP/moved-tr/jit"/jit-*.dump)
size=$(stat -c %s "$dump")
cp "$dump" "$TMP/dump.orig"
bad=0
cstride=$((size / 24 | 1)) wstride=$(((size - 40) / 24 / 4 * 4 + 4))
for ((cut = 0; cut < size; cut += cstride)); do
	head -c $cut "$TMP/dump.orig" >"$dump"
	"$XPTRACE_ASAN" decode -i "$TMP/moved-tr" --functions --no-inline >/dev/null 2>"$TMP/asan.err" || {
		bad=1; echo "# cut at $cut:"; head -5 "$TMP/asan.err"; break; }
done
for ((at = 40; at < size; at += wstride)); do	# 0xffffffff over words after the header
	cp "$TMP/dump.orig" "$dump"
	printf '\xff\xff\xff\xff' | dd of="$dump" bs=1 seek=$at conv=notrunc status=none
	"$XPTRACE_ASAN" decode -i "$TMP/moved-tr" --calltree --no-inline >/dev/null 2>"$TMP/asan.err" || {
		bad=1; echo "# corrupt word at $at:"; head -5 "$TMP/asan.err"; break; }
done
if [ "$bad" = 0 ]; then ok "cut ($(((size + cstride - 1) / cstride)) sizes) and corrupt jitdumps decode without error (ASan)"; else
	not_ok "cut or corrupt jitdump"
fi
