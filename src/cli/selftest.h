/* `xptrace selftest`: the workloads built into xptrace and the counts they are known to
 * produce, which the checks compare recordings against. */
#ifndef SELFTEST_H
#define SELFTEST_H

/* exact: st_loop calls st_tick ST_LOOP_TRIPS times; st_fib(ST_FIB_N) makes
 * ST_FIB_CALLS calls (2 fib(n+1) - 1); st_indirect calls st_ind_a, _b, _c
 * ST_IND_CALLS times each through a table; st_library calls getppid ST_LIB_CALLS
 * times; st_threads starts two threads calling st_leaf ST_LEAF_CALLS / 2 times each. */
#define ST_LOOP_TRIPS 1000
#define ST_FIB_N 12
#define ST_FIB_CALLS 465
#define ST_IND_CALLS 100
#define ST_LIB_CALLS 50
#define ST_LEAF_CALLS 200
/* split: ST_SPLIT_ROUNDS rounds of st_heavy (3 units of a loop) then st_light (1 unit
 * of the same loop): 75 % and 25 % of their CPU time */
#define ST_SPLIT_ROUNDS 8
#define ST_SPLIT_UNIT 20000000ULL

/* Runs workload `name` ("exact", "split"); 0, or -EINVAL for an unknown name. */
int st_workload(const char *name);

#endif
