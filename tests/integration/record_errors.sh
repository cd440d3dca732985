#!/bin/bash
# Output directory rules and failures: existing DIR, -f keeps DIR.old, a read-only
# place gives a clear error, a full disk stops the recording with a readable file.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"

"$XPTRACE" record -q -- "$PROGS/hot" 50 >/dev/null 2>&1
check "default directory is xptrace.data" test -s xptrace.data/perf.data
first=$(md5sum < xptrace.data/perf.data)
check_exit "an existing directory is refused without -f" 1 "$XPTRACE" record -q -- "$PROGS/hot" 50
check_eq "refusal message" \
	"xptrace: xptrace.data: the trace directory already exists (use -f to replace it; the old one is kept as .old)" \
	"$(cat "$TMP/.err")"
check_eq "the refused run left the old file alone" "$first" "$(md5sum < xptrace.data/perf.data)"
check_exit "-f replaces it" 0 "$XPTRACE" record -q -f -- "$PROGS/hot" 50
check_eq "-f keeps the previous recording as xptrace.data.old" "$first" "$(md5sum < xptrace.data.old/perf.data)"
second=$(md5sum < xptrace.data/perf.data)
check_exit "-f again" 0 "$XPTRACE" record -q -f -- "$PROGS/hot" 50
check_eq "the second -f rotates again" "$second" "$(md5sum < xptrace.data.old/perf.data)"

mounts=()
cleanup() { for m in "${mounts[@]}"; do umount "$m" 2>/dev/null; done; rm -rf "$TMP"; }
trap cleanup EXIT

mkdir -p ro
if mount -t tmpfs -o ro,size=64k tmpfs ro 2>/dev/null; then
	mounts+=("$TMP/ro")
	check_exit "read-only place: exit 1" 1 "$XPTRACE" record -o ro/trace -- "$PROGS/hot" 50
	check_eq "read-only place: clear message" \
		"xptrace: ro/trace: cannot create the trace directory: Read-only file system (choose a writable place with -o DIR)" \
		"$(tail -1 "$TMP/.err")"
else
	ok "read-only mount not permitted here # SKIP"
fi

