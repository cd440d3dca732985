#!/bin/bash
# Merged event/sample call trees on real recordings of issue 12's worked example
# (tests/progs/merged.c): (a) a step trace, exact everywhere; (b) `record --probe
# C,A,B -g`: C, A and B exact from their probes, X (not probed) a sampled node.
# Oracles: the example's own structure (Lvl, RL, Calls of every node), perf script's
# probe timestamps for the exact times, binomial sampling error for X's share.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
cd "$TMP"

# The example's tree below C: path lvl-offset rl calls [units] (compared in path order:
# siblings come by Cum, and a loaded machine can stretch C;A past C;B)
expected="C 0 1 1 3 19
C;B 1 1 1 2 9
C;B;A 2 1 1 3 7
C;B;A;B 3 2 1 2 3
C;B;A;B;A 4 2 1 1 1
C;B;A;X 3 1 1 1 1
C;A 1 1 1 3 7
C;A;B 2 1 2 3 4
C;A;B;B 3 2 1 1 1"

# shape JSONL [SAMPLED_X]: the subtree under C as "path lvl-offset rl calls base cum off",
# in the expected's order; X's calls printed as "-" when it is a sampled node; off: the
# node's time switched out, its [off-CPU] child (not a row here).
shape() {
	python3 - "$1" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
c = [r for r in rows if r["name"] == "C" and not r.get("sampled")]
if len(c) != 1:
    sys.exit("no single C node")
top = len(c[0]["path"]) - 1
# time: base_ns and cum_ns; other metrics: base and cum
b, s = ("base_ns", "cum_ns") if "base_ns" in rows[0] else ("base", "cum")
off = {tuple(r["path"][:-1]): r[b] for r in rows if r["name"] == "[off-CPU]"}
for r in rows:
    p = r["path"][top:]
    if r["path"][:top + 1] != c[0]["path"] or r["name"] == "[off-CPU]":
        continue
    calls = "-" if r["calls"] is None else r["calls"]
    print(";".join(p), r["lvl"] - c[0]["lvl"], r["rl"], calls, r[b], r[s], off.get(tuple(r["path"]), 0))
EOF
}

# --- (a) a step trace: exact, 2000 iterations a unit ---
setarch -R "$XPTRACE" record -q --mode step -o st -- "$PROGS/merged" 2000 >/dev/null 2>&1
check_eq "step: record exits 0" 0 $?
"$XPTRACE" decode -i st --calltree --format jsonl >st.jsonl 2>st.err
shape st.jsonl >st.shape
check_eq "step: the example's tree below C (Lvl, RL, Calls; X exact)" "$expected" \
	"$(python3 - st.shape <<'EOF'
import sys
rows = {l.split()[0]: l.split() for l in open(sys.argv[1])}
order = ["C", "C;B", "C;B;A", "C;B;A;B", "C;B;A;B;A", "C;B;A;X", "C;A", "C;A;B", "C;A;B;B"]
base = {"C": 3, "C;B": 2, "C;B;A": 3, "C;B;A;B": 2, "C;B;A;B;A": 1, "C;B;A;X": 1, "C;A": 3, "C;A;B": 3, "C;A;B;B": 1}
cum = {"C": 19, "C;B": 9, "C;B;A": 7, "C;B;A;B": 3, "C;B;A;B;A": 1, "C;B;A;X": 1, "C;A": 7, "C;A;B": 4, "C;A;B;B": 1}
unit = int(rows["C"][4]) / 3
for p in order:
    r = rows.get(p)
    if not r:
        print(p, "missing"); continue
    # a unit is 2000 iterations of one loop (6 instructions): the rest is call and
    # return code, < 1 % of a unit
    b = round(int(r[4]) / unit, 2); c = round(int(r[5]) / unit, 2)
    ub = base[p] if abs(b - base[p]) < 0.01 * base[p] + 0.01 else b
    uc = cum[p] if abs(c - cum[p]) < 0.01 * cum[p] + 0.01 else c
    print(p, r[1], r[2], r[3], ub, uc)
