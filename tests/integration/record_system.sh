#!/bin/bash
# Sample mode system-wide and per CPU (-a, -C), kernel code (-k), where threads wait
# (--off-cpu), and the permission errors explained (issue 27 item 23).  Two spinner
# processes pinned to CPU 0 and CPU 1 run while a command (sleep) is recorded: -a
# samples both, though neither is the command; -C 1 only the one on CPU 1; -a -d 1 and
# -C 0 without a command record until the time is up or SIGINT.  perf script on the same perf.data is the
# oracle: pids, comms and CPUs of the samples, kernel addresses and their symbols.
. "$(dirname "$0")/../lib.sh"
cd "$TMP" || exit 1
[ "$(nproc)" -ge 2 ] || { ok "one CPU # SKIP"; exit 0; }

pinned() {	# runs spinner (until killed) on CPU 0 and on 1 while "$@" records; prints
		# the command's status and their pids (-a writes every process's mappings
		# first: that takes a while on a loaded machine)
	taskset -c 0 "$PROGS/spinner" >/dev/null 2>&1 & local a=$!
	taskset -c 1 "$PROGS/spinner" >/dev/null 2>&1 & local b=$!
	sleep 0.2
	"$@" >/dev/null 2>"$TMP/rec.err"
	echo "$? $a $b"
	kill "$a" "$b"
	wait "$a" "$b" 2>/dev/null
}
read -r rc p0 p1 <<<"$(pinned "$XPTRACE" record -a -F 499 -g -o all -- sleep 0.5)"
check_eq "-a: record exits 0" 0 "$rc"
perf script -i all/perf.data -F pid,cpu,comm 2>/dev/null | awk '{ print $1, $2, $3 }' | tr -d '[]' >all.perf
check_eq "-a: perf finds samples of both pinned processes (not the command), each on its CPU" \
	"$p0 0 spinner|$p1 1 spinner" \
	"$(awk -v a="$p0" -v b="$p1" '$2 == a || $2 == b { print $2, $3 + 0, $1 }' all.perf | sort -u | paste -sd'|')"
check_eq "-a: --per-process lists both, with perf's sample counts" \
	"$(awk -v a="$p0" -v b="$p1" '$2 == a || $2 == b { n[$2]++ } END { print n[a], n[b] }' all.perf)" \
	"$("$XPTRACE" decode -i all --per-process --metric samples --format csv 2>/dev/null |
		awk -F, -v a="$p0" -v b="$p1" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "pid") k = i; next }
			$k == a { x += $1 } $k == b { y += $1 } END { print x + 0, y + 0 }')"
check_eq "-a: the spinners' code is named (their mappings were written first)" "spin_main spin_main" \
	"$("$XPTRACE" decode -i all --per-process --format csv 2>/dev/null |
		awk -F, -v a="$p0" -v b="$p1" '$NF == "spin_main" && (index($0, "," a ",") || index($0, "," b ",")) { printf "%s%s", s, $NF; s = " " }')"

read -r rc p0 p1 <<<"$(pinned "$XPTRACE" record -C 1 -F 499 -o cpu1 -- sleep 0.5)"
check_eq "-C 1: record exits 0" 0 "$rc"
check_eq "-C 1: every sample on CPU 1 (perf script)" "1" \
	"$(perf script -i cpu1/perf.data -F cpu 2>/dev/null | tr -d '[] ' | sed 's/^0*//; s/^$/0/' | sort -u | paste -sd,)"
check_eq "-C 1: the process pinned to CPU 1 sampled, the one on CPU 0 not" "yes 0" \
	"$(perf script -i cpu1/perf.data -F pid 2>/dev/null | grep -qw "$p1" && echo yes) $(perf script -i cpu1/perf.data -F pid 2>/dev/null | grep -cw "$p0")"
check_exit "-C 99: no such CPU online, exit 1" 1 "$XPTRACE" record -C 99 -o c99 -- true
check_exit "-C x: a usage error" 2 "$XPTRACE" record -C x -o cx -- true

# -a / -C without a command: until -d SECONDS or a signal, as perf record -a
read -r rc p0 p1 <<<"$(pinned "$XPTRACE" record -a -d 1 -F 499 -o nocmd)"
check_eq "-a -d 1, no command: record exits 0" 0 "$rc"
check_match "-a -d 1: says on stderr what it records and until when" \
	"^xptrace: recording every CPU for 1 s \(Ctrl-C or SIGTERM stops it sooner\)$" "$(cat "$TMP/rec.err")"
