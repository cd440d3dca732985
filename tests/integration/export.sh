#!/bin/bash
# decode --calls and the export formats, each checked in the program that consumes it:
#   --calls          against perf script --itrace=cr (order and depth of every call) and
#                    the worked example of tests/progs/merged.c (its calls and units)
#   --format chrome  loaded by speedscope in headless Chromium (tests/integration/lib/browser.js)
#   --format pprof   read by `go tool pprof -top` and `-traces`
#   --format svg     opened in headless Chromium: frame widths measured in the page
# on a step trace (exact), a sample trace and a merged probe+sample trace of merged.c.
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
cd "$TMP"
M=$PROGS/merged
# probes are cpu-wide: their breakpoints go into every process that maps the file, the
# step trace running beside them too, so the probed run is of a copy of its own
mkdir own
cp "$M" own/

# the three recordings at once (the probe one calibrates for a few seconds)
setarch -R "$XPTRACE" record -q --mode step -o st -- "$M" 2000 >st.out 2>&1 &
"$XPTRACE" record -q -m sample -F 4000 -g -o sm -- "$M" >sm.out 2>&1 &
"$XPTRACE" record -q -m sample -F 4000 -g --probe C,A,B -o pr -- own/merged >pr.out 2>&1 &
# return values: tests/progs/retval.c, with its debug info and without
RV="fib,neg,small,ptr,none"
"$XPTRACE" record -q --probe $RV -o rv -- "$PROGS/retval" >rv.out 2>&1 &
objcopy --strip-debug "$PROGS/retval" retval-nodbg
"$XPTRACE" record -q --probe $RV -o rvn -- ./retval-nodbg >rvn.out 2>&1 &
wait
for t in st sm pr rv rvn; do
	check_eq "record $t exits 0 with a trace" "yes" "$([ -s $t/perf.data ] && echo yes || cat $t.out)"
done

# the exports the browser opens: one Chromium for every page (a start costs a second
# or two), in the background while the other checks run
for t in st sm pr; do
	"$XPTRACE" decode -i $t --calls --format chrome -o $t.json 2>$t.cerr
	"$XPTRACE" decode -i $t --calltree --format svg -o $t.svg 2>$t.serr
done
node_ok=""
if [ -d "$XP_ROOT/build/node/node_modules/puppeteer-core" ] && [ -d "$XP_ROOT/build/node/node_modules/speedscope" ] &&
   command -v node >/dev/null && [ -x /usr/bin/chromium ]; then
	node_ok=1
	export NODE_PATH=$XP_ROOT/build/node/node_modules
	timeout 120 node "$XP_ROOT/tests/integration/lib/browser.js" speedscope:st.json:st.png:st.ss \
		speedscope:sm.json:sm.png:sm.ss speedscope:pr.json:pr.png:pr.ss svg:st.svg:st-svg.png:st.sv:C \
		svg:pr.svg:pr-svg.png:pr.sv svg:sm.svg:sm-svg.png:sm.sv >browser.log 2>&1 &
	browser=$!
fi

