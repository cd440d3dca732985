#!/usr/bin/env python3
# Prints the probes feature (bit 200, a string: perfdata/pd_probes.h) of a perf.data,
# read with the file format's own layout, independently of xptrace's reader.
import struct, sys

f = open(sys.argv[1], 'rb').read()
if f[:8] != b'PERFILE2':
    sys.exit("not a perf.data")
data_off, data_size = struct.unpack_from('<QQ', f, 40)
bits = struct.unpack_from('<4Q', f, 72)
has = lambda b: (bits[b // 64] >> (b % 64)) & 1
if not has(200):
    sys.exit("no probes feature")
sec = data_off + data_size + 16 * sum(has(b) for b in range(200))
off, size = struct.unpack_from('<QQ', f, sec)
n, = struct.unpack_from('<I', f, off)
sys.stdout.write(f[off + 4:off + 4 + n].split(b'\0')[0].decode())
