#!/bin/bash
# `xptrace info`: this machine checked against independent sources (uname, /proc, ls of
# sysfs, perf stat as the oracle for hardware counters), the fixture trees with injected
# probe results, JSON validity, exit codes.
. "$(dirname "$0")/../lib.sh"

SYSFS=$FIXTURES/sysfs
modes() { sed -n '/^recording modes:/,$p'; }

# --- this machine ---------------------------------------------------------------------
out=$("$XPTRACE" info 2>"$TMP/err"); rc=$?
check_eq "info exits 0 (some mode is available here)" 0 "$rc"
check_eq "info prints nothing on stderr" "" "$(cat "$TMP/err")"
check_match "kernel is uname -r" "^kernel +$(uname -r | sed 's/[.+]/\\&/g') \($(uname -m)\)$" "$out"
check_match "perf_event_paranoid is /proc's" \
	"^perf_event_paranoid +$(cat /proc/sys/kernel/perf_event_paranoid): " "$out"
check_match "perf_event_mlock_kb is /proc's" \
	"^perf_event_mlock_kb +$(cat /proc/sys/kernel/perf_event_mlock_kb)$" "$out"
if [ "$(id -u)" = 0 ]; then
	check_match "privileges: root" "^privileges +root \(euid 0\); CAP_PERFMON yes" "$out"
fi
check_eq "PMU list is ls /sys/bus/event_source/devices" \
	"$(ls /sys/bus/event_source/devices | tr '\n' ' ' | sed 's/ $//')" \
	"$(sed -n 's/^PMUs  *//p' <<<"$out")"
