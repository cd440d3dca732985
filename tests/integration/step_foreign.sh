#!/bin/bash
# record --mode step of a program that runs into another tool's breakpoint: a uprobe
# defined and enabled in tracefs (an int3 the kernel wrote over the instruction's first
# byte in every process mapping the file), on a private copy of probe_calls.  On an
# ordinary instruction (probe_empty's entry, reached by a direct call), a return, a
# direct call and a conditional branch (the hardest: the trace needs their outcome;
# the kernel runs the first two out of line, emulates the others): the calls equal the
# program's own counts and perf's (perf script --itrace=cr on the same perf.data), the
# other tool still gets every hit (tracefs' uprobe_profile), the warning comes once naming the
# function, decode (run while the probe is live: the kernel writes its int3 into private
# mappings of the file, the trace's hard-linked snapshot too) lists perf's instructions,
# and a process the tracer detached from (-p, --duration) keeps the other
# tool's int3 and nothing of ours.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
TFS=/sys/kernel/tracing
[ -w "$TFS/uprobe_events" ] || TFS=/sys/kernel/debug/tracing
[ -w "$TFS/uprobe_events" ] || { ok "tracefs is not mounted # SKIP"; exit 0; }
cd "$TMP"
cp "$PROGS/probe_calls" prog
G=xpt_foreign_$$
victim=
unprobe() {
	echo 0 >"$TFS/events/$G/enable" 2>/dev/null
	grep -o "^[pr]:$G/[a-z0-9]*" "$TFS/uprobe_events" 2>/dev/null | sed 's/^[pr]:/-:/' >>"$TFS/uprobe_events"
}
trap 'unprobe; [ -z "$victim" ] || kill $victim 2>/dev/null; rm -rf "$TMP"' EXIT
probe() {	# $1 file offset, [$2 r: a uretprobe]: the other tool's, armed in every process mapping prog
	unprobe
	echo "${2:-p}:$G/f $TMP/prog:$1" >>"$TFS/uprobe_events" && echo 1 >"$TFS/events/$G/f/enable"
}
# the hits the kernel counted for it (uprobe_profile: PATH EVENT HITS)
hits() { awk -v p="$TMP/prog" '$1 == p && $2 == "f" { print $3 }' "$TFS/uprobe_profile"; }

