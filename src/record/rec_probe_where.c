/* Which file a probe goes into: the program, a path, a library of the target; see
 * rec_probe.h. */
#include "record/rec_probe.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/rec.h"
#include "util/xp_maps.h"

extern char **environ;

static int canonical(const char *in, char *path, size_t len)
{
	char buf[PATH_MAX];

	if (!realpath(in, buf))
		return -errno;
	if (strlen(buf) >= len)
		return -ENAMETOOLONG;
	strcpy(path, buf);
	return 0;
}

int rec_probe_program(const struct rec_opts *o, char *path, size_t len)
{
	char buf[PATH_MAX];
	int rc;

	if (o->pid) {
		snprintf(buf, sizeof(buf), "/proc/%d/exe", (int)o->pid);
		return canonical(buf, path, len);
	}
	if ((rc = rec_exec_path(o->cmd[0], buf, sizeof(buf))) < 0)
		return rc;
	return canonical(buf, path, len);
}

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

/* The first file mapped by `pid` whose basename is `module`. */
static int in_maps(pid_t pid, const char *module, char *path, size_t len)
{
	struct xp_maps it;
	struct xp_maps_line m;
	int rc = xp_maps_open(&it, pid);

	if (rc < 0)
		return rc;
	rc = -ENOENT;
	while (rc == -ENOENT && xp_maps_next(&it, &m))
		if (m.path[0] == '/' && strcmp(base(m.path), module) == 0)
			rc = canonical(m.path, path, len);
	xp_maps_close(&it);
	return rc;
}

/* PT_INTERP of an ELF file: its dynamic loader. */
static int interpreter(const char *program, char *interp, size_t len)
{
	int fd = open(program, O_RDONLY | O_CLOEXEC), rc = -ENOENT;
	size_t n = 0;
	Elf *e;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_kind(e) == ELF_K_ELF && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_INTERP)
				continue;
			if (ph.p_filesz == 0 || ph.p_filesz > len ||
			    pread(fd, interp, ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz ||
			    interp[ph.p_filesz - 1] != 0)
				rc = -ENOEXEC;
			else
				rc = 0;
			break;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return rc;
}

/* One line of `ld.so --list`: "\tNAME => PATH (0x…)" or "\tPATH (0x…)". */
static int list_line(char *line, const char *module, char *path, size_t len)
{
	char *arrow = strstr(line, " => "), *file, *end;

	file = arrow ? arrow + 4 : line + strspn(line, " \t");
	end = strstr(file, " (0x");
	if (!end || *file != '/')
		return -ENOENT;
	*end = 0;
	if (arrow) {
		char *name = line + strspn(line, " \t");
		*arrow = 0;
		if (strcmp(name, module) == 0)
			return canonical(file, path, len);
	}
	return strcmp(base(file), module) == 0 ? canonical(file, path, len) : -ENOENT;
}

/* The libraries the dynamic loader would load for `program` (what ldd shows), without
 * running the program: the loader's --list mode. */
static int in_loader_list(const char *program, const char *module, char *path, size_t len)
{
	char interp[PATH_MAX], buf[PATH_MAX + 128];
	char *argv[] = { interp, "--list", (char *)program, NULL };
	posix_spawn_file_actions_t fa;
	int pfd[2], rc = -ENOENT, st;
	pid_t pid;
	FILE *f;

	if (interpreter(program, interp, sizeof(interp)) < 0)
		return -ENOENT;	/* static: there are no libraries */
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return -errno;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	st = posix_spawn(&pid, interp, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	if (st) {
		close(pfd[0]);
		return -st;
	}
	f = fdopen(pfd[0], "r");
	if (!f) {
		close(pfd[0]);
		waitpid(pid, NULL, 0);
		return -ENOMEM;
	}
	while (fgets(buf, sizeof(buf), f))
		if (rc == -ENOENT)
			rc = list_line(buf, module, path, len);
	fclose(f);
	waitpid(pid, &st, 0);
	return rc;
}

int rec_probe_module(const struct rec_opts *o, const char *program, const char *module,
		     char *path, size_t len, char *why, size_t whylen)
{
	int rc;

	if (strchr(module, '/')) {
		rc = canonical(module, path, len);
		if (rc < 0)
			snprintf(why, whylen, "%s: %s", module, strerror(-rc));
		return rc;
	}
	if (strcmp(base(program), module) == 0)
		return canonical(program, path, len);
	rc = o->pid ? in_maps(o->pid, module, path, len) : in_loader_list(program, module, path, len);
	if (rc == -ENOENT && o->pid)
		snprintf(why, whylen, "process %d maps no file named %s", (int)o->pid, module);
	else if (rc == -ENOENT)
		snprintf(why, whylen, "%s is neither the program nor a library the loader lists for it",
			 module);
	else if (rc < 0)
		snprintf(why, whylen, "%s: %s", module, strerror(-rc));
	return rc;
}
