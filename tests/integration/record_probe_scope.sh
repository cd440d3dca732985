#!/bin/bash
# record --probe traps only in the target's tree, and returns without waiting for the
# kernel's closes of its probe events (docs/record.md, "Start and end").  A uprobe is an
# int3 (0xcc) the kernel writes over the probed instruction's first byte in the
# processes it arms it in: read through /proc/PID/mem, against the file's own byte.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
[ "$(id -u)" = 0 ] || { ok "uprobes need root here # SKIP"; exit 0; }
TFS=/sys/kernel/tracing
[ -w "$TFS/uprobe_events" ] || TFS=/sys/kernel/debug/tracing
[ -w "$TFS/uprobe_events" ] || { ok "tracefs is not mounted # SKIP"; exit 0; }
cd "$TMP"
# a copy of its own: other suites' cpu-wide probes on the shared build cannot reach it
cp "$PROGS/probe_calls" pc
PC=$TMP/pc
LIBC=$(ldd "$PC" | awk '$1 ~ /^libc\.so/ { print $3 }')

# where PID FILE SYM: "ADDRESS FILE", where SYM's first byte is in PID's mapping of FILE
# (decimal; "-" when not mapped) and that byte in FILE (hex), the symbol's vaddr taken to
# a file offset through the PT_LOAD headers.
where() {
	python3 - "$@" <<'PY'
import os, struct, subprocess, sys
pid, path, sym = sys.argv[1], os.path.realpath(sys.argv[2]), sys.argv[3]
out = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True).stdout
out += subprocess.run(["nm", "--defined-only", path], capture_output=True, text=True).stdout
vaddr = next(int(l.split()[0], 16) for l in out.splitlines() if l.split()[-1].split("@")[0] == sym)
data = open(path, "rb").read()
phoff, = struct.unpack_from("<Q", data, 32)
phentsize, phnum = struct.unpack_from("<HH", data, 54)
off = None
for i in range(phnum):
    t, _, o, va, _, fsz = struct.unpack_from("<IIQQQQ", data, phoff + i * phentsize)
    if t == 1 and va <= vaddr < va + fsz:
        off = vaddr - va + o
addr = "-"
for l in open("/proc/%s/maps" % pid):
    f = l.split()
    if len(f) < 6 or f[1][2] != "x" or os.path.realpath(f[5]) != path:
        continue
    lo, hi = (int(x, 16) for x in f[0].split("-"))
    pgoff = int(f[2], 16)
    if pgoff <= off < pgoff + hi - lo:
        addr = lo + off - pgoff
print(addr, data[off:off + 1].hex())
PY
}

# peek PID ADDRESS: the byte there (hex), "??" when it cannot be read; a few ms, where
# where's nm and python take ~100
peek() {
	local b=
	[ "$2" != - ] && b=$(dd if="/proc/$1/mem" bs=1 count=1 skip="$2" iflag=skip_bytes status=none |
		od -An -tx1 | tr -d ' \n')
	echo "${b:-??}"
}

# code PID FILE SYM: "MEMORY FILE", SYM's first byte in PID's mapping of FILE and in FILE.
# SAME is the pattern of a byte equal to the file's.
code() {
	local a f
	read -r a f < <(where "$@")
	echo "$(peek "$1" "$a") $f"
}
SAME='^([0-9a-f]{2}) \1$'

# armed FILE: waits (up to 20 s) for record's note that the probes are armed.
armed() {
	for _ in $(seq 200); do grep -q "probes armed" "$1" && return; sleep 0.1; done
	echo "# no 'probes armed' note in $1:"; sed 's/^/#   | /' "$1"
}

# started FILE: waits (up to 10 s) for a probe_calls ... wait to say "ready".
started() { for _ in $(seq 100); do grep -q ready "$1" && return; sleep 0.1; done; }

# ended_at PID TRIES: sets tend to the ns when PID ended, polled every 5 ms up to TRIES
# times ("" when it had not)
ended_at() {
	tend=
	for _ in $(seq "$2"); do kill -0 "$1" 2>/dev/null || { tend=$(date +%s%N); return; }; sleep 0.005; done
}

