#!/bin/bash
# xptrace record on a CPU-bound workload: perf reads the file without a warning, finds
# the workload's hot symbols in the proportions the program is built with (3:1), the
# header carries the features we promise, and the module snapshots symbolize the
# trace after the binary is gone.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"

if ! command -v perf >/dev/null; then
	ok "record: perf missing, the oracle tests are skipped # SKIP"
	exit 0
fi
# Our own build-id cache only: perf must not find binaries in ~/.debug.
cd "$TMP"

# A private copy with a build-id no other test or cache has.
bid=$(od -An -N20 -tx1 /dev/urandom | tr -d ' \n')
cc -O1 -g -fno-omit-frame-pointer -fno-inline -Wl,--build-id=0x"$bid" -o "$TMP/hotcopy" \
	"$XP_ROOT/tests/progs/hot.c"

"$XPTRACE" record -o rec1 -g -- "$TMP/hotcopy" 400 >"$TMP/out" 2>"$TMP/err"
check_eq "record exits 0" 0 $?
# issue 15: one line naming the mode and why, then the summary naming the event (the
# default event's fallback to cpu-clock is said with -v)
check_eq "two lines: the mode and why, the summary" \
	"xptrace: mode auto: recording in sample mode (pt, lbr: unavailable here; -v says why)
xptrace: recorded N cpu-clock samples, N records lost, N modules snapshotted, N.N MB in recN/" \
	"$(sed 's/[0-9][0-9]*/N/g' "$TMP/err")"
"$XPTRACE" record -v -o rec1v -g -- "$TMP/hotcopy" 50 >/dev/null 2>"$TMP/errv"
check_match "-v: the fallback to cpu-clock is said once" \
	"^xptrace: events: cpu-clock \(cycles cannot be opened here" "$(cat "$TMP/errv")"
check_eq "-v: one events line, a reason per skipped mode" "1 2" \
	"$(grep -c 'xptrace: events:' "$TMP/errv") $(grep -c 'mode is not available' "$TMP/errv")"
check "perf.data exists" test -s rec1/perf.data
perf_clean "workload" rec1/perf.data
n=$(nsamples rec1/perf.data)
check_match "summary sample count equals perf's count ($n)" "recorded $n cpu-clock samples" "$(cat "$TMP/err")"
# 400 ms at 4000 Hz: 1600 samples when the CPU is ours, fewer when shared.
check "sample count plausible for 400 ms at 4 kHz ($n)" in_range 100 1700 "$n"
inner=$(sym_share rec1/perf.data hot_inner)
cold=$(sym_share rec1/perf.data cold_path)
check "hot_inner has ~75% of the samples ($inner%)" in_range 65 85 "$inner"
check "cold_path has ~25% of the samples ($cold%)" in_range 15 35 "$cold"
check_match "callchains reach main (frame pointers)" "main" \
	"$(perf report -i rec1/perf.data --stdio --no-children -S hot_inner -G 2>/dev/null)"

hdr=$(perf report -i rec1/perf.data --header-only 2>&1)
for f in "hostname :" "os release :" "arch : x86_64" "nrcpus online :" "cpuid :" "cpudesc :" \
	"total memory :" "cmdline : .*xptrace record -o rec1 -g -- $TMP/hotcopy 400" \
	"event : name = cpu-clock" "event : .*sample_type = IP\|TID\|TIME\|CALLCHAIN\|CPU\|PERIOD\|IDENTIFIER" \
	"time of first sample" "perf version : xptrace-"; do
	check_match "header: $f" "# $f" "$hdr"
done
bids=$(perf buildid-list -i rec1/perf.data 2>&1)
check_match "build-id table lists the workload" "^$bid $TMP/hotcopy$" "$bids"
check_match "build-id table lists [vdso]" "^[0-9a-f]{40} \[vdso\]$" "$bids"
check_match "build-id table lists libc" "^[0-9a-f]{40} /.*libc\.so\.6$" "$bids"

