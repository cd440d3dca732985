/* Source lines for --annotate listings. */
#include <stdlib.h>
#include <string.h>

#include "views/bb_src.h"
#include "util/xp_grow.h"

static void drop(struct bb_src *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->lines[i]);
	free(s->lines);
	free(s->path);
	s->path = NULL;
	s->lines = NULL;
	s->n = 0;
}

static void load(struct bb_src *s, const char *path)
{
	if (s->path && strcmp(s->path, path) == 0)
		return;
	drop(s);
	s->path = strdup(path);
	FILE *in = fopen(path, "r");
	size_t cap = 0, len = 0;
	char *l = NULL;
	while (in && getline(&l, &len, in) >= 0 && XP_GROW(s->lines, cap, s->n + 1) == 0) {
		l[strcspn(l, "\n")] = 0;
		s->lines[s->n++] = l;
		l = NULL;
		len = 0;
	}
	free(l);
	if (in)
		fclose(in);
}

void bb_src_print(struct bb_src *s, FILE *out, int indent, const char *file, int line)
{
	if (line == s->last_line && s->last_file && strcmp(file, s->last_file) == 0)
		return;
	load(s, file);
	const char *slash = strrchr(file, '/');
	fprintf(out, "%*s: %s:%d  %s\n", indent, "", slash ? slash + 1 : file, line,
		line > 0 && (size_t)line <= s->n ? s->lines[line - 1] : "");
	s->last_file = file;
	s->last_line = line;
}

void bb_src_free(struct bb_src *s)
{
	drop(s);
}
