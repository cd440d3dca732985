#!/bin/bash
# Inline frames in sample traces' trees (issue 28): tests/progs/inline.c built -O2 with
# frame pointers (work -> top -> mid -> leaf inlined, leaf calling ext), recorded in
# sample mode (cpu-clock, -g).  Every sample's stack, each frame followed by the
# functions inlined at it (the leaf's IP, a caller's return address minus one), as
# binutils' addr2line -i names them for perf's own callchains of the same perf.data:
# per path from main, the self samples equal --calltree's Base; per function, the
# samples equal --functions' Base.  (gcc 12 gives ext, a leaf, no frame: the
# callers' chains are main's, with no inline frame.)  (perf 6.1 here, built without libbfd, prints no
# inline frames itself: its callchains with addr2line -i are the oracle.)
. "$(dirname "$0")/../lib.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
command -v python3 >/dev/null || { ok "python3 missing # SKIP"; exit 0; }
cc -O2 -g -static -fno-omit-frame-pointer -o "$TMP/inl" "$XP_ROOT/tests/progs/inline.c" ||
	{ not_ok "cc -O2 inline.c"; exit 0; }
# work(12000): ~400 samples (8000: ~150, of which ext, a few % of the time, had none
# in one fresh-clone run)
"$XPTRACE" record --mode sample -g -o "$TMP/s" -- "$TMP/inl" 12000 >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "sample record"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }

# perf prints callchain addresses relative to the executable's load bias
bias=$(perf script -i "$TMP/s/perf.data" --show-mmap-events -F ip 2>/dev/null |
	awk -v f="$TMP/inl" '/PERF_RECORD_MMAP/ && $NF == f { gsub(/[\[\]()@]/, " "); print $3, $5; exit }')
perf script -i "$TMP/s/perf.data" -F ip,sym 2>/dev/null >"$TMP/chains"
python3 - "$TMP/chains" "$TMP/inl" $bias >"$TMP/want" <<'EOF'
import subprocess, sys
start, pgoff = int(sys.argv[3], 16), int(sys.argv[4], 16)
samples, cur = [], []
for l in open(sys.argv[1]):
    f = l.split()
    if not f:
        if cur:
            samples.append(cur)
        cur = []
    else:
        cur.append((int(f[0], 16), f[1]))
if cur:
    samples.append(cur)
# leaf first; keep the frames from main down, of samples in the program's own code
want_addrs, stacks = set(), []
for s in samples:
    syms = [y for _, y in s]
    if s[0][1] not in ("work", "ext") or "main" not in syms:
        continue
    fr = s[:syms.index("main") + 1]
    st = [(a + start - pgoff - (i > 0), y) for i, (a, y) in enumerate(fr)]
    want_addrs |= {a for a, _ in st}
    stacks.append(st[::-1])
addrs = sorted(want_addrs)
out = subprocess.run(["addr2line", "-i", "-f", "-a", "-e", sys.argv[2]] + ["0x%x" % a for a in addrs],
                     capture_output=True, text=True).stdout
chain, cur = {}, None
for l in out.splitlines():
    l = l.strip()
    if l.startswith("0x"):
        cur = int(l, 16)
        chain[cur] = []
    elif l and ":" not in l:
        chain[cur].append(l)
paths, fns = {}, {}
for st in stacks:
    p = []
    for a, y in st:
        c = chain[a][::-1]          # outermost first: the symbol's function, then inlined ones
        p += [y] + [n + " [inline]" for n in c[1:]]
    k = "/".join(p)
    paths[k] = paths.get(k, 0) + 1
    fns[p[-1]] = fns.get(p[-1], 0) + 1
for k in sorted(paths):
    print("path", k, paths[k])
for k in sorted(fns):
    print("fn", k, fns[k])
EOF
"$XPTRACE" decode -i "$TMP/s" --calltree --metric samples --format jsonl >"$TMP/tree.jsonl"
"$XPTRACE" decode -i "$TMP/s" --functions --metric samples --format jsonl >"$TMP/fn.jsonl"
python3 - "$TMP/tree.jsonl" "$TMP/fn.jsonl" "$(grep '^fn ' "$TMP/want" | cut -d' ' -f2- | sed 's/ [0-9]*$//' | tr '\n' ',')" >"$TMP/got" <<'EOF'
import json, sys
rows = []
for r in map(json.loads, open(sys.argv[1])):
    if "main" in r["path"] and r["base"]:
        p = r["path"][r["path"].index("main"):]
        if p[-1].endswith(" [inline]") != r.get("inlined", False):
            print("bad mark", r["name"])
        rows.append(("path", "/".join(p), r["base"]))
for r in sorted(rows):
    print(*r)
names = set(x for x in sys.argv[3].split(",") if x)
for r in sorted(map(json.loads, open(sys.argv[2])), key=lambda r: r["name"]):
    if r["name"] in names:
        print("fn", r["name"], r["samples"] if "samples" in r else r["base"])
EOF
check_match "samples in leaf [inline], three deep under work" "^path main/work/top \[inline\]/mid \[inline\]/leaf \[inline\] [0-9]+$" "$(cat "$TMP/want")"
check_match "ext sampled (gcc gives it no frame: its caller is main in perf's callchains)" "^fn ext [0-9]+$" "$(cat "$TMP/want")"
check_eq "--calltree: self samples per path from main, inline frames included = perf's callchains with addr2line -i" \
	"$(cat "$TMP/want")" "$(cat "$TMP/got")"
check_eq "--no-inline: no inline node" 0 \
	"$("$XPTRACE" decode -i "$TMP/s" --calltree --no-inline --format jsonl | grep -c 'inline\]')"
check_match "text: leaf [inline] nested under mid [inline]" '^ +8 .* +leaf \[inline\]$' \
	"$("$XPTRACE" decode -i "$TMP/s" --calltree)"
check_match "--format folded: stacks through the inline frames" '^.*;work;top \[inline\];mid \[inline\];leaf \[inline\] [0-9]+$' \
	"$("$XPTRACE" decode -i "$TMP/s" --calltree --format folded)"
