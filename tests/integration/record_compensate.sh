#!/bin/bash
# run.sh: alone
# Issue 13's compensation example end to end: tests/progs/compensate (A 1 ms, B 8 ms
# calling P 2000 times, A 1 ms; it measures itself with clock_gettime) recorded with
# probes on A, B and P; decode's compensated A Cum, A Base (A Cum - B Cum: A's own
# event Base lends its time to its sampled children) and B Cum against the program's
# own unprobed figures: from the bare runs just before and after each recording, and
# from a recording with the same sampling and no probes (sampling alone costs the
# program +6-7 % here: 4000 callchains a second; compensation removes the probes' cost,
# not the sampling's, so that run is the reference the tolerance applies to).
#
# The machine's load disturbs single rounds by far more than the figures under test
# (A's plain 2 ms spin measured +60 % in a recorded run under make check), so a round
# counts only when the recorded run's own A self time, which holds two probe hits and
# no other, is within 5 % of the bare runs'; up to MAX rounds until CLEAN counted.
# Raw figures must be visibly off (> 20 %), the median of the counted rounds'
# compensated ones within TOL % of the sampled run's, and within TOL + 15 % of bare.
#
# Under make check (CI machines run every suite at once) TOL is 25: raw figures are
# +110 .. +140 % off, so that still fails a compensation that removes less than ~80 %
# of the probes' cost or removes too much, while the machine's load cannot fail it
# (a CI run under load measured outside 10 %).  The accuracy itself is a benchmark:
# bench/compensate-accuracy runs this script with TOL=5 and more rounds.
. "$(dirname "$0")/../lib.sh"
[ "$(id -u)" = 0 ] || { ok "uprobes need root here # SKIP"; exit 0; }
cd "$TMP"
C=$PROGS/compensate
CLEAN=${CLEAN:-3}
MAX=${MAX:-10}
# Figures measured: docs/decode.md, Accuracy
TOL=${TOL:-25}

