/* Probes defined in tracefs; see rec_probe_tfs.h. */
#include "record/rec_probe_tfs.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define GROUP_PREFIX "xptrace_"

/* 0 when dir holds a uprobe_events we may write, else access()'s errno: ENOENT, none
 * there; EACCES or EROFS, one this user cannot write. */
static int uprobe_events_err(const char *dir)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/uprobe_events", dir);
	return access(path, W_OK) == 0 ? 0 : errno;
}

int rec_tfs_root(char *root, size_t len, char *why, size_t whylen)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	const char *env = getenv("XPTRACE_TRACEFS");
	int e;

	if (env && *env) {
		snprintf(root, len, "%s", env);
		if ((e = uprobe_events_err(root)) == 0)
			return 0;
		if (e == ENOENT)
			snprintf(why, whylen, "no uprobe_events in %s ($XPTRACE_TRACEFS)", env);
		else
			snprintf(why, whylen, "%s/uprobe_events ($XPTRACE_TRACEFS) is not writable: %s",
				 env, strerror(e));
		return e == ENOENT ? -ENOENT : -EACCES;
	}
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if ((e = uprobe_events_err(dirs[i])) == 0) {
			snprintf(root, len, "%s", dirs[i]);
			return 0;
		}
		/* mounted, but not for this user (tracefs is root's, mode 700) */
		if (e != ENOENT) {
			snprintf(why, whylen, "%s/uprobe_events is not writable: %s (run as root)",
				 dirs[i], strerror(e));
			return -EACCES;
		}
	}
	snprintf(why, whylen, "tracefs is not mounted (no uprobe_events in %s or %s)", dirs[0],
		 dirs[1]);
	return -ENOENT;
}

void rec_tfs_group(char *group, size_t len, pid_t pid)
{
	snprintf(group, len, GROUP_PREFIX "%d", (int)pid);
}

void rec_tfs_event_name(char *name, size_t len, const char *sym, int index, int ret)
{
	char buf[64];
	int n = snprintf(buf, sizeof(buf), "%c%d_", ret ? 'r' : 'e', index);

	/* the kernel takes names of at most 63 chars made of [A-Za-z0-9_]; the index keeps
	 * names that sanitize or truncate alike apart */
	for (const char *s = sym; *s && n < (int)sizeof(buf) - 1; s++)
		buf[n++] = isalnum((unsigned char)*s) ? *s : '_';
	buf[n] = 0;
	snprintf(name, len, "%s", buf);
}

static int append(const char *root, const char *line)
{
	char path[512];
	size_t n = strlen(line);
	ssize_t w;
	int fd, e = 0;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	w = write(fd, line, n);
	if (w < 0)
		e = -errno;
	else if ((size_t)w != n)
		e = -EIO;
	close(fd);
	return e;
}

int rec_tfs_define(const char *root, const char *group, const char *name, int ret,
		   const char *path, uint64_t offset, uint64_t *id)
{
	char line[300], idpath[600];
	unsigned long long v;
	FILE *f;
	int e, n, fd;

	/* The kernel splits a definition at white space, so the file is named by an fd of
	 * ours: it resolves the name once, here, and keys the uprobe by the inode. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	n = snprintf(line, sizeof(line), "%c:%s/%s /proc/self/fd/%d:0x%" PRIx64 "\n", ret ? 'r' : 'p',
		     group, name, fd, offset);
	e = n < 0 || (size_t)n >= sizeof(line) ? -ENAMETOOLONG : append(root, line);
	close(fd);
	if (e < 0)
		return e;
	snprintf(idpath, sizeof(idpath), "%s/events/%s/%s/id", root, group, name);
	f = fopen(idpath, "re");
	if (!f)
		return -errno;
	e = fscanf(f, "%llu", &v) == 1 ? 0 : -EIO;
	fclose(f);
	if (e == 0)
		*id = v;
	return e;
}

int rec_tfs_undefine(const char *root, const char *group, const char *name)
{
	char line[256];

	snprintf(line, sizeof(line), "-:%s/%s\n", group, name);
	return append(root, line);
}

int rec_tfs_clean_stale(const char *root)
{
	char path[512], line[4400];
	char (*dead)[160] = NULL;
	int n = 0, cap = 0, done = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/uprobe_events", root);
	f = fopen(path, "re");
	if (!f)
		return 0;
	/* read all first: deleting while reading would shift the file */
	while (fgets(line, sizeof(line), f)) {
		char *ev = strchr(line, ':'), *sp;
		int pid;

		if (!ev || strncmp(ev + 1, GROUP_PREFIX, strlen(GROUP_PREFIX)) != 0)
			continue;
		ev++;
		if (!(sp = strpbrk(ev, " \n")))
			continue;
		*sp = 0;
		/* a live pid, or one not ours to signal, may still use its probes; our own
		 * pid's are a dead recorder's that had it before */
		if (sscanf(ev + strlen(GROUP_PREFIX), "%d/", &pid) != 1 || pid <= 0 ||
		    (pid != getpid() && (kill(pid, 0) == 0 || errno != ESRCH)))
			continue;
		if (n == cap) {
			void *g = realloc(dead, (size_t)(cap ? cap * 2 : 16) * sizeof(*dead));
			if (!g)
				break;
			dead = g;
			cap = cap ? cap * 2 : 16;
		}
		snprintf(dead[n++], sizeof(dead[0]), "%s", ev);
	}
	fclose(f);
	for (int i = 0; i < n; i++) {
		char *slash = strchr(dead[i], '/');
		if (!slash)
			continue;
		*slash = 0;
		done += rec_tfs_undefine(root, dead[i], slash + 1) == 0;
	}
	free(dead);
	return done;
}