# ---------------------------------------------------------------- --calls
# order and depth of every call against perf's call lines, per thread; names of code
# without symbols (PLT entries, perf prints "@plt" or an address) are not compared, nor
# perf's depth at a call into such code (perf indents it one more).  A thread whose
# trace starts at a function's first instruction (ld.so's _start after exec) entered
# it: xptrace lists that call (its first, at instruction 0), as the call tree counts it,
# perf does not; printed apart ("+N") and left out of the comparison; perf's calls are real calls
# only: --no-inline
calls_vs_perf() {
	perf script -i "$1/perf.data" --itrace=cr -F tid,flags,callindent 2>/dev/null >"$2.perf"
	"$XPTRACE" decode -i "$1" --calls --no-inline --format jsonl >"$2.jsonl" 2>"$2.err"
	python3 - "$2.perf" "$2.jsonl" <<'EOF'
import json, re, sys
def norm(n):
    return "?" if n.endswith("@plt") or n in ("_init", ".plt") or re.fullmatch(r"(0x)?[0-9a-f]+", n) else n
perf = {}
for l in open(sys.argv[1]):
    f = l.split()
    if f[1:2] != ["call"]:
        continue
    p = l.rstrip("\n").split("call", 1)[1]
    perf.setdefault(int(f[0]), []).append(((len(p) - len(p.lstrip())) // 4, norm(p.strip())))
mine, entries = {}, 0
for r in sorted((json.loads(l) for l in open(sys.argv[2])), key=lambda r: (r["start_insns"], r["depth"])):
    if r["start_insns"] == 0 and r["depth"] == 0 and r["tid"] not in mine:
        entries += 1
        mine[r["tid"]] = []
        continue
    mine.setdefault(r["tid"], []).append((r["depth"], norm(r["name"])))
for tid in sorted(set(perf) | set(mine)):
    a, b = perf.get(tid, []), mine.get(tid, [])
    d0 = a[0][0] - b[0][0] if a and b else 0
    # perf's thread stack keeps the frames a longjmp leaves and drops them later, as
    # returns find their frames below (it pops on returns only); xptrace ends them at
    # the longjmp: after one, only the order of the calls is compared
    bad, jumped = [], False
    for i, (x, y) in enumerate(zip(a, b)):
        if (x[1] != y[1] and "?" not in (x[1], y[1])) or (not jumped and x[0] - d0 != y[0] and x[1] != "?"):
            bad.append((i, x, y))
        jumped = jumped or "longjmp" in x[1]
    print(f"{len(a)} {len(b)}+{entries} {len(bad)} {bad[:3]}")
EOF
}
check_eq "calls: traces/step-basic: perf's 965 calls, same order and depth, and the entry into _start" "965 965+1 0 []" \
	"$(calls_vs_perf "$XP_ROOT/traces/step-basic" basic)"
out=$(calls_vs_perf st st)
check_match "calls: step trace of merged: perf's calls, same order and depth, and the entry into _start" '^([0-9]+) \1\+1 0 \[\]$' "$out"

# the example below C: calls in order, depth, duration in units (2000 iterations of a
# 6-instruction loop; the call and return code is < 1 % of a unit)
expected="C 0 19
A 1 7
B 2 3
B 3 1
B 2 1
B 1 9
A 2 7
B 3 3
A 4 1
X 3 1"
units() {
	python3 -c '
import json, sys
rows = sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda r: (r["start_insns"], r["depth"]))
unit = 12000
for r in rows:
    print(r["name"], r["depth"], round(r["dur_insns"] / unit, 2) if abs(r["dur_insns"] / unit - round(r["dur_insns"] / unit)) > 0.01 * r["dur_insns"] / unit else round(r["dur_insns"] / unit))' "$1"
}
"$XPTRACE" decode -i st --calls --sym C --format jsonl >symc.jsonl 2>symc.err
check_eq "calls --sym C: the example's calls below C, depth and units" "$expected" "$(units symc.jsonl)"
"$XPTRACE" decode -i st --calls --sym C >symc.txt 2>&1
check_eq "calls text: the same calls, uftrace's layout" "$(printf '%s\n' 'C() {' '  A() {' '    B() {' \
	'      B();' '    } /* B */' '    B();' '  } /* A */' '  B() {' '    A() {' '      B() {' '        A();' \
	'      } /* B */' '      X();' '    } /* A */' '  } /* B */' '} /* C */')" \
	"$(grep -v '^#' symc.txt | cut -c42-)"
check_match "calls text: the clock is said (instructions)" "^# calls: the clock counts the thread's instructions" \
	"$(head -1 symc.txt)"
"$XPTRACE" decode -i st --calls --sym C --min-duration 50000 --format jsonl >md.jsonl
check_eq "calls --min-duration 50000: only C, A, B, A (>= 4 units)" "C A B A" \
	"$(python3 -c 'import json,sys; print(" ".join(r["name"] for r in sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda r: r["start_insns"])))' md.jsonl)"
c0=$(python3 -c 'import json,sys; print(min(json.loads(l)["start_insns"] for l in open(sys.argv[1]) if "\"C\"" in l))' symc.jsonl)
"$XPTRACE" decode -i st --calls --time "$c0-$((c0 + 100000))" --format jsonl >tm.jsonl
check_eq "calls --time A-B: the calls starting in [A, B] (here: the clock's instructions)" \
	"$(python3 -c 'import json,sys; print(sum(1 for l in open(sys.argv[1]) if '"$c0"' <= json.loads(l)["start_insns"] <= '"$((c0 + 100000))"'))' st.jsonl)" \
	"$(grep -c . tm.jsonl)"
# a window in ns on the instruction clock matches nothing: said, with what --time counts
t=$("$XPTRACE" decode -i st --insn --format jsonl | python3 -c '
import json, sys
for l in sys.stdin:
    r = json.loads(l)
    if r.get("time"):
        print(r["time"]); break')
check_exit "calls --time in ns on the instruction clock: nothing matched, exit 1" 1 "$XPTRACE" decode -i st --calls --time "$t-"
check_eq "calls --time: says what --time counts here" \
	"xptrace: decode --calls: no calls matched the filters (--time counts instructions on this clock; with --metric time it takes the trace's ns)" \
	"$(cat "$TMP/.err")"
check_exit "calls --metric time --time in ns: the calls from there" 0 "$XPTRACE" decode -i st --calls --metric time --time "$t-"
check_exit "calls --percent-limit: usage error (a stream has no total; --min-duration)" 2 "$XPTRACE" decode -i st --calls --percent-limit 5
check_eq "formats a view cannot write: exit 2, naming the view that can" \
	"2 --calltree cannot be written as chrome: --calls can|2 --calls cannot be written as pprof: --calltree can|2 --calls cannot be written as svg: --calltree can" \
	"$(for a in "--calltree --format chrome" "--calls --format pprof" "--calls --format svg"; do
		# shellcheck disable=SC2086
		m=$("$XPTRACE" decode -i st $a -o /dev/null 2>&1); echo "$? $m"; done | sed 's/^\([0-9]\) xptrace: decode: \(.*\) (see .*/\1 \2/' | paste -sd'|')"
check_exit "calls on a sample trace: no calls to list (exit 2)" 2 "$XPTRACE" decode -i sm --calls
check_exit "calls --sym nothing: nothing matched (exit 1)" 1 "$XPTRACE" decode -i st --calls --sym no_such_fn
tid=$(awk '$1 != "17939" { print $1; exit }' <(perf script -i "$XP_ROOT/traces/step-thread/perf.data" --itrace=cr -F tid 2>/dev/null | sort -u))
"$XPTRACE" decode -i "$XP_ROOT/traces/step-thread" --calls --no-inline --tid "$tid" --format jsonl >tid.jsonl
check_eq "calls --tid: that thread's calls only, as many as perf's" \
	"$(perf script -i "$XP_ROOT/traces/step-thread/perf.data" --itrace=cr -F tid,flags 2>/dev/null | awk -v t="$tid" '$1 == t && $2 == "call"' | wc -l) $tid" \
	"$(grep -c . tid.jsonl) $(python3 -c 'import json,sys; print(*sorted({json.loads(l)["tid"] for l in open(sys.argv[1])}))' tid.jsonl)"

# probes: entries and exits are exact calls with times; C runs once, so its duration is
# the Cum of C in the (uncompensated) tree, which adds the same timestamps another way
"$XPTRACE" decode -i pr --calls --sym C --format jsonl >prc.jsonl 2>prc.err
check_eq "calls on probes: C's calls in order (X, not probed, is not one)" "C 0,A 1,B 2,B 3,B 2,B 1,A 2,B 3,A 4" \
	"$(python3 -c 'import json,sys; print(",".join("%s %d" % (r["name"], r["depth"]) for r in sorted((json.loads(l) for l in open(sys.argv[1])), key=lambda r: (r["start_ns"], r["depth"]))))' prc.jsonl)"
read -r c0 c1 < <(python3 -c 'import json,sys; r=[r for r in map(json.loads, open(sys.argv[1])) if r["name"] == "C"][0]; print(r["start_ns"], r["start_ns"] + r["dur_ns"])' prc.jsonl)
"$XPTRACE" decode -i pr --calls --time "$c0-$c1" --format jsonl >prt.jsonl 2>prt.err
check_eq "calls --time A-B (C's entry to its return): C's calls, nothing else" \
	"$(python3 -c 'import json,sys; print(sorted((r["name"], r["start_ns"], r["dur_ns"]) for r in map(json.loads, open(sys.argv[1]))))' prc.jsonl)" \
	"$(python3 -c 'import json,sys; print(sorted((r["name"], r["start_ns"], r["dur_ns"]) for r in map(json.loads, open(sys.argv[1]))))' prt.jsonl)"
"$XPTRACE" decode -i pr --calls >pr.calls 2>pr.callserr
check_eq "calls text on probes: every START = perf script --ns's time of the entry hit, in order" \
	"$(perf script -i pr/perf.data --ns -F time,event 2>/dev/null | awk '$2 ~ /^probe_xptrace:[A-Z]:$/ { sub(":$", "", $1); print $1 }' | paste -sd' ')" \
	"$(awk '!/^#/ && $1 ~ /^[0-9]+\.[0-9]+$/ && length($1) - index($1, ".") == 9 { print $1 }' pr.calls | paste -sd' ')"
check_eq "calls on probes: C's duration = Cum of C in --calltree --no-compensate" \
	"$("$XPTRACE" decode -i pr --calltree --no-compensate --format jsonl | python3 -c 'import json,sys; print([r.get("cum", r.get("cum_ns")) for r in map(json.loads, sys.stdin) if r["name"] == "C"][0])')" \
	"$(python3 -c 'import json,sys; print([r["dur_ns"] for r in map(json.loads, open(sys.argv[1])) if r["name"] == "C"][0])' prc.jsonl)"

# return values of probes: the return probes' hits carry rax; --calls shows it as the
# function's DWARF type reads it, in hex without debug info, nothing for void
"$XPTRACE" decode -i rv --calls >rv.txt 2>rv.err
# the function column starts at byte 46 whatever the TID's digits (a fresh VM's TIDs have 3)
check_eq "calls: return values as uftrace shows them (fib(5), -3, unsigned char 200, a pointer, void)" \
"$(printf '%s\n' 'fib() {' '  fib() {' '    fib() {' '      fib() {' '        fib() = 1;' '        fib() = 0;' \
	'      } = 1; /* fib */' '      fib() = 1;' '    } = 2; /* fib */' '    fib() {' '      fib() = 1;' '      fib() = 0;' \
	'    } = 1; /* fib */' '  } = 3; /* fib */' '  fib() {' '    fib() {' '      fib() = 1;' '      fib() = 0;' \
	'    } = 1; /* fib */' '    fib() = 1;' '  } = 2; /* fib */' '} = 5; /* fib */' 'neg() = -3;' 'small() = 200;' \
	"ptr() = $(awk '{ print $4 }' rv.out);" 'none();')" "$(grep -v '^#' rv.txt | cut -c46-)"
# perf's dump of every return hit: its time and the AX register it took
perf script -i rv/perf.data -D 2>/dev/null | awk '/PERF_RECORD_SAMPLE/ { t = $2 } /^\.\.\.\. AX / { print t, $3 }' >rv.ax
"$XPTRACE" decode -i rv --calls --format jsonl >rv.jsonl
check_eq "calls jsonl: retval of every call (fib's 15, neg, small, ptr) = perf script -D's AX at its return, as int / unsigned char / pointer" \
	"18 18" "$(python3 - rv.ax rv.jsonl <<'EOF2'
import json, sys
ax = {int(t): int(v, 16) for t, v in (l.split() for l in open(sys.argv[1]))}
def typed(name, v):
    if name in ("fib", "neg"):
        v &= 0xffffffff
        return v - (1 << 32) if v >> 31 else v
    return v & 0xff if name == "small" else v
rows = [json.loads(l) for l in open(sys.argv[2])]
ok = sum(1 for r in rows if "retval" in r and r["retval"] == typed(r["name"], ax[r["start_ns"] + r["dur_ns"]]))
print(ok, sum(1 for r in rows if r["name"] != "none"), *[r for r in rows if r["name"] == "none" and "retval" in r])
EOF2
)"
"$XPTRACE" decode -i rvn --calls >rvn.txt 2>rvn.err
check_eq "calls without debug info: the register as it is, in hex (void functions too)" \
	"} = 0x5; /* fib */ neg() = 0xfffffffd; small() = 0x77c8; none() = 0x" \
	"$(grep -v '^#' rvn.txt | cut -c46- | grep -E '^(} = 0x5;|neg|small|none)' | sed 's/^\(none() = 0x\).*/\1/' | paste -sd' ')"
