# A callgrind profile on stdin: "FN CALLS" per function whose name matches argv[1], its
# calls= lines summed over every caller and site, sorted.  Names may be compressed
# (fn=(N) name the first time, fn=(N) after).
import collections
import re
import sys

calls = collections.Counter()
names = {}
callee = None
for line in sys.stdin:
    line = line.rstrip("\n")
    m = re.match(r"(c?fn)=(\(\d+\))?\s*(.*)$", line)
    if m:
        if m.group(2) and m.group(3):
            names[m.group(2)] = m.group(3)
        if m.group(1) == "cfn":
            callee = m.group(3) or names.get(m.group(2))
        continue
    m = re.match(r"calls=(\d+)", line)
    if m:
        calls[callee] += int(m.group(1))
for f in sorted(calls):
    if re.search(sys.argv[1], f):
        print(f, calls[f])