for d in /sys/bus/event_source/devices/*; do
	check_match "type of $(basename "$d") is sysfs's" \
		"^  $(basename "$d") +type $(cat "$d/type")" "$out"
done
check_eq "Yama line matches /proc" \
	"$([ -e /proc/sys/kernel/yama/ptrace_scope ] && echo "Yama ptrace_scope $(cat /proc/sys/kernel/yama/ptrace_scope)" || echo "Yama LSM not enabled")" \
	"$(grep -E '^Yama' <<<"$out" | tr -s ' ')"

# perf is the oracle for "do hardware counters open".
if perf stat -x, -e cycles true 2>&1 | grep -q 'not supported'; then
	check_match "no cycles counter here (perf agrees)" '^cycles counter +no \(ENOENT' "$out"
	check_match "no instructions counter here" '^instructions counter no \(ENOENT' "$out"
	check_match "no LBR here" '^LBR branch stack +no \(' "$out"
	check_match "lbr mode unavailable, use sample" \
		'^  lbr +unavailable: branch-stack sampling does not open \(ENOENT\): no hardware PMU, no cpu PMU in /sys/bus/event_source/devices \(use sample instead\)$' "$(modes <<<"$out")"
	check_match "sample is cpu-clock only" \
		'^  sample +available: cpu-clock sampling only: hardware counters do not open \(ENOENT\)$' "$(modes <<<"$out")"
else
	check_match "cycles counter opens here (perf agrees)" '^cycles counter +yes$' "$out"
fi
if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	check_match "no PT here" \
		'^  pt +unavailable: no intel_pt PMU in /sys/bus/event_source/devices: the CPU has no Intel PT, or a hypervisor hides it \(use (lbr|sample) instead\)$' \
		"$(modes <<<"$out")"
	check_match "PT event not probed without intel_pt" '^Intel PT event +not probed \(no intel_pt PMU\)$' "$out"
fi
check_match "cpu-clock sampling opens (perf can sample it too)" '^cpu-clock sampling +yes$' "$out"
check_match "ptrace works" '^ptrace +yes$' "$out"
check_match "step available" '^  step +available: ptrace branch tracer' "$(modes <<<"$out")"
check_match "libpfm4 PMUs listed" '^libpfm4 PMUs +.*\bperf\b' "$out"

# The same machine seen by an unprivileged user (capget path without capabilities).
if [ "$(id -u)" = 0 ]; then
	chmod 711 "$TMP" && install -m 755 "$XPTRACE" "$TMP/xptrace-copy"
	nout=$(cd / && setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=-all "$TMP/xptrace-copy" info)
	check_match "as nobody: not root, no capabilities" \
		'^privileges +not root \(euid 65534\); CAP_PERFMON no, CAP_SYS_ADMIN no, CAP_SYS_PTRACE no$' "$nout"
	if [ "$(cat /proc/sys/kernel/perf_event_paranoid)" -le 2 ]; then
		check_eq "as nobody at paranoid <= 2: the same modes as root" \
			"$(modes <<<"$out" | cut -c1-20)" "$(modes <<<"$nout" | cut -c1-20)"
	fi
fi

# --- where record --probe puts its uprobes ------------------------------------------------
# per task through tracefs where a uprobe_events can be written (test -w is the oracle),
# else cpu-wide uprobe-PMU events, and why
place() { sed -n 's/^uprobe placement \+//p'; }
jplace() { python3 -c 'import json,sys; print(json.load(sys.stdin)["uprobe_placement"])'; }
if [ -e /sys/bus/event_source/devices/uprobe ]; then
	T=/sys/kernel/tracing
	[ -w $T/uprobe_events ] || T=/sys/kernel/debug/tracing
	if [ -w $T/uprobe_events ]; then
		check_eq "uprobe placement: per task, in this machine's tracefs (test -w agrees)" \
			"per task: defined in tracefs, $T/uprobe_events, opened on the target's threads and inherited (-a: cpu-wide)" \
			"$(place <<<"$out")"
	fi
	mkdir "$TMP/tfs"
	: >"$TMP/tfs/uprobe_events"
	check_eq "uprobe placement: a stand-in tracefs (\$XPTRACE_TRACEFS)" \
		"per task: defined in tracefs, $TMP/tfs/uprobe_events, opened on the target's threads and inherited (-a: cpu-wide)" \
		"$(XPTRACE_TRACEFS=$TMP/tfs "$XPTRACE" info | place)"
	check_eq "uprobe placement, jsonl: the stand-in tracefs" \
		"{'placement': 'per_task', 'tracefs': '$TMP/tfs', 'reason': None}" \
		"$(XPTRACE_TRACEFS=$TMP/tfs "$XPTRACE" info --format jsonl | jplace)"
	check_eq "uprobe placement: no tracefs there: cpu-wide, and why" \
		"cpu-wide uprobe-PMU events: no uprobe_events in $TMP/none (\$XPTRACE_TRACEFS); every process mapping a probed file traps while they are armed" \
		"$(XPTRACE_TRACEFS=$TMP/none "$XPTRACE" info | place)"
	check_eq "uprobe placement, jsonl: no tracefs there" \
		"{'placement': 'cpu_wide', 'tracefs': None, 'reason': 'no uprobe_events in $TMP/none (\$XPTRACE_TRACEFS)'}" \
		"$(XPTRACE_TRACEFS=$TMP/none "$XPTRACE" info --format jsonl | jplace)"
	if [ "$(id -u)" = 0 ] && [ -e /sys/kernel/tracing/uprobe_events ] &&
		! setpriv --reuid=65534 --regid=65534 --clear-groups test -w /sys/kernel/tracing/uprobe_events; then
		check_eq "uprobe placement as nobody: tracefs is root's" \
			"cpu-wide uprobe-PMU events: /sys/kernel/tracing/uprobe_events is not writable: Permission denied (run as root); every process mapping a probed file traps while they are armed" \
			"$(place <<<"$nout")"
	fi
fi
check_eq "uprobe placement: a sysfs tree of another machine says nothing of it" \
	"not probed (the sysfs tree is not this machine's)" \
	"$("$XPTRACE" info --sysfs-root "$SYSFS/intel-skylake" | place)"

# --- JSON ---------------------------------------------------------------------------------
"$XPTRACE" info --json >"$TMP/live.json"
check "live --json is valid JSON" python3 -m json.tool "$TMP/live.json" /dev/null
check_eq "JSON modes agree with the text" \
	"$(modes <<<"$out" | sed -n 's/^  \([a-z]*\) *\(available\|unavailable\).*/\1 \2/p')" \
	"$(python3 -c 'import json,sys
for m in json.load(open(sys.argv[1]))["modes"]:
    print(m["name"], "available" if m["available"] else "unavailable")' "$TMP/live.json")"
check_eq "JSON kernel is uname -r" "$(uname -r)" \
	"$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernel"])' "$TMP/live.json")"

# --- Intel fixture ------------------------------------------------------------------------
out=$("$XPTRACE" info --sysfs-root "$SYSFS/intel-skylake")
check_match "fixture: sources say where facts come from" \
	"^sources: PMUs from $SYSFS/intel-skylake/sys/bus/event_source/devices \(not this machine\); probes from this machine$" "$out"
check_match "fixture: PT with cycle-accurate mode and address filters" \
	'^  pt +available: cycle-accurate mode: yes, address filters: 2, MTC: yes, PTWRITE: no, power events: no \[not verified: the sysfs tree is not this machine.s\]$' \
	"$(modes <<<"$out")"
