#!/bin/bash
# record --mode step -p PID: a running multi-threaded program is seized, traced from
# where each thread was, and detached (at --duration, on SIGTERM or SIGINT to the
# recorder) leaving it as it was: its code bytes equal its files' again (no int3 left),
# no tracer, and it finishes with the right results.  The trace's calls are checked
# thread by thread against perf's (perf script --itrace=cr) on the same perf.data.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"
in_range() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }

# Every executable file mapping of $1 against the file's bytes at its offset: prints
# "MAPPINGS BYTES DIFFERING" (the [vdso] and anonymous code have no file to compare).
code_diff() {
	python3 - "$1" <<'EOF'
import os, sys
pid = sys.argv[1]
maps = nbytes = ndiff = 0
with open("/proc/%s/mem" % pid, "rb", 0) as mem:
    for line in open("/proc/%s/maps" % pid):
        f = line.rstrip("\n").split(None, 5)
        if len(f) < 6 or f[1][2] != "x" or not f[5].startswith("/"):
            continue
        lo, hi = (int(x, 16) for x in f[0].split("-"))
        off = int(f[2], 16)
        with open(f[5], "rb") as elf:
            elf.seek(off)
            want = elf.read(hi - lo)
        mem.seek(lo)
        got = mem.read(len(want))
        maps += 1
        nbytes += len(want)
        if got != want:     # (compared byte by byte only when they differ: ~2 MB)
            ndiff += sum(a != b for a, b in zip(got, want))
print(maps, nbytes, ndiff)
EOF
}
tracer() { awk '/^TracerPid:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo gone; }
# per thread, the functions called in order: "TID NAME" lines, perf's and ours; code
# without a symbol of its own (PLT entries: perf prints "@plt" or an address, xptrace
# names them after their target) is "?"
norm() { awk '{ if ($2 ~ /@plt$/ || $2 ~ /^(0x)?[0-9a-f]+$/ || $2 == "_init") $2 = "?"; print }'; }
perf_calls() {
	perf script -i "$1/perf.data" --itrace=cr -F tid,flags,callindent 2>/dev/null >"$1.perf"
	awk '$2 == "call" { print $1, $NF }' "$1.perf" | sort -s -k1,1 | norm
}
# (a thread found at a function's first instruction enters it: xptrace counts that call,
# as for a filter's first entry, perf does not; such a call, at instruction 0, is left
# out)
xp_calls() {	# $1 trace, [$2 --pt-decoder's value]
	"$XPTRACE" decode -i "$1" --calls --no-inline --format jsonl ${2:+--pt-decoder $2} 2>/dev/null | python3 -c '
import json, sys
rows = sorted((r["tid"], r["start_insns"], r["name"]) for r in map(json.loads, sys.stdin))
for tid, start, name in rows:
    if start:
        print(tid, name)' | norm
}

# The program runs on a private copy of libc: suites running beside this one probe libc
# functions (record --probe getsid@libc.so.6), and a cpu-wide uprobe puts its int3 into
# every process that maps the probed file while it is armed, which the code comparison
# below would blame on the step tracer.
mkdir lib
cp "$(ldd "$PROGS/step_attach" | awk '$1 == "libc.so.6" { print $3 }')" lib/
mkfifo in
LD_LIBRARY_PATH="$TMP/lib" "$PROGS/step_attach" <in >out 2>&1 &
pid=$!
exec 3>in
trap 'kill $pid 2>/dev/null; exec 3>&-; rm -rf "$TMP"' EXIT
for _ in $(seq 100); do grep -q ready out && break; sleep 0.1; done
check_eq "the program runs before the attach" ready "$(cat out)"

# ---------------------------------------------------------------- -d 1
"$XPTRACE" record --mode step -p "$pid" -d 1 -o att >rec.out 2>rec.err
check_eq "record --mode step -p -d 1 exits 0" 0 "$?"
check_match "it says it detached" "step: detached from PID $pid: it runs on untraced" "$(cat rec.err)"
check_match "it says what the trace misses" "calls already active there are not in it" "$(cat rec.err)"
check "the process runs on after the detach" kill -0 "$pid"
check_eq "no tracer left on it" 0 "$(tracer "$pid")"
bid=$(readelf -n "$PROGS/step_attach" | awk '/Build ID/ { print $3 }')
check "the program is snapshotted by build-id, as for a command" \
	cmp -s "$PROGS/step_attach" "att/.build-id/${bid:0:2}/${bid:2}/elf"
check_match "the sideband perf synthesizes for a running process: its MMAP2 with the build-id" \
	"PERF_RECORD_MMAP2 $pid/$pid: .*<$bid>.* r-xp $PROGS/step_attach" \
	"$(perf script -i att/perf.data --itrace=e --show-mmap-events 2>/dev/null | grep MMAP2)"
read -r maps bytes diff <<<"$(code_diff "$pid")"
check_eq "its code equals its files' after the detach (no int3 left: $maps mappings, $bytes bytes)" 0 "$diff"
check "the program's and libc's code were compared ($maps mappings)" in_range 2 20 "$maps"

perf_calls att >perf.calls
xp_calls att >xp.calls
# (main's trace is its read's syscall instruction: perf's "tr end syscall"; a helper
# thread starts every 10th round of the sleeping worker, 10 ms apart)
nthreads=$(awk '{ print $1 }' att.perf | sort -u | wc -l)
check "the three threads of the attach and helpers started after it in the trace, as perf sees them ($nthreads)" \
	in_range 4 200 "$nthreads"
# (the workers call it round after round, a helper once; one started just before the
# detach may not have reached its call yet)
check_eq "att_round: more than once in two threads at most (the workers), once in a helper at least" \
	"yes yes" \
	"$(awk '$2 == "att_round" { print $1 }' xp.calls | sort | uniq -c |
		awk '$1 > 1 { many++ } $1 == 1 { once++ } END { print (many <= 2 ? "yes" : "no"), (once >= 1 ? "yes" : "no") }')"
