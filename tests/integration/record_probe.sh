#!/bin/bash
# record --probe: exact entry/return events of functions next to the samples, read back
# by perf.  Expected counts are the programs' own (tests/progs/merged.c's worked example:
# C 1, A 3, B 5 calls; probe_calls: N and K; merged_thr: 5 and 3).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
[ "$(id -u)" = 0 ] || { ok "uprobes need root here # SKIP"; exit 0; }
cd "$TMP"

# counts FILE: "EVENT COUNT" per probe event, sorted
counts() {
	perf script -i "$1" -F event 2>/dev/null | awk '$1 ~ /^probe_xptrace:/ { sub(":$", "", $1); n[$1]++ }
		END { for (e in n) print e, n[e] }' | sort
}

# armed FILE: waits (up to 20 s) for record's note that the probes are armed.
armed() {
	for _ in $(seq 200); do grep -q "probes armed" "$1" && return; sleep 0.1; done
	echo "# no 'probes armed' note in $1:"; sed 's/^/#   | /' "$1"
}

check_match "info: uprobes work here" "^uprobes +yes$" "$("$XPTRACE" info)"

# Without tracefs probes are cpu-wide: their breakpoints go into every process that maps
# the file while they are armed, so a program other suites step-trace at the same time
# (merged, step_dlopen) is probed as a copy of its own.
mkdir own
cp "$PROGS/merged" "$PROGS/step_dlopen" "$PROGS/libstep_dl.so" own/

# --- the worked example, sampled with callchains ---
"$XPTRACE" record -q -m sample -o m --probe C,A,B -g -- own/merged >"$TMP/m.out" 2>&1
check_eq "merged: record exits 0" 0 $?
perf_clean "merged" m/perf.data
check_eq "merged: C 1, A 3, B 5 entries and returns" "probe_xptrace:A 3
probe_xptrace:A__return 3
probe_xptrace:B 5
probe_xptrace:B__return 5
probe_xptrace:C 1
probe_xptrace:C__return 1" "$(counts m/perf.data)"
seq=$(perf script -i m/perf.data -F event -G 2>/dev/null | awk '$1 ~ /^probe_xptrace:/ { e = $1; sub("probe_xptrace:", "", e); sub(":$", "", e); sub("__return", "-", e); printf "%s ", e }')
check_eq "merged: probe hits in the order of the issue's example" \
	"C A B B B- B- B B- A- B A B A A- B- A- B- C- " "$seq"
ents=$(perf script -i m/perf.data -F event,ip,sym,symoff -G 2>/dev/null | awk '$1 ~ /^probe_xptrace:[ABC]:$/ { e = $1; sub("probe_xptrace:", "", e); sub(":", "", e); print (e "+0x0" == $3) ? "at-entry" : "elsewhere " $0 }' | sort | uniq -c | tr -s ' ')
check_eq "merged: every entry hit is at the first byte of its function" " 9 at-entry" "$ents"
rets=$(perf script -i m/perf.data -F event,ip,sym -G 2>/dev/null | awk '$1 ~ /__return:$/ { print $1, $3 }' | sort | uniq -c | tr -s ' ')
check_eq "merged: return hits are at the return address in the caller" " 2 probe_xptrace:A__return: B
 1 probe_xptrace:A__return: C
 3 probe_xptrace:B__return: A
 1 probe_xptrace:B__return: B
 1 probe_xptrace:B__return: C
 1 probe_xptrace:C__return: main" "$rets"
