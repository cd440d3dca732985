#!/usr/bin/env python3
"""Compares a decoded instruction stream with the single-step ground truth (xp_sstep).

usage: step_truth.py TRUTHPREFIX START DECODED [MODULE_LO MODULE_HI]

DECODED: `perf script -F tid,ip` lines ("TID ADDR", any spacing).  Threads are matched
in tid order (creation order while pids do not wrap); in the first thread everything before the first START is
dropped (the ground truth starts there).  With MODULE_LO/HI only addresses in that
range are compared (for threads whose path through libc depends on timing).
Prints one line per thread and exits 1 on the first difference, showing where."""
import sys


def main():
    prefix, start = sys.argv[1], int(sys.argv[2], 16)
    lo = int(sys.argv[4], 16) if len(sys.argv) > 5 else None
    hi = int(sys.argv[5], 16) if len(sys.argv) > 5 else None
    order, streams = [], {}
    with open(sys.argv[3]) as f:
        for line in f:
            parts = line.split()
            if len(parts) < 2:
                continue
            tid, ip = parts[0], int(parts[1], 16)
            if tid not in streams:
                order.append(tid)
                streams[tid] = []
            streams[tid].append(ip)
    ok = True
    order.sort(key=int)
    for n, tid in enumerate(order):
        try:
            with open("%s.%d" % (prefix, n)) as f:
                truth = [int(x, 16) for x in f if x.strip()]
        except FileNotFoundError:
            print("thread %d (tid %s): no ground truth" % (n, tid))
            return 1
        got = streams[tid]
        if n == 0:
            if start not in got:
                print("thread 0: start %x never decoded" % start)
                return 1
            got = got[got.index(start):]
        if lo is not None:
            got = [x for x in got if lo <= x < hi]
            truth = [x for x in truth if lo <= x < hi]
        same = 0
        while same < min(len(got), len(truth)) and got[same] == truth[same]:
            same += 1
        if same == len(got) == len(truth):
            print("thread %d: %d instructions identical" % (n, same))
            continue
        ok = False
        print("thread %d: differs at instruction %d of %d (truth %d): truth %s decoded %s"
              % (n, same, len(got), len(truth),
                 " ".join("%x" % x for x in truth[max(0, same - 2):same + 3]),
                 " ".join("%x" % x for x in got[max(0, same - 2):same + 3])))
    if not order:
        print("nothing decoded")
        return 1
    return 0 if ok else 1


sys.exit(main())
