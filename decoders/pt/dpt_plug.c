/* Shared parts of the PT plug-ins of decode (see dpt_plug.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "decoders/pt/dpt_plug.h"
#include "decode/xev.h"
#include "util/xp_err.h"

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

int dpt_plug_decoder(const struct dec_ctx *c, int *libipt_only)
{
	const char *v = dec_opt(c, "pt-decoder");
	*libipt_only = 0;
	if (!v || strcmp(v, "fast") == 0)
		return 0;
	if (strcmp(v, "libipt") == 0) {
		*libipt_only = 1;
		return 0;
	}
	xp_usage_error("decode", "--pt-decoder %s: expected fast or libipt", v);
	return -EOPNOTSUPP;	/* a request the decode cannot serve: exit status 2 */
}