check_match "fixture: intel_pt caps listed" 'caps: cr3_filtering=1 cycle_thresholds=3fff' "$out"
check_match "fixture: intel_pt format listed" 'format: branch=config:13 cyc=config:1 cyc_thresh=config:19-22' "$out"
check_match "fixture: hardware probes skipped" '^cycles counter +not probed \(the sysfs tree is not this machine.s\)$' "$out"

# A real Skylake's probe results, injected: every conclusion exact.
cat >"$TMP/skylake.probe" <<'EOF'
# what the live probes report on a Skylake laptop, user 1000, Debian defaults
kernel=6.1.0-18-amd64
machine=x86_64
paranoid=2
mlock_kb=516
yama_scope=1
euid=1000
cap_perfmon=0
cap_sys_admin=0
cap_sys_ptrace=0
pfm=ok
pfm_pmus=skl perf perf_raw
hw_cycles=ok
hw_instructions=ok
lbr=ok
cpu_clock=ok
pt=ok
ptrace=ok
EOF
"$XPTRACE" info --sysfs-root="$SYSFS/intel-skylake" --probe-file "$TMP/skylake.probe" >"$TMP/skl.txt"
check_eq "skylake + its probes: modes" \
"recording modes:
  pt      available: cycle-accurate mode: yes, address filters: 2, MTC: yes, PTWRITE: no, power events: no
  lbr     available: branch stacks of 32 entries (cpu caps/branches)
  sample  available: cycles or cpu-clock sampling (hardware counters open)
  step    available: ptrace branch tracer of a command it starts or a running process (-p)
best mode: pt" "$(modes <"$TMP/skl.txt")"
check_match "skylake + probes: facts from the probe file" "^sources: .*; probes from probe file $TMP/skylake.probe$" "$(cat "$TMP/skl.txt")"
check_eq "skylake + probes: uprobe placement not probed" \
	"not probed (probe results from $TMP/skylake.probe)" "$(place <"$TMP/skl.txt")"
check_match "skylake + probes: not root" '^privileges +not root \(euid 1000\); CAP_PERFMON no' "$(cat "$TMP/skl.txt")"
check_match "skylake + probes: libpfm PMUs" '^libpfm4 PMUs +skl perf perf_raw$' "$(cat "$TMP/skl.txt")"
"$XPTRACE" info --json --sysfs-root "$SYSFS/intel-skylake" --probe-file "$TMP/skylake.probe" >"$TMP/skl.json"
check "skylake --json is valid JSON" python3 -m json.tool "$TMP/skl.json" /dev/null
check_eq "skylake JSON: PT features" "True 2 8 pt" "$(python3 -c 'import json,sys
d=json.load(open(sys.argv[1])); p=d["intel_pt"]
print(p["cycle_accurate"], p["address_filters"], p["type"], d["best_mode"])' "$TMP/skl.json")"

# --- AMD and VM fixtures --------------------------------------------------------------
out=$("$XPTRACE" info --sysfs-root "$SYSFS/amd-zen" | modes)
check_match "zen: no PT" "^  pt +unavailable: no intel_pt PMU in $SYSFS/amd-zen/sys/bus/event_source/devices: " "$out"
check_match "zen: no LBR" '^  lbr +unavailable: the cpu PMU has no branch stack: caps/branches is missing in ' "$out"
out=$("$XPTRACE" info --sysfs-root "$SYSFS/vm-nopmu" | modes)
check_match "vm fixture: sample is cpu-clock only" '^  sample +available: cpu-clock sampling only: no hardware PMU in ' "$out"
"$XPTRACE" info --json --sysfs-root "$SYSFS/amd-zen" >"$TMP/zen.json"
check "zen --json is valid JSON" python3 -m json.tool "$TMP/zen.json" /dev/null
# --format jsonl, as every report has it: the same object on one line
"$XPTRACE" info --format jsonl --sysfs-root "$SYSFS/amd-zen" >"$TMP/zen.jsonl"
check_eq "--format jsonl: one line, the object --json writes" "1 True" \
	"$(wc -l <"$TMP/zen.jsonl") $(python3 -c 'import json, sys
print(json.loads(open(sys.argv[1]).readline()) == json.load(open(sys.argv[2])))' "$TMP/zen.jsonl" "$TMP/zen.json")"
check_exit "--format xml: usage error" 2 "$XPTRACE" info --format xml

# Hostile sysfs text still gives valid JSON: quotes, backslashes, control bytes, bad UTF-8.
odd=$TMP/odd/sys/bus/event_source/devices/odd
mkdir -p "$odd/caps" "$odd/format"
echo 42 >"$odd/type"
printf 'a\377"q\\\t\001\303\251\n' >"$odd/caps/weird"
echo 'config:99' >"$odd/format/bad"
"$XPTRACE" info --json --sysfs-root "$TMP/odd" >"$TMP/odd.json"
check_eq "hostile sysfs text: valid JSON, bad bytes as U+FFFD" "True 42 {}" \
	"$(python3 -c 'import json,sys
