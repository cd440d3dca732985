#!/bin/bash
# xptrace selftest on this machine: sample and step checks run and pass, pt and lbr are
# skipped with the reason info gives; the JSON report; and its checks can fail: an
# xptrace whose decode drops one instruction and miscounts one call (a wrapper around
# the real one) makes the step checks FAIL and the command exit 1.
. "$(dirname "$0")/../lib.sh"

"$XPTRACE" selftest --format jsonl --keep "$TMP/k" >"$TMP/st.jsonl" 2>"$TMP/st.err"
check_eq "selftest passes here (exit 0)" 0 "$?"
st() {	# the status of check $2 of mode $1
	python3 -c 'import json, sys
for l in open(sys.argv[1]):
    j = json.loads(l)
    if j["type"] == "check" and j["mode"] == sys.argv[2] and j["check"] == sys.argv[3]: print(j["status"], j["detail"])' \
		"$TMP/st.jsonl" "$1" "$2"
}
for c in "sample split" "sample perf-report" "sample perf-recorded split" "sample perf-recorded report" \
	"step insn-stream" "step calls"; do
	check_match "selftest: $c passes" "^PASS " "$(st ${c%% *} "${c#* }")"
done
check_match "step insn-stream: the stream equals perf script's, thread by thread" \
	"^PASS [0-9]+ instructions in 3 threads, identical to perf script" "$(st step insn-stream)"
check_match "pt skipped with info's reason" "^SKIP no intel_pt PMU" "$(st pt mode)"
check_match "lbr skipped with info's reason" "^SKIP .*(PMU|ENOENT)" "$(st lbr mode)"
check_eq "summary: 6 passed, 0 failed, 2 skipped" "6 0 2" "$(python3 -c 'import json, sys
j = [json.loads(l) for l in open(sys.argv[1])][-1]
print(j["passed"], j["failed"], j["skipped"])' "$TMP/st.jsonl")"
check_match "machine line: kernel, perf, libipt, capstone, modes" \
	'"type":"machine".*"kernel":"[^"]+".*"perf":"perf version [^"]+".*"libipt":"2\.[0-9.]+".*"capstone":"[0-9.]+".*"sample":true.*"step":true' \
	"$(grep '"type":"machine"' "$TMP/st.jsonl")"
check "--keep: the traces are kept" test -f "$TMP/k/step-exact/perf.data"

cat >"$TMP/bad-xptrace" <<EOF
#!/bin/bash
# decode --insn loses its 1000th instruction; --functions counts st_tick once less
if [ "\$1" = decode ] && [[ " \$* " == *" --insn "* ]]; then
	"$XPTRACE" "\$@" | sed '1000d'; exit \${PIPESTATUS[0]}
elif [ "\$1" = decode ] && [[ " \$* " == *" --functions "* ]]; then
	"$XPTRACE" "\$@" | sed 's/"calls":1000,\(.*"name":"st_tick"\)/"calls":999,\1/'; exit \${PIPESTATUS[0]}
fi
exec "$XPTRACE" "\$@"
EOF
chmod +x "$TMP/bad-xptrace"
"$XPTRACE" selftest --mode step --xptrace "$TMP/bad-xptrace" >"$TMP/bad.txt" 2>&1
check_eq "a corrupted decode: exit 1" 1 "$?"
check_match "a corrupted decode: the stream check fails" "^FAIL +step +insn-stream .*the sequences differ" "$(cat "$TMP/bad.txt")"
check_match "a corrupted decode: the calls check fails" "^FAIL +step +calls +calls: st_tick 999 \(expected 1000\)" "$(cat "$TMP/bad.txt")"
check_match "text summary" "^selftest: 0 passed, 2 failed, 0 skipped$" "$(tail -1 "$TMP/bad.txt")"
check_exit "--mode bogus: usage error" 2 "$XPTRACE" selftest --mode bogus
check_exit "--format xml: usage error" 2 "$XPTRACE" selftest --format xml
# nothing tested is not a pass: --mode pt where there is no PT skips its only check
if "$XPTRACE" info 2>/dev/null | grep -q '^ *pt *unavailable'; then
	check_exit "--mode pt without PT: every check skipped, exit 1" 1 "$XPTRACE" selftest --mode pt
	check_match "... saying nothing was tested" "^selftest: 0 passed, 0 failed, 1 skipped$" "$(tail -1 "$TMP/.out")"
	check_eq "... on stderr, why" "xptrace: selftest: nothing was tested: every check was skipped (run it where the mode exists, or without --mode)" \
		"$(cat "$TMP/.err")"
else
	ok "--mode pt runs here: nothing to skip # SKIP"
fi