# offsets (= addresses in this PIE, whose text maps at its file offset) from objdump
dis=$(objdump -d --no-show-raw-insn prog)
entry=$(printf '%s\n' "$dis" | awk '/<probe_empty>:/ { print "0x" $1; exit }')
ret=$(printf '%s\n' "$dis" | awk '/<probe_empty>:/ { f = 1 } f && /\tret/ { sub(":", "", $1); print "0x" $1; exit }')
# main's loop: call probe_empty, then the jne back to it (N times: N-1 taken)
jcc=$(printf '%s\n' "$dis" | awk '/<main>:/ { f = 1 } f && /call.*<probe_empty>/ { c = 1 }
	c && /\tj/ { sub(":", "", $1); print "0x" $1 " " $2; exit }')
call=$(printf '%s\n' "$dis" | awk '/<main>:/ { f = 1 } f && /call.*<probe_empty>/ { sub(":", "", $1); print "0x" $1; exit }')
check_match "objdump finds probe_empty's entry, its ret, main's call of it and loop branch" \
	"^0x[0-9a-f]+ 0x[0-9a-f]+ 0x[0-9a-f]+ 0x[0-9a-f]+ j" "$entry $ret $call $jcc"
jname=${jcc#* }
jcc=${jcc% *}

perf_calls() {	# $1 trace: perf's calls of probe_empty and getsid@plt
	perf script -i "$1/perf.data" --itrace=cr -F flags,callindent 2>/dev/null |
		awk '$1 == "call" { c[$NF]++ } END { print c["probe_empty"] + 0, c["getsid@plt"] + 0 }'
}
our_calls() {	# $1 trace: xptrace's calls of probe_empty and getsid
	"$XPTRACE" decode -i "$1" --functions --percent-limit 0 2>/dev/null |
		awk '$NF == "probe_empty" || $NF == "getsid" { c[$NF] = $1 } END { print c["probe_empty"] + 0, c["getsid"] + 0 }'
}

# $1 label, $2 offset, $3 hits the other tool gets in `prog 40 7`, $4 what the
# warning names there, [$5 r: a uretprobe]
traced() {
	probe "$2" "${5:-p}"
	"$XPTRACE" record --mode step -o "$TMP/$1" -- ./prog 40 7 >"$1.out" 2>"$1.err"
	check_eq "$1: step record exits 0" 0 "$?"
	check_eq "$1: 40 calls of probe_empty, 7 of getsid (perf: $(perf_calls "$1"))" \
		"40 7 40 7" "$(our_calls "$1") $(perf_calls "$1")"
	check_eq "$1: the other tool's probe still hit $3 times" "$3" "$(hits)"
	check_eq "$1: said once, with the function" "1 $4" \
		"$(grep -c "step: another tool's breakpoint (a uprobe) at .* in $TMP/prog)" "$1.err") $(
			sed -n "s/.*(a uprobe) at [^ ]* (\([^ ]*\) in .*/\1/p" "$1.err" | head -1)"
	perf script -i "$TMP/$1/perf.data" --itrace=i0ns -F ip 2>/dev/null | awk '{ print $1 }' >"$1.p"
	e=$(perf script -i "$TMP/$1/perf.data" --itrace=e 2>&1 | grep -c 'instruction trace error')
	"$XPTRACE" decode -i "$TMP/$1" --insn -F ip 2>"$1.derr" | awk '!/^#/ { print $1 }' >"$1.x"
	check_eq "$1: perf script --itrace=i0ns and decode --insn list the same $(wc -l <"$1.p") instructions, no errors" \
		"0 0" "$(diff "$1.p" "$1.x" | grep -c '^[<>]') $e"
	check_eq "$1: decode says nothing went missing" "" "$(cat "$1.derr")"
}

main=0x$(printf '%s\n' "$dis" | awk '/<main>:/ { print $1; exit }')
traced entry "$entry" 40 probe_empty+0
traced ret "$ret" 40 "probe_empty+$(printf '%#x' $((ret - entry)))"
# (the kernel emulates a call or jcc under a uprobe instead of running it out of line)
traced call "$call" 40 "main+$(printf '%#x' $((call - main)))"
traced "$jname" "$jcc" 40 "main+$(printf '%#x' $((jcc - main)))"
# a uretprobe: its int3 at the entry, and every return diverted to its trampoline in
# the kernel's [uprobes] page (code no file holds): the trace leaves there and comes
# back at the real return address
traced uretprobe "$entry" 40 probe_empty+0 r
check_eq "uretprobe: the [uprobes] page said once" 1 \
	"$(grep -c "step: a thread went into the kernel's \[uprobes\] page" uretprobe.err)"

# Bytes of prog's executable mappings in process $1 that differ from the file: "OFFSET:BYTE"
diffs() {
	python3 - "$1" "$TMP/prog" <<'PY'
import sys
pid, path = sys.argv[1], sys.argv[2]
out = []
with open("/proc/%s/mem" % pid, "rb", 0) as mem, open(path, "rb") as f:
    for line in open("/proc/%s/maps" % pid):
        m = line.rstrip("\n").split(None, 5)
        if len(m) < 6 or m[1][2] != "x" or m[5] != path:
            continue
        lo, hi = (int(x, 16) for x in m[0].split("-"))
        off = int(m[2], 16)
        f.seek(off)
        want = f.read(hi - lo)
        mem.seek(lo)
        got = mem.read(len(want))
        out += ["%#x:%02x" % (off + i, a) for i, (a, b) in enumerate(zip(got, want)) if a != b]
print(" ".join(out))
PY
}

# -p: seized in the loop, detached at --duration: the other tool's int3 is still there,
# none of ours (their bytes are the file's again), and the program runs on
probe "$entry"
./prog 2000000000 0 &
victim=$!
sleep 0.3
check_eq "-p: before: the process holds the other tool's int3 only" "$(printf '%#x' $((entry))):cc" "$(diffs $victim)"
"$XPTRACE" record --mode step -p $victim -d 1 -o att >att.out 2>att.err
check_eq "-p: record -d 1 exits 0" 0 "$?"
check_eq "-p: after: the other tool's int3 is still there, no byte of ours; untraced, running" \
	"$(printf '%#x' $((entry))):cc 0" "$(diffs $victim) $(awk '/^TracerPid:/ { print $2 }' /proc/$victim/status)"
read -r ours_n _ <<<"$(our_calls att)"
read -r perf_n _ <<<"$(perf_calls att)"
check_match "-p: calls of probe_empty in the trace: xptrace's and perf's, the same (and some)" \
	"^([1-9][0-9]*) \\1$" "$ours_n $perf_n"
h1=$(hits)
sleep 0.2
check_match "-p: the other tool goes on counting hits ($h1, then more)" "^[1-9]" "$(($(hits) - h1))"
kill $victim
wait $victim 2>/dev/null
victim=

# -p with a uretprobe on main, seized while main waits for its input: main's return was
# diverted to the trampoline before the trace began (no hit in the trace tells the
# tracer where the [uprobes] page is), so the trace runs into that page: decode names
# it for the gap (it said "see above" with nothing above), perf fails there too
probe "$main" r
mkfifo in
./prog 20 3 wait <in >wait.out &
victim=$!
exec 3>in
for _ in $(seq 100); do grep -q ready wait.out && break; sleep 0.05; done
xol=$(awk '$NF == "[uprobes]" { sub(/-.*/, "", $1); print $1 }' /proc/$victim/maps)
"$XPTRACE" record --mode step -p $victim -o main >main.out 2>main.err &
rec=$!
for _ in $(seq 100); do
	[ "$(awk '/^TracerPid:/ { print $2 }' /proc/$victim/status)" != 0 ] && break
	sleep 0.05
done
echo >&3
exec 3>&-
wait $rec
check_eq "main's uretprobe, -p: record exits 0" 0 "$?"
wait $victim
victim=
check_eq "main's uretprobe, -p: 20 calls of probe_empty, 3 of getsid (perf: $(perf_calls main)); main returned once" \
	"20 3 20 3 1" "$(our_calls main) $(perf_calls main) $(hits)"
"$XPTRACE" decode -i "$TMP/main" --functions >/dev/null 2>main.derr
check_eq "main's uretprobe, -p: decode names the [uprobes] page for the gap" \
	"xptrace: $TMP/main/perf.data: 1 gaps where the code that ran was not available (the kernel's [uprobes] page at 0x$xol: the out-of-line slots and return trampoline of another tool's uprobes, code no file holds; not damage in the PT trace)" \
	"$(sed 's/, [0-9]* bytes of trace skipped$//' main.derr)"

# --filter probe_empty with the other tool's int3 on its first instruction, where
# tracing restarts: the stop that restarts it is at the second (nothing traced before)
probe "$entry"
"$XPTRACE" record --mode step --filter probe_empty -o "$TMP/filt" -- ./prog 40 7 >filt.out 2>filt.err
check_eq "--filter probe_empty: 40 calls, 4 instructions each (perf: $(perf script -i "$TMP/filt/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l) instructions), 40 hits" \
	"40 160 160 40" "$("$XPTRACE" decode -i "$TMP/filt" --functions --percent-limit 0 2>/dev/null |
		awk '$NF == "probe_empty" { print $1, $2 }') $(
		perf script -i "$TMP/filt/perf.data" --itrace=i0ns -F ip 2>/dev/null | wc -l) $(hits)"

