#!/bin/bash
# decode --inline (issue 28): code the compiler inlined as nodes of the call tree.
# tests/progs/inline.c built -O2 (work -> top -> mid -> leaf inlined, leaf calling
# ext for real), step-traced: the subtree under work equals what binutils' addr2line
# -i -f says of every instruction perf's instruction trace shows in work (its chain
# of inlined functions, address by address): per inline path its instructions (Base)
# and entries into it from outside (Calls); ext below leaf with its calls; inline frames
# are the default, --no-inline's tree has none and the same total; --calls' inline
# calls (start, duration, depth) from the same chains; diff --inline against a build
# that calls them: each inlined function matched with its calls (hand-counted).
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
cc -O2 -g -static -o "$TMP/inl" "$XP_ROOT/tests/progs/inline.c" || { not_ok "cc -O2 inline.c"; exit 0; }
"$XPTRACE" record --mode step -o "$TMP/t" -- "$TMP/inl" 20 >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "step record"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }

perf script -i "$TMP/t/perf.data" --itrace=i1i -F ip,sym 2>/dev/null | awk '{ print $1, $2 }' >"$TMP/insns"
awk '$2 == "work" { print "0x" $1 }' "$TMP/insns" | sort -u >"$TMP/work.ips"
check_match "perf's instruction trace runs work" '^0x[0-9a-f]+$' "$(head -1 "$TMP/work.ips")"
# addr2line -i's inline chain of each address, a line each: "ADDR NAME..." (innermost
# first, the function holding them last)
chains() {	# ELF ADDR...
	local elf=$1
	shift
	addr2line -i -f -a -e "$elf" "$@" |
		awk '/^0x/ { if (l != "") print l; l = $1; next } NF && !/:/ { l = l " " $1 } END { if (l != "") print l }'
}
chains "$TMP/inl" $(cat "$TMP/work.ips") >"$TMP/a2l"

# "PATH CALLS BASE" under work, PATH the inline names outermost first joined by '/'
python3 - "$TMP/insns" "$TMP/a2l" >"$TMP/want" <<'EOF'
import sys
chains = {int(f[0], 16): f[1:] for f in (l.split() for l in open(sys.argv[2]))}  # innermost first, work last
calls, base, prev, ext_at = {}, {}, [], None
for l in open(sys.argv[1]):
    ip, sym = l.split()
    ip = int(ip, 16)
    if sym == "ext":
        p = "/".join(prev + ["ext"])
        if ext_at is None or ip == ext_at:
            ext_at = ip
            calls[p] = calls.get(p, 0) + (ip == ext_at)
        base[p] = base.get(p, 0) + 1
        continue
    if sym != "work":
        continue
    c = chains[ip][::-1][1:]
    for d in range(len(c)):
        if prev[:d + 1] != c[:d + 1]:
            p = "/".join(c[:d + 1])
            calls[p] = calls.get(p, 0) + 1
    if c:
        p = "/".join(c)
        base[p] = base.get(p, 0) + 1
    prev = c
for p in sorted(set(calls) | set(base)):
    print(p, calls.get(p, 0), base.get(p, 0))
EOF
"$XPTRACE" decode -i "$TMP/t" --calltree --inline --format jsonl >"$TMP/tree.jsonl"
python3 - "$TMP/tree.jsonl" >"$TMP/got" <<'EOF'
import json, sys
rows = []
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "work" in r["path"][:-1]:
        p = r["path"][r["path"].index("work") + 1:]
        if any(n.endswith(" [inline]") != r.get("inlined", False) for n in p[-1:]):
            print("bad mark", r["name"])
        rows.append(("/".join(n.replace(" [inline]", "") for n in p), r["calls"], r["base"]))
for p, c, b in sorted(rows):
    print(p, c, b)
EOF
check_eq "the inline paths have three levels and ext below leaf" \
	"top
top/mid
top/mid/leaf
top/mid/leaf/ext" "$(cut -d' ' -f1 "$TMP/want")"
check_eq "--inline: under work, each inline path's Calls and Base = addr2line -i's chains of perf's instructions" \
	"$(cat "$TMP/want")" "$(cat "$TMP/got")"
check_match "text marks inline nodes [inline], nested under work" '^ +7 +1 .* +mid \[inline\]$' \
	"$("$XPTRACE" decode -i "$TMP/t" --calltree --inline)"