check_eq "calls: a trace without return registers shows no values (merged.c's probes: void)" "0" \
	"$(grep -c '"retval"' prc.jsonl)"

# ---------------------------------------------------------------- chrome
check_eq "chrome: valid Trace Event JSON; X events = calls, thread names" "10 10 thread_name" "$(python3 -c '
import json, sys
ev = json.load(open("st.json"))["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
c = [json.loads(l) for l in open("st.jsonl")]
print(len([e for e in x if e["name"] in "CABX" and len(e["name"]) == 1]),
      len([r for r in c if r["name"] in "CABX" and len(r["name"]) == 1]),
      " ".join(sorted({e["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"})))')"
# metadata: a process_name per process, a thread_name per thread ("COMM ID"), as perf
# script names the threads of a two-thread step trace; every X event on one of them
"$XPTRACE" decode -i "$XP_ROOT/traces/step-thread" --calls --format chrome -o thr.json
check_eq "chrome: process and thread names and ids = perf script's pid/tid and comm (two threads)" \
	"$(perf script -i "$XP_ROOT/traces/step-thread/perf.data" --itrace=cr -F pid,tid,comm 2>/dev/null | sort -u |
	   awk '{ split($2, i, "/"); if (!(i[1] in p)) { p[i[1]]; print "process", i[1], i[1], $1, i[1] } print "thread", i[1], i[2], $1, i[2] }' | sort)" \
	"$(python3 -c '
import json
ev = json.load(open("thr.json"))["traceEvents"]
names = {(e["pid"], e["tid"]) for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
for e in ev:
    if e["ph"] == "M":
        print(e["name"].split("_")[0], e["pid"], e["tid"], e["args"]["name"])
bad = [e for e in ev if e["ph"] == "X" and (e["pid"], e["tid"]) not in names]
if bad: print("unnamed", bad[:2])' | sort)"
check_eq "chrome: merged trace: probe calls as X events, samples as instant events with stacks" "yes yes" "$(python3 -c '
import json
ev = json.load(open("pr.json"))["traceEvents"]
print("yes" if sum(1 for e in ev if e["ph"] == "X" and e["name"] in ("C", "A", "B")) == 9 else "no",
      "yes" if any(e["ph"] == "i" and e["args"]["stack"].endswith(";X") for e in ev) else "no")')"

# ---------------------------------------------------------------- pprof
if command -v go >/dev/null; then
	# pprof -top's flat% cum% name against --functions' Base% Cum% Name: every function
	# of 1 % or more (in any order: ties are ordered differently), but for names that
	# several functions have (ld.so has two static check_match): pprof adds those up
	# (the same share may round differently: pprof 30.63 %, printf 30.62 % for 30.625)
	top_vs() {
		go tool pprof -top -nodefraction=0 ${3:-} "$1" 2>&1 | python3 -c '
import re, sys
def rows(lines, cols):
    out = {}
    for l in lines:
        f = l.split()
        if len(f) > max(cols) and all(re.fullmatch(r"[0-9.]+%", f[c]) for c in cols[:2]):
            # (a name counted from the end: an inline node, "NAME [inline]", is two fields)
            at = cols[2] - (cols[2] < 0 and f[-1] == "[inline]")
            out.setdefault(" ".join(f[at:]), []).append((float(f[cols[0]][:-1]), float(f[cols[1]][:-1])))
    return out
top = rows(sys.stdin, (1, 4, 5))
fn = rows(open(sys.argv[1]), (3, 4, -1))
# names several functions have (ld.so has two static check_match): pprof adds them up
names = {n for n, v in fn.items() if len(v) == 1 and v[0][0] >= 1} | {n for n, v in top.items() if v[0][0] >= 1 and len(fn.get(n, [])) < 2}
bad = [(n, top.get(n), fn.get(n)) for n in sorted(names)
       if n not in top or n not in fn or any(abs(x - y) > 0.011 for x, y in zip(top[n][0], fn[n][0]))]
print("same" if not bad else bad)' "$2"
	}
	for t in st sm pr; do
		"$XPTRACE" decode -i $t --calltree --format pprof -o $t.pb.gz 2>$t.perr
	done
	"$XPTRACE" decode -i st --functions >st.fn
	check_eq "pprof -top: step trace (instructions): the top functions and percentages of --functions" \
		"same" "$(top_vs st.pb.gz st.fn)"
	"$XPTRACE" decode -i sm --functions --metric samples >sm.fn
	check_eq "pprof -top: sample trace (samples): as --functions --metric samples" "same" "$(top_vs sm.pb.gz sm.fn)"
	"$XPTRACE" decode -i sm --functions >sm.fn2
	check_eq "pprof -top -sample_index=cpu-clock: as --functions (the period)" "same" \
		"$(top_vs sm.pb.gz sm.fn2 -sample_index=cpu-clock)"
	"$XPTRACE" decode -i pr --functions >pr.fn
	check_eq "pprof -top: merged trace (time): as --functions" "same" "$(top_vs pr.pb.gz pr.fn)"
	check_match "pprof: sample types named after the metrics, the program's build-id" \
		"^Build ID: $(perf buildid-list -i sm/perf.data 2>/dev/null | awk '/merged$/ { print $1 }')" \
		"$(go tool pprof -raw sm.pb.gz 2>&1 | head -30; go tool pprof -top sm.pb.gz 2>&1 | head -3)"
	# every mapping: its file with perf's build-id for it, spanning its locations; the
	# program first (pprof's "File:")
	maps_vs() {
		go tool pprof -raw "$1.pb.gz" 2>/dev/null | python3 -c '
import re, sys
bid = dict(l.rstrip("\n").split(" ", 1)[::-1] for l in open(sys.argv[1]) if " " in l)
text = sys.stdin.read()
maps = re.findall(r"^\s*(\d+): 0x0/0x([0-9a-f]+)/0x0 (.+?) ([0-9a-f]{40}) ", text.split("Mappings")[1], re.M)
locs = re.findall(r"^\s*\d+: 0x([0-9a-f]+) M=(\d+) ", text.split("Locations")[1].split("Mappings")[0], re.M)
lim = {m: int(l, 16) for m, l, _, _ in maps}
# (a file perf buildid-list does not list cannot be compared; the program must be)
bad = [f for m, l, f, b in maps if bid.get(f, b) != b or (m == "1" and f not in bid)]
out = [a for a, m in locs if not int(a, 16) < lim.get(m, 0)]
print(maps[0][2].rsplit("/", 1)[-1] if maps else "none", len(maps), "mappings,", len(bad), "build-ids unlike perf,", len(out), "locations outside", *bad, *sorted(bid.items()) if bad else [])' \
			<(perf buildid-list -i "$1/perf.data" 2>/dev/null)
	}
	for t in st sm pr; do
		check_match "pprof: $t: the program's mapping first, every mapping with perf's build-id, spanning its locations" \
			"^merged [0-9]+ mappings, 0 build-ids unlike perf, 0 locations outside$" "$(maps_vs $t)"
	done
	check_match "pprof: sample types samples/count and cpu-clock/nanoseconds" "samples/count(\[dflt\])? cpu-clock/nanoseconds" \
		"$(go tool pprof -raw sm.pb.gz 2>&1 | grep -A1 '^Samples:')"
	# -traces: every stack with its value = every tree node with its Base
	traces_vs() {
		go tool pprof -traces ${3:-} "$1.pb.gz" 2>/dev/null | python3 -c '
import sys, json
got, cur = set(), None
for l in sys.stdin:
    if l.startswith("-----"):
        if cur: got.add((cur[0], tuple(reversed(cur[1]))))
        cur = None
        continue
    f = l.split()
    if not f or l.startswith(("File:", "Build", "Type:", "Duration:")):
        continue
    if cur is None and len(f) >= 2 and f[0].isdigit():
        cur = (int(f[0]), [" ".join(f[1:])])
    elif cur is not None:
        cur[1].append(" ".join(f))
if cur: got.add((cur[0], tuple(reversed(cur[1]))))
want = {(r["base"], tuple(r["path"])) for r in map(json.loads, open(sys.argv[1])) if r["base"]}
print("same" if got == want else f"{len(got)} vs {len(want)}: {sorted(got ^ want)[:3]}")' <("$XPTRACE" decode -i "$1" --calltree --format jsonl ${2:-})
	}
	check_eq "pprof -traces: step trace: the stacks and values of --calltree (Base per path)" "same" "$(traces_vs st)"
	check_eq "pprof -traces: sample trace: the stacks and samples of --calltree --metric samples" "same" \
		"$(traces_vs sm "--metric samples" -sample_index=samples)"
else
	ok "pprof: go missing (mk/deps.sh test installs golang-go) # SKIP"
fi

# ---------------------------------------------------------------- speedscope (the browser ran meanwhile)
if [ -n "$node_ok" ]; then
	wait "$browser"
	check_eq "Chromium ran every page" "0 " "$? $(grep -h '^error' ./*.ss ./*.sv)"
fi

# speedscope's Sandwich table (Self, Total per function) against --functions' Base%, Cum%
# (speedscope rounds to 2 digits)
ss_check() {
	python3 - "$1" "$2" <<'EOF'
import re, sys
rows = {}
blank = 0
for l in open(sys.argv[1]):
    if l.startswith("blank "):
        blank = int(l.split()[1])
    if l.startswith("row "):
        name, total, self = l[4:].rstrip("\n").split("\t")
        pct = lambda s: float(re.search(r"\([<>]?([0-9.]+)%\)", s).group(1))
        rows[name] = (pct(self), pct(total))
fn = {}
for l in open(sys.argv[2]):
    f = l.split()
    if len(f) > 5 and re.fullmatch(r"[0-9.]+%", f[3]):
        fn[f[-1]] = (float(f[3][:-1]), float(f[4][:-1]))
out = []
for n in ("C", "A", "B"):
    if n not in rows:
        out.append(f"{n} missing")
    elif abs(rows[n][0] - fn[n][0]) > 1 or abs(rows[n][1] - fn[n][1]) > 1:
        out.append(f"{n} {rows[n]} vs {fn[n]}")
print("not blank" if blank > 100 else f"blank ({blank})", " ".join(out) or "C A B as --functions")
EOF
}
if [ -n "$node_ok" ]; then
	"$XPTRACE" decode -i st --functions >st.fn
	check_eq "speedscope: step trace: flame chart drawn, C A B with --functions' Base% and Cum%" \
		"not blank C A B as --functions" "$(ss_check st.ss st.fn)"
	"$XPTRACE" decode -i sm --functions --no-inline --metric samples >sm.fn
	# (--calls' sampled-stack track has no inline frames yet)
	check_eq "speedscope: sample trace (sampled-stack track): C A B with --functions' shares" \
		"not blank C A B as --functions" "$(ss_check sm.ss sm.fn)"
	check_eq "speedscope: merged trace: flame chart drawn, the probed C A B listed" "blank 3" \
		"$(awk '/^blank/ { print ($2 > 100 ? "blank" : "BLANK " $2) }' pr.ss) $(grep -c '^row [CAB]	' pr.ss)"
else
	ok "speedscope: chromium, node, speedscope or puppeteer-core missing (mk/deps.sh test installs them) # SKIP"
fi

# ---------------------------------------------------------------- svg
check_eq "svg: well-formed XML with a frame per node drawn" "ok" \
	"$(python3 -c 'import xml.dom.minidom as m; d = m.parse("st.svg"); print("ok" if len(d.getElementsByTagName("g")) > 10 else "few")')"
# frame widths measured in the page against Cum in --calltree: (1200 - 2 x 10) px x Cum / total
# a sample trace's hover: its Samples, and times in a unit (the jsonl's integer ns)
"$XPTRACE" decode -i sm --calltree --format jsonl --percent-limit 0 >sm.ntree
check_eq "svg: sample trace: the top frame's hover gives Samples and its times in a unit, as --calltree" "same" \
	"$(python3 - sm.ntree sm.svg <<'PY'
import json, re, sys
def t(ns):
    for div, u in ((10**9, "s"), (10**6, "ms"), (10**3, "us")):
        if ns >= div:
            return "%.3f %s" % (ns / div, u)
    return "%d ns" % ns
rows = [json.loads(l) for l in open(sys.argv[1])]
top = max((r for r in rows if r["lvl"] == 1), key=lambda r: r["cum_ns"])
total = sum(r["cum_ns"] for r in rows if r["lvl"] == 1)
want = "Base: %s  Cum: %s (%.2f%%)  Samples: %d" % (t(top["base_ns"]), t(top["cum_ns"]), 100 * top["cum_ns"] / total, top["samples"])
titles = re.findall(r"<title>" + re.escape(top["name"]) + r" \([^)]*\)\n([^<]*)</title>", open(sys.argv[2]).read())
print("same" if want in titles else "want %r, have %r" % (want, titles[:2]))
PY
)"
svg_check() {
	python3 - "$1" "$2" <<'EOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[2])]
for r in rows:	# times are cum_ns
    r["cum"] = r.get("cum", r.get("cum_ns"))
total = sum(r["cum"] for r in rows if r["lvl"] == 1)
frames = {}
blank = 0
for l in open(sys.argv[1]):
    f = l.rstrip("\n").split(" ", 3)
    if f[0] == "blank":
        blank = int(f[1])
    if f[0] == "frame":
        frames.setdefault((int(f[1]), f[3].lstrip("+")), []).append(float(f[2]))
bad = []
for r in sorted(rows, key=lambda r: -r["cum"])[:8]:
    w = 1180 * r["cum"] / total
    got = frames.get((r["lvl"], r["name"]), [])
    if not any(abs(g - w) <= 1 for g in got):
        bad.append(f"{r['name']}@{r['lvl']} {w:.2f} not in {got}")
zoom = [l.split()[1] for l in open(sys.argv[1]) if l.startswith("zoomed ")]
match = [l.strip() for l in open(sys.argv[1]) if l.startswith("Matched")]
print("not blank" if blank > 100 else f"blank ({blank})", "; ".join(bad) or "widths ok", *zoom, *match)
EOF
}
if [ -n "$node_ok" ]; then
	"$XPTRACE" decode -i st --calltree --format jsonl >st.tree
	c=$(python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; t=sum(r["cum"] for r in rows if r["lvl"]==1); print("%.2f%%" % (100*sum(r["cum"] for r in rows if r["name"]=="C" and r["rl"]==1)/t))' st.tree)
	check_eq "svg in Chromium: step trace: the 8 widest frames Cum-proportional (±1 px), click on C zooms it to 1180 px, search ^C$ matches C's Cum" \
		"not blank widths ok 1180.00 Matched: $c" "$(svg_check st.sv st.tree)"
	"$XPTRACE" decode -i pr --calltree --format jsonl >pr.tree
	check_eq "svg in Chromium: merged trace: frames Cum-proportional" "not blank widths ok" "$(svg_check pr.sv pr.tree)"
	check_eq "svg: the merged tree's sampled X is drawn dashed and marked +" "1 1" \
		"$(grep -c '^frame [0-9]* [0-9.]* +X$' pr.sv) $(grep -c 'class="fr sampled".*<title>+X ' pr.svg)"
	# as Chromium renders them (computed style): + frames dashed and lighter, no other
	check_eq "svg in Chromium: every + frame (X among them) dashed (3px, 2px) at fill-opacity 0.55, every exact frame solid and opaque" \
		"+X dashed, 0 unlike" \
		"$(awk -F'\t' '/^style/ { p = $5 ~ /^\+/; d = $2 == "3px, 2px" && $3 == "0.55"; s = $2 == "none" && $3 == "1";
			if (p ? !d : !s) bad++; if ($5 == "+X" && d) x = 1 }
			END { print (x ? "+X dashed" : "+X not dashed") ", " bad + 0 " unlike" }' pr.sv)"
	# colours by module: one fill per module, a different one for each module
	colours() {
		awk -F'\t' '/^style/ && $4 != "" { split($1, f, "style "); print $4 "\t" f[2] }' "$1" | sort -u |
			awk -F'\t' '{ m[$1]++; c[$2]++ } END { for (k in m) if (m[k] > 1) bad++; for (k in c) if (c[k] > 1) bad++;
				      print length(m) " modules, " length(c) " colours, " bad + 0 " shared" }'
	}
	check_eq "svg in Chromium: step trace: one colour per module (merged, libc, ld.so)" "3 modules, 3 colours, 0 shared" "$(colours st.sv)"
	check_match "svg in Chromium: merged trace: one colour per module" "^([0-9]+) modules, \1 colours, 0 shared$" "$(colours pr.sv)"
	# the details line under the pointer: the node's Base, Cum (%) and Calls as --calltree has them
	check_eq "svg in Chromium: hovering C shows its Base, Cum (%) and Calls of --calltree" \
		"$(python3 -c 'import json,sys; rows=[json.loads(l) for l in open(sys.argv[1])]; t=sum(r["cum"] for r in rows if r["lvl"]==1); c=[r for r in rows if r["name"]=="C" and r["rl"]==1][0]; print("hover C (merged): Base: %d  Cum: %d (%.2f%%)  Calls: %d" % (c["base"], c["cum"], 100*c["cum"]/t, c["calls"]))' st.tree)" \
		"$(grep '^hover' st.sv)"
	"$XPTRACE" decode -i sm --calltree --format jsonl >sm.tree
	check_eq "svg in Chromium: sample trace: frames Cum-proportional" "not blank widths ok" "$(svg_check sm.sv sm.tree)"
else
	ok "svg in Chromium: chromium, node or puppeteer-core missing (mk/deps.sh test installs them) # SKIP"
fi

# ---------------------------------------------------------------- folded --comm-prefix
"$XPTRACE" decode -i sm --calltree --format folded >sm.folded
"$XPTRACE" decode -i sm --calltree --format folded --comm-prefix >sm.cfolded
for t in st pr; do
	"$XPTRACE" decode -i $t --calltree --format folded >$t.folded
	"$XPTRACE" decode -i $t --calltree --format folded --comm-prefix >$t.cfolded
	check_eq "folded --comm-prefix: $t trace: every stack led by its command, counts unchanged" \
		"merged $(grep -c . $t.folded)" \
		"$(cut -d';' -f1 $t.cfolded | sort -u) $(sed 's/^[^;]*;//' $t.cfolded | cmp -s - $t.folded && grep -c . $t.cfolded)"
done
check_eq "folded --comm-prefix: every stack led by its command (perf script's comm), counts unchanged" \
	"$(perf script -i sm/perf.data -F comm 2>/dev/null | awk '{ print $1 }' | sort -u | head -1) $(grep -c . sm.folded)" \
	"$(cut -d';' -f1 sm.cfolded | sort -u) $(sed 's/^[^;]*;//' sm.cfolded | cmp -s - sm.folded && grep -c . sm.cfolded)"