# ten in a row, on main's first ten instructions (each runs once): each is its own run,
# the one before each armed; eight said, then one line for the rest
unprobe
for off in $(printf '%s\n' "$dis" | awk '/<main>:/ { f = 1; next } f && NF > 1 { sub(":", "", $1); print "0x" $1 }' | head -10); do
	echo "p:$G/m$off $TMP/prog:$off" >>"$TFS/uprobe_events"
done
echo 1 >"$TFS/events/$G/enable"
"$XPTRACE" record --mode step -o "$TMP/ten" -- ./prog 40 7 >ten.out 2>ten.err
check_eq "ten in a row: 40 and 7 calls (perf: $(perf_calls ten)), one hit each, 8 said and one line for the rest" \
	"40 7 40 7 1 1 1 1 1 1 1 1 1 1 8 1" \
	"$(our_calls ten) $(perf_calls ten) $(awk -v p="$TMP/prog" '$1 == p { print $3 }' "$TFS/uprobe_profile" | xargs) $(
		grep -c "step: another tool's breakpoint (a uprobe) at" ten.err) $(
		grep -c "step: more breakpoints of other tools in process [0-9]* (not listed)" ten.err)"
perf script -i "$TMP/ten/perf.data" --itrace=i0ns -F ip 2>/dev/null | awk '{ print $1 }' >ten.p
"$XPTRACE" decode -i "$TMP/ten" --insn -F ip 2>ten.derr | awk '!/^#/ { print $1 }' >ten.x
check_eq "ten in a row: perf and decode list the same $(wc -l <ten.p) instructions; decode says nothing" \
	"0 " "$(diff ten.p ten.x | grep -c '^[<>]') $(cat ten.derr)"

# --mode dbt: valgrind's copy of the program holds the other tool's int3 too and runs it
# as the program's own: a SIGTRAP kills the program at probe_empty's first call, the
# other tool gets no hit.  Not traced through (yet): said, with where and what to do.
if [ -x "$XP_ROOT/build/dbt/xptdbt-amd64-linux" ] && command -v valgrind >/dev/null; then
	probe "$entry"
	"$XPTRACE" record --mode dbt -o "$TMP/dbt" -- ./prog 40 7 >dbt.out 2>dbt.err
	check_eq "dbt: said once, where, then the SIGTRAP that killed the program; no hit for the other tool" \
		"1 probe_empty+0 1 0" \
		"$(grep -c "^xptrace: dbt: another tool's breakpoint (a uprobe) at offset $(printf '%#x' $((entry))) (.*) of $TMP/prog: valgrind runs its int3" dbt.err) $(
			sed -n 's/.*(a uprobe) at offset [^ ]* (\([^ ]*\)) of .*/\1/p' dbt.err) $(
			grep -c 'the command was killed by signal 5 ' dbt.err) $(hits)"
else
	ok "dbt: # SKIP valgrind or the dbt tool missing"
fi
