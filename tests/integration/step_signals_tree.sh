#!/bin/bash
# Call trees of programs whose signal handlers run (record --mode step, decoded by the
# shared PT path): a handler's frame goes above the code it interrupted, and sigreturn
# goes back to that frame instead of entering it again.  Asynchronous signals (SIGALRM
# in a loop: FUP + TIP into the handler), synchronous ones (raise: tracing resumes at
# the handler after tgkill), nested handlers on a sigaltstack.  Exact counts, checked
# against perf's calls and interrupts (perf script --itrace=cr) where perf has them.
. "$(dirname "$0")/../lib.sh"

rec() {	# $1 program
	"$XPTRACE" record --mode step -o "$TMP/$1" -- "$PROGS/$1" >"$TMP/$1.out" 2>"$TMP/$1.err"
	check_eq "$1: step record exits 0" 0 "$?"
	perf script -i "$TMP/$1/perf.data" --itrace=cr -F tid,flags,callindent >"$TMP/$1.perf" 2>/dev/null
}
calls() {	# $1 program, $2 function: its Calls in --functions
	"$XPTRACE" decode -i "$TMP/$1" --functions --percent-limit 0 2>/dev/null | awk -v f="$2" '$NF == f { print $1 }'
}
perf_count() {	# $1 program, $2 perf's flags (call, "hw int"), $3 function
	awk -v k="$2" -v f="$3" '{ n = split(k, w, " "); ok = 1
		for (i = 1; i <= n; i++) if ($(i + 1) != w[i]) ok = 0
		if (ok && $(n + 2) == f) c++ } END { print c + 0 }' "$TMP/$1.perf"
}
# (real calls: ld.so's dfs_traversal recurses through dfs_traversal.part.0 into its inlined
# self, RL 2 with inline frames)
max_rl() {	# $1 program, [$2 function]: the largest RL in --calltree --no-inline (of $2's nodes)
	"$XPTRACE" decode -i "$TMP/$1" --calltree --no-inline --percent-limit 0 2>/dev/null |
		awk -v f="${2:-}" '$1 ~ /^[0-9]+$/ && (f == "" || $NF == f) && $2 > m { m = $2 } END { print m + 0 }'
}
cg_calls() {	# $1 program, $2 function: its calls= in the per-instruction callgrind profile
	[ -s "$TMP/$1.cg" ] || "$XPTRACE" decode -i "$TMP/$1" --blocks --format callgrind >"$TMP/$1.cg" 2>/dev/null
	python3 "$(dirname "$0")/lib/cg_calls.py" "^$2\$" <"$TMP/$1.cg" | awk '{ print $2 }'
}
tree_sum() {	# $1 program, $2 function: Calls over its --calltree nodes
	"$XPTRACE" decode -i "$TMP/$1" --calltree --percent-limit 0 2>/dev/null |
		awk -v f="$2" '$1 ~ /^[0-9]+$/ && $NF == f { c += $3 } END { print c + 0 }'
}

# ---------------------------------------------------------------- SIGALRM in loop()
rec sig_alarm
check_eq "alarm: program output" "alarm 1" "$(cat "$TMP/sig_alarm.out")"
# perf: "hw int" into handler (FUP + TIP: it interrupted loop), "tr strt" into it (a
# signal that came due in a syscall, or at the end of sigreturn, runs as the kernel
# returns to user code)
ints=$(perf_count sig_alarm "hw int" handler)
entries=$((ints + $(perf_count sig_alarm "tr strt" handler)))
# the interrupts that hit loop (a few hit main's own loop around it)
in_loop=$(perf script -i "$TMP/sig_alarm/perf.data" --itrace=cr -F flags,ip,sym,addr 2>/dev/null |
	grep -c 'hw int .* loop => .* handler$')
check_match "alarm: perf sees interrupts into handler" "^[1-9][0-9]*$" "$ints"
check_eq "alarm: loop called 5 times (perf: $(perf_count sig_alarm call loop))" "5 5" \
	"$(calls sig_alarm loop) $(perf_count sig_alarm call loop)"
check_eq "alarm: handler called once per entry perf sees" "$entries" "$(calls sig_alarm handler)"
check_eq "alarm: no call tree node is recursive (RL 1)" 1 "$(max_rl sig_alarm)"
# where a handler's frame goes: above loop for every interrupt of loop at least (a
# signal pending at sigreturn interrupted loop too; one due in main's own code or
# syscalls, rarely, is above them)
check_eq "alarm: main -> loop (5 calls) -> handler (at least the $in_loop interrupts of loop)" "5 yes" \
	"$("$XPTRACE" decode -i "$TMP/sig_alarm" --calltree --format jsonl --percent-limit 0 2>/dev/null |
		python3 -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin]
