/* --mode dbt: the command runs under valgrind with xptrace's tool (src/record/dbt/tool),
 * which writes what every branch did; dbt_conv.c turns that into step mode's trace.
 * See docs/mode-dbt.md. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/dbt/dbt.h"
#include "record/dbt/dbt_conv.h"
#include "record/rec.h"
#include "perfdata/pd_write.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"

#define DBT_TOOL_FILE "xptdbt-amd64-linux"

/* The tool's folder, beside the binary: installed (PREFIX/bin/xptrace and
 * PREFIX/lib/xptrace/dbt) or in the build tree (./xptrace and build/dbt, or
 * BUILD/xptrace and BUILD/dbt). */
static int tool_dir(char *out, size_t len)
{
	static const char *const rel[] = { "../lib/xptrace/dbt", "build/dbt", "dbt", "../build/dbt" };
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return -ENOENT;
	exe[n] = 0;
	if (!(slash = strrchr(exe, '/')))
		return -ENOENT;
	*slash = 0;
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s/%s/%s", exe, rel[i], DBT_TOOL_FILE);
		path[strlen(path) - strlen(DBT_TOOL_FILE) - 1] = 0;
		if (strlen(path) < len && realpath(path, out) && strlen(out) < len) {
			char tool[PATH_MAX + 64];

			snprintf(tool, sizeof(tool), "%s/%s", out, DBT_TOOL_FILE);
			if (access(tool, X_OK) == 0)
				return 0;
		}
	}
	return -ENOENT;
}

struct dbt {
	char tooldir[PATH_MAX];
	char linkdir[64];	/* a space-free path to tooldir ("": tooldir has none) */
	char rawdir[PATH_MAX];
	char outopt[PATH_MAX + 16];
	char version[64];	/* "valgrind-3.19.0" */
	char **argv;
};

/* prepare (before the command is started) and run share it: a mode has no state slot */
static struct dbt dbt_state;

static void valgrind_version(char *out, size_t len)
{
	FILE *p = popen("valgrind --version 2>/dev/null", "re");

	out[0] = 0;
	if (p) {
		if (fgets(out, (int)len, p))
			out[strcspn(out, "\n")] = 0;
		pclose(p);
	}
	if (!out[0])
		snprintf(out, len, "valgrind");
}

static int dbt_prepare(struct rec *r)
{
	struct dbt *d = &dbt_state;
	char prog[PATH_MAX];
	size_t n = 0, k = 0;

	if (tool_dir(d->tooldir, sizeof(d->tooldir)) < 0)
		return xp_err("record --mode dbt", "install valgrind (mk/deps.sh) and rebuild xptrace",
			      "xptrace was built without its valgrind tool (" DBT_TOOL_FILE
			      " is not beside the binary)");
	if (rec_exec_path("valgrind", prog, sizeof(prog)) < 0)
		return xp_err("record --mode dbt", "install valgrind (apt-get install valgrind)",
			      "valgrind is not in PATH");
	if (rec_exec_path(r->opts->cmd[0], prog, sizeof(prog)) < 0)
		return xp_err("run the command", "check the command name and PATH", "%s: %s",
			      r->opts->cmd[0], strerror(ENOENT));
	valgrind_version(d->version, sizeof(d->version));
	snprintf(d->rawdir, sizeof(d->rawdir), "%.4000s/.dbt-raw", r->dir);
	if (mkdir(d->rawdir, 0700) < 0 && errno != EEXIST)
		return xp_err(d->rawdir, NULL, "cannot create: %s", strerror(errno));
	snprintf(d->outopt, sizeof(d->outopt), "--xpt-out=%.4000s/p", d->rawdir);
	while (r->opts->cmd[n])
		n++;
	d->argv = calloc(n + 8, sizeof(*d->argv));
	if (!d->argv)
		return xp_err("record", NULL, "%s", strerror(ENOMEM));
	d->argv[k++] = "valgrind";
	d->argv[k++] = "-q";
	d->argv[k++] = "--tool=xptdbt";
	/* a superblock per branch: VEX's own exits are not mistaken for the program's */
	d->argv[k++] = "--vex-guest-chase=no";
	d->argv[k++] = "--trace-children=yes";
	d->argv[k++] = d->outopt;
	d->argv[k++] = "--";
	for (size_t i = 0; i < n; i++)
		d->argv[k++] = r->opts->cmd[i];
	r->exec_argv = d->argv;
	/* valgrind finds the tool there; the command's children under valgrind too.  It
	 * puts VALGRIND_LIB's preload library into LD_PRELOAD, which splits at spaces and
	 * colons: such a folder is reached through a link from one without them */
	const char *lib = d->tooldir;
	char link[96];

	d->linkdir[0] = 0;
	if (strpbrk(d->tooldir, " :")) {
		snprintf(d->linkdir, sizeof(d->linkdir), "/tmp/xptrace-dbt-XXXXXX");
		if (!mkdtemp(d->linkdir))
			return d->linkdir[0] = 0, xp_err("record --mode dbt", "install xptrace under a path "
							 "without spaces", "cannot make a link to %s: %s",
							 d->tooldir, strerror(errno));
		snprintf(link, sizeof(link), "%.63s/lib", d->linkdir);
		if (symlink(d->tooldir, link) < 0) {
			int e = errno;
			rmdir(d->linkdir);
			d->linkdir[0] = 0;
			return xp_err("record --mode dbt", "install xptrace under a path without spaces",
				      "cannot make a link to %s: %s", d->tooldir, strerror(e));
		}
		lib = link;
	}
	setenv("VALGRIND_LIB", lib, 1);
	return 0;
}

