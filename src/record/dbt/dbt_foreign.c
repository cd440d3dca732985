/* Another tool's uprobes in the files of a --mode dbt run (see dbt_foreign.h). */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "record/dbt/dbt_foreign.h"
#include "session/sym_find.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

#define CHUNK 65536

static void say(const char *path, uint64_t off, unsigned count)
{
	char fn[160];

	sym_func_at(path, off, fn, sizeof(fn));
	xp_warn("dbt: another tool's breakpoint (a uprobe) at offset %#llx (%s) of %s%s: valgrind "
		"runs its int3 as the program's own (the kernel writes it into valgrind's copy of "
		"the file too): the program gets a SIGTRAP there, which kills it unless it handles "
		"SIGTRAP, and the other tool misses the hit (remove the probe while recording, or "
		"use --mode step, which traces through it)", (unsigned long long)off, fn, path,
		count > 1 ? " and more" : "");
}

void dbt_foreign_check(struct dbt_foreign *f, const char *path, uint64_t pgoff, uint64_t len)
{
	uint8_t buf[CHUNK];
	unsigned found = 0;
	uint64_t first = 0;
	const uint8_t *map;
	char *dup;
	int fd;

	if (path[0] != '/')
		return;
	for (size_t i = 0; i < f->n; i++)
		if (strcmp(f->paths[i], path) == 0)
			return;
	if (XP_GROW(f->paths, f->cap, f->n + 1) < 0 || !(dup = strdup(path)))
		return;
	f->paths[f->n++] = dup;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	/* private and exec-capable like valgrind's: the kernel puts live uprobes in it */
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, (off_t)pgoff);
	for (uint64_t at = 0; map != MAP_FAILED && at < len; at += CHUNK) {
		size_t want = len - at < CHUNK ? (size_t)(len - at) : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)(pgoff + at));

		for (ssize_t i = 0; i < got; i++)
			if (map[at + (uint64_t)i] == 0xcc && buf[i] != 0xcc && !found++)
				first = pgoff + at + (uint64_t)i;
		if (got < (ssize_t)want)
			break;
	}
	if (map != MAP_FAILED)
		munmap((void *)map, len);
	close(fd);
	if (found)
		say(path, first, found);
}

void dbt_foreign_free(struct dbt_foreign *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->paths[i]);
	free(f->paths);
	f->paths = NULL;
	f->n = f->cap = 0;
}
