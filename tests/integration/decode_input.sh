#!/bin/bash
# What -i names when it is no perf.data file: said for what it is, exit 1, and never
# waited on (only -i - reads a stream).
. "$(dirname "$0")/../lib.sh"
cd "$TMP"

# A FIFO as DIR/perf.data was opened as a stream: open() blocked for a writer, forever.
mkdir fifo && mkfifo fifo/perf.data
for in in fifo fifo/perf.data; do
	check_exit "-i $in (a FIFO): exit 1, not a hang (124)" 1 timeout 10 "$XPTRACE" decode -i "$in"
	check_eq "-i $in (a FIFO): why" \
		"xptrace: fifo/perf.data: it is a FIFO, not a perf.data file (only -i - reads a stream: cat it | xptrace decode -i -)" \
		"$(cat "$TMP/.err")"
done

# A directory as perf.data was "too short for a perf.data header".
mkdir -p dir/perf.data
check_exit "a perf.data that is a directory: exit 1" 1 "$XPTRACE" decode -i dir
check_eq "a perf.data that is a directory: why" \
	"xptrace: dir/perf.data: it is a directory, not a perf.data file (give a perf.data file, or the trace directory holding one)" \
	"$(cat "$TMP/.err")"

# A symlink loop as DIR/perf.data was "no perf.data in this directory".
ln -s loop loop
mkdir looped && ln -s perf.data looped/perf.data
check_exit "-i a symlink loop: exit 1" 1 "$XPTRACE" decode -i loop
check_eq "-i a symlink loop: ELOOP" \
	"xptrace: loop: Too many levels of symbolic links (give a trace directory or perf.data file with -i)" \
	"$(cat "$TMP/.err")"
check_exit "a perf.data that is a symlink loop: exit 1" 1 "$XPTRACE" decode -i looped
check_eq "a perf.data that is a symlink loop: ELOOP" \
	"xptrace: looped/perf.data: Too many levels of symbolic links" "$(cat "$TMP/.err")"

# A regular file still reads as one, and -i - a stream.
"$XPTRACE" decode -i "$XP_ROOT/traces/step-basic/perf.data" >/dev/null 2>&1
check_eq "a regular perf.data decodes" 0 $?
if command -v perf >/dev/null; then
	perf record -q -e cpu-clock -o - -- true 2>/dev/null | "$XPTRACE" decode -i - >/dev/null 2>"$TMP/errp"
	check_eq "-i - decodes a pipe-mode stream" "0 " "${PIPESTATUS[1]} $(grep -v 'no samples' "$TMP/errp")"
else
	ok "perf missing # SKIP"
fi