# Snapshots: one per build-id, in perf's cache layout.
check_eq "workload snapshot link" "../..$TMP/hotcopy/$bid" "$(readlink "rec1/.build-id/${bid:0:2}/${bid:2}")"
check "workload snapshot is the binary" cmp -s "$TMP/hotcopy" "rec1$TMP/hotcopy/$bid/elf"
vbid=$(perf buildid-list -i rec1/perf.data 2>/dev/null | awk '$2 == "[vdso]" { print $1 }')
check "vdso snapshot carries its build-id ($vbid)" test -s "rec1/.build-id/${vbid:0:2}/${vbid:2}/vdso"
check_eq "vdso snapshot build-id read back by readelf" "$vbid" \
	"$(readelf -n "rec1/[vdso]/$vbid/vdso" | sed -n 's/.*Build ID: //p')"
check_eq "every build-id in the table has a snapshot" \
	"$(perf buildid-list -i rec1/perf.data 2>/dev/null | wc -l)" \
	"$(find rec1/.build-id -mindepth 2 -type l | wc -l)"

# The binary is deleted: perf alone cannot name the hot function, with the snapshots it can.
rm "$TMP/hotcopy"
mkdir alone && cp rec1/perf.data alone/	# (beside rec1/.build-id, perf would be given it)
check_eq "without snapshots perf cannot symbolize the deleted binary" 0 "$(sym_share alone/perf.data hot_inner)"
inner2=$(perf --buildid-dir rec1 report -i rec1/perf.data --stdio --no-children --sort sym -q -g none 2>/dev/null |
	awk '$3 == "hot_inner" { sub("%", "", $1); printf "%d\n", $1 }')
check_eq "perf --buildid-dir DIR symbolizes from the snapshots" "$inner" "${inner2:-none}"

# --call-graph dwarf: user regs + stack in every sample, perf unwinds them.
"$XPTRACE" record -q -o rec2 --call-graph dwarf,4096 -F 500 -- "$PROGS/hot" 300 >/dev/null 2>&1
check_eq "dwarf record exits 0" 0 $?
perf_clean "dwarf" rec2/perf.data
check_match "dwarf attr has regs and a 4096-byte stack" "sample_type = .*REGS_USER\|STACK_USER.*sample_stack_user = 4096" \
	"$(perf report -i rec2/perf.data --header-only 2>&1)"
check_match "dwarf unwinding reaches main" "hot_outer|main" \
	"$(perf report -i rec2/perf.data --stdio --no-children -S hot_inner -G 2>/dev/null)"

# -c PERIOD: cpu-clock period in ns -> every sample has exactly that period.
"$XPTRACE" record -q -o rec3 -c 1000000 -- "$PROGS/hot" 100 >/dev/null 2>&1
check_eq "-c: every sample's period is 1000000" "1000000" \
	"$(perf script -i rec3/perf.data -F period 2>/dev/null | sort -u | tr -d ' ')"

# Several events: the first samples, the others ride along (PERF_FORMAT_GROUP).
"$XPTRACE" record -q -o rec4 -e cpu-clock,task-clock -F 1000 -- "$PROGS/hot" 100 >/dev/null 2>"$TMP/err4"
check_eq "-e cpu-clock,task-clock exits 0" 0 $?
perf_clean "group" rec4/perf.data
check_match "group: both events in the header" "name = task-clock" "$(perf report -i rec4/perf.data --header-only 2>&1)"
check_eq "group: every sample carries both counts" "$(nsamples rec4/perf.data)" \
	"$(perf report -i rec4/perf.data -D 2>/dev/null | grep -c '^\.\.\.\. group nr 2$')"
check_eq "group: perf sees one group (HEADER_GROUP_DESC)" "{cpu-clock,task-clock}" "$(perf evlist -g -i rec4/perf.data 2>&1)"
# perf's group syntax records the same group: {a,b}:S is exactly this, {a,b} as well
for g in '{cpu-clock,task-clock}' '{cpu-clock,task-clock}:S'; do
	"$XPTRACE" record -q -o rec4g -f -e "$g" -F 1000 -- "$PROGS/hot" 100 >/dev/null 2>"$TMP/err4g"
	check_eq "-e '$g' records the group, as perf evlist -g shows it" "0 {cpu-clock,task-clock}" \
		"$? $(perf evlist -g -i rec4g/perf.data 2>&1)"
	check_eq "-e '$g': every sample carries both counts" "$(nsamples rec4g/perf.data)" \
		"$(perf report -i rec4g/perf.data -D 2>/dev/null | grep -c '^\.\.\.\. group nr 2$')"
