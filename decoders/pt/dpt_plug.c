/* Shared parts of the PT plug-ins of decode (see dpt_plug.h). */
#include <stdio.h>
#include <string.h>

#include "decoders/pt/dpt_plug.h"
#include "decode/xev.h"

int dpt_setup_metrics(struct dec_ctx *c, const char *time_name, bool cycles)
{
	c->nmetrics = 0;
	c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_INSNS, .name = "insns" };
	if (cycles)
		c->metrics[c->nmetrics++] = (struct dec_metric){ .kind = DEC_M_CYCLES, .name = "cycles" };
	c->on_request = time_name;
	if (time_name && c->opts->metric && strcmp(c->opts->metric, time_name) == 0) {
		struct dec_metric *m = &c->metrics[c->nmetrics++];
		*m = (struct dec_metric){ .kind = DEC_M_TIME };
		snprintf(m->name, sizeof(m->name), "%s", time_name);
		m->ns = strcmp(time_name, "time") == 0;	/* "tsc": ticks */
		c->on_request = NULL;
	}
	c->metric = 0;
	c->sampled = false;
	return 0;
}
