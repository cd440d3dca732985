/* Shared parts of the PT plug-ins of decode (see pt_plug.h). */
#include <stdio.h>
#include <string.h>

#include "out.h"
#include "pt_plug.h"
#include "xev.h"

uint32_t dpt_view_ignores(const struct dec_ctx *c)
{
	const char *v = c->opts->view;
	if (v && strcmp(v, "insn") == 0)
		return 1u << XEV_BRANCH | 1u << XEV_CALL | 1u << XEV_RETURN;
	if (v && (strcmp(v, "annotate") == 0 ||
		  (strcmp(v, "blocks") == 0 && c->opts->format != OUT_CALLGRIND)))
		return 1u << XEV_CALL | 1u << XEV_RETURN;
	return 0;
}

int dpt_setup_metrics(struct dec_ctx *c, const char *time_name)
{
	c->nmetrics = 0;
	c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_INSNS, .name = "insns" };
	c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_CYCLES, .name = "cycles" };
	if (time_name && c->opts->metric && strcmp(c->opts->metric, time_name) == 0) {
		struct dec_metric *m = &c->metrics[c->nmetrics++];
		*m = (struct dec_metric){ .kind = DEC_M_TIME };
		snprintf(m->name, sizeof(m->name), "%s", time_name);
	}
	c->metric = 0;
	c->sampled = false;
	return 0;
}