int dbt_status(char *text, size_t n)
{
	char dir[PATH_MAX], prog[PATH_MAX], version[64];

	if (tool_dir(dir, sizeof(dir)) < 0) {
		snprintf(text, n, "xptrace was built without its valgrind tool (install valgrind, "
			 "rebuild)");
		return 0;
	}
	if (rec_exec_path("valgrind", prog, sizeof(prog)) < 0) {
		snprintf(text, n, "valgrind is not in PATH (apt-get install valgrind)");
		return 0;
	}
	valgrind_version(version, sizeof(version));
	snprintf(text, n, "%s with xptrace's tool (%s)", version, dir);
	return 1;
}

static void remove_raw(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[PATH_MAX + 300];

	if (strlen(dir) > PATH_MAX)
		return;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, "p.", 2) != 0)
			continue;
		snprintf(path, sizeof(path), "%.*s/%.255s", PATH_MAX, dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Waits for valgrind; --duration and xptrace's own SIGINT/SIGTERM end it with SIGTERM
 * (valgrind still runs the tool's end: the stream is complete up to there). */
static int wait_command(struct rec *r)
{
	int st, termed = 0;

	for (;;) {
		pid_t p = waitpid(r->child, &st, WNOHANG);
		struct timespec ts = { 0, 2000000 };

		if (p == r->child)
			break;
		if (p < 0 && errno != EINTR)
			return -errno;
		if (!termed && (rec_stop_requested || (r->deadline_ns && xp_now_ns() >= r->deadline_ns))) {
			kill(r->child, SIGTERM);
			r->stopped_by_us = 1;
			termed = 1;
		}
		nanosleep(&ts, NULL);
	}
	r->target_status = st;
	r->target_done = 1;
	return 0;
}

static int dbt_run(struct rec *r)
{
	struct dbt *d = &dbt_state;
	struct dbt_stats st;
	char text[1024];
	int e;

	if ((e = rec_target_go(r)) < 0)
		goto out;
	if ((e = wait_command(r)) < 0) {
		xp_err("record --mode dbt", NULL, "waitpid: %s", strerror(-e));
		goto out;
	}
	e = dbt_convert(r, d->rawdir, &st);
	snprintf(text, sizeof(text), "xptrace-engine 1\n%s (VEX, --mode dbt)\ncpu %s\n", d->version,
		 st.caps[0] ? st.caps : "unknown");
	if (pd_writer_feat_string(r->w, PD_FEAT_XPTRACE_ENGINE, text) < 0)
		xp_warn("dbt: the engine could not be stored in the trace");
	if (st.orphans || st.lost_signals) {
		char line[256];

		snprintf(line, sizeof(line), "dbt: %" PRIu64 " branches of no traced thread, %" PRIu64
			 " signal handlers not known to the tool: those paths are missing from the trace",
			 st.orphans, st.lost_signals);
		xp_warn("%s; the trace is marked (decode says it too)", line);
		snprintf(text, sizeof(text), "xptrace-losses 1\n%s\n", line);
		pd_writer_feat_string(r->w, PD_FEAT_XPTRACE_LOSSES, text);
	}
	snprintf(r->recorded, sizeof(r->recorded), "%" PRIu64 " branches as Intel PT (%s, %" PRIu64
		 " thread%s)", st.cond + st.tip, d->version, st.threads + st.processes,
		 st.threads + st.processes == 1 ? "" : "s");
	if (r->opts->verbose && !r->opts->quiet)
		fprintf(stderr, "xptrace: dbt: %" PRIu64 " processes, %" PRIu64 " threads, %" PRIu64
			" conditional branches, %" PRIu64 " indirect/returns, %" PRIu64 " syscalls, %"
			PRIu64 " signals, %" PRIu64 " mappings, %.2f MB from the tool, %.2f MB of PT; "
			"the program saw the CPU as: %s\n",
			st.processes, st.threads, st.cond, st.tip, st.syscalls, st.signals, st.maps,
			st.raw_bytes / 1e6, r->aux_traced / 1e6, st.caps);
out:
	remove_raw(d->rawdir);
	if (d->linkdir[0]) {
		char link[96];

		snprintf(link, sizeof(link), "%.63s/lib", d->linkdir);
		unlink(link);
		rmdir(d->linkdir);
		d->linkdir[0] = 0;
	}
	free(d->argv);
	d->argv = NULL;
	return e;
}

const struct rec_mode rec_mode_dbt = {
	.name = "dbt",
	.summary = "valgrind's binary translator with xptrace's tool, any x86-64 CPU: exact "
		   "instruction stream as Intel PT (the program sees valgrind's CPUID; never "
		   "chosen by --mode auto)",
	.probe = NULL,
	.prepare = dbt_prepare,
	.run = dbt_run,
	.no_auto = 1,
};
