/* The threads a signal ended, as the views show them: read from the trace's faults
 * feature (perfdata/pd_faults.h) and said the same way in --insn and --calls. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "views/view.h"
#include "perfdata/pd_faults.h"
#include "util/xp_err.h"

int view_load_faults(struct dec_ctx *c, struct pd_fault **out, size_t *n)
{
	const char *text = c->pd ? pd_feature_str(c->pd, PD_FEAT_XPTRACE_FAULTS) : NULL;
	size_t all, k = 0;
	int r;

	*out = NULL;
	*n = 0;
	if (!text)
		return 0;
	r = pd_faults_parse(text, out, &all);
	if (r == -EINVAL) {
		xp_warn("%s: the xptrace faults feature is not readable; fatal signals are not shown",
			pd_name(c->pd));
		return 0;
	}
	if (r < 0)
		return r;
	for (size_t i = 0; i < all; i++)
		if (c->opts->tid < 0 || (*out)[i].tid == c->opts->tid)
			(*out)[k++] = (*out)[i];
	*n = k;
	return 0;
}

void view_fault_text(struct out_buf *b, const struct pd_fault *f)
{
	char nb[16];

	out_buf_printf(b, "%s (%s)", pd_signal_name(f->signo, nb, sizeof(nb)), strsignal(f->signo));
	if (f->fault && f->signo != SIGFPE && f->signo != SIGILL)	/* those give the ip */
		out_buf_printf(b, ", address 0x%lx", (unsigned long)f->addr);
}

void view_fault_json(struct out_buf *b, const struct pd_fault *f)
{
	char nb[16];

	out_json_string(b, "signal", pd_signal_name(f->signo, nb, sizeof(nb)));
	out_json_u64(b, "signo", (uint64_t)f->signo);
	out_json_u64(b, "si_code", (uint64_t)(int64_t)f->code);
	if (f->fault)
		out_json_hex(b, "addr", f->addr);
}