done
err=$("$XPTRACE" record -q -o rec4h -e '{cpu-clock},{task-clock}' -- true 2>&1)
check_eq "two groups: a usage error saying what one group records" \
	"2 xptrace: record: -e {cpu-clock},{task-clock}: xptrace records one event group, '{a,b}' or '{a,b}:S' as a,b: the first samples, the others are read at each of its samples (see 'xptrace help record')" \
	"$? $err"

# Usage errors.
# Event names: with no PMU here a real hardware event name (libpfm4 knows it for some
# Intel PMU) is replaced/dropped like an event that does not open; a name no PMU has is
# a typo: a usage error, as perf's "event syntax error" (issue 15), on any machine.
"$XPTRACE" record -q -o rec5 -e inst_retired.any,instructions,task-clock -- "$PROGS/hot" 50 >/dev/null 2>"$TMP/err5"
check_eq "hardware leader on a PMU-less machine: exit 0" 0 $?
"$XPTRACE" record -o rec5b -e inst_retired.any,instructions,task-clock -- "$PROGS/hot" 50 >/dev/null 2>"$TMP/err5"
check_eq "hardware leader falls back to cpu-clock, said once with the reason" \
	"xptrace: events: cpu-clock,task-clock (inst_retired.any is unknown here (libpfm4: event not found): no hardware PMU; fell back to cpu-clock)" \
	"$(grep 'xptrace: events:' "$TMP/err5")"
check_eq "a member that cannot open is dropped with the reason" \
	"xptrace: event instructions dropped: cannot be opened here (No such file or directory: no hardware PMU)" \
	"$(grep 'dropped' "$TMP/err5")"
check_eq "the file has exactly the events used" "cpu-clock task-clock" \
	"$(perf report -i rec5b/perf.data --header-only 2>/dev/null | sed -n 's/^# event : name = \([^,]*\),.*/\1/p' | tr '\n' ' ' | sed 's/ $//')"
for ev in bogus_event no_such_event,task-clock cpu-clock,nosuch; do
	check_exit "-e $ev: a usage error, as perf's event syntax error" 2 "$XPTRACE" record -o rec5d -e "$ev" -- true
	check_eq "-e $ev: names the unknown event, nothing else said" \
		"xptrace: record: event syntax error: unknown event '$(tr ',' '\n' <<<"$ev" | grep -v clock)' (perf list, or libpfm4's showevtinfo, lists the names) (see 'xptrace help record')" \
		"$(cat "$TMP/.err")"
	check "-e $ev: no directory" test ! -e rec5d
done
check_exit "unknown event where a core PMU exists is a usage error" 2 "$XPTRACE" record -o rec5c --mode sample \
	--sysfs-root "$FIXTURES/sysfs/intel-skylake" -e no_such_event -- true
check_match "unknown event message" "^xptrace: record: event syntax error: unknown event 'no_such_event'" "$(cat "$TMP/.err")"
check "a recording that never started leaves no directory" test ! -e rec5c
max=$(cat /proc/sys/kernel/perf_event_max_sample_rate)
check_exit "-F above the kernel's limit is an error" 1 "$XPTRACE" record -o rec7 -F $((max + 1)) -- true
check_eq "-F above the limit: clear message" \
	"xptrace: sampling frequency: -F $((max + 1)) is above the kernel's limit of $max Hz (lower -F, or raise kernel.perf_event_max_sample_rate)" \
	"$(grep -v 'mode auto' "$TMP/.err")"
check "-F above the limit: no directory left" test ! -e rec7
"$XPTRACE" record -q -o rec8 -F 1234 -- "$PROGS/hot" 20 >/dev/null 2>&1
check_match "-F 1234 is the attr's frequency" "sample_freq \} = 1234," "$(perf report -i rec8/perf.data --header-only 2>/dev/null)"
check_exit "-F and -c together is a usage error" 2 "$XPTRACE" record -F 10 -c 10 -- true
check_exit "no command is a usage error" 2 "$XPTRACE" record
check_exit "bad --call-graph is a usage error" 2 "$XPTRACE" record --call-graph bogus -- true
check_exit "unknown mode is a usage error" 2 "$XPTRACE" record --mode nope -- true
check_eq "unknown mode: one line naming the modes" \
	"xptrace: record: unknown mode 'nope' (modes: auto, pt, lbr, sample, step, dbt) (see 'xptrace help record')" \
	"$(cat "$TMP/.err")"