perf script -i nocmd/perf.data -F pid 2>/dev/null >nocmd.perf
check_eq "-a -d 1: perf script reads it ($?) and finds samples of both spinners" "0 yes yes" \
	"$(perf script -i nocmd/perf.data -F pid >/dev/null 2>&1; echo $?) $(grep -qw "$p0" nocmd.perf && echo yes) $(grep -qw "$p1" nocmd.perf && echo yes)"
check "-a -d 1: samples of at least two pids ($(sort -u nocmd.perf | wc -l))" test "$(sort -u nocmd.perf | wc -l)" -ge 2
# a spinner on CPU 0 gives it user samples (an idle CPU has none: a quiet machine's is)
taskset -c 0 "$PROGS/spinner" >/dev/null 2>&1 & sp=$!
"$XPTRACE" record -C 0 -F 499 -o sigint 2>"$TMP/sig.err" & rp=$!
# it says so once the events run (after every process's mappings: seconds when loaded)
for i in $(seq 300); do grep -q 'xptrace: recording CPUs' "$TMP/sig.err" && break; sleep 0.1; done
sleep 1
kill -INT "$rp"
wait "$rp"
check_eq "-C 0, no command, SIGINT: exit 0, said so when it started" \
	"0 xptrace: recording CPUs 0 until Ctrl-C or SIGTERM (-d SECONDS: for that long)" \
	"$? $(grep 'xptrace: recording CPUs' "$TMP/sig.err")"
check_eq "-C 0, SIGINT: perf script reads it, every sample on CPU 0" "0" \
	"$(perf script -i sigint/perf.data -F cpu 2>/dev/null | tr -d '[] ' | sed 's/^0*//; s/^$/0/' | sort -u | paste -sd,)"
kill "$sp"; wait "$sp" 2>/dev/null
check_exit "no command, no -p, no -a: a usage error" 2 "$XPTRACE" record -o none
check_exit "-a --probe without a command: a usage error (it probes a program)" 2 "$XPTRACE" record -a --probe main -o pa

# -u -k: kernel code sampled too, its part of the callchains; named as perf names it
"$XPTRACE" record -u -k -g -F 999 -o k -- dd if=/dev/zero of=/dev/null bs=1 count=200000 >/dev/null 2>&1
perf script -i k/perf.data -F ip,sym -G 2>/dev/null | awk '$1 ~ /^ffff/' >k.perf
check "-u -k: kernel samples recorded ($(grep -c . k.perf))" test "$(grep -c . k.perf)" -gt 20
check_eq "-u -k: the kernel samples' count per module row, as perf script counts them" \
	"$(grep -c . k.perf)" \
	"$("$XPTRACE" decode -i k --metric samples --format csv 2>/dev/null | awk -F, '$(NF-1) == "[kernel.kallsyms]" { s += $1 } END { print s + 0 }')"
check_match "-u -k: the callchains go on from the syscall into the kernel (as perf script's)" \
	"^(read|__GI___libc_write);entry_SYSCALL_64[^;]*;do_syscall_64" \
	"$("$XPTRACE" decode -i k --calltree --metric samples --format folded 2>/dev/null)"

# perf's modifiers on the event: cpu-clock:k samples the kernel alone, :u the user
"$XPTRACE" record -q -e cpu-clock:k -o kk -- dd if=/dev/zero of=/dev/null bs=1 count=100000 >/dev/null 2>&1
check_eq "-e cpu-clock:k: perf evlist shows the modifier, every sample in the kernel" \
	"cpu-clock:k 0" \
	"$(perf evlist -i kk/perf.data 2>/dev/null | head -1) $(perf script -i kk/perf.data -F ip -G 2>/dev/null | grep -vc '^ *ffff')"
"$XPTRACE" record -q -e cpu-clock:u -o ku -- dd if=/dev/zero of=/dev/null bs=1 count=100000 >/dev/null 2>&1
check_eq "-e cpu-clock:u: no sample in the kernel" "0" \
	"$(perf script -i ku/perf.data -F ip -G 2>/dev/null | grep -c '^ *ffff')"