# The third A entry is C.B.A.B.A: its callchain shows the whole path.
chain=$(perf script -i m/perf.data -F event,ip,sym 2>/dev/null | awk '
	/probe_xptrace:A: *$/ { n++; take = (n == 3); next }
	take && NF == 2 { printf "%s ", $2 } take && NF == 0 { take = 0 }')
check_eq "merged -g: callchain of the innermost A" "A B A B C main __libc_start_call_main " "$chain"
check_match "merged: perf report has the probe events" "# Samples: 5  of event 'probe_xptrace:B'" \
	"$(perf report -i m/perf.data --stdio 2>/dev/null)"
ns=$(perf script -i m/perf.data -F event 2>/dev/null | grep -c cpu-clock)
check "merged: cpu-clock samples next to the probes ($ns)" in_range 40 2000 "$ns"
tids=$(perf script -i m/perf.data -F tid,event 2>/dev/null | awk '{ print $1 }' | sort -u | wc -l)
check_eq "merged: one thread" 1 "$tids"

# --- globs and SYM@MODULE ---
"$XPTRACE" record -q -o g --probe 'getsid@libc.so.6,probe_*' -- "$PROGS/probe_calls" 1000 7 >/dev/null 2>&1
check_eq "glob and libc by name: 1000 probe_empty, 7 getsid, no probe_label (no size)" \
	"probe_xptrace:getsid 7
probe_xptrace:getsid__return 7
probe_xptrace:probe_empty 1000
probe_xptrace:probe_empty__return 1000" "$(counts g/perf.data)"
perf_clean "glob" g/perf.data
libc=$(ldd "$PROGS/probe_calls" | awk '$1 == "libc.so.6" { print $3 }')
"$XPTRACE" record -q -o gp --probe "getsid@$libc" -- "$PROGS/probe_calls" 10 4 >/dev/null 2>&1
check_eq "libc by path: 4 getsid" "probe_xptrace:getsid 4
probe_xptrace:getsid__return 4" "$(counts gp/perf.data)"
"$XPTRACE" record -q -o gs --probe "probe_empty@probe_calls,probe_empty" -- "$PROGS/probe_calls" 5 0 >/dev/null 2>&1
check_eq "the program by basename, listed twice: probed once" "probe_xptrace:probe_empty 5
probe_xptrace:probe_empty__return 5" "$(counts gs/perf.data)"

# A library loaded later with dlopen, named by path: armed when it is mapped.  tri(i)
# makes i + 1 calls, for the odd i below 12: 2 + 4 + 6 + 8 + 10 + 12 = 42.
dl=$TMP/own/libstep_dl.so
"$XPTRACE" record -q -o dl --probe "step_dl_work@$dl,tri@$dl" -- own/step_dlopen >/dev/null 2>&1
check_eq "dlopen'ed library by path: step_dl_work 1, tri 42" "probe_xptrace:step_dl_work 1
probe_xptrace:step_dl_work__return 1
probe_xptrace:tri 42
probe_xptrace:tri__return 42" "$(counts dl/perf.data)"

# --- threads ---
# A command is probed in every thread: the second thread, started after the probes
# were armed, too (the program's own counts: thr_one 5, thr_two 3).
"$XPTRACE" record -o t --probe 'thr_*' -g -- "$PROGS/merged_thr" >/dev/null 2>"$TMP/t.err"
check_eq "threads of a command: record exits 0" 0 $?
check_match "threads of a command: says who is probed" \
	"probes armed on 2 functions in the command, its threads and child processes" \
	"$(cat "$TMP/t.err")"
check_eq "threads of a command: thr_one 5, thr_two 3 in the thread started later" "probe_xptrace:thr_one 5
probe_xptrace:thr_one__return 5
probe_xptrace:thr_two 3
probe_xptrace:thr_two__return 3" "$(counts t/perf.data)"
ns=$(perf script -i t/perf.data -F event 2>/dev/null | grep -c 'cpu-clock:')
check_match "threads of a command: the summary counts samples and hits apart, as perf does" \
	"^xptrace: recorded $ns cpu-clock samples and 16 probe hits, 0 records lost" "$(cat "$TMP/t.err")"
check_match "threads of a command: the second thread is sampled" "two_leaf" \
	"$(perf script -i t/perf.data -F ip,sym -G 2>/dev/null | awk '{ print $2 }' | sort -u)"
# A thread pool started after a sleep: 3 workers, 200 calls of work each, every hit in
# a worker thread (not the main one), 200 entries and 200 returns per worker; and a
# process the command forks (sh -c runs the program as its child): still probed, while
# another copy of the program running outside the recording is not recorded.
"$XPTRACE" record -q -o lt -g --probe work -- "$PROGS/late_threads" 300 >/dev/null 2>&1
check_eq "late threads: work 600 entries, 600 returns" "probe_xptrace:work 600
probe_xptrace:work__return 600" "$(counts lt/perf.data)"
per=$(perf script -i lt/perf.data -F pid,tid,event 2>/dev/null | awk '$2 ~ /^probe_xptrace:work/ { split($1, t, "/"); n[(t[1] == t[2] ? "main" : t[2]) " " $2]++ }
	END { for (k in n) print n[k] }' | sort | uniq -c | tr -s ' ')
check_eq "late threads: 6 (thread, event) pairs of 200 hits, none in the main thread" " 6 200" "$per"
"$PROGS/late_threads" 200 3000 &
other=$!
"$XPTRACE" record -q -o lf --probe "work@$PROGS/late_threads" -- sh -c "\"\$1\" 300 50; true" sh "$PROGS/late_threads" >/dev/null 2>&1
wait "$other"
check_eq "late threads in a child process: 150 calls, none of the other copy of the program" \
	"probe_xptrace:work 150
probe_xptrace:work__return 150" "$(counts lf/perf.data)"
# -p probes every thread the process has.
mkfifo tfifo
"$PROGS/merged_thr" 10000000 wait <tfifo >tp.out &
tp=$!
exec 7>tfifo
for _ in $(seq 50); do grep -q ready tp.out && break; sleep 0.1; done
timeout 30 "$XPTRACE" record -o tp -g -p "$tp" --probe 'thr_*' >/dev/null 2>tp.err &
xp=$!
armed tp.err
echo go >&7
exec 7>&-
wait "$tp"
wait "$xp"
check_eq "threads, -p: thr_one 5, thr_two 3" "probe_xptrace:thr_one 5
probe_xptrace:thr_one__return 5
probe_xptrace:thr_two 3
probe_xptrace:thr_two__return 3" "$(counts tp/perf.data)"
ev=$(perf script -i tp/perf.data -F tid,event 2>/dev/null | awk '$2 ~ /^probe_xptrace:thr_(one|two)(__return)?:$/ { sub("__return", "", $2); print $2, ($1 == '"$tp"' ? "main" : "other") }' | sort | uniq -c | tr -s ' ')
check_eq "threads, -p: thr_one in the main thread, thr_two in the other" " 10 probe_xptrace:thr_one: main
 6 probe_xptrace:thr_two: other" "$ev"
# decoded, each thread's samples hang below its own thread's event node: thr_one's
# callees only under thr_one (main thread), two_leaf only under thr_two
tree=$("$XPTRACE" decode -i tp --calltree --per-thread --format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    p = r["path"]
    for ev in ("thr_one", "thr_two"):
        if ev in p[:-1] and p[-1] not in (ev, "[off-CPU]"):
            print("main" if r["tid"] == '"$tp"' else "other", ev, p[-1], "sampled" if r["sampled"] else "exact")
' | sort -u)
check_eq "threads, -p, decoded: samples under their own thread's event node" "main thr_one one_leaf_a sampled
main thr_one one_leaf_b sampled
other thr_two two_leaf sampled" "$tree"
check_match "threads, -p, decoded: thr_one 5 and thr_two 3 exact calls" \
	'^ *[0-9]+ +1 +5 +[0-9.]+ +[0-9.]+ +merged_thr +thr_one$' "$("$XPTRACE" decode -i tp --calltree 2>/dev/null)"

# --- -p: attach to a running process ---
mkfifo fifo
"$PROGS/probe_calls" 300 3 wait <fifo >p.out &
pp=$!
exec 7>fifo
for _ in $(seq 50); do grep -q ready p.out && break; sleep 0.1; done
timeout 30 "$XPTRACE" record -o p -p "$pp" --probe 'probe_empty,getsid@libc.so.6' >/dev/null 2>p.err &
xp=$!
armed p.err
echo go >&7
exec 7>&-
wait "$pp"
wait "$xp"
check_eq "-p: record exits 0 when the process ends" 0 $?
check_eq "-p: 300 probe_empty, 3 getsid" "probe_xptrace:getsid 3
probe_xptrace:getsid__return 3
probe_xptrace:probe_empty 300
probe_xptrace:probe_empty__return 300" "$(counts p/perf.data)"
perf_clean "-p" p/perf.data
check_exit "-p: a library the process does not map" 1 "$XPTRACE" record -o p2 -p $$ --probe 'f@libnothere.so.9'
check_match "-p: ... says so" "--probe: f@libnothere.so.9: process $$ maps no file named libnothere.so.9" "$(cat "$TMP/.err")"

# --- errors: exit 1 (2 for syntax), the item named, nothing left behind ---
err_case() {	# NAME CODE MESSAGE-REGEX PROBE [PROG ARGS]
	local name=$1 code=$2 re=$3 list=$4; shift 4
	check_exit "$name: exit $code" "$code" "$XPTRACE" record -o bad --probe "$list" -- "$@"
	check_match "$name: message" "$re" "$(cat "$TMP/.err")"
	check "$name: no trace directory left" test ! -e bad
}
err_case "unknown symbol" 1 "no function 'nosuch' in $PROGS/merged \(check the name" nosuch "$PROGS/merged" 10
err_case "glob matching nothing" 1 "no function matches 'nosuch_\*' in $PROGS/merged" 'nosuch_*' "$PROGS/merged" 10
err_case "function without a body" 1 "probe_label in $PROGS/probe_calls has no size: .* too short to hold a probe" \
	probe_label "$PROGS/probe_calls" 1 1
err_case "glob of bodiless functions only" 1 "'probe_l\*' in $PROGS/probe_calls matches only functions that cannot be probed" \
	'probe_l*' "$PROGS/probe_calls" 1 1
err_case "IFUNC resolver" 1 "strlen in .*libc.so.6 is an IFUNC resolver" 'strlen@libc.so.6' "$PROGS/merged" 10
err_case "library the program does not load" 1 \
	"f@libnothere.so.9: libnothere.so.9 is neither the program nor a library the loader lists for it \(name the library by its path" \
	'f@libnothere.so.9' "$PROGS/merged" 10
err_case "missing library path" 1 "f@/no/such.so: /no/such.so: No such file or directory" f@/no/such.so "$PROGS/merged" 10
err_case "not an ELF file" 1 "C@/etc/passwd: cannot read the functions of /etc/passwd: not an ELF file" C@/etc/passwd "$PROGS/merged" 10
err_case "second item bad, first good: nothing armed" 1 "no function 'nosuch'" C,nosuch "$PROGS/merged" 10
err_case "empty item" 2 "--probe: an empty item" 'C,,A' "$PROGS/merged" 10
err_case "two @" 2 "'a@b@c' has more than one '@'" 'a@b@c' "$PROGS/merged" 10
check_exit "step mode refuses --probe (a usage error with --mode step)" 2 "$XPTRACE" record -m step -o bad --probe C -- "$PROGS/merged" 10
check_match "step mode: says why" "--mode step is exact already" "$(cat "$TMP/.err")"
if command -v setpriv >/dev/null; then
	check_exit "no permission (uid nobody): exit 1" 1 setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$XPTRACE" record -o "$TMP/bad" --probe C -- "$PROGS/merged" 10
	check_match "no permission: names the probe and what to do" \
		"cannot place the entry probe on C in $PROGS/merged: Permission denied \(uprobes need root or CAP_PERFMON" \
		"$(cat "$TMP/.err")"
	check "no permission: no trace directory left" test ! -e "$TMP/bad"
fi

# A probe trace with no sample and no hit (cpu-clock every 1000 s; probe_empty never
# called): an empty report as a sample trace's, not "--metric time: the trace has no
# timestamps", which blamed an option nobody gave (time is a probe trace's default).
"$XPTRACE" record -q -m sample -c 1000000000000 -o p0 --probe probe_empty -- "$PROGS/probe_calls" 0 0 \
	>/dev/null 2>&1
for view in --functions --calltree --routines; do
	check_exit "no sample, no hit, decode $view: exit 0" 0 "$XPTRACE" decode -i p0 $view
	check_eq "no sample, no hit, decode $view: says so, and nothing else" \
		"xptrace: p0/perf.data: no samples in this trace" "$(cat "$TMP/.err")"
done

# --- the ASan build on the same recording ---
if [ -x "$XPTRACE_ASAN" ]; then
	"$XPTRACE_ASAN" record -q -o a --probe 'probe_*,getsid@libc.so.6' -g -- "$PROGS/probe_calls" 50 2 >/dev/null 2>"$TMP/a.err"
	check_eq "asan: record exits 0, nothing reported" "0 " "$? $(cat "$TMP/a.err")"
	check_eq "asan: counts" "probe_xptrace:getsid 2
probe_xptrace:getsid__return 2
probe_xptrace:probe_empty 50
probe_xptrace:probe_empty__return 50" "$(counts a/perf.data)"
fi
