#!/bin/bash
# -p PID: attach to every thread of a running process, synthesize its state from /proc,
# stop after --duration; the process keeps running.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"

"$PROGS/spinner" >"$TMP/sp.out" &
sp=$!
for _ in $(seq 50); do grep -q ready "$TMP/sp.out" && break; sleep 0.1; done
"$XPTRACE" record -q -o att -g -d 0.6 -p "$sp" >/dev/null 2>"$TMP/err"
check_eq "record -p exits 0" 0 $?
check "the attached process still runs" kill -0 "$sp"
kill "$sp"; wait "$sp" 2>/dev/null
perf_clean "attach" att/perf.data
script=$(perf script -i att/perf.data -F tid,ip,sym -G 2>/dev/null | awk "NF == 3 { print \$1, \$3 }")
check_eq "samples from both threads" 2 "$(printf '%s\n' "$script" | awk 'NF == 2 { print $1 }' | sort -u | wc -l)"
m=$(sym_share att/perf.data spin_main)
t=$(sym_share att/perf.data spin_thread_body)
check "spin_main and spin_thread_body share the samples ($m% + $t%)" in_range 95 100 $((m + t))
check "each thread has a fair share ($m%, $t%)" in_range 25 75 "$m"
tev=$(perf script -i att/perf.data --show-task-events --show-mmap-events 2>/dev/null)
check_match "synthesized COMM for the main thread" "PERF_RECORD_COMM: spinner:$sp/$sp" "$tev"
check_match "synthesized FORK for the second thread" "PERF_RECORD_FORK\($sp:[0-9]+\):\($sp:$sp\)" "$tev"
check_match "synthesized MMAP2 of the executable with its build-id" \
	"PERF_RECORD_MMAP2 $sp/$sp: .*<[0-9a-f]{40}>.* r-xp $PROGS/spinner" "$tev"
check_match "synthesized MMAP2 of the vdso" "PERF_RECORD_MMAP2 $sp/$sp: .* r-xp \[vdso\]" "$tev"
check_match "build-id of the executable in the table" " $PROGS/spinner$" "$(perf buildid-list -i att/perf.data 2>/dev/null)"
n=$(nsamples att/perf.data)
# 0.6 s x 2 threads x 4 kHz = 4800 at most
check "sample count bounded by duration x threads x frequency ($n)" in_range 200 4900 "$n"
check_exit "-p of a process that does not exist" 1 "$XPTRACE" record -o att2 -p 999999999
check_exit "-p with a command is a usage error" 2 "$XPTRACE" record -p 1 -- true

# Without --duration, -p ends by itself when the process exits.
# (2 s: on a machine loaded by the parallel suites, starting xptrace can take most of
# a second, and a process gone before the attach is another test's case)
"$PROGS/hot" 2000 >/dev/null &
hp=$!
sleep 0.2
start=$(date +%s%N)
timeout 10 "$XPTRACE" record -q -o att3 -p "$hp" >/dev/null 2>&1
rc=$?
ms=$(( ($(date +%s%N) - start) / 1000000 ))
wait "$hp"
check_eq "-p: exit 0 when the process ends" 0 "$rc"
check "-p: stopped with the process (${ms} ms)" in_range 100 2700 "$ms"
perf_clean "-p until exit" att3/perf.data
check "-p until exit: hot_inner is the top symbol" in_range 60 90 "$(sym_share att3/perf.data hot_inner)"
