#!/bin/bash
# Corrupt and truncated perf.data (tests/fixtures/perfdata, see make-corpus.py) through
# the ASan+UBSan build: a clear error (exit 1, "xptrace: ...") or a partial report with
# the loss stated (exit 0), never a crash or a sanitizer report.
. "$(dirname "$0")/../lib.sh"
C=$FIXTURES/perfdata
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 UBSAN_OPTIONS=print_stacktrace=1

# file | exit | what stderr must say
while IFS='|' read -r file want msg; do
	[ -n "$file" ] || continue
	for view in --calltree --functions; do
		"$XPTRACE_ASAN" decode -i "$C/$file" $view --format jsonl >"$TMP/out" 2>"$TMP/err"
		rc=$?
		if grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/err"; then
			not_ok "$file $view: sanitizer report"
			head -5 "$TMP/err" | sed 's/^/#   /'
		elif [ "$rc" != "$want" ]; then
			not_ok "$file $view: exit $rc, expected $want"
			head -3 "$TMP/err" | sed 's/^/#   /'
		elif { [ "$msg" = "^$" ] && [ -s "$TMP/err" ]; } ||
			{ [ "$msg" != "^$" ] && ! grep -Eq -- "$msg" "$TMP/err"; }; then
			not_ok "$file $view: message"
			echo "#   want: $msg"
			head -3 "$TMP/err" | sed 's/^/#   got: /'
		else
			ok "$file $view"
		fi
	done
done <<'LIST'
base.data|0|^$
pipe.data|0|^$
trunc-header.data|1|^xptrace: .*: too short for a perf.data header \(the file is damaged\)$
trunc-attrs.data|1|^xptrace: .*trunc-attrs.data: truncated at byte 192: the event attributes need bytes 120 to 264 \(the file is damaged; record again\)$
huge-attr-section.data|1|bad attribute section
bad-attr-size.data|1|bad attribute section \(entry size 3
bad-ids-section.data|1|cannot read event attribute section
data-past-eof.data|0|data section starts [0-9]+ bytes past the end of the file \(truncated\): no records
trunc-data-mid.data|0|data section ends [0-9]+ bytes past the end of the file \(truncated\)
trunc-in-record.data|0|trace is truncated or damaged at offset [0-9]+: [0-9]+ bytes after it not read \(report is partial\)
huge-data-size.data|0|report is partial
unfinalized.data|0|recording was not finalized
zero-record-size.data|0|trace is truncated or damaged at offset
huge-record-size.data|0|trace is truncated or damaged at offset
huge-callchain.data|0|5 damaged records skipped
callchain-past-record.data|0|3 damaged records skipped
unterminated-filename.data|0|damaged records skipped
unknown-types.data|0|6 records of unknown type skipped
bad-feature-section.data|0|feature 2 has a bad section, ignored
pipe-trunc.data|0|trace is truncated or damaged
pipe-bad-attr.data|1|^xptrace: 
LIST

# random damage: any outcome but a crash; exit 1 always explains itself
for f in "$C"/flipped-*.data "$C"/pipe-flipped-*.data; do
	"$XPTRACE_ASAN" decode -i "$f" --calltree --format folded >/dev/null 2>"$TMP/err"
	rc=$?
	if grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/err" || [ "$rc" -gt 1 ] ||
		{ [ "$rc" = 1 ] && ! grep -q '^xptrace: ' "$TMP/err"; }; then
		not_ok "$(basename "$f"): exit $rc"
		head -5 "$TMP/err" | sed 's/^/#   /'
	else
		ok "$(basename "$f") survives (exit $rc)"
	fi
done

# the partial report still has the records before the damage
n=$("$XPTRACE" decode -i "$C/trunc-in-record.data" --calltree --format folded 2>/dev/null | awk '{s+=$NF} END{print s+0}')
check_match "truncated file: the samples before the cut are reported" "^[1-9][0-9]*$" "$n"

# DWARF unwinding on damaged register/stack copies (made here: such files are MBs)
perf record -q -e cpu-clock -F 999 --call-graph dwarf,4096 -o "$TMP/dw.data" "$PROGS/dec_work" 200 >/dev/null 2>&1
python3 - "$TMP/dw.data" <<'PY'
import random, sys
b = open(sys.argv[1], "rb").read()
r = random.Random(11)
for n in range(3):
    c = bytearray(b)
    for _ in range(300):
        i = r.randrange(4096, len(c))
        c[i] ^= 1 << r.randrange(8)
    open(sys.argv[1] + ".%d" % n, "wb").write(c)
PY
for f in "$TMP"/dw.data "$TMP"/dw.data.*; do
	"$XPTRACE_ASAN" decode -i "$f" --calltree --format folded >"$TMP/out" 2>"$TMP/err"
	rc=$?
	if grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/err" || [ "$rc" != 0 ]; then
		not_ok "dwarf $(basename "$f"): exit $rc"
		head -5 "$TMP/err" | sed 's/^/#   /'
	else
		ok "dwarf $(basename "$f") unwinds or degrades (exit 0)"
	fi
done
check_match "undamaged dwarf file unwinds through callers" "main;work_b;work_a;spin [0-9]+$" \
	"$("$XPTRACE_ASAN" decode -i "$TMP/dw.data" --calltree --format folded 2>/dev/null)"

# Inputs the fuzzer found (tests/fuzz/crashes/): each decodes or degrades, under
# ASan+UBSan, with no sanitizer report.  perfdata-misaligned-build-id: a build-id feature
# whose entries are not 8-byte aligned (UBSan: misaligned read in pd_add_build_id).
for f in "$XP_ROOT"/tests/fuzz/crashes/perfdata-*; do
	"$XPTRACE_ASAN" decode -i "$f" --calltree >/dev/null 2>"$TMP/err"
	rc=$?
	if grep -Eq "AddressSanitizer|LeakSanitizer|runtime error" "$TMP/err" || [ "$rc" -gt 1 ]; then
		not_ok "fuzzer input $(basename "$f"): exit $rc"
		grep -E "runtime error|Sanitizer" "$TMP/err" | head -3 | sed 's/^/#   /'
	else
		ok "fuzzer input $(basename "$f") decodes or degrades without a sanitizer report"
	fi
done
check_match "the misaligned build-id entries are read (a damaged feature named, not a crash)" \
	'feature 2 is damaged, ignored' \
	"$("$XPTRACE_ASAN" decode -i "$XP_ROOT/tests/fuzz/crashes/perfdata-misaligned-build-id" --calltree 2>&1 >/dev/null)"
