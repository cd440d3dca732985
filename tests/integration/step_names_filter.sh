#!/bin/bash
# Step mode: threads renamed while traced keep their new names (the COMM records the
# kernel writes).
. "$(dirname "$0")/../lib.sh"

# "FN CALLS" of the functions matching $2 in `decode --functions` of trace $1 (rest:
# more decode arguments), one line each, sorted
calls() {
	local d=$1 re=$2
	shift 2
	"$XPTRACE" decode -i "$d" --functions "$@" 2>/dev/null | awk -v re="$re" '$NF ~ re { print $NF, $1 }' | sort
}

# --- thread names: prctl(PR_SET_NAME) on the main thread, pthread_setname_np (a write
# to /proc/self/task/TID/comm) on the second; alpha_work runs 3 times, beta_work 5
"$XPTRACE" record -q --mode step -o "$TMP/names" -- "$PROGS/step_names" >/dev/null 2>"$TMP/names.err"
check_eq "names: step record exits 0" 0 "$?"
check_eq "names: --comm alpha selects the renamed main thread's alpha_work calls, nothing of beta" \
	"alpha_work 3" "$(calls "$TMP/names" '_work$' --comm alpha)"
check_eq "names: --comm beta selects the renamed thread's beta_work calls, nothing of alpha" \
	"beta_work 5" "$(calls "$TMP/names" '_work$' --comm beta)"
check_eq "names: perf script -F comm,tid shows each function under its thread's new name" \
	"alpha alpha_work
beta beta_work" \
	"$(perf script -i "$TMP/names/perf.data" --itrace=i0ns -F comm,tid,ip,sym 2>/dev/null |
		awk '$4 ~ /_work$/ { print $1, $4 }' | sort -u)"
# the renames as the kernel records them (not exec), after the exec: the main thread's,
# then the other thread's; sample mode gets them from the kernel
renames() {
	perf report -D -i "$1/perf.data" 2>/dev/null |
		sed -n 's/.*PERF_RECORD_COMM\( exec\)*: \([^:]*\):\([0-9]*\)\/\([0-9]*\)$/\1 \2 \3 \4/p' |
		awk '$1 == "exec" { seen = 1; next } seen { print $1, ($2 == $3 ? "main" : "thread") }' | paste -sd,
}
check_eq "names: step writes a COMM record (misc 0) per rename, for the renamed thread" \
	"alpha main,beta thread" "$(renames "$TMP/names")"
"$XPTRACE" record -q --mode sample -o "$TMP/names-s" -- "$PROGS/step_names" 300000 >/dev/null 2>"$TMP/names-s.err"
check_eq "names: sample record exits 0" 0 "$?"
check_eq "names: sample mode's kernel COMM records agree" "$(renames "$TMP/names")" "$(renames "$TMP/names-s")"
check_eq "names: sample mode's --comm alpha sees alpha_work only" "alpha_work" \
	"$(calls "$TMP/names-s" '_work$' --comm alpha | awk '{ print $1 }')"
check_eq "names: sample mode's --comm beta sees beta_work only" "beta_work" \
	"$(calls "$TMP/names-s" '_work$' --comm beta | awk '{ print $1 }')"
