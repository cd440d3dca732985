/* The faults feature of a trace (pd_faults.h). */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/pd_faults.h"
#include "util/xp_grow.h"

char *pd_faults_format(const struct pd_fault *f, size_t n)
{
	size_t cap = 32 + n * 128, len;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	len = (size_t)snprintf(s, cap, "xptrace-faults 1\n");
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(s + len, cap - len,
					"%s %" PRId32 " %" PRId32 " %" PRIu64 " %" PRIx64 " %" PRId32
					" %" PRId32 " %" PRIx64 "\n",
					f[i].fault ? "fault" : "kill", f[i].tid, f[i].pid, f[i].time,
					f[i].ip, f[i].signo, f[i].code, f[i].addr);
	return s;
}

int pd_faults_parse(const char *text, struct pd_fault **out, size_t *n)
{
	struct pd_fault *v = NULL;
	size_t nv = 0, cap = 0;
	const char *p = text;
	int ver;

	*out = NULL;
	*n = 0;
	if (sscanf(p, "xptrace-faults %d", &ver) != 1 || ver != 1)
		return -EINVAL;
	while ((p = strchr(p, '\n')) && *++p) {
		struct pd_fault f = { 0 };
		char kind[8];
		int used = 0;

		if (sscanf(p, "%7s %" SCNd32 " %" SCNd32 " %" SCNu64 " %" SCNx64 " %" SCNd32 " %" SCNd32
			   " %" SCNx64 "%n", kind, &f.tid, &f.pid, &f.time, &f.ip, &f.signo, &f.code,
			   &f.addr, &used) != 8 || (p[used] != '\n' && p[used]) ||
		    (strcmp(kind, "fault") && strcmp(kind, "kill")) || f.signo <= 0 || f.signo > 64)
			goto bad;
		f.fault = strcmp(kind, "fault") == 0;
		if (XP_GROW(v, cap, nv + 1) < 0) {
			free(v);
			return -ENOMEM;
		}
		v[nv++] = f;
	}
	*out = v;
	*n = nv;
	return 0;
bad:
	free(v);
	return -EINVAL;
}

const char *pd_signal_name(int signo, char *buf, size_t len)
{
	static const char *const names[] = {
		[SIGHUP] = "SIGHUP", [SIGINT] = "SIGINT", [SIGQUIT] = "SIGQUIT",
		[SIGILL] = "SIGILL", [SIGTRAP] = "SIGTRAP", [SIGABRT] = "SIGABRT",
		[SIGBUS] = "SIGBUS", [SIGFPE] = "SIGFPE", [SIGKILL] = "SIGKILL",
		[SIGUSR1] = "SIGUSR1", [SIGSEGV] = "SIGSEGV", [SIGUSR2] = "SIGUSR2",
		[SIGPIPE] = "SIGPIPE", [SIGALRM] = "SIGALRM", [SIGTERM] = "SIGTERM",
		[SIGSTKFLT] = "SIGSTKFLT", [SIGCHLD] = "SIGCHLD", [SIGCONT] = "SIGCONT",
		[SIGSTOP] = "SIGSTOP", [SIGTSTP] = "SIGTSTP", [SIGTTIN] = "SIGTTIN",
		[SIGTTOU] = "SIGTTOU", [SIGURG] = "SIGURG", [SIGXCPU] = "SIGXCPU",
		[SIGXFSZ] = "SIGXFSZ", [SIGVTALRM] = "SIGVTALRM", [SIGPROF] = "SIGPROF",
		[SIGWINCH] = "SIGWINCH", [SIGIO] = "SIGIO", [SIGPWR] = "SIGPWR",
		[SIGSYS] = "SIGSYS",
	};

	if (signo > 0 && (size_t)signo < sizeof(names) / sizeof(names[0]) && names[signo])
		return names[signo];
	snprintf(buf, len, "SIG%d", signo);
	return buf;
}