# no mode line before a usage error about the output directory
mkdir -p existing
check_exit "an existing -o DIR is refused" 1 "$XPTRACE" record -o existing -- true
check_eq "an existing -o DIR: its error is the only line" \
	"xptrace: existing: the trace directory already exists (use -f to replace it; the old one is kept as .old)" \
	"$(cat "$TMP/.err")"
check_exit "missing command is an error" 1 "$XPTRACE" record -o rec6 -- "$TMP/does-not-exist"
check_match "missing command message" "run the command: .*does-not-exist: No such file" "$(cat "$TMP/.err")"
check "a command that never ran leaves no directory" test ! -e rec6

# The ASan+UBSan build records a forking, threaded workload cleanly (leaks included).
if [ -x "$XPTRACE_ASAN" ]; then
	"$XPTRACE_ASAN" record -q -o asan -g -- "$PROGS/tree" 100 "$PROGS/hot" 100 >/dev/null 2>"$TMP/asan.err"
	check_eq "ASan build: exit 0" 0 $?
	check_eq "ASan build: no sanitizer report" "" "$(grep -E 'Sanitizer|runtime error' "$TMP/asan.err")"
	perf_clean "ASan build" asan/perf.data
fi

# An unprivileged user records its own command (user space only fits paranoid <= 2).
if command -v setpriv >/dev/null && [ "$(id -u)" = 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
	chmod 755 "$TMP"
	mkdir -m 777 "$TMP/nobody"
	# copies: the checkout may sit where that user cannot read
	cp "$XPTRACE" "$PROGS/hot" "$TMP/nobody/"
	setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$TMP/nobody/xptrace" record -q -o "$TMP/nobody/t" -- "$TMP/nobody/hot" 100 >/dev/null 2>"$TMP/errn"
	check_eq "unprivileged: exit 0, no message" "0 " "$? $(cat "$TMP/errn")"
	share=$(setpriv --reuid=65534 --regid=65534 --clear-groups env HOME="$TMP/nobody" \
		perf report -i "$TMP/nobody/t/perf.data" --stdio --no-children --sort sym -q -g none 2>/dev/null |
		awk '$3 == "hot_inner" { sub("%", "", $1); printf "%d\n", $1 }')
	check "unprivileged: perf finds hot_inner (${share:-0}%)" in_range 60 90 "${share:-0}"
	check "unprivileged: snapshots taken (copies: hardlinks of others' files are refused)" \
		test -s "$TMP/nobody/t$TMP/nobody/hot/$(perf buildid-list -f -i "$TMP/nobody/t/perf.data" 2>/dev/null | awk -v p="$TMP/nobody/hot" '$2 == p { print $1 }')/elf"
	# A setuid program: the kernel detaches the user's events at its exec, and the
	# recording ended with "0 samples" and no word why.
	if findmnt -n -o OPTIONS --target "$TMP" | grep -qw nosuid; then
		ok "setuid program: $TMP is mounted nosuid # SKIP"
	else
		cp "$PROGS/hot" "$TMP/nobody/suid"
		chmod u+s "$TMP/nobody/suid"
		setpriv --reuid=65534 --regid=65534 --clear-groups \
			"$TMP/nobody/xptrace" record -o "$TMP/nobody/s" -- "$TMP/nobody/suid" 20 >/dev/null 2>"$TMP/errs"
		check_eq "unprivileged, setuid program: exit 0 (the command's)" 0 $?
		check_match "unprivileged, setuid program: 0 samples" "^xptrace: recorded 0 cpu-clock samples" "$(cat "$TMP/errs")"
		check_eq "unprivileged, setuid program: says why" \
			"xptrace: no samples: $TMP/nobody/suid is setuid root: the kernel does not let you trace it (it detaches your events at its exec) (record as root, or a copy of it you own)" \
			"$(tail -1 "$TMP/errs")"
	fi
else
	ok "unprivileged recording: setpriv or root missing # SKIP"
fi
