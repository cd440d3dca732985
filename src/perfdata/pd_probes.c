/* The probes feature of xptrace's traces (pd_probes.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfdata/pd_probes.h"
#include "util/xp_grow.h"

int pd_probes_add(struct pd_probes *ps, const char *name, uint64_t armed, uint64_t disarmed,
		  uint64_t hits, const char *reason)
{
	char *n = strdup(name), *r = strdup(reason ? reason : "");

	if (!n || !r || XP_GROW(ps->p, ps->cap, ps->n + 1) < 0) {
		free(n);
		free(r);
		return -ENOMEM;
	}
	ps->p[ps->n++] = (struct pd_probe){ n, armed, disarmed, hits, r };
	return 0;
}

char *pd_probes_format(const struct pd_probes *ps)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fprintf(f, "xptrace-probes 1\n");
	if (ps->calibrated)
		fprintf(f, "calibration %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", ps->caller_ns, ps->callee_ns,
			ps->runs);
	for (size_t i = 0; i < ps->n; i++) {
		const struct pd_probe *p = &ps->p[i];
		/* names and reasons are one line each: a newline would start a new entry */
		fprintf(f, "probe %s %" PRIu64 " %" PRIu64 " %" PRIu64 " ", p->name, p->armed, p->disarmed, p->hits);
		for (const char *c = p->reason; *c; c++)
			fputc(*c == '\n' ? ' ' : *c, f);
		fputc('\n', f);
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int parse_line(const char *l, size_t n, struct pd_probes *ps)
{
	char name[512];
	uint64_t a, b, c;
	int used = 0;

	if (n == 0)
		return 0;
	char *line = strndup(l, n);
	if (!line)
		return -ENOMEM;
	int rc = -EINVAL;
	if (sscanf(line, "calibration %" SCNu64 " %" SCNu64 " %" SCNu64 " %n", &a, &b, &c, &used) == 3 &&
	    !line[used]) {
		ps->calibrated = true;
		ps->caller_ns = a;
		ps->callee_ns = b;
		ps->runs = c;
		rc = 0;
	} else if (sscanf(line, "probe %511s %" SCNu64 " %" SCNu64 " %" SCNu64 "%n", name, &a, &b, &c, &used) == 4) {
		const char *reason = line + used;
		rc = pd_probes_add(ps, name, a, b, c, *reason == ' ' ? reason + 1 : reason);
	}
	free(line);
	return rc;
}

int pd_probes_parse(const char *text, struct pd_probes *ps)
{
	const char *nl = strchr(text, '\n');

	if (!nl || strncmp(text, "xptrace-probes 1", (size_t)(nl - text)) != 0 || nl - text != 16)
		return -EINVAL;
	for (const char *l = nl + 1; *l;) {
		nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		int rc = parse_line(l, n, ps);
		if (rc < 0)
			return rc;
		l += n + (nl != NULL);
	}
	return 0;
}

const struct pd_probe *pd_probes_find(const struct pd_probes *ps, const char *name)
{
	for (size_t i = 0; i < ps->n; i++)
		if (strcmp(ps->p[i].name, name) == 0)
			return &ps->p[i];
	return NULL;
}

void pd_probes_free(struct pd_probes *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->p[i].name);
		free(ps->p[i].reason);
	}
	free(ps->p);
	memset(ps, 0, sizeof(*ps));
}
