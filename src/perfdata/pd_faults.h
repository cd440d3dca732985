/* How traced threads ended by a signal, for decode: `xptrace record --mode step` sees
 * the fatal signal of each thread and where it hit, which no trace packet carries (a
 * user-only PT trace just ends).  decode --insn marks the last instruction with it.
 *
 * Stored as the string feature PD_FEAT_XPTRACE_FAULTS (perf skips it), one line each:
 *   xptrace-faults 1
 *   fault TID PID TIME_NS IP SIGNO CODE ADDR
 *   kill TID PID TIME_NS IP SIGNO CODE ADDR
 * `fault`: the instruction at IP raised the signal and did not complete (the trace ends
 * with FUP IP + TIP.PGD there); `kill`: the signal came from outside or from a syscall
 * (abort's tgkill), the thread was at IP, and the trace's last instruction ran before
 * it.  TIME_NS is the trace's clock; CODE and ADDR are siginfo's si_code and si_addr;
 * numbers are decimal except IP and ADDR (hex). */
#ifndef PD_FAULTS_H
#define PD_FAULTS_H

#include <stddef.h>
#include <stdint.h>

struct pd_fault {
	int32_t tid, pid;
	uint64_t time, ip;
	int32_t signo, code;
	uint64_t addr;
	uint8_t fault;		/* 1: the instruction at ip faulted; 0: killed */
};

/* The feature's text for `n` faults (malloc'd), NULL on ENOMEM. */
char *pd_faults_format(const struct pd_fault *f, size_t n);
/* Parses the feature's text into a malloc'd array; -EINVAL on a malformed text (nothing
 * returned), -ENOMEM. */
int pd_faults_parse(const char *text, struct pd_fault **out, size_t *n);
/* "SIGSEGV" for 11, "SIG34" for what has no name. */
const char *pd_signal_name(int signo, char *buf, size_t len);

#endif
