# uprobe_closer.py FILE: opens and closes a uprobe-PMU event on FILE's first byte in a
# loop until killed.  Each close unregisters the uprobe with the kernel's machine-wide
# trace-event mutex held (~75 ms here), as another tool's or recording's closes do: a
# tracefs definition or a perf_event_open of a uprobe waits behind them.  Offset 0 is an
# ELF header's "jg", an instruction the kernel accepts; no process runs FILE.
import ctypes, os, struct, sys

libc = ctypes.CDLL(None, use_errno=True)
SYS_perf_event_open = 298
uprobe = int(open("/sys/bus/event_source/devices/uprobe/type").read())
path = ctypes.create_string_buffer(os.fsencode(sys.argv[1]))
attr = bytearray(128)
# type, size, config, sample_period, sample_type, read_format, flags (disabled)
struct.pack_into("IIQQQQQ", attr, 0, uprobe, len(attr), 0, 0, 0, 0, 1)
struct.pack_into("QQ", attr, 56, ctypes.addressof(path), 0)	# config1, config2
buf = (ctypes.c_char * len(attr)).from_buffer(attr)
while True:
    fd = libc.syscall(SYS_perf_event_open, buf, -1, 0, -1, 0)
    if fd < 0:
        sys.exit("uprobe_closer: perf_event_open: %s" % os.strerror(ctypes.get_errno()))
    os.close(fd)