mkdir -p small
if mount -t tmpfs -o size=6m tmpfs small 2>/dev/null; then
	mounts+=("$TMP/small")
	# dwarf stacks at 4 kHz write ~32 MB/s: the 6 MB fill up in well under a second.
	"$XPTRACE" record -o small/trace --call-graph dwarf,8192 -- "$PROGS/hot" 5000 >/dev/null 2>"$TMP/errf"
	check_eq "disk full: exit 1" 1 $?
	check_match "disk full: clear message" \
		"^xptrace: small/trace/perf.data: No space left on device; recording stopped, the [0-9.]+ MB written before \([0-9]+ samples\) were kept and are readable" \
		"$(cat "$TMP/errf")"
	perf_clean "disk full" small/trace/perf.data
	n=$(nsamples small/trace/perf.data)
	check "disk full: the kept part has samples ($n)" in_range 50 1000000 "${n:-0}"
	check "disk full: hot_inner is still the top symbol" in_range 50 95 "$(sym_share small/trace/perf.data hot_inner)"
	# Nearly full: the summary counts the samples the file holds (it once counted those
	# read, 9763 for ~4.6k kept), all dropped is said as such (not '0.0 MB ... kept'),
	# and a module whose copy did not fit is named and leaves no .build-id link.
	# "split": the program's mappings (made at exec, on cpu 1) and its samples (cpu 0)
	# in different CPUs' rings; drained ring by ring, the disk filled up with cpu 0's
	# samples and the file kept no mmap: 104 samples that could not be named.
	for case in 200 700 split; do
		free=${case/split/700} pin=() cpu=()
		if [ "$case" = split ]; then
			[ "$(nproc)" -ge 2 ] || { ok "split rings need 2 CPUs # SKIP"; continue; }
			pin=(taskset -c 1) cpu=(0)
		fi
		what="$free KB free${pin:+, mappings and samples in different rings}"
		d=nf$case
		mkdir -p "$d"
		mount -t tmpfs -o size=$((free + 400))k tmpfs "$d" || continue
		mounts+=("$TMP/$d")
		avail=$(df -k --output=avail "$d" | tail -1)
		dd if=/dev/zero of="$d/fill" bs=1k count=$((avail - free)) status=none 2>/dev/null
		"${pin[@]}" "$XPTRACE" record -o "$d/t" --call-graph dwarf,4096 -- "$PROGS/hot" 3000 "${cpu[@]}" \
			>/dev/null 2>"$TMP/errn"
		check_eq "$what: exit 1" 1 $?
		said=$(sed -n 's/^xptrace: recorded \([0-9]*\) cpu-clock samples.*/\1/p' "$TMP/errn")
		n=$(nsamples "$d/t/perf.data")
		check_eq "$what: the summary's samples are the file's" "${n:-0}" "$said"
		if [ "${n:-0}" = 0 ]; then
			check_match "$what: nothing kept is said" \
				"No space left on device; recording stopped and no samples were kept" "$(cat "$TMP/errn")"
		else
			check_match "$what: what was kept is said" \
				"recording stopped, the [0-9.]+ MB written before \($n samples\) were kept" "$(cat "$TMP/errn")"
			check "$what: perf names the samples kept (hot_inner on top)" \
				in_range 50 95 "$(sym_share "$d/t/perf.data" hot_inner)"
		fi
		perf report -i "$d/t/perf.data" --stdio >/dev/null 2>&1
		check_eq "$what: perf reads the file" 0 $?
		"$XPTRACE" decode -i "$d/t" >/dev/null 2>"$TMP/errd"
		check_eq "$what: xptrace decodes it without a word" "0 " "$? $(grep -v 'no samples' "$TMP/errd")"
		# (no link at all is no dangling link: the glob must not stand for itself)
		dangling=$(shopt -s nullglob; for l in "$d"/t/.build-id/*/*; do
			[ -e "$l/elf" ] || [ -e "$l/vdso" ] || echo "$l"; done)
		check_eq "$what: every .build-id link leads to a snapshot" "" "$dangling"
		if [ -n "$dangling" ] || grep -qv 'no samples' "$TMP/errd"; then
			sed 's/^/#   record: /' "$TMP/errn"
			find "$d/t" -printf '#   %p %s %l\n'
		fi
		nlinks=$(ls "$d"/t/.build-id/*/ | grep -vc ':$\|^$')
		check_match "$what: the summary counts the snapshots there are" \
			"recorded [0-9]+ cpu-clock samples, [0-9]+ records lost, $nlinks modules snapshotted" "$(cat "$TMP/errn")"
		if grep -q 'no snapshot of' "$TMP/errn"; then
			check_match "$what: a failed snapshot is named" \
				"^xptrace: no snapshot of /[^ ]+: No space left on device" "$(grep 'no snapshot of' "$TMP/errn")"
		fi
	done
	# Step mode: its PT is kept as a prefix, in order, and the loss is counted in bytes
	# of PT.  Once, at 300 KB free all of it was given back when the first write of the
	# buffer failed (the file's data was one FINISHED_ROUND after 1.03 M branches), and
	# at 1 MB 0.81 MB were kept but record said "no samples were kept" and named ENOSPC
	# as "Input/output error".
	for free in 300 1000; do
		what="step, $free KB free"
		d=sf$free
		mkdir -p "$d"
		mount -t tmpfs -o size=$((free + 400))k tmpfs "$d" || continue
		mounts+=("$TMP/$d")
		avail=$(df -k --output=avail "$d" | tail -1)
		dd if=/dev/zero of="$d/fill" bs=1k count=$((avail - free)) status=none 2>/dev/null
		"$XPTRACE" record -o "$d/t" --mode step -- "$PROGS/hot" 10000 >/dev/null 2>"$TMP/errs"
		check_eq "$what: exit 1" 1 $?
		said=$(grep "^xptrace: $d/t/perf.data: " "$TMP/errs")
		check_match "$what: ENOSPC named, the bytes of PT kept and lost counted" \
			"^xptrace: $d/t/perf.data: No space left on device; recording stopped: [1-9][0-9]* of the [0-9]+ bytes of Intel PT traced were kept \(.*\) and are readable, [1-9][0-9]* bytes were lost \(free space and record again\)$" \
			"$said"
		check_eq "$what: no other error" "" "$(grep -v -e "^xptrace: $d/t/perf.data: " -e '^xptrace: recording in' \
			-e '^xptrace: recorded [0-9]* branches' -e '^xptrace: no snapshot of ' "$TMP/errs")"
		kept=$(sed -n 's/.*recording stopped: \([0-9]*\) of the .*/\1/p' <<<"$said")
		traced=$(sed -n 's/.* of the \([0-9]*\) bytes of Intel PT traced.*/\1/p' <<<"$said")
		lost=$(sed -n 's/.* and are readable, \([0-9]*\) bytes were lost.*/\1/p' <<<"$said")
		check_eq "$what: kept + lost = traced" "${traced:-x}" "$((${kept:-0} + ${lost:-0}))"
		# AUXTRACE sizes are the chunks padded to 8 bytes
		sizes=$(perf report -i "$d/t/perf.data" -D 2>/dev/null |
			sed -n 's/.*PERF_RECORD_AUXTRACE size: \(0x[0-9a-f]*\) .*/\1/p')
		infile=$((0 $(printf ' + %s' $sizes))) nchunks=$(wc -w <<<"$sizes")
		check "$what: the PT said kept is the file's ($kept; $infile in $nchunks chunks)" \
			in_range $((infile - 7 * nchunks)) "$infile" "${kept:-0}"
		head=$("$XPTRACE" decode -i "$d/t" --functions 2>/dev/null | head -1)
		check_match "$what: the kept trace decodes" "^# functions: insns, total [1-9]" "$head"
		perf report -i "$d/t/perf.data" --stdio --no-children --sort sym -g none >"$TMP/rep" 2>/dev/null
		check_eq "$what: perf reads it" 0 $?
		check_match "$what: perf names hot_inner" '^ +[0-9.]+% +\[\.\] hot_inner$' "$(cat "$TMP/rep")"
	done