p=json.load(open(sys.argv[1], encoding="utf-8"))["pmus"][0]
print(p["caps"]["weird"] == "a\ufffd\"q\\\t\x01\u00e9", p["type"], p["format"])' "$TMP/odd.json")"
check_match "hostile sysfs text: no control bytes on the terminal" '^      caps: weird=a\?"q\\\?\?é$' \
	"$("$XPTRACE" info --sysfs-root "$TMP/odd")"
check_match "unparsable format files are reported" '^  odd +type 42, 1 unparsable format files skipped$' \
	"$("$XPTRACE" info --sysfs-root "$TMP/odd")"

# --- exit codes and errors ------------------------------------------------------------
printf 'euid=1000\ncap_perfmon=0\ncap_sys_admin=0\ncap_sys_ptrace=0\nparanoid=3\nyama_scope=3\n' >"$TMP/locked.probe"
check_exit "nothing available: exit 1" 1 "$XPTRACE" info --sysfs-root "$SYSFS/vm-nopmu" --probe-file "$TMP/locked.probe"
check_eq "nothing available: message" "xptrace: info: no recording mode is available (see the reasons above)" "$(cat "$TMP/.err")"
check_match "nothing available: step reason" '^  step +unavailable: Yama ptrace_scope is 3: ptrace is disabled until reboot \(no other mode is available\)$' "$(cat "$TMP/.out")"
check_exit "missing --sysfs-root dir: exit 1" 1 "$XPTRACE" info --sysfs-root "$TMP/nowhere"
check_eq "missing --sysfs-root dir: message" \
	"xptrace: info: cannot read PMUs in $TMP/nowhere/sys/bus/event_source/devices: No such file or directory (check --sysfs-root)" \
	"$(cat "$TMP/.err")"
printf 'paranoid=2\nlbr=sometimes\n' >"$TMP/bad.probe"
check_exit "bad probe file: exit 1" 1 "$XPTRACE" info --probe-file "$TMP/bad.probe"
check_eq "bad probe file: message" "xptrace: info: bad probe file $TMP/bad.probe line 2 (see docs/info.md for the format)" "$(cat "$TMP/.err")"
check_exit "unknown option: exit 2" 2 "$XPTRACE" info --frobnicate
check_eq "unknown option: message" "xptrace: info: unknown option '--frobnicate' (see 'xptrace help info')" "$(cat "$TMP/.err")"
check_exit "--sysfs-root without a value: exit 2" 2 "$XPTRACE" info --sysfs-root
check_exit "stray argument: exit 2" 2 "$XPTRACE" info extra

# --- record decides from the same conclusions ------------------------------------------
# `record` (auto) records in info's best mode, and for every mode info calls unavailable
# `record --mode M` exits 1 with info's reason and info's alternative (hw_modes.sh checks
# the auto messages and the refused opens of the Skylake tree).
for root in "" "$SYSFS/vm-nopmu" "$SYSFS/amd-zen"; do
	name=${root:+$(basename "$root")}
	name=${name:-this machine}
	opt=(${root:+--sysfs-root "$root"})
	info=$("$XPTRACE" info "${opt[@]}" 2>/dev/null)
	check_eq "$name: record --mode auto picks info's best mode" \
		"$(sed -n 's/^best mode: //p' <<<"$info")" \
		"$("$XPTRACE" record "${opt[@]}" -f -o "$TMP/rec" -- true 2>&1 |
			sed -n 's/^xptrace: mode auto: recording in \([a-z]*\) mode.*/\1/p')"
	for m in $(sed -n 's/^  \([a-z]*\) \+unavailable: .*/\1/p' <<<"$info"); do
		out=$("$XPTRACE" record "${opt[@]}" --mode "$m" -o "$TMP/recm" -- true 2>&1); rc=$?
		check_eq "$name: record --mode $m exits 1 with info's reason" \
			"1 xptrace: record --mode: $m: $(sed -n "s/^  $m \+unavailable: \(.*\) (use \([a-z]*\) instead)\$/\1 (use --mode \2 instead)/p" <<<"$info")" \
			"$rc $out"
	done
done

# --- the sanitizer build on the same paths ---------------------------------------------
if [ -x "$XPTRACE_ASAN" ]; then
	check_exit "ASan: live info" 0 "$XPTRACE_ASAN" info --json
	check_exit "ASan: skylake fixture" 0 "$XPTRACE_ASAN" info --sysfs-root "$SYSFS/intel-skylake" --probe-file "$TMP/skylake.probe"
fi
