#!/bin/bash
# Intel PT with timestamps in several AUX queues (tests/unit/pt_percpu.h: two cpus, two
# processes interleaving and migrating; then the same threads recorded per thread):
# perf script is the oracle.  perf decodes all AUX queues together by timestamp;
# xptrace's --insn must give the same instructions in the same order, each with the
# same cpu, tid and time.
. "$(dirname "$0")/../lib.sh"

cd "$XP_ROOT" || exit 1
if ! cc -std=gnu11 -O2 -D_GNU_SOURCE -Isrc -I. -Itests/unit -o "$TMP/gen" \
	tests/integration/lib/pt_percpu_gen.c build/libxptrace.a \
	-lipt -lpfm -ldw -lelf -lcapstone -lpthread -ldl -lm; then
	not_ok "build tests/integration/lib/pt_percpu_gen.c"
	exit 1
fi
check "pt_percpu_gen writes the per-cpu perf.data" "$TMP/gen" "$TMP/perf.data" "$PROGS/ptspin"

# "cpu tid time(ns) ip" per instruction
perf script -i "$TMP/perf.data" --itrace=i0ns -F cpu,tid,time,ip --ns 2>"$TMP/perf.err" |
	awk '{ c = $2; gsub(/[][]/, "", c); t = $3; sub(/:$/, "", t); split(t, s, ".");
	       printf "%d %d %d %s\n", c, $1, s[1] * 1000000000 + s[2], $4 }' >"$TMP/perf.txt"
project() {
	sed -n 's/^{"time":\([0-9]*\),"tid":\([0-9]*\),"cpu":\([0-9]*\),"ip":"0x\([0-9a-f]*\)".*/\3 \2 \1 \4/p'
}
"$XPTRACE" decode -i "$TMP/perf.data" --insn --format jsonl 2>"$TMP/ours.err" | project >"$TMP/ours.txt"

check_eq "perf script decodes the 68 instructions" 68 "$(wc -l <"$TMP/perf.txt")"
# the runs of (cpu, tid): queue after queue would start 0 100, 0 100, 0 200
check_eq "perf's runs of cpu/tid interleave the cpus in time order" \
	"$(printf '0 100 18\n1 200 7\n0 100 8\n1 200 13\n0 200 8\n1 100 14')" \
	"$(awk '{ k = $1 " " $2; if (k != p) { if (n) print p, n; p = k; n = 0 } n++ } END { print p, n }' "$TMP/perf.txt")"
if cmp -s "$TMP/perf.txt" "$TMP/ours.txt"; then
	ok "--insn jsonl (cpu tid time ip) equals perf script -F cpu,tid,time,ip"
else
	not_ok "--insn jsonl (cpu tid time ip) equals perf script -F cpu,tid,time,ip"
	diff "$TMP/perf.txt" "$TMP/ours.txt" | head -10 | sed 's/^/#   /'
fi
check_eq "no warnings" "" "$(cat "$TMP/ours.err")"
# -F: perf script's own lines, the cpu and time columns too
for f in cpu,tid,time,ip comm,pid,tid,cpu,time,ip,dso,insnlen,insn; do
	perf script -i "$TMP/perf.data" --itrace=i0ns -F "$f" --ns 2>/dev/null >"$TMP/perf.f"
	"$XPTRACE" decode -i "$TMP/perf.data" --insn -F "$f" >"$TMP/ours.f" 2>/dev/null
	check "--insn -F $f: perf script --ns -F $f, byte for byte" cmp -s "$TMP/perf.f" "$TMP/ours.f"
done
"$XPTRACE_ASAN" decode -i "$TMP/perf.data" --insn --format jsonl 2>"$TMP/asan.err" | project >"$TMP/asan.txt"
check "ASan build: same stream, clean" cmp -s "$TMP/perf.txt" "$TMP/asan.txt"
check_eq "ASan build: nothing on stderr" "" "$(cat "$TMP/asan.err")"

# The same threads recorded per thread (one queue per thread, no cpu): merged by time.
check "pt_percpu_gen writes the per-thread perf.data" "$TMP/gen" "$TMP/pt.data" "$PROGS/ptspin" per-thread
perf script -i "$TMP/pt.data" --itrace=i0ns -F tid,time,ip --ns 2>"$TMP/perf.err" |
	awk '{ t = $2; sub(/:$/, "", t); split(t, s, ".");
	       printf "%d %d %s\n", $1, s[1] * 1000000000 + s[2], $3 }' >"$TMP/perf-pt.txt"
