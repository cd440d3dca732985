/* The probes feature in the decode context (ctx.h): parsed once, mapped to the attrs
 * that record each probe's hits. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode/ctx.h"
#include "util/xp_err.h"

/* attr name NAME (the entry) or NAME__return (the exit) */
static bool records(const char *attr, const char *probe)
{
	size_t l = strlen(probe);

	return attr && strncmp(attr, probe, l) == 0 && (!attr[l] || strcmp(attr + l, "__return") == 0);
}

int dec_probes_load(struct dec_ctx *c)
{
	const char *text = c->pd ? pd_feature_str(c->pd, PD_FEAT_XPTRACE_PROBES) : NULL;
	uint32_t n = text ? pd_nattrs(c->pd) : 0;

	if (!text)
		return 0;
	c->probes = calloc(1, sizeof(*c->probes));
	c->probe_of = malloc((n ? n : 1) * sizeof(*c->probe_of));
	if (!c->probes || !c->probe_of)
		return -ENOMEM;
	int rc = pd_probes_parse(text, c->probes);
	if (rc == -EINVAL) {
		xp_warn("%s: the xptrace probes feature is not readable; probe windows and the cost "
			"of probe hits are ignored", pd_name(c->pd));
		pd_probes_free(c->probes);
		free(c->probes);
		c->probes = NULL;
		return 0;
	}
	if (rc < 0)
		return rc;
	for (uint32_t i = 0; i < n; i++) {
		const char *name = pd_attr_at(c->pd, i)->name;
		c->probe_of[i] = UINT32_MAX;
		/* the first line of its probe: a probe re-armed has one per window */
		for (size_t k = c->probes->n; k-- > 0;)
			if (records(name, c->probes->p[k].name))
				c->probe_of[i] = (uint32_t)k;
	}
	return 0;
}

const struct pd_probe *dec_probe_of(const struct dec_ctx *c, uint32_t attr)
{
	if (!c->probes || attr >= pd_nattrs(c->pd) || c->probe_of[attr] == UINT32_MAX)
		return NULL;
	return &c->probes->p[c->probe_of[attr]];
}

bool dec_probe_window(const struct pd_probe *p, uint64_t first, uint64_t last, uint64_t *from, uint64_t *to)
{
	*from = p->armed > first ? p->armed : first;
	*to = p->disarmed && p->disarmed < last ? p->disarmed : last;
	if (*to < *from)
		*to = *from;
	return *from != first || *to != last;
}

const char *dec_probe_fn(const struct pd_probe *p)
{
	const char *colon = strchr(p->name, ':');

	return colon ? colon + 1 : p->name;
}
