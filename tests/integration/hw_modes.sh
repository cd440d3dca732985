#!/bin/bash
# Hardware modes on machines that lack them: --mode pt/lbr exit 1 with the reason and the
# mode to use instead, auto falls back pt -> lbr -> sample and says why.  The PMU
# descriptions come from the sysfs fixture trees (--sysfs-root), so the expected text is
# exact whatever machine runs this; the last checks use this machine's own sysfs.
. "$(dirname "$0")/../lib.sh"

VM=$FIXTURES/sysfs/vm-nopmu
ZEN=$FIXTURES/sysfs/amd-zen
SKL=$FIXTURES/sysfs/intel-skylake
# The reasons, written out (info words them the same: checked below).
NO_PT="the CPU has no Intel PT, or a hypervisor hides it"
NO_PT_VM="no intel_pt PMU in $VM/sys/bus/event_source/devices: $NO_PT"
NO_CPU_VM="no hardware PMU, no cpu PMU in $VM/sys/bus/event_source/devices"
NO_LBR_ZEN="the cpu PMU has no branch stack: caps/branches is missing in $ZEN/sys/bus/event_source/devices"

out=$("$XPTRACE" record --sysfs-root "$VM" --mode pt -o "$TMP/pt" -- true 2>&1); rc=$?
check_eq "pt on a PMU-less VM exits 1" 1 "$rc"
check_eq "pt on a PMU-less VM says why and what to use" \
	"xptrace: record --mode: pt: $NO_PT_VM (use --mode sample instead)" "$out"
check "no trace directory is left behind" test ! -e "$TMP/pt"

out=$("$XPTRACE" record --sysfs-root "$VM" --mode lbr -o "$TMP/lbr" -- true 2>&1); rc=$?
check_eq "lbr on a PMU-less VM exits 1" 1 "$rc"
check_eq "lbr on a PMU-less VM says why" "xptrace: record --mode: lbr: $NO_CPU_VM (use --mode sample instead)" "$out"

out=$("$XPTRACE" record --sysfs-root "$ZEN" --mode lbr -o "$TMP/lbr" -- true 2>&1); rc=$?
check_eq "lbr on Zen 2 exits 1" 1 "$rc"
check_eq "lbr on Zen 2 says why" "xptrace: record --mode: lbr: $NO_LBR_ZEN (use --mode sample instead)" "$out"

out=$("$XPTRACE" record --sysfs-root "$VM" -o "$TMP/auto0" -- true 2>&1); rc=$?
check_eq "auto on a PMU-less VM records" 0 "$rc"
check_eq "auto says in one line which mode and why (issue 15)" \
	"xptrace: mode auto: recording in sample mode (pt, lbr: unavailable here; -v says why)" \
	"$(printf '%s\n' "$out" | grep 'mode auto')"
out=$("$XPTRACE" record -v --sysfs-root "$VM" -o "$TMP/auto" -- true 2>&1); rc=$?
check_eq "auto -v explains each skipped mode, then picks sample" \
	"xptrace: mode auto: pt mode is not available: $NO_PT_VM
xptrace: mode auto: lbr mode is not available: $NO_CPU_VM
xptrace: mode auto: recording in sample mode" "$(printf '%s\n' "$out" | grep 'mode auto')"
check "auto wrote a perf.data" test -s "$TMP/auto/perf.data"

out=$("$XPTRACE" record --sysfs-root "$TMP/nosuch" -o "$TMP/ns" -- true 2>&1); rc=$?
check_eq "an unreadable --sysfs-root is an error, as in info" \
	"1 xptrace: record: cannot read PMUs in $TMP/nosuch/sys/bus/event_source/devices: No such file or directory (check --sysfs-root)" \
	"$rc $out"