# Permission errors, as a user without privileges (perf_event_paranoid 2 here)
if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" = 2 ] && [ "$(id -u)" = 0 ]; then
	mkdir -m 777 "$TMP/u"
	as_user() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$TMP/u" "$@"; }
	out=$(cd "$TMP/u" && as_user "$XPTRACE" record -a -o a -- true 2>&1); rc=$?
	check_match "-a unprivileged: exit 1, saying the level it needs and the one found, and what to do" \
		"^1 xptrace: open the sampling event: [a-z-]+: Permission denied: -a/-C \(every process on a CPU\) needs kernel.perf_event_paranoid 0 or less, and it is 2 \(run as root \(or with CAP_PERFMON\), or sysctl kernel.perf_event_paranoid=0; or record without it\)$" \
		"$rc $(printf '%s\n' "$out" | grep 'open the sampling event')"
	out=$(cd "$TMP/u" && as_user "$XPTRACE" record -k -o k -- true 2>&1); rc=$?
	check_match "-k unprivileged: exit 1, kernel code needs paranoid 1 or less" \
		"^1 .*-k or :k \(kernel code\) needs kernel.perf_event_paranoid 1 or less, and it is 2 " \
		"$rc $(printf '%s\n' "$out" | grep 'open the sampling event')"
else
	ok "permission errors: not root or perf_event_paranoid is not 2 # SKIP"
fi

# --off-cpu: where the thread waited.  perf script on the same file is the oracle: each
# context-switches sample (the thread leaving its CPU) waits until the thread's next
# PERF_RECORD_SWITCH IN; per leaf function, the sum of those waits in ns and their
# count are --functions --metric off-cpu's Base and Samples.
"$XPTRACE" record -q -g --off-cpu -o off -- "$PROGS/offcpu" >/dev/null 2>&1
check_eq "--off-cpu: record exits 0" 0 $?
perf script -i off/perf.data --show-switch-events --ns -F tid,time,event,ip,sym 2>/dev/null >off.perf
python3 - off.perf >off.want <<'PY'
import collections, re, sys
out, waits, n = {}, collections.Counter(), collections.Counter()
lines = open(sys.argv[1]).read().split("\n")
for i, l in enumerate(lines):
    m = re.match(r"\s*(\d+)\s+(\d+)\.(\d{9}):\s+(\S.*)$", l)
    if not m:
        continue
    tid, t, what = m.group(1), int(m.group(2)) * 10**9 + int(m.group(3)), m.group(4)
    if what.startswith("context-switches"):
        leaf = lines[i + 1].split()[1] if i + 1 < len(lines) and lines[i + 1].startswith("\t") else "?"
        # a preemption in a PLT stub: Debian's perf 6.1 names it after _init (the symbol
        # before .plt, stretched), xptrace as objdump does (clock_gettime@plt)
        if leaf == "_init" or leaf.endswith("@plt"):
            leaf = "[plt]"
        out[tid] = (t, leaf)
    elif what.startswith("PERF_RECORD_SWITCH IN") and tid in out:
        t0, leaf = out.pop(tid)
        waits[leaf] += t - t0
        n[leaf] += 1
for leaf in sorted(waits):
    print(leaf, n[leaf], waits[leaf])
PY
check_match "--off-cpu: perf sees the naps' waits in clock_nanosleep" "^clock_nanosleep[^ ]* 1[0-9] [0-9]+$" "$(cat off.want)"
# one line each, so that a failure's summary shows both sides
check_eq "--off-cpu: --metric off-cpu's Samples and Base per function = perf's waits and their ns" \
	"$(paste -sd';' off.want)" \
	"$("$XPTRACE" decode -i off --functions --no-inline --metric off-cpu --percent-limit 0 --format csv 2>/dev/null |
		awk -F, 'NR > 1 && $2 > 0 { n = $NF; if (n ~ /^0x/) n = "[unknown]"; if (n ~ /@plt$/) n = "[plt]"; c[n] += $1; s[n] += $2 }
			 END { for (k in c) print k, c[k], s[k] }' | sort | paste -sd';')"
check_eq "--off-cpu: the default metric's samples are cpu-clock's alone (perf script's count)" \
	"$(perf script -i off/perf.data -F event 2>/dev/null | grep -c 'cpu-clock')" \
	"$("$XPTRACE" decode -i off --metric samples --format csv 2>/dev/null | awk -F, 'NR > 1 { s += $1 } END { print s }')"
check_match "--off-cpu: the tree says where: main -> naps -> the sleep" \
	"^ +[0-9]+ +1 +1[0-9] +[0-9.]+ +[0-9.]+ +libc[^ ]* +clock_nanosleep" \
	"$("$XPTRACE" decode -i off --calltree --metric off-cpu 2>/dev/null | grep -A1 ' naps$' | tail -1)"
