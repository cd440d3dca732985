#!/bin/bash
# PT decode on real Intel PT: step traces (xptrace record --mode step) of programs with
# known behaviour.  perf script is the oracle for the instruction stream; counts are
# what the programs do by construction (tests/progs/pt_known.c, step_basic.c).
. "$(dirname "$0")/../lib.sh"

NOASLR="setarch -R"
for prog in pt_known step_basic; do
	$NOASLR "$XPTRACE" record --mode step -o "$TMP/$prog" -- "$PROGS/$prog" >/dev/null 2>"$TMP/$prog.rec"
	check_eq "$prog: step record exits 0" 0 "$?"
done
K=$TMP/pt_known

# the instruction stream, instruction for instruction
for prog in pt_known step_basic; do
	perf script -i "$TMP/$prog/perf.data" --itrace=i0ns -F ip 2>/dev/null | awk '{print $1}' >"$TMP/$prog.perf"
	"$XPTRACE" decode -i "$TMP/$prog" --insn --format jsonl |
		awk -F'"ip":"0x' 'NF > 1 { split($2, a, "\""); print a[1] }' >"$TMP/$prog.ours"
	n=$(wc -l <"$TMP/$prog.perf")
	check_match "$prog: perf script decodes instructions" "^[0-9]{5,}$" "$n"
	check_eq "$prog: --insn equals perf script --itrace=i0ns -F ip ($n instructions)" \
		"$(md5sum <"$TMP/$prog.perf")" "$(md5sum <"$TMP/$prog.ours")"
done

# the packet walker (--pt-decoder fast, the default) and libipt's block decoder alone
# give the same reports on these traces, on one thread and in small pieces
for prog in pt_known step_basic; do
	for view in "--calltree" "--insn --format jsonl" "--blocks --format jsonl"; do
		for j in 1 2; do
			# shellcheck disable=SC2086
			check_eq "$prog: $view -j$j: --pt-decoder fast as libipt" \
				"$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode -i "$TMP/$prog" $view -j$j --pt-decoder libipt 2>&1 | md5sum)" \
				"$(XPTRACE_PIECE_SIZE=4096 "$XPTRACE" decode -i "$TMP/$prog" $view -j$j 2>&1 | md5sum)"
		done
	done
done
check_eq "--pt-decoder with another value: a usage error (exit 2)" 2 \
	"$("$XPTRACE" decode -i "$TMP/pt_known" --pt-decoder bogus >/dev/null 2>&1; echo $?)"