# One source of truth: for every fixture and this machine, record's reason for pt and
# lbr (named, and skipped by auto) is info's, word for word, with info's "instead".
info_says() {	# $1 info output, $2 mode -> "REASON|INSTEAD" or "available"
	sed -n "s/^  $2 \+unavailable: \(.*\) (use \([a-z]*\) instead)\$/\1|\2/p; s/^  $2 \+available.*/available/p" <<<"$1"
}
record_says() {	# $1 mode, $2... extra record options -> "REASON|INSTEAD"
	local m=$1; shift
	"$XPTRACE" record "$@" --mode "$m" -o "$TMP/agree" -- true 2>&1 |
		sed -n "s/^xptrace: record --mode: $m: \(.*\) (use --mode \([a-z]*\) instead)\$/\1|\2/p"
}
auto_says() {	# $1 mode, $2... extra record options -> REASON
	local m=$1; shift
	"$XPTRACE" record -v "$@" -f -o "$TMP/agree" -- true 2>&1 |
		sed -n "s/^xptrace: mode auto: $m mode is not available: //p"
}
for root in "$VM" "$ZEN" ""; do
	name=${root:+$(basename "$root")}
	name=${name:-this machine}
	opt=(${root:+--sysfs-root "$root"})
	info=$("$XPTRACE" info "${opt[@]}" 2>/dev/null)
	for m in pt lbr; do
		want=$(info_says "$info" $m)
		[ "$want" = available ] && continue
		check_match "$name: info gives a reason for $m" '.\|(sample|step|lbr)$' "$want"
		check_eq "$name: record --mode $m gives info's reason and alternative" "$want" \
			"$(record_says $m "${opt[@]}")"
		check_eq "$name: auto skips $m with info's reason" "${want%|*}" "$(auto_says $m "${opt[@]}")"
	done
done

# The Skylake tree describes PT and LBR, but this kernel cannot open them (here: no PMU;
# on real Skylake hardware both open and auto picks pt).  info, not probing a tree that
# is not this machine's, calls both available; record's refused opens are probe facts,
# worded as info words them when a probe file reports the same errors.
if [ ! -e /sys/bus/event_source/devices/intel_pt ] && [ ! -e /sys/bus/event_source/devices/cpu ]; then
	out=$("$XPTRACE" record -v --sysfs-root "$SKL" -o "$TMP/skl" -- true 2>&1); rc=$?
	check_eq "auto with a PT description but no PT kernel records" 0 "$rc"
	check_match "pt is skipped because the intel_pt event does not open" \
		"^xptrace: mode auto: pt mode is not available: an intel_pt event does not open \(EINVAL\): the kernel rejects the event attributes$" "$out"
	check_match "lbr is skipped because branch-stack sampling does not open" \
		"^xptrace: mode auto: lbr mode is not available: branch-stack sampling does not open \(ENOENT\): the kernel has no hardware cycles event$" "$out"
	check_match "and sample is chosen" "^xptrace: mode auto: recording in sample mode$" "$out"
	printf 'pt=EINVAL\nlbr=ENOENT\ncpu_clock=ok\nptrace=ok\n' >"$TMP/refused.probe"
	info=$("$XPTRACE" info --sysfs-root "$SKL" --probe-file "$TMP/refused.probe")
	for m in pt lbr; do
		check_eq "skylake: record --mode $m gives info's reason for the same refusal" \
			"$(info_says "$info" $m)" "$(record_says $m --sysfs-root "$SKL")"
	done
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
	check_match "--mode pt on this machine says why" \
		"^xptrace: record --mode: pt: no intel_pt PMU in /sys/bus/event_source/devices: $NO_PT \\(use --mode (lbr|sample) instead\\)$" "$out"
	out=$("$XPTRACE" record -o "$TMP/real" -- true 2>&1); rc=$?
	check_eq "auto on this machine records" 0 "$rc"
	if [ ! -e /sys/bus/event_source/devices/cpu ]; then
		check_match "auto on this machine picks sample" "recording in sample mode" "$out"
	fi
fi
