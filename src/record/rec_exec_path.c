/* The file execvp() would run for a command (rec.h). */
#include "record/rec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int rec_exec_path(const char *cmd, char *path, size_t n)
{
	const char *p = getenv("PATH");

	if (strchr(cmd, '/'))
		return snprintf(path, n, "%s", cmd) < (int)n ? 0 : -ENAMETOOLONG;
	/* each PATH entry in turn, an empty one meaning the current directory */
	for (p = p ? p : "/bin:/usr/bin";; p++) {
		size_t l = strcspn(p, ":");
		if (snprintf(path, n, "%.*s%s%s", (int)l, p, l ? "/" : "", cmd) < (int)n &&
		    access(path, X_OK) == 0)
			return 0;
		p += l;
		if (!*p)
			return -ENOENT;
	}
}