else
	ok "tmpfs mount not permitted here # SKIP"
fi

"$XPTRACE" record -q -o slash/ -- "$PROGS/hot" 20 >/dev/null 2>&1
"$XPTRACE" record -q -f -o slash/ -- "$PROGS/hot" 20 >/dev/null 2>&1
check "-o DIR/ with -f keeps DIR.old (not DIR/.old)" test -s slash.old/perf.data
"$XPTRACE" record -f -o slash -- "$PROGS/hot" 20 >/dev/null 2>"$TMP/errs"
check_match "-f says what it moved" "^xptrace: slash: the previous trace is now slash.old$" "$(cat "$TMP/errs")"

# -f moves and removes only trace directories: a user's directory given by mistake
# once lost its files (DIR moved to DIR.old, then DIR.old removed by the next -f)
mkdir -p mine && echo keep >mine/f
check_exit "-f on a directory without perf.data: exit 2" 2 "$XPTRACE" record -q -f -o mine -- "$PROGS/hot" 20
check_eq "-f on a directory without perf.data: why" \
	"xptrace: mine: -f replaces only a trace directory, and it has no .xptrace-trace, the mark xptrace record leaves in every trace directory (a trace recorded by an xptrace older than the mark has none: remove it by hand) (choose another -o DIR, or move it away by hand)" \
	"$(cat "$TMP/.err")"
check_exit "-f on it twice: exit 2" 2 "$XPTRACE" record -q -f -o mine -- "$PROGS/hot" 20
check_eq "-f left the directory alone" "keep -" "$(cat mine/f) $(ls -d mine.old 2>/dev/null || echo -)"
cp xptrace.data/perf.data xptrace.data/.xptrace-trace mine/
check_exit "-f on a perf.data next to a user's file: exit 2" 2 "$XPTRACE" record -q -f -o mine -- "$PROGS/hot" 20
check_eq "-f on a perf.data next to a user's file: why" \
	"xptrace: mine: -f replaces only a trace directory, and it holds 'f', which no recording writes (choose another -o DIR, or move it away by hand)" \
	"$(cat "$TMP/.err")"
"$XPTRACE" record -q -o tr -- "$PROGS/hot" 20 >/dev/null 2>&1
mkdir -p tr.old && echo keep >tr.old/f
check_exit "-f with a DIR.old that is no trace: exit 2" 2 "$XPTRACE" record -q -f -o tr -- "$PROGS/hot" 20
check_eq "-f with a DIR.old that is no trace: why" \
	"xptrace: tr.old: -f would remove it to keep tr there, but it is not a trace directory: it has no .xptrace-trace, the mark xptrace record leaves in every trace directory (a trace recorded by an xptrace older than the mark has none: remove it by hand) (move it away by hand)" \
	"$(cat "$TMP/.err")"
check_eq "-f left DIR and DIR.old alone" "keep 1" "$(cat tr.old/f) $(ls tr/perf.data | wc -l)"
# A directory of results beside perf's own perf.data passed once (only the top level was
# looked at): the first -f moved it to results.old, the second removed it, the user's
# results with it.  -f now wants the mark xptrace record leaves, and nothing else
# inside but what a recording writes.
mkdir -p results/run1
perf record -q -o results/perf.data -- true >/dev/null 2>&1
echo x >results/run1/important.csv
check_exit "-f on perf's perf.data beside a user's directory: exit 2" 2 "$XPTRACE" record -q -f -o results -- true
check_eq "-f on perf's perf.data beside a user's directory: why" \
	"xptrace: results: -f replaces only a trace directory, and it has no .xptrace-trace, the mark xptrace record leaves in every trace directory (a trace recorded by an xptrace older than the mark has none: remove it by hand) (choose another -o DIR, or move it away by hand)" \
	"$(cat "$TMP/.err")"
