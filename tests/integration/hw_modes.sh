#!/bin/bash
# Hardware modes on machines that lack them: --mode pt/lbr exit 1 with the reason and the
# mode to use instead, auto falls back pt -> lbr -> sample and says why.  The PMU
# descriptions come from the sysfs fixture trees (--sysfs-root), so the expected text is
# exact whatever machine runs this; the last checks use this machine's own sysfs.
. "$(dirname "$0")/../lib.sh"

VM=$FIXTURES/sysfs/vm-nopmu
ZEN=$FIXTURES/sysfs/amd-zen
SKL=$FIXTURES/sysfs/intel-skylake
NO_PT="no intel_pt PMU in sysfs: this CPU or hypervisor does not expose Intel PT"
NO_CPU="no cpu PMU in sysfs: this machine (or its hypervisor) exposes no hardware counters, so no branch stacks"
NO_LBR="the cpu PMU offers no branch stack (no caps/branches): this CPU or hypervisor has no LBR/BRS"

out=$("$XPTRACE" record --sysfs-root "$VM" --mode pt -o "$TMP/pt" -- true 2>&1); rc=$?
check_eq "pt on a PMU-less VM exits 1" 1 "$rc"
check_eq "pt on a PMU-less VM says why and what to use" \
	"xptrace: record --mode: pt: $NO_PT (use --mode sample instead)" "$out"
check "no trace directory is left behind" test ! -e "$TMP/pt"

out=$("$XPTRACE" record --sysfs-root "$VM" --mode lbr -o "$TMP/lbr" -- true 2>&1); rc=$?
check_eq "lbr on a PMU-less VM exits 1" 1 "$rc"
check_eq "lbr on a PMU-less VM says why" "xptrace: record --mode: lbr: $NO_CPU (use --mode sample instead)" "$out"

out=$("$XPTRACE" record --sysfs-root "$ZEN" --mode lbr -o "$TMP/lbr" -- true 2>&1); rc=$?
check_eq "lbr on Zen 2 exits 1" 1 "$rc"
check_eq "lbr on Zen 2 says why" "xptrace: record --mode: lbr: $NO_LBR (use --mode sample instead)" "$out"

out=$("$XPTRACE" record --sysfs-root "$VM" -o "$TMP/auto" -- true 2>&1); rc=$?
check_eq "auto on a PMU-less VM records" 0 "$rc"
check_eq "auto explains each skipped mode, then picks sample" \
	"xptrace: mode auto: pt mode is not available: $NO_PT
xptrace: mode auto: lbr mode is not available: $NO_CPU
xptrace: mode auto: recording in sample mode" "$(printf '%s\n' "$out" | grep 'mode auto')"
check "auto wrote a perf.data" test -s "$TMP/auto/perf.data"

# The Skylake tree describes PT and LBR, but this kernel cannot open them (here: no PMU;
# on real Skylake hardware both open and auto picks pt).
if [ ! -e /sys/bus/event_source/devices/intel_pt ] && [ ! -e /sys/bus/event_source/devices/cpu ]; then
	out=$("$XPTRACE" record --sysfs-root "$SKL" -o "$TMP/skl" -- true 2>&1); rc=$?
	check_eq "auto with a PT description but no PT kernel records" 0 "$rc"
	check_match "pt is skipped because perf_event_open fails" \
		"^xptrace: mode auto: pt mode is not available: intel_pt is in sysfs \(type 8\) but perf_event_open fails: " "$out"
	check_match "lbr is skipped because perf_event_open fails" \
		"^xptrace: mode auto: lbr mode is not available: the cpu PMU lists a 32-entry branch stack but perf_event_open with PERF_SAMPLE_BRANCH_STACK fails: " "$out"
	check_match "and sample is chosen" "^xptrace: mode auto: recording in sample mode$" "$out"
fi

# Options of the hardware modes are checked, never silently dropped.
check_exit "--pt-opts with an unknown option is a usage error" 2 \
	"$XPTRACE" record --pt-opts cyc,bogus -o "$TMP/x" -- true
check_match "--pt-opts error names the option" "--pt-opts: unknown option 'bogus'" "$(cat "$TMP/.err")"
check_exit "--trigger without --snapshot is a usage error" 2 \
	"$XPTRACE" record --trigger main -o "$TMP/x" -- true
check_exit "--aux-size must be a power of two" 2 "$XPTRACE" record --aux-size 3000 -o "$TMP/x" -- true
out=$("$XPTRACE" record --sysfs-root "$VM" --snapshot -o "$TMP/snap" -- true 2>&1); rc=$?
check_eq "--snapshot where auto falls back to sample exits 1" 1 "$rc"
check_match "--snapshot fallback message" \
	"^xptrace: record: --snapshot needs --mode pt, and this recording is in sample mode" "$out"
out=$("$XPTRACE" record --sysfs-root "$VM" -g lbr -o "$TMP/cs" -- true 2>&1); rc=$?
check_eq "-g lbr where auto falls back to sample exits 1" 1 "$rc"
check_match "-g lbr fallback message" "^xptrace: record: -g lbr needs --mode lbr, and this recording is in sample mode \(use -g" "$out"

# This machine's own sysfs: the CI VMs have neither PT nor a PMU.
if [ ! -e /sys/bus/event_source/devices/intel_pt ]; then
	out=$("$XPTRACE" record --mode pt -o "$TMP/real" -- true 2>&1); rc=$?
	check_eq "--mode pt on this machine exits 1" 1 "$rc"
	check_match "--mode pt on this machine says why" "^xptrace: record --mode: pt: $NO_PT \(use --mode (lbr|sample) instead\)$" "$out"
	out=$("$XPTRACE" record -o "$TMP/real" -- true 2>&1); rc=$?
	check_eq "auto on this machine records" 0 "$rc"
	if [ ! -e /sys/bus/event_source/devices/cpu ]; then
		check_match "auto on this machine picks sample" "recording in sample mode" "$out"
	fi
fi
