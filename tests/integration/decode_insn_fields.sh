#!/bin/bash
# decode --insn -F/--fields: perf script's field names and layout.  perf script is the
# oracle, line for line, on the step traces shipped in traces/ (perf reads their
# modules from the trace's own snapshots).
. "$(dirname "$0")/../lib.sh"

B=$XP_ROOT/traces/step-basic
T=$XP_ROOT/traces/step-thread
pscript() {	# DIR FIELDS [ARGS]: perf script's instruction lines
	local d=$1 f=$2; shift 2
	perf --buildid-dir "$d" script --ns -i "$d/perf.data" --itrace=i0ns -F "$f" "$@" 2>/dev/null
}
# same NAME FILE1 FILE2: the two outputs are equal, line for line
same() {
	if [ -s "$2" ] && cmp -s "$2" "$3"; then ok "$1 ($(wc -l <"$2") lines)"; else
		not_ok "$1 ($(wc -l <"$2") and $(wc -l <"$3") lines)"
		diff "$2" "$3" | head -6 | sed 's/^/#   /'
	fi
}

# the instruction stream as perf script prints it: every line the same
for f in ip tid,ip pid,ip pid,tid,ip comm,tid,ip ip,dso ip,insnlen,insn comm,pid,tid,ip,dso,insnlen,insn; do
	pscript "$B" "$f" >"$TMP/perf"
	"$XPTRACE" decode -i "$B" --insn -F "$f" >"$TMP/ours"
	same "-F $f: perf script's lines" "$TMP/perf" "$TMP/ours"
	# (-F ip's kept for the checks below)
	[ "$f" = ip ] && cp "$TMP/perf" "$TMP/perf.ip" && cp "$TMP/ours" "$TMP/ours.ip"
done
# symbols: perf 6.1 names PLT entries "@plt", "_init+0x30" or "[unknown]" where
# xptrace names them "func@plt" (".plt" the header, as newer perf), and stretches a symbol of size 0 (_fini) to the next
# where xptrace says [unknown]: those lines are compared by address
symbols() {	# NAME PERF-FIELDS XPTRACE-FIELDS
	pscript "$B" "$2" >"$TMP/perf"
	"$XPTRACE" decode -i "$B" --insn -F "$3" >"$TMP/ours"
	paste "$TMP/perf" "$TMP/ours" | awk -F'\t' -v p="$TMP/p" -v o="$TMP/o" '
		function addr(s,   w, n, i) {	# the instruction address of a line
			n = split(s, w, " ")
			for (i = 1; i <= n; i++)
				if (length(w[i]) > 8 && w[i] ~ /^[0-9a-f]+$/)
					return w[i]
		}
		$2 ~ /@plt|\[unknown\]|\.plt(\+| |$)/ { n++; $1 = addr($1); $2 = addr($2) }
		{ print $1 >p; print $2 >o }
		END { print n + 0 " PLT and unknown lines" >"/dev/stderr" }' 2>"$TMP/nplt"
	same "$1 ($(cat "$TMP/nplt") by address)" "$TMP/p" "$TMP/o"
}
for f in ip,sym ip,sym,symoff tid,ip,sym,symoff,dso,insn; do
	symbols "-F $f: perf script's lines" "$f" "$f"
done
# +field/-field change the default (time, tid, cpu, ip, sym, symoff, insn, disasm)
symbols "-F -time,-disasm: the default less those, as perf script -F tid,ip,sym,symoff,insn" \
	tid,ip,sym,symoff,insn -time,-disasm
symbols "-F +dso,+insnlen,-time,-disasm" tid,ip,sym,symoff,dso,insnlen,insn +dso,+insnlen,-time,-disasm
# the short form takes its value attached, as perf's does; the long one with '='
sum=$(md5sum <"$TMP/ours.ip")
check_eq "-Fip and --fields=ip are -F ip" "$sum $sum" \
	"$("$XPTRACE" decode -i "$B" --insn -Fip | md5sum) $("$XPTRACE" decode -i "$B" --insn --fields=ip | md5sum)"
# srcline: on its own line under the instruction, the file without its directory
# (inlined code aside, where perf 6.1 and libdw name different files: the program's own)
pscript "$B" ip,sym,srcline -S main >"$TMP/perf"
"$XPTRACE" decode -i "$B" --insn -F ip,sym,srcline --sym main >"$TMP/ours"
same "-F ip,sym,srcline: main's lines and source lines" "$TMP/perf" "$TMP/ours"
check_match "... which name step_basic.c" '^  step_basic\.c:[0-9]+$' "$(sed -n 2p "$TMP/ours")"
# disasm: after two tabs, the disassembly the default line shows
"$XPTRACE" decode -i "$B" --insn --format jsonl >"$TMP/dflt.jsonl"
python3 -c '
import sys, json
for l in sys.stdin:
    r = json.loads(l)
    if "insn" in r: print("%16x\t\t%s" % (int(r["ip"], 16), r["insn"]))' <"$TMP/dflt.jsonl" | sed 's/^/ /' >"$TMP/dflt"
