#!/bin/bash
# Following a process tree: two threads, a forked child that execs another program.
# perf must see samples of every task with the right symbols and comm.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/lib/record.sh"
command -v perf >/dev/null || { ok "perf missing # SKIP"; exit 0; }
cd "$TMP"

"$XPTRACE" record -q -o tree -- "$PROGS/tree" 250 "$PROGS/hot" 250 >/dev/null 2>"$TMP/err"
check_eq "record exits 0" 0 $?
perf_clean "tree" tree/perf.data
script=$(perf script -i tree/perf.data -F comm,pid,tid,ip,sym 2>/dev/null | awk "{ print \$1, \$2, \$4 }")
# comm pid/tid sym -> "comm sym" per task
tasks=$(printf '%s\n' "$script" | awk '{ print $1, $3 }' | sort | uniq -c | awk '$1 >= 20 { print $2, $3 }' | sort)
check_eq "tasks with >= 20 samples: 2 threads, the child before and after exec" \
	"$(printf '%s\n' "hot cold_path" "hot hot_inner" "tree child_spin" "tree thread_spin")" "$tasks"
check_eq "thread_spin ran on two distinct threads" 2 \
	"$(printf '%s\n' "$script" | awk '$3 == "thread_spin" { print $2 }' | sort -u | wc -l)"
main_pid=$(printf '%s\n' "$script" | awk '$3 == "thread_spin" { split($2, a, "/"); print a[1]; exit }')
child_pid=$(printf '%s\n' "$script" | awk '$3 == "child_spin" { split($2, a, "/"); print a[1]; exit }')
check "the forked child is another process" test "$main_pid" != "$child_pid"
check_eq "exec kept the child's pid, changed comm" "$child_pid" \
	"$(printf '%s\n' "$script" | awk '$3 == "hot_inner" { split($2, a, "/"); print a[1]; exit }')"
tev=$(perf script -i tree/perf.data --show-task-events 2>/dev/null)
check_eq "FORK records: the child process and two threads" 3 "$(printf '%s\n' "$tev" | grep -c 'PERF_RECORD_FORK')"
check_match "COMM exec record for hot" "PERF_RECORD_COMM exec: hot:$child_pid/$child_pid" "$tev"
check_eq "EXIT records for all four tasks" 4 "$(printf '%s\n' "$tev" | grep -c 'PERF_RECORD_EXIT')"
bids=$(perf buildid-list -i tree/perf.data 2>/dev/null)
check_match "both executables snapshotted (tree)" " $PROGS/tree$" "$bids"
check_match "both executables snapshotted (hot)" " $PROGS/hot$" "$bids"
check_match "libpthread/libc snapshotted" "libc\.so\.6$" "$bids"