# an address filter: only main is traced; its calls leave the traced code and tracing
# resumes at their return addresses (TIP.PGD / TIP.PGE).  Resuming in main is the return
# to main: one main frame with its callees below it, not main nested under each callee.
# (The program is run from a copy in $TMP: perf, the oracle, is told the filter's
# ranges by a file path, which its syntax cannot give with a space; the checkout's path
# may have one.  Such a path is checked below.)
mkdir -p "$TMP/pk" "$TMP/with space"
cp "$PROGS/pt_known" "$TMP/pk/pt_known"
cp "$PROGS/pt_known" "$TMP/with space/pt_known"
$NOASLR "$XPTRACE" record --mode step --filter main -o "$TMP/filtered" -- "$TMP/pk/pt_known" >/dev/null 2>&1
n=$(perf script -i "$TMP/filtered/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l)
check_eq "--filter main: --insn, --pt-decoder fast as libipt (TIP.PGD/PGE around each call)" \
	"$("$XPTRACE" decode -i "$TMP/filtered" --insn --format jsonl --pt-decoder libipt 2>&1 | md5sum)" \
	"$("$XPTRACE" decode -i "$TMP/filtered" --insn --format jsonl 2>&1 | md5sum)"
check_match "--filter main: perf script decodes main's instructions" "^[0-9]{2,}$" "$n"
check_eq "--filter main: the call tree is main with all of them, once" "__libc_start_call_main;main $n" \
	"$("$XPTRACE" decode -i "$TMP/filtered" --calltree --format folded)"
check_eq "--filter main: main's calls: leaf 37, loop1000 1, rec 1, printf@plt 1" \
	"37 leaf|1 loop1000|1 printf@plt|1 rec|" \
	"$("$XPTRACE" decode -i "$TMP/filtered" --calltree --format jsonl | python3 -c '
import sys, json
rows = [json.loads(l) for l in sys.stdin]
print("".join("%d %s|" % (r["calls"], r["name"]) for r in sorted(rows, key=lambda r: r["name"])
              if r["path"][:-1] == ["__libc_start_call_main", "main"]))')"

"$XPTRACE" decode -i "$TMP/filtered" --blocks --format callgrind >"$TMP/filtered.cg"
check_match "--filter main: callgrind charges main's $n instructions to main" "^ *$n \(100.0%\) +\S*pt_known\.c:main \[(/\S*/)?pt_known\]$" \
	"$(callgrind_annotate --inclusive=no "$TMP/filtered.cg" 2>&1 | grep "100.0%")"
# the same from a path with a space: xptrace traces and decodes main alone as above;
# perf is not given the ranges (a warning says so) rather than a filter it cannot parse
$NOASLR "$XPTRACE" record --mode step --filter main -o "$TMP/filtered-sp" -- "$TMP/with space/pt_known" \
	>/dev/null 2>"$TMP/filtered-sp.err"
check_match "--filter on a path with a space: perf's syntax cannot name it, said" \
	"^xptrace: --filter: perf's filter syntax cannot name a file whose path has a space or a comma" \
	"$(cat "$TMP/filtered-sp.err")"
check_eq "--filter on a path with a space: main's $n instructions, in one main frame" "__libc_start_call_main;main $n" \
	"$("$XPTRACE" decode -i "$TMP/filtered-sp" --calltree --format folded)"
check_match "--filter on a path with a space: perf decodes the trace" "^[0-9]{2,}$" \
	"$(perf script -i "$TMP/filtered-sp/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l)"

# timestamps (the step tracer's TSC packets) never go backwards within the thread
check_eq "--insn times are monotonic" "0" "$("$XPTRACE" decode -i "$K" --insn --format jsonl | python3 -c '
import sys, json
prev = bad = 0
for l in sys.stdin:
    t = json.loads(l).get("time", 0)
    bad += t < prev
    prev = max(prev, t)
print(bad)')"

# blocks: the loop body runs exactly 1000 times, its jne is taken 999 times
out=$("$XPTRACE" decode -i "$K" --blocks --sym loop1000 --format jsonl)
check_match "loop body block: count 1000, taken 999, not taken 1" \
	'"sym":"loop1000\+0x5","count":1000,"insns":6,"cycles":null,"ipc":null,"taken":999,"not_taken":1,"mainline":"taken"' "$out"
check_eq "--sym keeps only loop1000's blocks" "3" "$(printf '%s\n' "$out" | grep -c '"sym":"loop1000+')"
out=$("$XPTRACE" decode -i "$K" --blocks)
check_match "text --blocks marks the mainline direction" \
	'loop1000\+0x5 +1000 +6 +- +- +999\* +1$' "$out"

# annotate: per-instruction counts and the branch's taken share
out=$("$XPTRACE" decode -i "$K" --annotate loop1000)
check_match "--annotate: the body's instructions ran 1000 times" '^ +1000 +- +>0x[0-9a-f]+ +movq' "$out"
check_match "--annotate: jne taken 99.9%" 'jne .* 99\.9%$' "$out"
out=$("$XPTRACE" decode -i "$K" --annotate loop1000 --format jsonl | grep '"insn":"jne')
check_match "--annotate jsonl: taken/not_taken" '"count":1000,.*"taken":999,"not_taken":1,"taken_pct":99.9' "$out"
check_exit "--annotate of a function that did not run fails" 1 "$XPTRACE" decode -i "$K" --annotate nosuchfn

# exact call tree: recursion levels, call counts
out=$("$XPTRACE" decode -i "$K" --calltree --percent-limit 0)
check_eq "rec: 11 levels, RL 1..11, one call each" \
	"1 2 3 4 5 6 7 8 9 10 11 " "$(printf '%s\n' "$out" | awk '$7 == "rec" { printf "%s ", $2 }')"