# The machine's other work while the rounds run, in CPUs: busy and stolen time of
# /proc/stat less this script's own and its children's (/proc/$$/stat).  Accuracy is
# asserted on a machine otherwise idle, as CI's is: one busy loop beside the rounds
# made the target pay 30 % more per probe hit than the trace's own estimate.
ticks_busy() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
ticks_ours() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$$/stat"; }
uptime_cs() { awk '{ printf "%d\n", $1 * 100 }' /proc/uptime; }
busy0=$(ticks_busy) ours0=$(ticks_ours) up0=$(uptime_cs)
r=0 clean=0
while [ "$r" -lt "$MAX" ] && [ "$clean" -lt "$CLEAN" ]; do
	r=$((r + 1))
	"$C" 5 >"b$r.txt"
	"$XPTRACE" record -q -g -o "s$r" -- "$C" 5 >"s$r.txt" 2>/dev/null
	"$XPTRACE" record -q -g --probe A,B,P --probe-limit 0 -o "t$r" -- "$C" 5 >"p$r.txt" 2>"t$r.err" ||
		{ not_ok "compensate: record exits 0"; cat "t$r.err"; exit 1; }
	"$C" 5 >>"b$r.txt"
	"$XPTRACE" decode -i "t$r" --calltree --format jsonl >"t$r.comp" 2>/dev/null
	"$XPTRACE" decode -i "t$r" --calltree --no-compensate --format jsonl >"t$r.raw" 2>/dev/null
	"$XPTRACE" decode -i "t$r" --probes --format jsonl >"t$r.probes" 2>/dev/null
	"$XPTRACE" decode -i "t$r" --calltree 2>/dev/null | sed -n 3p >"t$r.head"
	q=$(awk 'FILENAME ~ /^b/ { b += $4 / 2 } FILENAME ~ /^p/ { p = $4 }
		END { d = (p - b) / b; print (d < 0 ? -d : d) <= 0.05 ? "clean" : "disturbed" }' "b$r.txt" "p$r.txt")
	echo "$q" >"q$r"
	[ "$q" = clean ] && clean=$((clean + 1))
done

other=$(awk -v b="$(( $(ticks_busy) - busy0 ))" -v o="$(( $(ticks_ours) - ours0 ))" -v t="$(( $(uptime_cs) - up0 ))" \
	'BEGIN { printf "%.2f\n", (t > 0 ? (b - o) / t : 0) }')
echo "# other work on the machine during the rounds: $other CPUs"
python3 - "$r" "$TOL" >verdict.txt <<'PY'
import json, statistics, sys
rounds, tol = int(sys.argv[1]), float(sys.argv[2])
def prog(f):
    rows = [dict(zip(l.split()[0::2], map(int, l.split()[1::2]))) for l in open(f)]
    return {k: statistics.mean(r[k] for r in rows) for k in ("a_cum_ns", "a_self_ns", "b_cum_ns")}
def tree(f):
    n = {}
    for l in open(f):
        j = json.loads(l)
        # A below its sampled callers (main ...), B below A
        if not j["sampled"] and (j["name"] == "A" or j["path"][-2:] == ["A", "B"]):
            n[j["name"]] = j["cum_ns"]
    return {"a_cum_ns": n["A"], "a_self_ns": n["A"] - n["B"], "b_cum_ns": n["B"]}
keys = ("a_cum_ns", "a_self_ns", "b_cum_ns")
err = {k: [] for k in keys}
rawerr = {k: [] for k in keys}
bareerr = {k: [] for k in keys}
for r in range(1, rounds + 1):
    q = open("q%d" % r).read().strip()
    bare, probed, comp, raw = prog("b%d.txt" % r), prog("p%d.txt" % r), tree("t%d.comp" % r), tree("t%d.raw" % r)
    samp = prog("s%d.txt" % r)
    cal = json.loads(open("t%d.probes" % r).readline())["calibration"]
    print("# round %d (%s): calibration %s/%s; %s" % (r, q, cal["caller_ns"], cal["callee_ns"],
          open("t%d.head" % r).read().strip().replace("# probe overhead compensated: ", "")))
    for k in keys:
        ec = 100 * (comp[k] - samp[k]) / samp[k]
        eb = 100 * (comp[k] - bare[k]) / bare[k]
        er = 100 * (raw[k] - samp[k]) / samp[k]
        print("#   %-9s bare %10d  sampled %10d  probed run %10d  raw %10d (%+6.1f %%)  compensated %10d (%+6.1f %% of sampled, %+6.1f %% of bare)"
              % (k, bare[k], samp[k], probed[k], raw[k], er, comp[k], ec, eb))
        if q == "clean":
            err[k].append(ec)
            bareerr[k].append(eb)
            rawerr[k].append(er)
if not err["a_cum_ns"]:
    print("compensated no quiet round")
    print("raw no quiet round")
    sys.exit(0)
bad, close = [], []
for k in keys:
    ec, eb, er = statistics.median(err[k]), statistics.median(bareerr[k]), statistics.median(rawerr[k])
    print("# median of %d quiet rounds: %-9s raw %+6.1f %%  compensated %+6.1f %% of sampled, %+6.1f %% of bare"
          % (len(err[k]), k, er, ec, eb))
    if abs(ec) > tol or abs(eb) > tol + 15:
        bad.append(k)
    if k != "a_self_ns" and abs(er) <= 20:
        close.append(k)
print("compensated", "ok" if not bad else "off: " + " ".join(bad))
print("raw", "off" if not close else "close: " + " ".join(close))
PY
sed -n '/^#/p' verdict.txt
what="compensate: compensated A Cum, A Base, B Cum within $TOL % of the sampled unprobed run (median of the quiet rounds)"
if awk -v x="$other" 'BEGIN { exit !(x > 0.3) }'; then
	ok "$what # SKIP other processes used $other CPUs of 2 meanwhile: accuracy is measured on an idle machine ($(grep '^compensated' verdict.txt))"
else
	check_eq "$what" "compensated ok" "$(grep '^compensated' verdict.txt)"
fi
what="compensate: raw A Cum and B Cum more than 20 % above them"
if awk -v x="$other" 'BEGIN { exit !(x > 0.3) }' && grep -q '^raw no quiet round' verdict.txt; then
	ok "$what # SKIP other processes used $other CPUs of 2 meanwhile: no round of $r was quiet"
else
	check_eq "$what" "raw off" "$(grep '^raw' verdict.txt)"
fi
