# Shared by the bench scripts: CPU time of one run, peak RSS of one run, min, ratio.
# Source after setting T (a scratch directory).  CPU seconds (user+sys of the child,
# from its rusage in microseconds) rather than wall time: the machines are shared.

# cpu1 CMD...: prints the command's user+sys seconds; on failure prints its stderr and
# why, and exits 1 (set -e scripts would otherwise stop without a word).
cpu1() {
	python3 -c '
import resource, subprocess, sys
def cpu():	# of waited-for children; a launcher (pyenv shim) may have some already
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
t0 = cpu()
with open(sys.argv[1], "w") as err:
    rc = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err)
print("%.4f" % (cpu() - t0))
sys.exit(rc)' "$T/err" "$@" ||
		{ cat "$T/err" >&2; echo "bench: failed: $*" >&2; exit 1; }
}
# cpuwall1 CMD...: prints the command's user+sys seconds and its wall seconds.
cpuwall1() {
	python3 -c '
import resource, subprocess, sys, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime
t0, w0 = cpu(), time.monotonic()
with open(sys.argv[1], "w") as err:
    rc = subprocess.call(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=err)
print("%.4f %.4f" % (cpu() - t0, time.monotonic() - w0))
sys.exit(rc)' "$T/err" "$@" ||
		{ cat "$T/err" >&2; echo "bench: failed: $*" >&2; exit 1; }
}
# rss1 CMD...: prints its max RSS in KB (by /usr/bin/time: the RSS high-water mark
# survives exec, so the measuring process must be small).
rss1() {
	/usr/bin/time -f "%M" -o "$T/time" "$@" >/dev/null 2>"$T/err" ||
		{ cat "$T/err" >&2; echo "bench: failed: $*" >&2; exit 1; }
	cat "$T/time"
}
min() { if [ -z "$1" ] || [ "$(echo "$2 < $1" | bc -l)" = 1 ]; then echo "$2"; else echo "$1"; fi; }
ratio() { echo "scale=2; $1 / $2" | bc -l; }
