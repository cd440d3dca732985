#include "record/rec_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/pd_format.h"

static int not_trace(char *why, size_t n, const char *fmt, const char *arg)
{
	snprintf(why, n, fmt, arg);
	return -EPERM;
}

/* perf.data starts with PERFILE2: a recording writes its header first, so even one
 * that was killed has it. */
static int has_perf_magic(int dfd)
{
	int fd = openat(dfd, "perf.data", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	uint64_t magic = 0;
	if (fd < 0)
		return 0;
	ssize_t r = read(fd, &magic, sizeof(magic));
	close(fd);
	return r == (ssize_t)sizeof(magic) && (magic == PD_MAGIC2 || magic == PD_MAGIC2_SWAPPED);
}

int rec_dir_is_trace(const char *dir, char *why, size_t n)
{
	struct stat st;
	if (lstat(dir, &st) < 0)
		return not_trace(why, n, "%s", strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return not_trace(why, n, "%s", "it is not a directory");
	DIR *d = opendir(dir);
	if (!d)
		return not_trace(why, n, "cannot read it: %s", strerror(errno));
	int rc = has_perf_magic(dirfd(d)) ? 0 : not_trace(why, n, "%s", "it holds no perf.data");
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, "perf.data") == 0 || strncmp(e->d_name, "perf.data.", 10) == 0)
			continue;
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
			continue;
		rc = not_trace(why, n, "it holds '%s', which no recording writes", e->d_name);
	}
	closedir(d);
	return rc;
}

int rec_dir_outside_cwd(const char *dir)
{
	char d[PATH_MAX], cwd[PATH_MAX];
	if (!realpath(dir, d) || !getcwd(cwd, sizeof(cwd)))
		return 0;	/* nothing to compare: rename() will say what is wrong */
	size_t l = strlen(d);
	if (strncmp(cwd, d, l) == 0 && (cwd[l] == 0 || cwd[l] == '/' || l == 1))
		return -EPERM;
	return 0;
}
