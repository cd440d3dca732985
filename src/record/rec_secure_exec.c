/* Whether exec'ing a command hides it from our perf events (rec.h). */
#include "record/rec.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

int rec_secure_exec(const char *cmd, char *why, size_t n)
{
	char path[PATH_MAX];
	struct stat st;
	struct statvfs vfs;

	if (rec_exec_path(cmd, path, sizeof(path)) < 0 || stat(path, &st) < 0)
		return 0;
	int nosuid = statvfs(path, &vfs) == 0 && (vfs.f_flag & ST_NOSUID);
	if (!nosuid && (st.st_mode & S_ISUID) && st.st_uid != geteuid()) {
		const struct passwd *pw = getpwuid(st.st_uid);
		if (pw)
			snprintf(why, n, "%s is setuid %s", path, pw->pw_name);
		else
			snprintf(why, n, "%s is setuid %u", path, (unsigned)st.st_uid);
		return 1;
	}
	if (!nosuid && (st.st_mode & S_ISGID) && st.st_gid != getegid()) {
		const struct group *gr = getgrgid(st.st_gid);
		if (gr)
			snprintf(why, n, "%s is setgid %s", path, gr->gr_name);
		else
			snprintf(why, n, "%s is setgid %u", path, (unsigned)st.st_gid);
		return 1;
	}
	if (geteuid() == 0)
		return 0;
	if (!nosuid && getxattr(path, "security.capability", NULL, 0) >= 0) {
		snprintf(why, n, "%s has file capabilities", path);
		return 1;
	}
	if (faccessat(AT_FDCWD, path, R_OK, AT_EACCESS) < 0) {
		snprintf(why, n, "%s is not readable by you", path);
		return 1;
	}
	return 0;
}
