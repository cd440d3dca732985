#!/usr/bin/env python3
"""Compares a decoded instruction stream with the single-step ground truth (xp_sstep).

usage: step_truth.py [--branches] TRUTHPREFIX START DECODED [MODULE_LO MODULE_HI]

DECODED: `perf script -F tid,ip` lines ("TID ADDR", any spacing).  Threads are matched
in tid order (creation order while pids do not wrap); in the first thread everything before the first START is
dropped (the ground truth starts there).  With MODULE_LO/HI only addresses in that
range are compared (for threads whose path through libc depends on timing).
With --branches, DECODED is `perf script --itrace=b -F tid,ip,addr` ("TID FROM => TO"):
a trace end (FROM => 0) and the next trace start (0 => TO) join into FROM => TO, and
the taken branches are compared with the ground truth's transfers: consecutive
instructions more than 15 bytes forward or backwards apart (a taken branch to within
15 bytes ahead looks like straight-line code in an address list, so both sides drop
those alike).  The first thread's branches start at its first branch from START on.
Prints one line per thread and exits 1 on the first difference, showing where."""
import sys


def far(a, b):
    return not 0 < b - a <= 15


class Hex(dict):
    """int(s, 16), each string converted once: a stream repeats its loops' addresses."""
    def __missing__(self, s):
        v = self[s] = int(s, 16)
        return v


def read_branches(path):
    order, streams, pending, h = [], {}, {}, Hex()
    with open(path) as f:
        for line in f:
            parts = line.replace("=>", " ").split()
            if len(parts) < 3:
                continue
            tid, a, b = parts[0], h[parts[1]], h[parts[2]]
            if tid not in streams:
                order.append(tid)
                streams[tid] = []
            if b == 0:          # trace end: the transfer completes at the next start
                pending[tid] = a
                continue
            if a == 0:
                if tid not in pending:
                    continue    # the very first start has no source
                a = pending.pop(tid)
            if far(a, b):
                streams[tid].append((a, b))
    return order, streams


def main():
    args = sys.argv[1:]
    branches = args and args[0] == "--branches"
    if branches:
        args = args[1:]
    prefix, start = args[0], int(args[1], 16)
    lo = int(args[3], 16) if len(args) > 4 else None
    hi = int(args[4], 16) if len(args) > 4 else None
    order, streams = [], {}
    if branches:
        order, streams = read_branches(args[2])
    else:
        h = Hex()
        with open(args[2]) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 2:
                    continue
                tid, ip = parts[0], h[parts[1]]
                if tid not in streams:
                    order.append(tid)
                    streams[tid] = []
                streams[tid].append(ip)
    ok = True
    order.sort(key=int)
    for n, tid in enumerate(order):
        try:
            with open("%s.%d" % (prefix, n)) as f:
                h = Hex()
                truth = [h[x] for x in f.read().split()]
        except FileNotFoundError:
            print("thread %d (tid %s): no ground truth" % (n, tid))
            return 1
        got = streams[tid]
        if branches:
            truth = [(a, b) for a, b in zip(truth, truth[1:]) if far(a, b)]
            if n == 0:
                # the truth starts at START: drop decoded branches before the one
                # that matches the truth's first (START is reached by a call)
                first = truth[0] if truth else None
                got = got[got.index(first):] if first in got else []
            if lo is not None:
                got = [x for x in got if lo <= x[0] < hi]
                truth = [x for x in truth if lo <= x[0] < hi]
        else:
            if n == 0:
                if start not in got:
                    print("thread 0: start %x never decoded" % start)
                    return 1
                got = got[got.index(start):]
            if lo is not None:
                got = [x for x in got if lo <= x < hi]
                truth = [x for x in truth if lo <= x < hi]
        same = len(got) if got == truth else 0
        while same < min(len(got), len(truth)) and got[same] == truth[same]:
            same += 1
        what = "branches" if branches else "instructions"
        if same == len(got) == len(truth):
            print("thread %d: %d %s identical" % (n, same, what))
            continue
        ok = False
        fmt = (lambda x: "%x>%x" % x) if branches else (lambda x: "%x" % x)
        print("thread %d: differs at %s %d of %d (truth %d): truth %s decoded %s"
              % (n, what, same, len(got), len(truth),
                 " ".join(fmt(x) for x in truth[max(0, same - 2):same + 3]),
                 " ".join(fmt(x) for x in got[max(0, same - 2):same + 3])))
    if not order:
        print("nothing decoded")
        return 1
    return 0 if ok else 1


sys.exit(main())
