#!/bin/bash
# Symbol names of code without a sized function symbol (issue 15, item 15), on a step
# trace of build/progs/step_basic (real Intel PT that perf decodes too):
# - labels (zero-sized untyped symbols in a text section, ld.so's _start and
#   _dl_start_user from the libc6-dbg debug file) are named as perf names them: per
#   executed instruction of ld.so, xptrace's name equals perf script's;
# - PLT entries (.plt, .plt.sec, .plt.got) are named as objdump labels them: by the
#   relocation of the GOT slot each entry jumps through (perf 6.1 counts .rela.plt
#   entries instead, which names libc's entries wrongly and loses step_basic's
#   printf@plt in _init), IRELATIVE slots as "*ABS*+0xADDR@plt";
# - the same code has one name in --functions and in both callgrind profiles.
. "$(dirname "$0")/../lib.sh"
P=$PROGS/step_basic
LDSO=$(readlink -f /lib64/ld-linux-x86-64.so.2)
LIBC=$(ldd "$P" | awk '$1 ~ /^libc\.so/ { print $3 }')
LIBC=$(readlink -f "$LIBC")

"$XPTRACE" record --mode step -o "$TMP/st" -- "$P" >/dev/null 2>"$TMP/rec.err" ||
	{ not_ok "step record"; sed 's/^/#   /' "$TMP/rec.err"; exit 0; }
"$XPTRACE" decode -i "$TMP/st" --insn --format jsonl >"$TMP/insn.jsonl"
perf script -i "$TMP/st/perf.data" --itrace=i1i -F ip,sym,dso 2>/dev/null >"$TMP/perf.txt"
perf script -i "$TMP/st/perf.data" --show-mmap-events 2>/dev/null | grep 'PERF_RECORD_MMAP2' >"$TMP/mmap.txt"

# ip -> name (offset dropped) of every executed instruction, per tool
python3 - "$TMP" "$LDSO" "$LIBC" "$P" <<'PY' >"$TMP/cmp.txt"
import json, re, subprocess, sys
tmp, ldso, libc, prog = sys.argv[1:5]
xp = {}
for l in open(tmp + "/insn.jsonl"):
    r = json.loads(l)
    if "ip" in r and r.get("sym"):
        xp[int(r["ip"], 16)] = re.sub(r"\+0x[0-9a-f]+$", "", r["sym"])
pf = {}
for l in open(tmp + "/perf.txt"):
    m = re.match(r"\s*([0-9a-f]+)\s+(.*?)\s+\((.*)\)\s*$", l)
    if m and m.group(3) == ldso:
        pf[int(m.group(1), 16)] = m.group(2)
# ld.so: perf's names (those it knows) against ours
agree = sum(1 for ip, n in pf.items() if n != "[unknown]" and xp.get(ip) == n)
known = sum(1 for n in pf.values() if n != "[unknown]")
labels = sorted({n for n in pf.values() if n in ("_start", "_dl_start_user")})
print("ldso", agree, known, ",".join(labels))
# PLT entries: objdump's label of the entry holding each executed ip
maps = []
for l in open(tmp + "/mmap.txt"):
    m = re.search(r"\[0x([0-9a-f]+)\(0x([0-9a-f]+)\) @ (0x[0-9a-f]+|0) .*\]: r-xp (.*\S)", l)
    if m:
        maps.append((int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), m.group(4)))
for path in (prog, libc):
    labels = {}
    dis = subprocess.run(["objdump", "-d", "-j", ".plt", "-j", ".plt.sec", "-j", ".plt.got", path],
                         capture_output=True, text=True).stdout
    for l in dis.splitlines():
        m = re.match(r"([0-9a-f]+) <(.*@plt)>:$", l)
        if m:
            labels[int(m.group(1), 16)] = m.group(2)
    starts = sorted(labels)
    good = bad = 0
    for ip, name in xp.items():
        for start, size, pgoff, p in maps:
            if p == path and start <= ip < start + size:
                va = ip - start + pgoff    # these exec segments have vaddr == offset
                ent = max([s for s in starts if s <= va] or [None], default=None)
                if ent is not None and va < ent + 16 and va >= starts[0]:
                    if labels[ent] == name:
                        good += 1
                    else:
                        bad += 1
                        print("#", path, hex(va), "objdump", labels[ent], "xptrace", name)
    print("plt", path.rsplit("/", 1)[-1], good, bad)
    # .plt's header (the stub lazily bound calls run into ld.so through): ".plt"
    hdr = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
    m = re.search(r"\] \.plt\s+PROGBITS\s+([0-9a-f]+)", hdr)
    lo = int(m.group(1), 16) if m else -1
    names = set()
    for ip, name in xp.items():
        for start, size, pgoff, p in maps:
            if p == path and start <= ip < start + size and lo <= ip - start + pgoff < lo + 16:
                names.add(name)
    print("plt0", path.rsplit("/", 1)[-1], ",".join(sorted(names)) or "-")