check_exit "-f on it again: exit 2" 2 "$XPTRACE" record -q -f -o results -- true
check_eq "the user's file survives both -f" "x -" \
	"$(cat results/run1/important.csv) $(ls -d results.old 2>/dev/null || echo -)"
cp xptrace.data/.xptrace-trace results/
check_exit "-f on a marked directory with a user's file below: exit 2" 2 "$XPTRACE" record -q -f -o results -- true
check_eq "-f on a marked directory with a user's file below: why" \
	"xptrace: results: -f replaces only a trace directory, and it holds 'run1/important.csv', which no recording writes (choose another -o DIR, or move it away by hand)" \
	"$(cat "$TMP/.err")"
"$XPTRACE" record -q -o st -- true >/dev/null 2>&1
check "a trace directory holds the mark" test -f st/.xptrace-trace
echo x >st/usr/bin/notes.txt
check_exit "-f on a trace with a user's file among the snapshots: exit 2" 2 "$XPTRACE" record -q -f -o st -- true
check_eq "-f on a trace with a user's file among the snapshots: why" \
	"xptrace: st: -f replaces only a trace directory, and it holds 'usr/bin/notes.txt', which no recording writes (choose another -o DIR, or move it away by hand)" \
	"$(cat "$TMP/.err")"
rm st/usr/bin/notes.txt
"$XPTRACE" record -q -f -o st -- true >/dev/null 2>&1
check_exit "-f twice on a trace removes its .old" 0 "$XPTRACE" record -q -f -o st -- true
check "... and keeps the previous one, marked" test -f st.old/.xptrace-trace

mkdir -p sub && cp -r tr sub/here && cd sub/here
check_exit "-f -o .: exit 2" 2 "$XPTRACE" record -q -f -o . -- "$PROGS/hot" 20
check_eq "-f -o .: why" "xptrace: .: -f cannot replace the current directory or one that holds it (choose another -o DIR)" \
	"$(cat "$TMP/.err")"
check_exit "-f -o ..: exit 2" 2 "$XPTRACE" record -q -f -o .. -- "$PROGS/hot" 20
cd "$TMP"

# Trace directory on another filesystem: no hardlink possible, the snapshots are copies
# (made after the recording, from descriptors opened when the mapping was seen).
mkdir -p other
if mount -t tmpfs -o size=64m tmpfs other 2>/dev/null; then
	mounts+=("$TMP/other")
	"$XPTRACE" record -q -o other/trace -- "$PROGS/hot" 50 >/dev/null 2>"$TMP/erro"
	check_eq "other filesystem: exit 0, no message" "0 " "$? $(cat "$TMP/erro")"
	bid=$(perf buildid-list -i other/trace/perf.data 2>/dev/null | awk -v p=" $PROGS/hot" 'substr($0, 41) == p { print $1 }')
	snap="other/trace$PROGS/hot/$bid/elf"
	check "other filesystem: the snapshot is a full copy" cmp -s "$PROGS/hot" "$snap"
	check_eq "other filesystem: a copy, not a link" 1 "$(stat -c %h "$snap")"
else
	ok "tmpfs mount not permitted here # SKIP"
fi

# -o onto something that is no directory: said once, for what it is, with or without -f
# (it was "the trace directory already exists (use -f ...)", then with -f "it is not a
# directory").
echo x >afile
ln -s nowhere dangling
for f in "" -f; do
	check_exit "-o a regular file${f:+ with -f}: exit 2" 2 "$XPTRACE" record -q $f -o afile -- true
	check_eq "-o a regular file${f:+ with -f}: what it is" \
		"xptrace: afile: it is a regular file, not a trace directory (choose another -o DIR, or move it away)" \
		"$(cat "$TMP/.err")"
	check_exit "-o a dangling symlink${f:+ with -f}: exit 2" 2 "$XPTRACE" record -q $f -o dangling -- true
	check_eq "-o a dangling symlink${f:+ with -f}: what it is" \
		"xptrace: dangling: it is a dangling symlink to 'nowhere', not a trace directory (choose another -o DIR, or move it away)" \
		"$(cat "$TMP/.err")"
done
check_eq "the file and the link are left alone" "x nowhere" "$(cat afile) $(readlink dangling)"
