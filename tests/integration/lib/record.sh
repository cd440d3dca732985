# Shared by tests/integration/record*.sh (sourced after tests/lib.sh).
# perf is the oracle: every file we write must read without a warning.

# perf_clean NAME FILE: perf report and perf script read FILE with empty stderr, but
# for perf's note of records the kernel lost (ring overflow on a loaded machine: a fact
# of the run, which record reports too, not a fault of the file).
perf_clean() {
	local name=$1 f=$2 err
	err=$(perf report -i "$f" --stdio >/dev/null 2>&1 2>"$TMP/.perr"; cat "$TMP/.perr")
	err+=$'\n'$(perf script -i "$f" 2>&1 >/dev/null)
	err=$(printf '%s\n' "$err" | sed -E '/^Warning:$/d; /^Processed [0-9]+ events and lost [0-9]+ chunks!$/d;
		/^Check IO\/CPU overload!$/d; /^$/d')
	check_eq "$name: perf report and perf script read it without a message" "" "$err"
}

# sym_share FILE SYM [perf options]: percentage of self samples in SYM (integer part).
sym_share() {
	local f=$1 sym=$2; shift 2
	perf report -i "$f" "$@" --stdio --no-children --sort sym -q -g none 2>/dev/null |
		awk -v s="$sym" '$3 == s { sub("%", "", $1); printf "%d\n", $1; found=1 } END { if (!found) print 0 }'
}

# in_range LO HI VALUE
in_range() { [ "$3" -ge "$1" ] && [ "$3" -le "$2" ]; }

# nsamples FILE: SAMPLE records perf counts (its --stats, the table -D ends with, without
# the dump of every record before it).
nsamples() {
	perf report -i "$1" --stats 2>/dev/null | awk '/^ *SAMPLE events:/ { print $3; exit }'
}