check "att_fib calls traced ($(grep -c ' att_fib$' xp.calls))" in_range 100 100000000 "$(grep -c ' att_fib$' xp.calls)"
check_eq "every thread's calls, in order, as perf lists them ($(wc -l <perf.calls) calls)" \
	"$(md5sum <perf.calls)" "$(md5sum <xp.calls)"
diff perf.calls xp.calls | head -5 | sed 's/^/#   /'
check_eq "... and as libipt's block decoder alone gives them (--pt-decoder libipt)" \
	"$(md5sum <perf.calls)" "$(xp_calls att libipt | md5sum)"
# the frames above the attach point come back as the returns reach them: in the
# workers att_fib lies under att_worker -> att_round from the root (the frames the
# attach found, named by the returns into them), in the helpers under start_thread ->
# att_helper -> att_round; the deepest is fib(12)'s, 12 levels of att_fib, nothing
# grows past it
check_eq "call tree: att_fib only under att_worker (the root) or att_helper -> att_round, at most 12 levels" \
	"yes 12" "$("$XPTRACE" decode -i att --calltree --format jsonl --percent-limit 0 2>/dev/null | python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
fib = [r["path"] for r in rows if r["path"][-1] == "att_fib"]
def ok(p):
    i = p.index("att_round") if "att_round" in p else -1
    return i > 0 and set(p[i + 1:]) == {"att_fib"} and (p[:i] == ["att_worker"] or p[i - 1] == "att_helper")
print("yes" if fib and all(ok(p) for p in fib) else "no", max(len(p) - p.index("att_round") - 1 for p in fib) if fib else 0)')"

# ---------------------------------------------------------------- SIGTERM, then SIGINT
"$XPTRACE" record -q --mode step -p "$pid" -o att2 2>rec2.err &
xp=$!
for _ in $(seq 100); do [ "$(tracer "$pid")" = "$xp" ] && break; sleep 0.05; done
check_eq "attached again (SIGTERM case)" "$xp" "$(tracer "$pid")"
sleep 0.3
kill -TERM "$xp"
wait "$xp"
check_eq "SIGTERM to the recorder: exit 0" 0 "$?"
check_eq "SIGTERM: no tracer left" 0 "$(tracer "$pid")"
check_eq "SIGTERM: its code equals its files' again" 0 "$(code_diff "$pid" | awk '{ print $3 }')"
check "SIGTERM: the trace decodes, with att_fib calls" in_range 1 100000000 \
	"$(xp_calls att2 | grep -c ' att_fib$')"

"$XPTRACE" record -q --mode step -p "$pid" -o att3 2>rec3.err &
xp=$!
for _ in $(seq 100); do [ "$(tracer "$pid")" = "$xp" ] && break; sleep 0.05; done
check_exit "a second tracer is refused: exit 1" 1 "$XPTRACE" record --mode step -p "$pid" -o att4
check_match "... saying who traces it" "process $pid is traced already, by PID $xp" "$(cat "$TMP/.err")"
check "... before making its directory" test ! -e att4
kill -INT "$xp"
wait "$xp"
check_eq "SIGINT to the recorder: exit 0" 0 "$?"
check_eq "SIGINT: no tracer left" 0 "$(tracer "$pid")"
check_eq "SIGINT: its code equals its files' again" 0 "$(code_diff "$pid" | awk '{ print $3 }')"

echo >&3
exec 3>&-
wait "$pid"
check_eq "the program then finishes: exit 0" 0 "$?"
check_eq "... with every round right" "ready
attach: 0 bad rounds" "$(cat out)"

check_exit "-p of a process that does not exist: exit 1" 1 "$XPTRACE" record --mode step -p 999999999 -o att5
check_match "... saying so" "process 999999999: No such process" "$(cat "$TMP/.err")"