check_eq "rec: every level called once" "11" "$(printf '%s\n' "$out" | awk '$7 == "rec" && $3 == 1' | wc -l)"
check_match "leaf: 37 calls, 4 instructions each" '^ +7 +1 +37 +148 +148 +pt_known +leaf$' "$out"
check_match "loop1000: 1 call, 6002 instructions" '^ +7 +1 +1 +6002 +6002 +pt_known +loop1000$' "$out"
out=$("$XPTRACE" decode -i "$TMP/step_basic" --calltree --percent-limit 0)
check_eq "fib(8): 67 calls in all" "67" \
	"$(printf '%s\n' "$out" | awk '$7 == "fib" { s += $3 } END { print s }')"
check_eq "fib(8): recursion 8 deep" "8" \
	"$(printf '%s\n' "$out" | awk '$7 == "fib" && $2 > m { m = $2 } END { print m }')"

# longjmp: deep(5) recurses 6 levels and longjmps back into main.  The indirect jump
# lands mid-main: the skipped frames close and main goes on at RL 1 (no phantom main
# under __longjmp); printf, called after the longjmp, hangs off main.  Main's Base is
# then every instruction the --insn stream shows in main.
B=$TMP/step_basic
"$XPTRACE" decode -i "$B" --calltree --format jsonl >"$TMP/sb.tree"
main_insns=$("$XPTRACE" decode -i "$B" --insn --format jsonl --sym main | grep -c '"ip"')
check_eq "longjmp: main once at RL 1, deep at RL 1..6 under it, printf@plt under main, no phantom" \
	"main 1 1 $main_insns; deep 1 2 3 4 5 6; printf@plt 1; __longjmp leaf; mains 1; sums ok" \
	"$(python3 - "$TMP/sb.tree" <<'EOF2'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
mains = [r for r in rows if r["name"] == "main"]
m = mains[0]
under = lambda r: r["path"][:len(m["path"])] == m["path"]
deep = [r for r in rows if r["name"] == "deep" and under(r)
        and all(x == "deep" for x in r["path"][len(m["path"]):])]
pf = [r for r in rows if r["path"] == m["path"] + ["printf@plt"]]
lj = [r for r in rows if r["name"] == "__longjmp" and under(r)]
leaf = len(lj) == 1 and lj[0]["base"] == lj[0]["cum"] and \
    not any(r["path"][:len(lj[0]["path"])] == lj[0]["path"] and r is not lj[0] for r in rows)
# Cum == Base + the children's Cum, everywhere
kids = {}
for r in rows:
    kids.setdefault(tuple(r["path"][:-1]), []).append(r)
bad = [r for r in rows if r["cum"] != r["base"] + sum(k["cum"] for k in kids.get(tuple(r["path"]), []))]
print("main %d %d %d; deep %s; printf@plt %d; __longjmp %s; mains %d; sums %s" % (
    m["rl"], m["calls"], m["base"],
    " ".join(str(r["rl"]) for r in deep if r["calls"] == 1 and r["lvl"] - m["lvl"] == r["rl"]),
    len(pf), "leaf" if leaf else "has children", sum(r["path"].count("main") for r in rows if r["name"] == "main"),
    "ok" if not bad else "bad"))
EOF2
)"