# the group of recorder PID's probes in tracefs ("" once deleted)
defs() { grep -c ":xptrace_$1/" "$TFS/uprobe_events"; }

# gone PID: waits (up to 10 s) for recorder PID's tracefs group to be deleted; prints what is left
gone() { local left; for _ in $(seq 100); do left=$(defs "$1"); [ "$left" = 0 ] && break; sleep 0.1; done; echo "$left"; }

# counts DIR: "EVENT HITS" of each probe event in DIR/perf.data, by perf script
counts() {
	perf script -i "$1/perf.data" -F event 2>/dev/null |
		awk '$1 ~ /^probe_xptrace:/ { sub(":$", "", $1); n[$1]++ } END { for (e in n) print e, n[e] }' | sort
}

# --- an outsider running the same program, and libc, keeps its code ---
mkfifo of tf
"$PC" 1000 0 wait <of >o.out &
op=$!
exec 7>of
started o.out
"$XPTRACE" record -o s --probe 'probe_empty,probe_hop,getsid@libc.so.6,getppid@libc.so.6' \
	-- "$PC" 300 5 wait <tf >t.out 2>s.err &
xp=$!
exec 8>tf
armed s.err
started t.out
tp=$(pgrep -P "$xp" -x pc)
check_match "the target: probe_empty's first byte is the breakpoint" '^cc [0-9a-f]{2}$' \
	"$(code "$tp" "$PC" probe_empty)"
check_match "an outsider running the same program: probe_empty's first byte is the file's" \
	"$SAME" "$(code "$op" "$PC" probe_empty)"
check_match "an outsider: libc's getsid is the file's" "$SAME" "$(code "$op" "$LIBC" getsid)"
mkfifo nf
"$PC" 1000 0 wait <nf >n.out 2>&1 &
np=$!
exec 6>nf
started n.out
check_match "a process started while record runs: probe_empty is the file's" "$SAME" \
	"$(code "$np" "$PC" probe_empty)"
exec 6>&-
echo go >&7
exec 7>&-
wait "$op"
check_eq "the outsider ran to its end" 0 $?

# --- record returns without waiting for the closes ---
echo go >&8
exec 8>&-
ended_at "$tp" 200
wait "$xp"
check_eq "record exits 0" 0 $?
xend=$(date +%s%N)
ms=$(( (xend - tend) / 1000000 ))
# the closes it leaves behind: 4 probes x entry and return, ~80 ms each as the last
# of their tracefs event's (~1.3 s when record waited for them on 2 cpus)
check "record's exit came within 300 ms of the target's ($ms ms)" in_range 0 300 "$ms"
mkfifo af
"$PC" 1000 0 wait <af >a.out 2>&1 &
exec 6>af
started a.out
check_match "a new run of the program after record returned: probe_empty is the file's" "$SAME" \
	"$(code "$!" "$PC" probe_empty)"
exec 6>&-
check_eq "the calls: 300 probe_empty and 5 getsid, entry and return" "probe_xptrace:getsid 5
probe_xptrace:getsid__return 5
probe_xptrace:probe_empty 300
probe_xptrace:probe_empty__return 300" "$(counts s)"
check_eq "its tracefs definitions are deleted once the closes are done" 0 "$(gone "$xp")"

# --- a recorder killed with SIGKILL: the next one removes its definitions ---
mkfifo kf
"$XPTRACE" record -o k --probe probe_empty -- "$PC" 10 0 wait <kf >k.out 2>k.err &
kp=$!
exec 9>kf
armed k.err
kill -KILL "$kp"
wait "$kp" 2>/dev/null
exec 9>&-
# (a recording in another suite beside this one may have removed them already: every
# record removes the groups of dead recorders when it starts)
left=$(defs "$kp")
if [ "$left" = 0 ]; then
	ok "a SIGKILLed record leaves its definitions # SKIP removed already by another recording running beside this suite"
else
	check_eq "a SIGKILLed record leaves its definitions" 2 "$left"
