#!/bin/bash
# Writes the seed corpus of harness NAME (build-fuzz/fuzz_NAME) into DIR, from the
# fixtures and shipped traces (tests/fuzz/run.sh and tests/integration/fuzz.sh).
# Usage: tests/fuzz/seed.sh NAME DIR
set -u
cd "$(dirname "$0")/../.."
mkdir -p "$2" || exit 1
set -- "$1" "$(cd "$2" && pwd)"
case $1 in
perfdata) cp tests/fixtures/perfdata/*.data "$2"/ 2>/dev/null
	for t in traces/*/perf.data; do cp "$t" "$2/$(basename "$(dirname "$t")").data"; done ;;
pt_raw)	# the first byte picks the decoder's settings (see fuzz_pt_raw.c)
	for s in 00 01 02 03 04 08 10 20 2d 61 a3 e0; do
		{ printf "\\x$s"; cat traces/pt-spin/trace.pt; } >"$2/trace-$s.pt"
	done ;;
pt_diff) # the first byte picks the settings (see fuzz_pt_diff.c); seeds/pt_diff/ holds
	# traces of ptspin with a PSB+ every 48 bytes: stretches the walker takes
	for f in traces/pt-spin/trace.pt tests/fuzz/seeds/pt_diff/*.pt; do
		for s in 00 01 02 04 08 0a 10 14 20 22 28 30 48 8a a8; do
			{ printf "\\x$s"; cat "$f"; } >"$2/$(basename "$f" .pt)-$s.pt"
		done
	done ;;
jit)	cp tests/fuzz/seeds/jit/* "$2"/ ;;
x86_emu) # a register state and a straight-line sequence each (see fuzz_x86_emu.c)
	cp tests/fuzz/seeds/x86_emu/* "$2"/ ;;
rec_parse) # one option's text each (see fuzz_rec_parse.c); every parser gets every input
	cp tests/fuzz/seeds/rec_parse/* "$2"/ ;;
pmu)	# each fixture PMU as "PMU/FILE" NUL CONTENT NUL pairs (see fuzz_pmu.c)
	for d in tests/fixtures/sysfs/*/sys/bus/event_source/devices/*/; do
		t=${d#tests/fixtures/sysfs/}
		(cd "$d/.." && find "$(basename "$d")" -type f | sort | while read -r f; do
			printf '%s\0' "$f"; cat "$f"; printf '\0'
		done) >"$2/${t%%/*}-$(basename "$d")"
	done ;;
esac