fn_inl=$("$XPTRACE" decode -i "$TMP/t" --inline --format jsonl | python3 -c '
import json, sys
print(*sorted(r["name"] for r in map(json.loads, sys.stdin) if r.get("inlined")))')
check_match "--functions --inline: the inlined functions, \"inlined\": true" 'leaf \[inline\] mid \[inline\] top \[inline\]' "$fn_inl"

check_eq "inline frames are the default: --calltree = --calltree --inline" "$(cat "$TMP/tree.jsonl")" \
	"$("$XPTRACE" decode -i "$TMP/t" --calltree --format jsonl)"
"$XPTRACE" decode -i "$TMP/t" --calltree --no-inline --format jsonl >"$TMP/plain.jsonl"
check_eq "--no-inline: no inline node" 0 "$(grep -c 'inline\]' "$TMP/plain.jsonl")"
cum() { python3 -c 'import json, sys; print([r["cum"] for r in map(json.loads, open(sys.argv[1])) if r["name"] == "work"][0])' "$1"; }
check_eq "work's Cum is the same with and without inline frames" "$(cum "$TMP/plain.jsonl")" "$(cum "$TMP/tree.jsonl")"

# --calls: each entry into inlined code from outside is a call of the inline function,
# from its first instruction to the first one outside it (the thread's instruction
# clock: the index in perf's listing), as addr2line -i's chains of perf's instructions say
python3 - "$TMP/insns" "$TMP/a2l" >"$TMP/calls.want" <<'EOF'
import sys
chains = {int(f[0], 16): f[1:] for f in (l.split() for l in open(sys.argv[2]))}
rows, open_ = [], []
def close(k, i):
    for d in range(len(open_) - 1, k - 1, -1):
        rows.append((open_[d][1], i - open_[d][1], d + 1, open_[d][0]))
    del open_[k:]
for i, l in enumerate(open(sys.argv[1])):
    ip, sym = l.split()
    if sym == "ext":
        continue            # a real call from leaf: its inline frames stay open
    c = chains[int(ip, 16)][::-1][1:] if sym == "work" else []
    k = 0
    while k < len(open_) and k < len(c) and open_[k][0] == c[k]:
        k += 1
    close(k, i)
    open_ += [(n, i) for n in c[k:]]
for r in sorted(rows):
    print(*r)
EOF
"$XPTRACE" decode -i "$TMP/t" --calls --sym work --format jsonl >"$TMP/calls.jsonl"
python3 -c '
import json, sys
rows = [(r["start_insns"], r["dur_insns"], r["depth"], r["name"].replace(" [inline]", ""))
        for r in map(json.loads, open(sys.argv[1])) if r.get("inlined")]
for r in sorted(rows):
    print(*r)' "$TMP/calls.jsonl" >"$TMP/calls.got"
check_match "--calls: inline calls three deep" " 3 leaf$" "$(cat "$TMP/calls.got")"
check_eq "--calls: every inline call's start, duration and depth = addr2line -i's chains of perf's instructions" \
	"$(cat "$TMP/calls.want")" "$(cat "$TMP/calls.got")"
check_eq "--calls: ext's 58 calls all below leaf [inline] (depth 4)" "58 58" "$(python3 -c '
import json, sys
e = [r["depth"] for r in map(json.loads, open(sys.argv[1])) if r["name"] == "ext"]
print(len(e), e.count(4))' "$TMP/calls.jsonl")"
check_eq "--calls --sym mid: the inline calls of mid (name without its mark) at depth 0" \
	"$(grep -c ' 2 mid$' "$TMP/calls.got")" \
	"$("$XPTRACE" decode -i "$TMP/t" --calls --sym mid --format jsonl | grep -c '"depth":0,"name":"mid \[inline\]"')"
check_match "--calls text: inline calls marked [inline]" '^ +[0-9]+ +[0-9]+ in +[0-9]+ +mid\(\) \[inline\];$' \
	"$("$XPTRACE" decode -i "$TMP/t" --calls --sym work)"
check_eq "--calls --no-inline: no inline call" 0 \
	"$("$XPTRACE" decode -i "$TMP/t" --calls --no-inline --format jsonl | grep -c inline)"
"$XPTRACE" decode -i "$TMP/t" --calls --sym work --format chrome -o "$TMP/calls.json"
n=$(wc -l <"$TMP/calls.got")
check_eq "--calls --format chrome: as many inline spans, named NAME [inline], args \"inlined\": true" "$n $n" \
	"$(python3 -c '
import json, sys
ev = [e for e in json.load(open(sys.argv[1]))["traceEvents"] if e.get("ph") == "X"]
inl = [e for e in ev if e.get("args", {}).get("inlined")]
print(len(inl), sum(e["name"].endswith(" [inline]") for e in inl))' "$TMP/calls.json")"

cc -O2 -g -static -DINLINE='static __attribute__((noinline))' -o "$TMP/called" "$XP_ROOT/tests/progs/inline.c" &&
	"$XPTRACE" record --mode step -o "$TMP/c" -- "$TMP/called" 20 >/dev/null 2>&1 || { not_ok "noinline build"; exit 0; }
# calls of work(20): top 20, mid 2 a top, leaf sum(k + k/2) = 190 + 90, ext ceil(x/7) of each mid(x): 58
check_eq "diff --inline: the called build's functions matched with the inlined ones, Calls_A by hand" \
	"top 20 - mid 40 - leaf 280 - ext 58 58" \
	"$("$XPTRACE" diff --inline "$TMP/c" "$TMP/t" --format jsonl | python3 -c '
import json, sys
r = {x["name"]: x for x in map(json.loads, sys.stdin)}
print(*["%s %d %s" % (n, r[n]["calls_a"], r[n]["calls_b"] if n == "ext" else "-")
        for n in ("top", "mid", "leaf", "ext") if not r[n]["status"]])')"

# --annotate --inline: each instruction of work (run or not) with addr2line -i's chain
"$XPTRACE" decode -i "$TMP/t" --annotate work --inline --format jsonl >"$TMP/ann.jsonl"
python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    print(r["ip"], r.get("inlined", ""))' "$TMP/ann.jsonl" >"$TMP/ann.got"
chains "$TMP/inl" $(cut -d' ' -f1 "$TMP/ann.got") | python3 -c '
import sys
for f in (l.split() for l in sys.stdin):
    names = f[1:][::-1][1:]     # outermost first, work left out
    print("0x%x" % int(f[0], 16), " > ".join(names))' >"$TMP/ann.want"
check_eq "--annotate --inline: every instruction of work has addr2line -i's chain" "$(cat "$TMP/ann.want")" "$(cat "$TMP/ann.got")"
check_match "... some instructions three deep" "top > mid > leaf" "$(cat "$TMP/ann.got")"
check_match "text: a line [inline] CHAIN where the chain changes" '^ +\[inline\] top > mid > leaf$' \
	"$("$XPTRACE" decode -i "$TMP/t" --annotate work --inline)"