PY
ld=$(grep '^ldso' "$TMP/cmp.txt")
read -r _ agree known labels <<<"$ld"
check_eq "ld.so: every instruction perf names has perf's name ($known instructions)" "$known" "$agree"
if [ -e "/usr/lib/debug/.build-id" ] && [ -n "$labels" ]; then
	check_eq "ld.so's labels _start and _dl_start_user named" "_dl_start_user,_start" "$labels"
else
	ok "# SKIP ld.so labels: no debug symbols of ld.so (libc6-dbg)"
fi
grep '^#' "$TMP/cmp.txt" | head -5
for m in step_basic libc.so.6; do
	read -r _ _ good bad <<<"$(grep "^plt $m " "$TMP/cmp.txt")"
	check_eq "$m: executed PLT instructions named by objdump's labels ($good)" "0" "$bad"
done
# (perf 6.1 names step_basic's .plt header _init+0x20, the zero-sized _init before it
# stretched; objdump printf@plt-0x10; newer perf ".plt")
check_eq "step_basic: the .plt header's executed instructions are .plt, not _init" ".plt" \
	"$(sed -n 's/^plt0 step_basic //p' "$TMP/cmp.txt")"
read -r _ _ good _ <<<"$(grep "^plt step_basic " "$TMP/cmp.txt")"
check "step_basic: its PLT entries ran" test "${good:-0}" -gt 0

fn=$("$XPTRACE" decode -i "$TMP/st" --functions --format jsonl)
# the lazily bound printf: called through printf@plt, then .plt into ld.so's resolver;
# _init (.init, run once by ld.so) is no part of that path
check_eq "printf@plt -> .plt -> _dl_runtime_resolve_xsavec -> printf; _init under no @plt" \
	"['main', 'printf@plt', '.plt', '_dl_runtime_resolve_xsavec', 'printf'] 0" \
	"$("$XPTRACE" decode -i "$TMP/st" --calltree --format jsonl --percent-limit 0 | python3 -c '
import json, sys
r = [json.loads(l) for l in sys.stdin]
p = [x["path"] for x in r if x["path"][-1] == "printf"]
print(p[0][p[0].index("main"):] if p else None,
      sum(1 for x in r if x["path"][-1] == "_init" and any(n.endswith("@plt") for n in x["path"])))')"
check_match "printf@plt is a function of step_basic" '"module":"step_basic".*"name":"printf@plt"' "$fn"
check_match "__cxa_finalize@plt (.plt.got) named" '"name":"__cxa_finalize@plt"' "$fn"
check_eq "no step_basic code left unnamed" "" \
	"$(printf '%s\n' "$fn" | grep '"module":"step_basic"' | grep -o '"name":"0x[0-9a-f]*"')"

# one name per code in every report: callgrind's fn= names are --functions' names
names() { printf '%s\n' "$fn" | python3 -c '
import json, sys
print("\n".join(sorted({json.loads(l)["name"] for l in sys.stdin})))'; }
"$XPTRACE" decode -i "$TMP/st" --calltree --format callgrind -o "$TMP/ct.cg"
"$XPTRACE" decode -i "$TMP/st" --blocks --format callgrind -o "$TMP/bl.cg"
cgnames() { sed -n 's/^c\{0,1\}fn=\(([0-9]*)\)\{0,1\} \{0,1\}//p' "$1" | grep -v '^$' | sort -u; }
check_eq "--calltree callgrind: the names of --functions" "$(names)" "$(cgnames "$TMP/ct.cg")"
# (--blocks has no inline frames: the names of --functions --no-inline)
fn=$("$XPTRACE" decode -i "$TMP/st" --functions --no-inline --format jsonl)
check_eq "--blocks callgrind: the names of --functions --no-inline" "$(names)" "$(cgnames "$TMP/bl.cg")"
