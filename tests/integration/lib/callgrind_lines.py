#!/usr/bin/env python3
"""callgrind_lines.py CALLGRIND_OUT FILE: the self cost (first event) of each line of
source FILE (matched by its last path components) in a callgrind profile of
`positions: line`, one "LINE COST" per line, by line.  Reads the format itself
(name compression, relative positions, the inclusive cost line after calls= that is
no self cost), so it does not depend on callgrind_annotate's layout."""
import re
import sys

want = "/" + sys.argv[2].lstrip("/")
names = {}
cur = sub = None
pos = 0
after_calls = False
cost = {}


def name(v):
    m = re.match(r"^\((\d+)\)(?: (.*))?$", v)
    if not m:
        return v
    if m.group(2) is not None:
        names[m.group(1)] = m.group(2)
    return names.get(m.group(1))


for l in open(sys.argv[1]):
    l = l.rstrip("\n")
    key, _, val = l.partition("=")
    if key in ("fl", "fi", "fe"):
        f = name(val)
        cur = f if key == "fl" else cur
        sub = f
    elif key == "fn":
        sub = cur
    elif key in ("cfl", "cfi", "cob", "cfn", "ob"):
        name(val)
    elif key == "calls":
        after_calls = True
    else:
        m = re.match(r"^([+-]\d+|\d+|\*)\s+(\d+)", l)
        if not m:
            continue
        p = m.group(1)
        pos = pos + int(p) if p[0] in "+-" else pos if p == "*" else int(p)
        if after_calls:
            after_calls = False
        elif sub and ("/" + sub).endswith(want):
            cost[pos] = cost.get(pos, 0) + int(m.group(2))
for line in sorted(cost):
    print(line, cost[line])