loop = sum(r["calls"] for r in rows if r["path"][-2:] == ["main", "loop"])
h = sum(r["calls"] for r in rows if r["path"][-3:] == ["main", "loop", "handler"])
print(loop, "yes" if h >= int(sys.argv[1]) else "no: %d" % h)' "$in_loop")"
"$XPTRACE" decode -i "$TMP/sig_alarm" --calls --sym loop >"$TMP/alarm.calls" 2>&1
check_eq "alarm: --calls --sym loop: 5 loops, at least loop's interrupts' handlers inside them" "5 yes 5" \
	"$(grep -c '  loop() {$' "$TMP/alarm.calls") $(awk -v n="$in_loop" '/^ .*[0-9]    handler\(\);$/ { c++ }
		END { print (c + 0 >= n + 0 ? "yes" : "no: " c) }' "$TMP/alarm.calls") $(grep -c '} /\* loop \*/$' "$TMP/alarm.calls")"

# the per-instruction callgrind profile has the same calls: the handler called from
# what it interrupted, loop never called again by sigreturn, the trampoline in the
# signal's frame with no call of its own (perf has none either)
check_eq "alarm: callgrind calls=: loop 5, handler once per entry, __restore_rt 0" "5 $entries 0" \
	"$(cg_calls sig_alarm loop) $(cg_calls sig_alarm handler) $(cg_calls sig_alarm __restore_rt)"
check_eq "alarm: callgrind_annotate's inclusive cost of loop is the tree's" \
	"$("$XPTRACE" decode -i "$TMP/sig_alarm" --functions --percent-limit 0 2>/dev/null | awk '$NF == "loop" { print $3 }')" \
	"$(callgrind_annotate --inclusive=yes --threshold=100 "$TMP/sig_alarm.cg" 2>/dev/null |
		awk '/:loop \[/ { gsub(",", "", $1); print $1 }')"

# ---------------------------------------------------------------- 25 x raise(SIGUSR1)
rec sig_raise
check_eq "raise: program output" "raise 1" "$(cat "$TMP/sig_raise.out")"
check_eq "raise: raise 25, handler 25, work 25 calls (perf: work $(perf_count sig_raise call work))" \
	"25 25 25 25" "$(calls sig_raise raise) $(calls sig_raise handler) $(calls sig_raise work) $(perf_count sig_raise call work)"
check_eq "raise: callgrind calls=: raise 25, handler 25 (perf's entries: $(perf_count sig_raise "tr strt" handler)), work 25" \
	"25 $(perf_count sig_raise "tr strt" handler) 25" \
	"$(cg_calls sig_raise raise) $(cg_calls sig_raise handler) $(cg_calls sig_raise work)"
check_eq "raise: no call tree node is recursive (RL 1: no main -> raise -> main zig-zag)" 1 "$(max_rl sig_raise)"
check_eq "raise: the tree's handler nodes hold its 25 calls" 25 "$(tree_sum sig_raise handler)"
"$XPTRACE" decode -i "$TMP/sig_raise" --calls --sym handler >"$TMP/raise.calls" 2>&1
check_eq "raise: --calls --sym handler exits 0" 0 "$?"
check_eq "raise: --calls --sym handler: 25 handlers, each calling work" "25 25" \
	"$(grep -c '  handler() {$' "$TMP/raise.calls") $(grep -c '  work();$' "$TMP/raise.calls")"
"$XPTRACE" decode -i "$TMP/sig_raise" --calls >"$TMP/raise.all" 2>&1
check_eq "raise: --calls: main closes once, after the last handler" "1 yes" \
	"$(grep -c '} /\* main \*/$' "$TMP/raise.all") $(awk '/handler\(\) \{$/ { h = NR } /} \/\* main \*\/$/ { m = NR }
		END { print (m > h && h) ? "yes" : "no" }' "$TMP/raise.all")"

# ---------------------------------------------------------------- nested, sigaltstack
rec sig_nested
check_eq "nested: program output" "nested 1" "$(cat "$TMP/sig_nested.out")"
check_eq "nested: outer 5, inner 5, work 5, raise 10 calls (perf: work $(perf_count sig_nested call work))" \
	"5 5 5 10 5" "$(calls sig_nested outer) $(calls sig_nested inner) $(calls sig_nested work) $(calls sig_nested raise) $(perf_count sig_nested call work)"
check_eq "nested: callgrind calls=: outer 5, inner 5 (perf's entries), work 5, raise 10" \
	"$(perf_count sig_nested "tr strt" outer) $(perf_count sig_nested "tr strt" inner) 5 10" \
	"$(cg_calls sig_nested outer) $(cg_calls sig_nested inner) $(cg_calls sig_nested work) $(cg_calls sig_nested raise)"
check_eq "nested: RL 2 only for outer's own raise (raise inside raise's handler), handlers RL 1" "2 1 1" \
	"$(max_rl sig_nested) $(max_rl sig_nested outer) $(max_rl sig_nested inner)"
"$XPTRACE" decode -i "$TMP/sig_nested" --calls --sym outer --format jsonl >"$TMP/nested.jsonl" 2>&1
check_eq "nested: --calls --sym outer: 5 outers, each with an inner deeper in it" "5 5 5" \
	"$(python3 -c '
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
o = [r for r in rows if r["name"] == "outer"]
i = [r for r in rows if r["name"] == "inner"]
inside = sum(1 for x in i if any(y["start_insns"] < x["start_insns"] <= y["start_insns"] + y["dur_insns"] and
                                 y["depth"] < x["depth"] for y in o))
print(len(o), len(i), inside)' "$TMP/nested.jsonl")"
