#!/bin/bash
# Step mode: threads renamed while traced keep their new names (the COMM records the
# kernel writes), and --filter counts the first entry into a filtered function as a call.
. "$(dirname "$0")/../lib.sh"

NOASLR="setarch -R"

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

# "FN CALLS" of the functions matching $2 in `decode --calls` of trace $1, sorted
calls_listed() {
	"$XPTRACE" decode -i "$1" --calls --format jsonl 2>/dev/null | python3 -c '
import collections, json, re, sys
n = collections.Counter(r["name"] for r in map(json.loads, sys.stdin))
for f in sorted(n):
    if re.search(sys.argv[1], f):
        print(f, n[f])' "$2"
}
# "FN CALLS" of the functions matching $2 in the per-instruction callgrind profile
# (`--blocks --format callgrind`) of trace $1: its calls= lines summed per cfn=, sorted
calls_callgrind() {
	"$XPTRACE" decode -i "$1" --blocks --format callgrind 2>/dev/null | python3 "$(dirname "$0")/lib/cg_calls.py" "$2"
}

# --- --filter: Calls of a filtered function equal the single-step ground truth and
# perf's, in the call tree, --calls and the callgrind profile.  The first entry from untraced code starts the stream (PSB+ with a FUP at the
# entry), later ones are TIP.PGE there: each is a call.
# $1 program, $2 --filter spec, $3 the functions to count (space separated), $4 their
# module file, $5 the program's folder (build/progs)
filter_calls() {
	local prog=$1 spec=$2 fns=$3 mod=$4 dir=${5:-$PROGS} name=$1.c$RANDOM off base fn lo first want
	off=$(nm "$dir/$prog" | awk '$3 == "main" { print $1 }')
	$NOASLR "$PROGS/xp_sstep" "$TMP/$name.truth" "0x$off" -- "$dir/$prog" >/dev/null 2>&1
	$NOASLR "$XPTRACE" record -q --mode step --filter "$spec" -o "$TMP/$name" -- "$dir/$prog" >/dev/null 2>&1
	check_eq "--filter $spec: record exits 0" 0 "$?"
	# the module's load address: the trace starts at the first function's entry
	first=$(perf script -i "$TMP/$name/perf.data" --itrace=i0ns -F ip 2>/dev/null | head -1 | awk '{ print $1 }')
	lo=$(nm "$mod" | awk -v f="${fns%% *}" '$3 == f { print $1 }')
	base=$((0x$first - 0x$lo))
	perf script -i "$TMP/$name/perf.data" --itrace=c -F flags,ip,sym,addr 2>/dev/null >"$TMP/$name.calls"
	for fn in $fns; do
		lo=$(printf '%x' $((base + 0x$(nm "$mod" | awk -v f="$fn" '$3 == f { print $1 }'))))
		want=$(grep -cx "$lo" "$TMP/$name.truth.0")
		check_eq "--filter $spec: Calls of $fn equal the single-step ground truth's entries" \
			"$fn $want" "$(calls "$TMP/$name" "^$fn\$")"
		check_eq "--filter $spec: --calls lists the ground truth's $want calls of $fn" \
			"$fn $want" "$(calls_listed "$TMP/$name" "^$fn\$")"
		check_eq "--filter $spec: callgrind's calls= of $fn sum to the ground truth's $want" \
			"$fn $want" "$(calls_callgrind "$TMP/$name" "^$fn\$")"
		# perf: calls into fn from traced code, plus the entries from outside, each of
		# which ends the trace with fn's return out of the ranges ("tr end return")
		check_eq "--filter $spec: Calls of $fn equal perf script --itrace=c's" "$want" \
			"$(awk -v a="$lo" -v f="$fn" '($1 == "call" && $NF == f && $(NF - 1) == a) ||
				($1 == "tr" && $2 == "end" && $3 == "return" && $5 == f) { n++ } END { print n + 0 }' "$TMP/$name.calls")"
	done
}
filter_calls step_basic fib fib "$PROGS/step_basic"
filter_calls step_mutual is_even,is_odd "is_even is_odd" "$PROGS/step_mutual"
read -r lf_start lf_size < <(nm -S "$PROGS/step_mutual" | awk '$4 == "leaf" { print $1, $2 }')
filter_calls step_mutual "$(printf '0x%s-0x%x' "$lf_start" $((0x$lf_start + 0x$lf_size)))@step_mutual" leaf \
	"$PROGS/step_mutual"
# (from a copy outside the checkout: perf learns the filter's ranges from the library's
# path, which its filter syntax cannot carry with a space)
mkdir -p "$TMP/dl" && cp "$PROGS/step_dlopen" "$PROGS/libstep_dl.so" "$TMP/dl/"
filter_calls step_dlopen "step_dl_work@$TMP/dl/libstep_dl.so" step_dl_work "$TMP/dl/libstep_dl.so" "$TMP/dl"
filter_calls step_dlopen "tri@$TMP/dl/libstep_dl.so" tri "$TMP/dl/libstep_dl.so" "$TMP/dl"