fi
for _ in $(seq 50); do pgrep -x pc >/dev/null || break; sleep 0.1; done
"$XPTRACE" record -q -o k2 --probe probe_empty -- "$PC" 10 0 >/dev/null 2>&1
check_eq "the next record removes them" 0 "$(defs "$kp")"

# --- no tracefs: cpu-wide uprobe events, said once with their price ---
XPTRACE_TRACEFS=$TMP/none "$XPTRACE" record -o f --probe probe_empty -- "$PC" 100 0 >/dev/null 2>f.err
check_eq "no tracefs: record exits 0" 0 $?
check_match "no tracefs: says so, and what it costs" \
	"^xptrace: probes: no uprobe_events in $TMP/none \\(\\\$XPTRACE_TRACEFS\\): they are cpu-wide uprobe events instead: every process mapping a probed file traps while they are armed, and record waits ~80 ms per event at the end" "$(cat f.err)"
check_eq "no tracefs: 100 calls" 100 "$(perf script -i f/perf.data -F event 2>/dev/null | grep -c 'probe_xptrace:probe_empty:')"

# --- a program whose path has a space: tracefs splits a definition at white space ---
mkdir "a dir"
cp "$PC" "a dir/pc"
"$XPTRACE" record -q -o sp --probe probe_empty -- "$TMP/a dir/pc" 50 0 >/dev/null 2>sp.err
check_eq "a path with a space: record exits 0" 0 $?
check_eq "a path with a space: 50 calls, entry and return" "50 50" \
	"$(perf script -i sp/perf.data -F event 2>/dev/null | awk '/probe_xptrace:probe_empty:/ { e++ }
		/probe_xptrace:probe_empty__return:/ { r++ } END { print e + 0, r + 0 }')"

# --- -p: the process's probes trap in it only ---
mkfifo pf of2
"$PC" 200 2 wait <pf >p.out &
pp=$!
exec 7>pf
"$PC" 10 0 wait <of2 >o2.out &
op=$!
exec 6>of2
started p.out
started o2.out
"$XPTRACE" record -o p -p "$pp" --probe 'probe_empty,getsid@libc.so.6' >/dev/null 2>p.err &
xp=$!
armed p.err
check_match "-p: the process's probe_empty is the breakpoint" '^cc [0-9a-f]{2}$' "$(code "$pp" "$PC" probe_empty)"
check_match "-p: another process running the program keeps probe_empty" "$SAME" "$(code "$op" "$PC" probe_empty)"
check_match "-p: ... and libc's getsid" "$SAME" "$(code "$op" "$LIBC" getsid)"
exec 6>&-
echo go >&7
exec 7>&-
wait "$pp"
wait "$xp"
check_eq "-p: record exits 0 when the process ends" 0 $?
check_eq "-p: 200 probe_empty and 2 getsid, entry and return" "probe_xptrace:getsid 2
probe_xptrace:getsid__return 2
probe_xptrace:probe_empty 200
probe_xptrace:probe_empty__return 200" "$(counts p)"

# --- -p: record returns without waiting for the closes, and leaves no int3 behind ---
# The process runs on after record: its breakpoints are written out before the closes
# are left to xptrace-release (record waited 0.7-1.2 s for them with 4 probes).
P4='probe_empty,probe_hop,getsid@libc.so.6,getppid@libc.so.6'
# where4 PID: "ADDRESS FILE" (as where) of each of the 4 probed functions in PID
where4() {
	where "$1" "$PC" probe_empty; where "$1" "$PC" probe_hop
	where "$1" "$LIBC" getsid; where "$1" "$LIBC" getppid
}
mkfifo qf rf
"$PC" 300 5 wait <qf >q.out &
qp=$!
exec 7>qf
started q.out
"$XPTRACE" record -v -o q -p "$qp" --probe "$P4" >/dev/null 2>q.err &
xp=$!
armed q.err
check_match "-p, the process ends: probe_empty is the breakpoint while recorded" '^cc [0-9a-f]{2}$' \
	"$(code "$qp" "$PC" probe_empty)"