EOF
)"
check_match "step: a unit is 2000 x 6 instructions (C's Base / 3)" '^C 0 1 1 360[0-9][0-9] ' "$(head -1 st.shape)"

# --- (b) probes on C, A, B with 4 kHz cpu-clock sampling; X is not probed ---
# Probes are cpu-wide: their breakpoints go into every process that maps the file while
# they are armed, so merged, which other suites step-trace at the same time, is probed
# as a copy of its own.
mkdir own
cp "$PROGS/merged" own/
"$XPTRACE" record -q -m sample -F 4000 -g --probe C,A,B -o pr -- own/merged >pr.out 2>&1
check_eq "probe: record exits 0" 0 $?
# raw times here (the probes' cost not subtracted): they must equal perf's timestamps
"$XPTRACE" decode -i pr --calltree --no-compensate --format jsonl >pr.jsonl 2>pr.err
check_match "probe: the tree is merged and timed" '^# merged tree: time, total [0-9]+\.[0-9]{3} (s|ms|us)$' \
	"$("$XPTRACE" decode -i pr --calltree 2>&1 | head -1)"
shape pr.jsonl >pr.shape
check_eq "probe: the example's tree below C (Lvl, RL, Calls exact; X sampled)" \
	"$(echo "$expected" | awk '{ print $1, $2, $3, ($1 == "C;B;A;X" ? "-" : $4) }' | sort)" \
	"$(awk '{ print $1, $2, $3, $4 }' pr.shape | sort)"
check_match "probe: X is marked sampled in text" '^  [ 0-9]+ +1 +- +[0-9.]+ +[0-9.]+ +merged +\+X$' \
	"$("$XPTRACE" decode -i pr --calltree 2>&1)"

# The exact times from perf's view of the same probe hits: a stack of entries, the time
# between a thread's events charged to the function on top (what the tree does), X's
# time inside A's since X is not probed; a node's Base and the time it was switched out
# (its [off-CPU] child) together.
perf script -i pr/perf.data -F tid,time,event --ns 2>/dev/null | grep probe_xptrace >pr.hits
python3 - pr.hits pr.shape <<'EOF' >pr.check
import sys
stack, last, base, cum, start = [], None, {}, {}, {}
for line in open(sys.argv[1]):
    tid, t, ev = line.split()[:3]
    t = int(t.rstrip(":").replace(".", ""))
    ev = ev.rstrip(":").split(":", 1)[1]
    if stack and last is not None:
        key = ";".join(stack)
        base[key] = base.get(key, 0) + t - last
    last = t
    if ev.endswith("__return"):
        key = ";".join(stack)
        cum[key] = cum.get(key, 0) + t - start[key].pop()
        stack.pop()
    else:
        stack.append(ev)
        start.setdefault(";".join(stack), []).append(t)
rows = {l.split()[0]: [int(x) if x.lstrip("-").isdigit() else x for x in l.split()[1:]] for l in open(sys.argv[2])}
bad = []
for key in cum:
    r = rows.get(key)
    exp_base = base.get(key, 0)
    if not r or r[4] != cum[key] or r[3] + r[5] + (rows["C;B;A;X"][3] if key == "C;B;A" else 0) != exp_base:
        bad.append("%s: perf base %d cum %d, xptrace %s" % (key, exp_base, cum[key], r))
print("ok" if not bad and len(cum) == 8 else "; ".join(bad) or "nodes: %d" % len(cum))
EOF
check_eq "probe: Base and Cum of every probed node equal the times of perf script's probe hits (to the ns)" \
	"ok" "$(cat pr.check)"

