#!/bin/bash
# Callgrind profiles with source (issue 15, item 16): `--blocks --format callgrind` and
# `--calltree --format callgrind` write ob=, fl=/fi= and each cost on its source line
# from DWARF, so `callgrind_annotate --auto=yes` shows the source with counts:
# - step trace of pt_known --filter main: the counts on main's lines equal perf
#   script's per-instruction srclines, counted per line (perf-derived);
# - the whole pt_known: leaf() (37 calls by construction) has on each line 37 times
#   the instructions objdump -l puts there (hand-computed), not all on its first line;
# - a sample trace of hot: the samples of hot_inner's loop line equal perf annotate's
#   count of the instructions it lists under that line.
. "$(dirname "$0")/../lib.sh"
SRC=$XP_ROOT/tests/progs/pt_known.c
for t in filtered:--filter=main full:; do
	n=${t%%:*} f=${t#*:}
	"$XPTRACE" record --mode step ${f:+--filter main} -o "$TMP/$n" -- "$PROGS/pt_known" >/dev/null 2>"$TMP/$n.err" ||
		{ not_ok "step record $n"; sed 's/^/#   /' "$TMP/$n.err"; exit 0; }
done

# "LINE COUNT" for every annotated line of FILE in callgrind_annotate's output
annotated() {	# $1 callgrind file, $2 source file
	callgrind_annotate --auto=yes --inclusive=no "$1" 2>/dev/null | python3 -c '
import re, sys
name = sys.argv[1].rsplit("/", 1)[-1]
state, n = "off", 1    # off, head (dashes, event names, a blank line), body
for l in sys.stdin:
    l = l.rstrip("\n")
    if l.startswith("-- Auto-annotated source: "):
        state = "head" if l.rsplit("/", 1)[-1].split()[-1] == name else "off"
        n = 1
        continue
    if state == "head":
        if not l.strip():
            state = "body"
        continue
    if state != "body":
        continue
    if re.match(r"^-{20,}", l):
        state = "off"
        continue
    m = re.match(r"^-- line (\d+) -", l)
    if m:
        n = int(m.group(1))
        continue
    if re.match(r"^\s*[\d,]+ .*=> ", l) and not re.match(r"^\s*[\d,]+ .*\t", l):
        continue
    tok = l.split()
    if tok and re.match(r"^[\d,]+$", tok[0]):
        c = int(tok[0].replace(",", ""))
        if c:
            print(n, c)
    n += 1' "$2"
}

# perf's srcline of every instruction of main, counted per line
perf script -i "$TMP/filtered/perf.data" --itrace=i1i -F ip,sym,srcline 2>/dev/null | paste - - |
	awk '$2 == "main" { sub(/.*:/, "", $3); c[$3]++ } END { for (l in c) print l, c[l] }' | sort -n >"$TMP/perf.lines"
check_match "perf gives main's lines" '^[0-9]+ [0-9]+$' "$(head -1 "$TMP/perf.lines")"
for v in blocks calltree; do
	"$XPTRACE" decode -i "$TMP/filtered" --$v --format callgrind -o "$TMP/f.$v.cg"
	check_eq "--filter main, --$v callgrind: main's lines and counts = perf's srclines" \
		"$(cat "$TMP/perf.lines")" "$(annotated "$TMP/f.$v.cg" "$SRC" | sort -n)"
	check_match "--$v callgrind: ob= names the program by its absolute path (as objdump needs it)" \
		"^ob=(\([0-9]+\) )?$PROGS/pt_known\$" "$(cat "$TMP/f.$v.cg")"
done

# leaf: objdump -l's lines of its instructions, times 37 calls
objdump -dl --no-show-raw-insn "$PROGS/pt_known" | awk '
	/^[0-9a-f]+ <leaf>:/ { on = 1; next }
	on && /^$/ { exit }
	on && /pt_known\.c:[0-9]+/ { sub(/.*:/, ""); l = $0; next }
	on && /^ +[0-9a-f]+:/ { c[l] += 37 }
	END { for (l in c) print l, c[l] }' | sort -n >"$TMP/leaf.want"
check_eq "leaf has instructions on two lines (objdump -l)" "2" "$(wc -l <"$TMP/leaf.want")"
lo=$(head -1 "$TMP/leaf.want" | cut -d' ' -f1)
hi=$(tail -1 "$TMP/leaf.want" | cut -d' ' -f1)
for v in blocks calltree; do
	"$XPTRACE" decode -i "$TMP/full" --$v --format callgrind -o "$TMP/a.$v.cg"
	check_eq "--$v callgrind: leaf's cost per line = 37 x its instructions there" "$(cat "$TMP/leaf.want")" \
		"$(annotated "$TMP/a.$v.cg" "$SRC" | awk -v lo="$lo" -v hi="$hi" '$1 >= lo && $1 <= hi')"
done
check_match "--calltree callgrind: 37 calls of leaf from main's call line" "^calls=37 $lo" "$(cat "$TMP/a.calltree.cg")"

# KCachegrind disassembles a function by running objdump on its ob= file between
# addresses of its cost lines: ob= must name the file, the positions be the file's own
# addresses (a PIE's less its load base).  "FN OB N_ADDRESSES N_NOT_INSTRUCTIONS": the
# cost lines' addresses of FN that are no instruction start objdump -d lists in OB.
disasm_check() {	# $1 callgrind file, $2... functions
	python3 - "$@" <<'PY'
import re, subprocess, sys
names = {}
def name(kind, v):
    m = re.match(r"^\((\d+)\)(?: (.*))?$", v)
    if not m:
        return v
    if m.group(2) is not None:
        names[(kind, m.group(1))] = m.group(2)
    return names.get((kind, m.group(1)))
ob = fn = None
addrs = {}
for l in open(sys.argv[1]):
    l = l.rstrip("\n")
    if l.startswith("ob="):
        ob = name("ob", l[3:])
    elif l.startswith("cob="):
        name("ob", l[4:])
    elif l.startswith("fn="):
        fn = name("fn", l[3:])
    elif l.startswith("cfn="):
        name("fn", l[4:])
    elif re.match(r"^0x[0-9a-f]+ ", l) and fn in sys.argv[2:]:
        addrs.setdefault((fn, ob), set()).add(int(l.split()[0], 16))
for (fn, ob), a in sorted(addrs.items()):
    d = subprocess.run(["objdump", "-d", "--start-address=%#x" % min(a), "--stop-address=%#x" % (max(a) + 1), ob],
                       capture_output=True, text=True).stdout
    insns = {int(m.group(1), 16) for m in re.finditer(r"^ *([0-9a-f]+):\t", d, re.M)}
    print(fn, ob, len(a), len(a - insns), sep="\t")   # (tabs: a path may hold spaces)
PY
}
"$XPTRACE" decode -i "$TMP/full" --blocks --format callgrind -o "$TMP/full.blocks.cg"
check_eq "--blocks callgrind: ob= is pt_known's file, every address of main and leaf an instruction objdump lists there" \
	"leaf $(realpath "$PROGS/pt_known") 0
main $(realpath "$PROGS/pt_known") 0" \
	"$(disasm_check "$TMP/full.blocks.cg" main leaf | awk -F'\t' '$3 > 0 { print $1, $2, $4 }')"

# samples: hot_inner's loop line against perf annotate's grouping of its instructions
"$XPTRACE" record -o "$TMP/hot" -- "$PROGS/hot" 200 >/dev/null 2>&1
want=$(perf annotate -i "$TMP/hot/perf.data" --stdio -n -s hot_inner 2>/dev/null | python3 -c '
import re, sys
line, c = None, {}
for l in sys.stdin:
    m = re.match(r"^\s*:\s+(\d+)\s+\S", l)
    if m:
        line = int(m.group(1))
        continue
    m = re.match(r"^\s*(\d+)\s*:\s+[0-9a-f]+:", l)
    if m and line is not None:
        c[line] = c.get(line, 0) + int(m.group(1))
print(" ".join("%d %d" % (k, v) for k, v in sorted(c.items()) if v))')
"$XPTRACE" decode -i "$TMP/hot" --calltree --format callgrind -o "$TMP/hot.cg"
got=$(annotated "$TMP/hot.cg" "$XP_ROOT/tests/progs/hot.c" | awk '$1 >= 10 && $1 <= 16' | tr '\n' ' ')
check_match "perf annotate puts hot_inner's samples on its lines" '^[0-9]+ [0-9]+' "$want"
check_eq "samples: --calltree callgrind lines of hot_inner = perf annotate's ($want)" "$want" "${got% }"
"$XPTRACE" decode -i "$TMP/hot" --blocks --format callgrind -o "$TMP/hot.blocks.cg"
check_eq "samples: --blocks callgrind: ob= is hot's file, every sampled address of hot_inner an instruction there" \
	"hot_inner $(realpath "$PROGS/hot") 0" \
	"$(disasm_check "$TMP/hot.blocks.cg" hot_inner | awk -F'\t' '$3 > 0 { print $1, $2, $4 }')"