# --metric time: nanoseconds from the step trace's timestamps.  The root's Cum is the
# thread's last minus first timestamp (the --insn stream's first and last rows); every
# node's Cum is its Base plus its children's Cum; Calls are those of the insns tree.
span=$("$XPTRACE" decode -i "$B" --insn --format jsonl | python3 -c '
import sys, json
ts = [json.loads(l).get("time", 0) for l in sys.stdin]
ts = [t for t in ts if t]
print(max(ts) - min(ts))')
# (text: in ms; the times of a traced run, said in the header)
out=$("$XPTRACE" decode -i "$B" --calltree --metric time)
check_match "--metric time: total = last - first timestamp ($span ns)" \
	"^# call tree: time, total $(awk -v s="$span" 'BEGIN { printf "%.3f", s / 1e6 }') ms\$" "$out"
check_match "--metric time of a step trace: said to be the traced run's" \
	"^# time: of the traced run \(step mode stops the program at its branches\), not native times" "$out"
"$XPTRACE" decode -i "$B" --calltree --metric time --format jsonl >"$TMP/sb.time"
check_eq "--metric time: Cum = Base + children's Cum, Cum(parent) >= Cum(child), same Calls" "0 0 same" \
	"$(python3 - "$TMP/sb.time" "$TMP/sb.tree" <<'EOF2'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
ins = [json.loads(l) for l in open(sys.argv[2])]
kids, by = {}, {}
for r in rows:
    kids.setdefault(tuple(r["path"][:-1]), []).append(r)
    by[tuple(r["path"])] = r
B, C = "base_traced_ns", "cum_traced_ns"	# jsonl: ns, of the traced run
bad = sum(r[C] != r[B] + sum(k[C] for k in kids.get(tuple(r["path"]), [])) for r in rows)
neg = sum(tuple(r["path"][:-1]) in by and by[tuple(r["path"][:-1])][C] < r[C] for r in rows)
calls = lambda rs: sorted((tuple(r["path"]), r["calls"]) for r in rs)
print(bad, neg, "same" if calls(rows) == calls(ins) and sum(r[C] for r in rows if r["lvl"] == 1) > 0 else "differ")
EOF2
)"

# callgrind: per-instruction Ir with exact calls=, read back by callgrind_annotate
"$XPTRACE" decode -i "$K" --blocks --format callgrind >"$TMP/cg.out"
check_match "callgrind: 37 calls of leaf" "^calls=37 " "$(grep -A1 "^cfn=.*" "$TMP/cg.out" | grep calls=37)"
out=$(callgrind_annotate --inclusive=yes --threshold=100 "$TMP/cg.out" 2>&1)
check_match "callgrind_annotate: loop1000 inclusive 6,002" '6,002 .*loop1000' "$out"
check_match "callgrind_annotate: leaf 148" '^ *148 .*:leaf' "$out"

# filters
all=$("$XPTRACE" decode -i "$K" --insn --format jsonl | grep -c '"ip"')
tid=$("$XPTRACE" decode -i "$K" --insn --format jsonl | sed -n 's/.*"tid":\([0-9]*\).*/\1/p' | head -1)
check_eq "--tid of the traced thread keeps everything" "$all" \
	"$("$XPTRACE" decode -i "$K" --insn --format jsonl --tid "$tid" | grep -c '"ip"')"
check_eq "--tid of another thread keeps nothing" "0" \
	"$("$XPTRACE" decode -i "$K" --insn --format jsonl --tid 1 | grep -c '"ip"')"
check_exit "--tid of another thread: nothing matched, exit 1" 1 "$XPTRACE" decode -i "$K" --insn --tid 1
check_eq "--sym leaf: 37 x 4 instructions" "148" \
	"$("$XPTRACE" decode -i "$K" --insn --format jsonl --sym leaf | grep -c '"ip"')"
check_exit "--time with a bad range is a usage error" 2 "$XPTRACE" decode -i "$K" --insn --time 5-1
check_match "--time with a bad range says why" "--time 5-1: expected A-B" "$(cat "$TMP/.err")"
check_match "--insn text: symbol+offset and disassembly" ' loop1000\+0x5 +48 8b 15 [0-9a-f ]+ +movq ' \
	"$("$XPTRACE" decode -i "$K" --insn | grep -m1 'loop1000+0x5 ')"
check_match "--syntax intel" 'mov rdx, qword ptr \[rip' \
	"$("$XPTRACE" decode -i "$K" --insn --syntax intel | grep -m1 'loop1000+0x5 ')"
check_match "--srcline: file:line" 'pt_known\.c:10$' \
	"$("$XPTRACE" decode -i "$K" --insn --srcline | grep -m1 'loop1000+0x5 ')"