# X gets the share of that A's exact time its samples had: A spins 3 units, X 1, so
# X's share is 1/4 up to sampling error; n samples fell in A or X there (--metric
# samples), the tolerance is 4 standard deviations of a binomial share, sqrt(p(1-p)/n).
"$XPTRACE" decode -i pr --calltree --no-compensate --metric samples --format jsonl >prs.jsonl 2>/dev/null
shape prs.jsonl >prs.shape
check_eq "probe: X's time share under C;B;A is 1/4 within 4 sigma of sampling error" "ok" \
	"$(python3 - pr.shape prs.shape <<'EOF'
import math, sys
t = {l.split()[0]: l.split() for l in open(sys.argv[1])}
s = {l.split()[0]: l.split() for l in open(sys.argv[2])}
x, a = int(t["C;B;A;X"][4]), int(t["C;B;A"][4])
n = int(s["C;B;A;X"][4]) + int(s["C;B;A"][4])
share, tol = x / (x + a), 4 * math.sqrt(0.25 * 0.75 / max(n, 1))
print("ok" if n >= 20 and abs(share - 0.25) <= tol else "share %.3f, n %d, tolerance %.3f" % (share, n, tol))
EOF
)"

# --routines and --arcs read the same tree: A's Calls 3 (recursion included), B's 5
# (rows in name order: the routines' order follows their times, which the machine's
# load can swap)
check_eq "probe: --routines Calls of C, A, B" "A 3
B 5
C 1" "$("$XPTRACE" decode -i pr --routines --format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"] in ("C", "A", "B"):
        print(r["name"], r["calls"])' | sort)"
check_eq "probe: --arcs: A's callers C (1 call) and B (2), callees B (3) and X (sampled)" \
	"caller C 1
caller B 2
callee X None
callee B 3" "$("$XPTRACE" decode -i pr --arcs --format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["routine"] == "A" and r["role"] != "self" and r["name"] != "[off-CPU]":
        print(r["role"], r["name"], r["calls"])' | sort -k1,1r -k2,2r)"

# Compensation (the default): a probed node's Base loses its calls x the calibrated
# cost inside a call, plus its probed children's calls x the cost in the caller
# (clamped at 0); checked on the probed leaves (no children), from --probes' figures.
"$XPTRACE" decode -i pr --calltree --format jsonl >prc.jsonl 2>/dev/null
shape prc.jsonl >prc.shape
cal=$("$XPTRACE" decode -i pr --probes --format jsonl 2>/dev/null | head -1)
check_match "probe: the recording carries a calibration" '"calibration":[{]' "$cal"
check_eq "probe: compensated Base of the probed leaves = raw - calls x the cost inside a call" "ok" \
	"$(python3 - pr.shape prc.shape "$cal" <<'EOF'
import json, sys
raw = {l.split()[0]: l.split() for l in open(sys.argv[1])}
comp = {l.split()[0]: l.split() for l in open(sys.argv[2])}
cal = json.loads(sys.argv[3])["calibration"]
callee = [v for k, v in cal.items() if "callee" in k][0]
bad = []
for p in ("C;B;A;B;A", "C;A;B;B"):
    want = max(int(raw[p][4]) - int(raw[p][3]) * callee, 0)
    if int(comp[p][4]) != want:
        bad.append("%s: raw %s, compensated %s, want %d" % (p, raw[p][4], comp[p][4], want))
print("ok" if not bad else "; ".join(bad))
EOF
)"

# --- (c) the same program as compilers build it: X, a leaf, has no frame of its own
# (tests/progs/merged_leaf.c), so the frame-pointer chain of a sample in X skips A.  X
# is still a sampled node under C;B;A, with every sample whose IP perf puts in X.
"$XPTRACE" record -q -m sample -F 4000 -g --probe C,A,B -o lf -- "$PROGS/merged_leaf" >/dev/null 2>&1
check_eq "frameless leaf: record exits 0" 0 $?
"$XPTRACE" decode -i lf --calltree --metric samples --format jsonl >lf.jsonl 2>/dev/null
shape lf.jsonl >lf.shape
check_eq "frameless leaf: the example's tree below C (X sampled under C;B;A)" \
	"$(echo "$expected" | awk '{ print $1, $2, $3, ($1 == "C;B;A;X" ? "-" : $4) }' | sort)" \
	"$(awk '{ print $1, $2, $3, $4 }' lf.shape | sort)"
nx=$(perf script -i lf/perf.data -F event,ip,sym -G 2>/dev/null | awk '$1 == "cpu-clock:" && $3 == "X"' | wc -l)
check_eq "frameless leaf: X's samples are perf's samples in X ($nx)" "$nx" \
	"$(awk '$1 == "C;B;A;X" { print $5 }' lf.shape)"
check "frameless leaf: X has samples" test "$nx" -gt 0

# --- (d) the frames above the outermost probe come from its entry hit's callchain:
# C hangs below the callers perf shows for that hit (main, __libc_start_call_main), not
# at a root of its own, and no node is a junk frame (an address in no mapping, read
# where a frame-pointer walk left the stack).
above=$(perf script -i pr/perf.data -F event,ip,sym 2>/dev/null | awk '
	/probe_xptrace:C: *$/ { p = 1; next } p && NF == 2 { s = s ? $2 ";" s : $2 } p && NF == 0 { p = 0; done = 1 }
	END { print s }')
check_eq "above the probes: C's path is its entry's callchain, root first" "$above" \
	"$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["name"] == "C" and not r.get("sampled"):
        print(";".join(r["path"]))' pr.jsonl)"
check_eq "above the probes: no junk frame (a name that is a bare address)" "" \
	"$(python3 -c '
import json, re, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if re.match(r"^\+?0x[0-9a-f]+$", r["name"]):
        print(r["path"])' pr.jsonl)"
# A thread pool started late (tests/progs/late_threads: 3 workers, 200 calls of work
# each): each worker's 200 exact calls below its own sampled frames.
"$XPTRACE" record -q -m sample -g --probe work -o lt -- "$PROGS/late_threads" 100 >/dev/null 2>&1
check_eq "late threads: 200 calls of work under each worker, below start_thread" \
	"start_thread;worker_0;work 200
start_thread;worker_1;work 200
start_thread;worker_2;work 200" "$("$XPTRACE" decode -i lt --calltree --format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"] == "work":
        print(";".join(r["path"]), r["calls"])' | sort)"

# --- (e) callgrind of a merged tree: A probed alone is the outermost probe twice (C;A,
# C;B;A), each activation an edge from its sampled caller, so callgrind_annotate's
# inclusive time of A and of C equals their Cum in --functions (was 48 % against 92 %
# when the top activations had no caller edge).
if command -v callgrind_annotate >/dev/null; then
	"$XPTRACE" record -q -m sample -g --probe A -o ca -- own/merged >/dev/null 2>&1
	"$XPTRACE" decode -i ca --calltree --format callgrind >ca.cg 2>/dev/null
	incl=$(callgrind_annotate --inclusive=yes ca.cg 2>/dev/null | awk '
		NF > 1 && ($NF ~ /:(A|C)$/ || $(NF-1) ~ /:(A|C)$/) { f = ($NF ~ /^\[/) ? $(NF-1) : $NF; sub(/.*:/, "", f)
			t = $5; gsub(",", "", t); if (t > m[f]) m[f] = t }
		END { print "A", m["A"]; print "C", m["C"] }')
	check_eq "callgrind: inclusive time of A and C = their Cum in --functions" \
		"$("$XPTRACE" decode -i ca --functions --format jsonl 2>/dev/null | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r["name"] in ("A", "C"):
        print(r["name"], r["cum_ns"])' | sort)" "$incl"
fi

# --- (f) wall time and cpu time kept apart (tests/progs/wallcpu: main sleeps 300 ms,
# spins 40 ms of cpu in hot, then slow sleeps 200 ms and spins 20 ms; slow probed): the
# time a thread was switched out is an [off-CPU] node under the node it was in, exactly
# the thread's switch-out to switch-in intervals that perf shows; a sampled node (hot)
# gets on-cpu time only, not main's sleep spread over the few samples outside the probes.
"$XPTRACE" record -q -m sample -g --probe slow -o oc -- "$PROGS/wallcpu" 300 >/dev/null 2>&1
"$XPTRACE" decode -i oc --calltree --format jsonl >oc.jsonl 2>/dev/null
perf script -i oc/perf.data --show-switch-events -F tid,time,event --ns 2>/dev/null >oc.perf
check_eq "off-CPU: under slow and outside the probes, perf's switch intervals (to the ns)" "ok" \
	"$(python3 - oc.perf oc.jsonl <<'PY'
import json, sys
inside = outside = 0
out_at = entry = None
for line in open(sys.argv[1]):
    f = line.split()
    t = int(f[1].rstrip(":").replace(".", ""))
    if "probe_xptrace:slow:" in line:
        entry = t
    elif "probe_xptrace:slow__return:" in line:
        entry = None
    elif "PERF_RECORD_SWITCH" in line and "OUT" in line:
        out_at = t
    elif "PERF_RECORD_SWITCH" in line and "IN" in line and out_at is not None:
        if entry is not None:
            inside += t - out_at
        else:
            outside += t - out_at
        out_at = None
got = {}
for l in open(sys.argv[2]):
    r = json.loads(l)
    if r["name"] == "[off-CPU]":
        got["slow" if "slow" in r["path"] else "root"] = r["base_ns"]
want = {"slow": inside, "root": outside}
print("ok" if got == want and inside >= 200000000 and outside >= 300000000 else "perf %s, xptrace %s" % (want, got))
PY
)"
hot=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["name"] == "hot":
        print(r["cum_ns"] // 1000000)' oc.jsonl)
check "off-CPU: hot's time ($hot ms) is its 40 ms of cpu, not main's 300 ms sleep (< 2 x 40 ms)" \
	test "${hot:-999}" -lt 80

# --- (g) compensation says where it cannot be trusted (tests/progs/compensate: A 2 ms
# of its own, B 8 ms calling P, a few ns, 2000 times; all three probed): each event
# node's error bound is its calls x a probed call's cost (the header's two figures), and
# a node whose Cum is under 10 x that (P) is marked ~ in text, the others (A, B) not.
"$XPTRACE" record -q -m sample -g --probe A,B,P -o cp -- "$PROGS/compensate" >/dev/null 2>&1
"$XPTRACE" decode -i cp --calltree >cp.txt 2>/dev/null
"$XPTRACE" decode -i cp --calltree --format jsonl >cp.jsonl 2>/dev/null
cost=$(sed -n 's/^# probe overhead compensated: \([0-9]*\) ns per probed call in its caller, \([0-9]*\) ns in itself.*/\1 \2/p' cp.txt)
check_eq "compensation bounds: error_ns = calls x (caller + callee cost); P flagged, A and B not" \
	"A 1 ok False
B 1 ok False
P 2000 ok True" "$(python3 - cp.jsonl $cost <<'PY'
import json, sys
cost = int(sys.argv[2]) + int(sys.argv[3])
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["name"] in ("A", "B", "P") and not r["sampled"]:
        print(r["name"], r["calls"], "ok" if r.get("error_ns") == r["calls"] * cost else r.get("error_ns"),
              r["error_ns"] * 10 > r["cum_ns"])
PY
)"
check_match "compensation bounds: text marks P's Cum with ~ and says why" \
	'^# ~ before a Cum: the function takes under 10 x what a probed call costs' "$(cat cp.txt)"
check_match "compensation bounds: P's row" '^ +[0-9]+ +1 +2000 +[0-9.]+ +~[0-9.]+ +[^ ]+ +P$' "$(cat cp.txt)"
check_match "compensation bounds: B's row unmarked" '^ +[0-9]+ +1 +1 +[0-9.]+ +[0-9.]+ +[^ ]+ +B$' "$(cat cp.txt)"