"$XPTRACE" decode -i "$TMP/pt.data" --insn --format jsonl 2>"$TMP/ours.err" |
	sed -n 's/^{"time":\([0-9]*\),"tid":\([0-9]*\),"ip":"0x\([0-9a-f]*\)".*/\2 \1 \3/p' >"$TMP/ours-pt.txt"
check_eq "per-thread: perf's runs of tid in time order" "$(printf '100 18\n200 7\n100 8\n200 21\n100 14')" \
	"$(awk '{ if ($1 != p) { if (n) print p, n; p = $1; n = 0 } n++ } END { print p, n }' "$TMP/perf-pt.txt")"
if cmp -s "$TMP/perf-pt.txt" "$TMP/ours-pt.txt"; then
	ok "per-thread: --insn jsonl (tid time ip) equals perf script -F tid,time,ip"
else
	not_ok "per-thread: --insn jsonl (tid time ip) equals perf script -F tid,time,ip"
	diff "$TMP/perf-pt.txt" "$TMP/ours-pt.txt" | head -10 | sed 's/^/#   /'
fi

# ---- decode -j N (N >= 3) on several queues with timestamps: each queue decodes on a
# thread of its own, this thread interleaves them by time as -j1 does: every report the
# same, byte for byte.  A long per-cpu trace: 2 cpus x 300 slices, spin(40) each.
check "pt_percpu_gen writes a long per-cpu trace" "$TMP/gen" "$TMP/long.data" "$PROGS/ptspin" long 300 40
check_eq "-j4: leaf called 2 x 300 x 40 times" 24000 \
	"$("$XPTRACE" decode -j4 -i "$TMP/long.data" --functions --format csv | awk -F, '$NF == "leaf" { print $1 }')"
check_eq "-j4: 600 x (6 x 40 + 2) instructions; the loop's jnz taken 600 x 39, not 600" \
	"145200 24000 23400 600" "$("$XPTRACE" decode -j4 -i "$TMP/long.data" --blocks --format jsonl |
		awk -F'[:,]' '{ for (i = 1; i < NF; i++) v[$i] = $(i + 1); n += v["\"count\""] * v["\"insns\""] }
			/"sym":"spin\+0x7"/ { l = v["\"count\""] " " v["\"taken\""] " " v["\"not_taken\""] }
			END { print n, l }')"
same=0 views=0
for data in long pt perf; do
	for v in "--calltree" "--calltree --format jsonl" "--functions --per-process" "--blocks" "--ranges" \
		"--calls --format chrome" "--calltree --format folded" "--functions --tid 200"; do
		views=$((views + 1))
		# shellcheck disable=SC2086
		"$XPTRACE" decode -j1 -i "$TMP/$data.data" $v >"$TMP/j1.out" 2>&1
		# shellcheck disable=SC2086
		"$XPTRACE" decode -j4 -i "$TMP/$data.data" $v >"$TMP/j4.out" 2>&1
		if cmp -s "$TMP/j1.out" "$TMP/j4.out"; then same=$((same + 1)); else
			echo "#   $data $v: -j4 differs"; diff "$TMP/j1.out" "$TMP/j4.out" | head -4 | sed 's/^/#   /'
		fi
	done
done
check_eq "-j4 = -j1 on the long, per-thread and short traces, 8 reports each" "$views" "$same"
if command -v strace >/dev/null; then
	threads() {	# threads a decode started
		strace -f -e trace=clone,clone3 -o "$TMP/strace.txt" "$XPTRACE" decode "$@" >/dev/null 2>&1
		grep -c 'clone' "$TMP/strace.txt"
	}
	check_eq "-j4: one thread per queue (2)" 2 "$(threads -j4 -i "$TMP/long.data" --calltree)"
	# -v counts those 2 workers and the report's thread, and says which is which
	check_eq "-v -j4: 3 threads, the 2 workers strace saw started and the report's" \
		"xptrace: decoded on 3 threads (-j4: 2 workers and the thread building the report)" \
		"$("$XPTRACE" decode -v -j4 -i "$TMP/long.data" --calltree 2>&1 >/dev/null)"
	check_eq "-j2: none (the report's thread needs a core of its own)" 0 "$(threads -j2 -i "$TMP/long.data" --calltree)"
	check_eq "--insn (the instructions' exact order): none" 0 "$(threads -j4 -i "$TMP/long.data" --insn -o "$TMP/insn.txt")"
else
	ok "threads per queue # skip: no strace"
fi