"$XPTRACE" decode -i "$B" --insn -F ip,disasm >"$TMP/ours"
same "-F ip,disasm: the default line's disassembly after two tabs" "$TMP/dflt" "$TMP/ours"

# two threads: each thread's instructions as perf script's
pscript "$T" tid,ip | sort -s -k1,1n >"$TMP/perf"
"$XPTRACE" decode -i "$T" --insn -F tid,ip | sort -s -k1,1n >"$TMP/ours"
same "two threads, -F tid,ip: each thread's instructions in order" "$TMP/perf" "$TMP/ours"

# jsonl: only the selected keys, in the default line's order
check_eq "jsonl -F ip: one key" '{"ip":"0x7ffff7fe4b70"}' \
	"$("$XPTRACE" decode -i "$B" --insn -F ip --format jsonl | head -1)"
check_eq "jsonl -F ip: perf script's addresses" "$(awk '{print $1}' "$TMP/perf.ip" | md5sum)" \
	"$("$XPTRACE" decode -i "$B" --insn -F ip --format jsonl | sed 's/{"ip":"0x\(.*\)"}/\1/' | md5sum)"
"$XPTRACE" decode -i "$B" --insn -F insnlen,dso,ip,pid,comm,insn --format jsonl >"$TMP/j"
check_eq "jsonl -F insnlen,dso,ip,pid,comm,insn: those keys on every line, in order" \
	"pid comm ip dso insnlen bytes" "$(python3 -c '
import sys, json
print(" ".join(sorted({" ".join(json.loads(l)) for l in open(sys.argv[1])})))' "$TMP/j")"
check_eq "... their values, perf script's" \
	"$(pscript "$B" comm,pid,ip,dso,insnlen,insn | md5sum)" "$(python3 -c '
import sys, json
for l in open(sys.argv[1]):
    r = json.loads(l)
    print("%16s %5d  %16x (%s) ilen: %d insn: %s" % (r["comm"], r["pid"], int(r["ip"], 16), r["dso"],
          r["insnlen"], r["bytes"]))' "$TMP/j" | md5sum)"
# (-F leaves out the markers of enables and disables, as perf script does; gaps stay)
check_eq "jsonl -F with the default's fields: the default's instruction lines, byte for byte" \
	"$(grep -v '"event":"\(enabled\|disabled\|end\)"' "$TMP/dflt.jsonl" | md5sum)" \
	"$("$XPTRACE" decode -i "$B" --insn --format jsonl -F time,tid,cpu,ip,sym,symoff,insn,disasm | md5sum)"
check_eq "jsonl -F +srcline is --srcline" \
	"$("$XPTRACE" decode -i "$B" --insn --format jsonl --srcline | grep -v '"event"' | md5sum)" \
	"$("$XPTRACE" decode -i "$B" --insn --format jsonl -F +srcline | md5sum)"
check_eq "jsonl -F sym: the name without offset" '{"sym":"_start"}' \
	"$("$XPTRACE" decode -i "$B" --insn -F sym --format jsonl | head -1)"

# mistakes: usage errors (exit 2) that say what is valid
check_exit "-F bogus: exit 2" 2 "$XPTRACE" decode -i "$B" --insn -F ip,bogus
check_match "... naming it and the valid fields" \
	"unknown field 'bogus' \(the fields: comm, tid, pid, time, cpu, ip, sym, symoff, dso, srcline, insnlen, insn, disasm\)" \
	"$(cat "$TMP/.err")"
check_exit "-F ip,+sym (both forms): exit 2" 2 "$XPTRACE" decode -i "$B" --insn -F ip,+sym
check_exit "-F ip,symoff (no sym): exit 2" 2 "$XPTRACE" decode -i "$B" --insn -F ip,symoff
check_exit "-F '': exit 2" 2 "$XPTRACE" decode -i "$B" --insn -F ''
check_exit "-F on --blocks: exit 2" 2 "$XPTRACE" decode -i "$B" --blocks -F ip
check_match "... it applies to --insn" "does not apply to --blocks \(it does to --insn\)" "$(cat "$TMP/.err")"
check_match "--help names -F, --fields" "^  -F, --fields LIST " "$("$XPTRACE" decode --help)"
