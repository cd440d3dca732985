#!/usr/bin/env python3
"""report-speed-gen.py IN OUT N: a perf.data with N samples made from a real recording
IN (PERFILE2): its attrs, sideband and features are kept, its SAMPLE records are
repeated (with increasing times, a FINISHED_ROUND every 10000 samples) until N.  The
samples are real callchains of a real program, so perf and xptrace resolve the same
symbols; only the count grows."""
import struct, sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
b = open(src, "rb").read()
magic, hsize, attr_size, a_off, a_size, d_off, d_size = struct.unpack_from("<7Q", b, 0)
feats = struct.unpack_from("<4Q", b, 72)
st = struct.unpack_from("<Q", b, a_off + 24)[0]
assert st & 0x4, "needs PERF_SAMPLE_TIME"
# offset of the time field in a sample: IDENTIFIER, IP, TID come first
toff = 8 + 8 * bin(st & (0x10000 | 0x1 | 0x2)).count("1")

side, samples = [], []
off, end = d_off, d_off + d_size
t0 = t1 = None
while off + 8 <= end:
    typ, misc, size = struct.unpack_from("<IHH", b, off)
    rec = b[off:off + size]
    if typ == 9:
        t = struct.unpack_from("<Q", rec, toff)[0]
        t0 = t if t0 is None else min(t0, t)
        t1 = t if t1 is None else max(t1, t)
        samples.append(rec)
    elif typ != 68:  # FINISHED_ROUND: rewritten below
        side.append(rec)
    off += size
assert samples, "no samples in " + src
span = (t1 - t0) + 1000000
round_rec = struct.pack("<IHH", 68, 0, 8)
out = bytearray(b[:d_off])
out += b"".join(side)
k = 0
rep = 0
while k < n:
    for s in samples:
        if k >= n:
            break
        r = bytearray(s)
        t = struct.unpack_from("<Q", r, toff)[0]
        struct.pack_into("<Q", r, toff, t + rep * span)
        out += r
        k += 1
        if k % 10000 == 0:
            out += round_rec
    rep += 1
out += round_rec
new_d_size = len(out) - d_off
# features: the section table follows the data; payload offsets move with it
nfeat = sum(bin(x).count("1") for x in feats)
tab = d_off + d_size
secs = [struct.unpack_from("<QQ", b, tab + 16 * i) for i in range(nfeat)]
shift = (d_off + new_d_size) - tab
out += b"".join(struct.pack("<QQ", o + shift, s) for o, s in secs)
out += b[tab + 16 * nfeat:]
struct.pack_into("<Q", out, 48, new_d_size)
open(dst, "wb").write(out)
print(f"{dst}: {n} samples, {len(out) >> 20} MiB", file=sys.stderr)