# a corrupted copy: gaps, no crash, and the ASan build agrees
cp -r "$K" "$TMP/bad"
python3 - "$TMP/bad/perf.data" <<'EOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
# the first AUXTRACE record (type 71): damage its trace bytes in a few places
off = struct.unpack_from('<Q', b, 40)[0]   # header: data section offset, size
end = off + struct.unpack_from('<Q', b, 48)[0]
while off + 8 <= end:
    typ, misc, size = struct.unpack_from('<IHH', b, off)
    if size < 8:
        sys.exit('bad record size')
    if typ == 71:
        n = struct.unpack_from('<Q', b, off + 8)[0]
        data = off + size
        for k in range(1, 9):
            b[data + n * k // 9] ^= 0xa5
        break
    off += size
else:
    sys.exit('no AUXTRACE record')
open(p, 'wb').write(b)
EOF
"$XPTRACE" decode -i "$TMP/bad" --blocks >/dev/null 2>"$TMP/bad.err"
check_eq "corrupted PT: decode exits 0" 0 "$?"
check_match "corrupted PT: gaps reported" "gaps in the PT trace" "$(cat "$TMP/bad.err")"
if [ -x "$XPTRACE_ASAN" ]; then
	for v in --blocks --insn --calltree; do
		"$XPTRACE_ASAN" decode -i "$TMP/bad" $v >/dev/null 2>"$TMP/asan.err"
		check_eq "corrupted PT under ASan: decode $v exits 0" "0 " \
			"$? $(grep -m1 -i 'AddressSanitizer\|runtime error' "$TMP/asan.err")"
	done
fi

# A PT event without a name (EVENT_DESC gives it none, as some writers do) is found
# from AUXTRACE_INFO's type as perf does; AUX data of a kind xptrace does not decode
# (AUXTRACE_INFO naming another type) is a failure, not an empty report with exit 0.
# The copy sits beside the trace's snapshots, as the original does: without them its
# symbols would come from whatever the recorded paths hold on this machine.
mkdir "$TMP/noname"
for e in "$XP_ROOT"/traces/step-basic/.build-id "$XP_ROOT"/traces/step-basic/*; do
	case ${e##*/} in perf.data | *.md | *.txt) ;; *) ln -s "$e" "$TMP/noname/" ;; esac
done
python3 - "$XP_ROOT/traces/step-basic/perf.data" "$TMP" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
i = b.index(b'intel_pt//u\0')   # the EVENT_DESC name
b[i:i + 11] = b'\0' * 11
open(sys.argv[2] + '/noname/perf.data', 'wb').write(b)
off = struct.unpack_from('<Q', b, 40)[0]
end = off + struct.unpack_from('<Q', b, 48)[0]
while off + 8 <= end:
    typ, misc, size = struct.unpack_from('<IHH', b, off)
    if typ == 70:          # AUXTRACE_INFO: its type becomes Arm CoreSight (3)
        struct.pack_into('<I', b, off + 8, 3)
        break
    off += size
open(sys.argv[2] + '/othertype.data', 'wb').write(b)
EOF
"$XPTRACE" decode -i "$XP_ROOT/traces/step-basic" --functions --format jsonl >"$TMP/named.jsonl" 2>/dev/null
"$XPTRACE" decode -i "$TMP/noname" --functions --format jsonl >"$TMP/noname.jsonl" 2>"$TMP/noname.err"
check_eq "PT event without a name: decoded as PT (exit 0)" 0 "$?"
check_eq "PT event without a name: same functions as the named trace" \
	"$(md5sum <"$TMP/named.jsonl") $(wc -l <"$TMP/named.jsonl")" "$(md5sum <"$TMP/noname.jsonl") $(wc -l <"$TMP/noname.jsonl")"
"$XPTRACE" decode -i "$TMP/othertype.data" --functions >"$TMP/other.out" 2>"$TMP/other.err"
check_eq "AUX data of another kind: exit 1" 1 "$?"
check_match "AUX data of another kind: says so" "AUX-area trace data of a kind xptrace does not decode" "$(cat "$TMP/other.err")"