echo go >&7
exec 7>&-
ended_at "$qp" 400
wait "$xp"
check_eq "-p, the process ends: record exits 0" 0 $?
ms=$(( ($(date +%s%N) - tend) / 1000000 ))
check "-p, the process ends: record's exit came within 300 ms of it ($ms ms)" in_range 0 300 "$ms"
# 4 probes x entry and return on each cpu of the one thread, and those tried on xptrace
nev=$(( 8 * $(getconf _NPROCESSORS_ONLN) + 8 ))
check_match "-p: record -v says it left the $nev closes to xptrace-release" \
	"^xptrace: probes: the last closes of $nev events are left to a detached process \(xptrace-release\), which then deletes the tracefs group xptrace_[0-9]+\$" \
	"$(grep 'last closes' q.err)"
check_eq "-p, the process ends: 300 probe_empty and 5 getsid, entry and return" "probe_xptrace:getsid 5
probe_xptrace:getsid__return 5
probe_xptrace:probe_empty 300
probe_xptrace:probe_empty__return 300" "$(counts q)"
check_eq "-p, the process ends: the tracefs definitions are deleted once the closes are done" 0 \
	"$(gone "$xp")"

"$PC" 300 5 wait <rf >r.out &
rp=$!
exec 7>rf
started r.out
"$XPTRACE" record -o r -p "$rp" --probe "$P4" >/dev/null 2>r.err &
xp=$!
armed r.err
check_match "-p, record stopped: probe_empty is the breakpoint before" '^cc [0-9a-f]{2}$' \
	"$(code "$rp" "$PC" probe_empty)"
where4 "$rp" >r.where
t0=$(date +%s%N)
kill -INT "$xp"
wait "$xp"
rc=$?
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
# read at once: left to the closes, the int3s would still be there for ~1 s
now=$(while read -r a f; do echo "$(peek "$rp" "$a") $f"; done <r.where)
check_eq "-p, record stopped by SIGINT: exits 0" 0 "$rc"
check "-p, record stopped by SIGINT: exits within 300 ms ($ms ms)" in_range 0 300 "$ms"
check_eq "-p, record stopped: the running process has the file's bytes at the 4 probed functions" \
	"$(awk '{ print $2, $2 }' r.where)" "$now"
echo go >&7
exec 7>&-
wait "$rp"
check_eq "-p, record stopped: the process runs on to its end" 0 $?
check_eq "-p, record stopped: no hit recorded" "" "$(counts r)"
check_eq "-p, record stopped: the tracefs definitions are deleted once the closes are done" 0 \
	"$(gone "$xp")"

# --- a command left running when record stops: its int3 is written out too ---
# record -d sends the command SIGTERM and waits; this one ignores it, and a second SIGINT
# leaves it running (before, its int3 stayed there until xptrace-release's closes)
mkfifo lf
"$XPTRACE" record -o l -d 0.3 --probe "probe_empty@$PC" -- \
	bash -c "trap '' TERM; exec '$PC' 300 5 wait" <lf >l.out 2>l.err &
xp=$!
exec 7>lf
for _ in $(seq 200); do grep -q "waiting for PID" l.err && break; sleep 0.05; done
lp=$(pgrep -P "$xp" -x pc)
where "$lp" "$PC" probe_empty >l.where
check_match "a command ignoring SIGTERM: probe_empty is the breakpoint before" '^cc [0-9a-f]{2}$' \
	"$(read -r a f <l.where; echo "$(peek "$lp" "$a") $f")"
kill -INT "$xp"
wait "$xp"
now=$(read -r a f <l.where; echo "$(peek "$lp" "$a") $f")
check_match "record leaves it running, and says so" "^xptrace: PID $lp left running, no longer recorded$" \
	"$(cat l.err)"
check_eq "... with the file's byte at probe_empty at once" "$(awk '{ print $2, $2 }' l.where)" "$now"
echo go >&7
exec 7>&-
for _ in $(seq 100); do kill -0 "$lp" 2>/dev/null || break; sleep 0.1; done
check_eq "... and it runs to its end" ended "$(kill -0 "$lp" 2>/dev/null && echo running || echo ended)"
check_eq "... the tracefs definitions are deleted once the closes are done" 0 "$(gone "$xp")"
