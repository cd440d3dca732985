/* JIT files kept with the trace (see rec.h): the jitdumps the traced processes mapped
 * and the perf maps of processes that ran anonymous code, copied into DIR/jit/ when
 * the recording ends (a JIT appends to them until then). */
#include "record/rec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "session/jit.h"
#include "session/ms_store.h"
#include "util/xp_err.h"

struct rec_jit {
	char **paths;		/* jitdumps, as mapped */
	size_t npaths;
	int32_t *pids;		/* processes with anonymous executable mappings */
	size_t npids;
	size_t kept;
};

static struct rec_jit *state(struct rec *r)
{
	if (!r->jit)
		r->jit = calloc(1, sizeof(*r->jit));
	return r->jit;
}

int rec_jit_note_mmap(struct rec *r, int32_t pid, const char *name, int anon)
{
	struct rec_jit *j = state(r);
	const char *base = strrchr(name, '/');
	int32_t p;

	if (anon) {
		for (size_t i = 0; j && i < j->npids; i++)
			if (j->pids[i] == pid)
				return 1;
		int32_t *n = j ? realloc(j->pids, (j->npids + 1) * sizeof(*n)) : NULL;
		if (n) {
			j->pids = n;
			j->pids[j->npids++] = pid;
		}
		return 1;
	}
	base = base ? base + 1 : name;
	if (!jit_dump_name(base, &p))
		return 0;
	for (size_t i = 0; j && i < j->npaths; i++)
		if (strcmp(j->paths[i], name) == 0)
			return 1;
	char **n = j ? realloc(j->paths, (j->npaths + 1) * sizeof(*n)) : NULL;
	if (n) {
		j->paths = n;
		if ((j->paths[j->npaths] = strdup(name)))
			j->npaths++;
	}
	return 1;
}

static void keep(struct rec *r, const char *path)
{
	const char *base = strrchr(path, '/');
	char to[4096];
	int e;

	snprintf(to, sizeof(to), "%s/jit", r->dir);
	if (mkdir(to, 0755) < 0 && errno != EEXIST) {
		e = -errno;
	} else {
		snprintf(to, sizeof(to), "%s/jit/%s", r->dir, base ? base + 1 : path);
		e = ms_copy_file(path, to);
	}
	if (e == 0)
		r->jit->kept++;
	else if (!r->opts->quiet)
		xp_warn("JIT code names will be missing: cannot keep %s: %s", path, strerror(-e));
}

size_t rec_jit_keep(struct rec *r)
{
	struct rec_jit *j = r->jit;
	char path[64];

	if (!j)
		return 0;
	for (size_t i = 0; i < j->npaths; i++)
		keep(r, j->paths[i]);
	for (size_t i = 0; i < j->npids; i++) {
		snprintf(path, sizeof(path), "/tmp/perf-%d.map", j->pids[i]);
		if (access(path, R_OK) == 0)
			keep(r, path);
	}
	return j->kept;
}

void rec_jit_free(struct rec *r)
{
	struct rec_jit *j = r->jit;

	if (!j)
		return;
	for (size_t i = 0; i < j->npaths; i++)
		free(j->paths[i]);
	free(j->paths);
	free(j->pids);
	free(j);
	r->jit = NULL;
}
