/* `xptrace record`: options, trace directory, target start, mode dispatch, and a
 * finalized perf.data whatever ends the recording (see rec.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "record/rec.h"
#include "record/rec_adaptive.h"
#include "record/rec_dir.h"
#include "record/rec_probe.h"
#include "record/hw/x86_pt_attr.h"
#include "cli/xp_cli.h"
#include "util/xp_clock.h"
#include "util/xp_err.h"

#define USAGE                                                                                   \
	"usage: xptrace record [OPTIONS] -- COMMAND [ARGS...]\n"                               \
	"       xptrace record [OPTIONS] -p PID\n"                                             \
	"       xptrace record [OPTIONS] -a|-C LIST [-d SEC]\n"                               \
	"\n"                                                                                    \
	"Records COMMAND (and every process it forks) or a running process into a trace\n"   \
	"directory: DIR/perf.data (readable by perf) and DIR/.build-id/ with a snapshot of\n"  \
	"every executable mapping, so the trace decodes after the binaries changed.\n"        \
	"\n"                                                                                    \
	"options:\n"                                                                            \
	"  -o, --output DIR        trace directory (default xptrace.data)\n"                   \
	"  -f, --force             replace DIR; the previous one is kept as DIR.old\n"         \
	"  -m, --mode MODE         auto (default: the best this machine has) or one of the\n"  \
	"                          modes listed below\n"                                       \
	"  -e, --event LIST        libpfm4 event names, comma separated; the first samples,\n" \
	"                          the others are read with it in every sample (default\n"     \
	"                          cycles; cpu-clock when there is no hardware PMU); perf's\n" \
	"                          '{a,b}' and '{a,b}:S' record the same one group\n"         \
	"  -F, --freq HZ           samples per second (default 4000)\n"                        \
	"  -c, --count N           one sample every N events instead of -F\n"                  \
	"  -g                      user callchains by frame pointers (= --call-graph fp)\n"    \
	"      --call-graph fp|dwarf[,SIZE]\n"                                                 \
	"                          dwarf: user registers + SIZE bytes of stack (default 8192)\n" \
	"                          per sample, for binaries without frame pointers\n"          \
	"  -d, --duration SEC      stop after SEC seconds (the command gets SIGTERM)\n"        \
	"  -p, --pid PID           attach to every thread of a running process until Ctrl-C\n" \
	"                          or --duration\n"                                            \
	"  -q, --quiet             no notes, only errors\n"                                    \
	"  -v, --verbose           why this mode (each mode auto skipped), the events used,\n" \
	"                          the mode's own counters\n"                                 \
	"      --probe LIST        exact entry and return events of functions next to the\n" \
	"                          samples (sample, lbr and pt modes; uprobes): LIST is\n"   \
	"                          comma separated SYM, SYM@MODULE (a path, or the name of\n" \
	"                          the program or a library it loads, e.g. malloc@libc.so.6)\n" \
	"                          or a glob (hot_*); perf shows probe_xptrace:SYM and\n"    \
	"                          probe_xptrace:SYM__return (see docs/record.md)\n"         \
	"      --probe-limit N     keep each probe for N calls, then disarm it (default\n"  \
	"                          10000, 0: no limit; --probe and --adaptive)\n"          \
	"      --adaptive[=K]      sample (-g implied) and, every interval, probe the K\n"  \
	"                          (default 5) functions with most samples, then walk up\n" \
	"                          to their callers one level per interval (sample and\n"  \
	"                          lbr modes; see docs/record.md)\n"                       \
	"      --adaptive-interval MS  how often (default 100 ms)\n"                       \
	"      --adaptive-depth D  caller levels walked up from a hot function (default 4)\n" \
	"      --max-overhead PCT  keep the probes' cost (calibrated per hit) under PCT %\n" \
	"                          of the target's cpu time with --adaptive, disarming\n"  \
	"                          every probe and arming none while over it, then\n"    \
	"                          re-arming them, each window exact (default 5; 0 is\n" \
	"                          no budget)\n"                                          \
	"\n"                                                                                    \
	"  -a, --all-cpus          every CPU, every process, while COMMAND runs, or without\n" \
	"                          one until Ctrl-C/SIGTERM or -d SEC (sample, pt, lbr;\n"  \
	"                          kernel.perf_event_paranoid 0 or root)\n"                \
	"  -C, --cpu LIST          only these CPUs (0,2-3), every process on them (-a)\n"    \
	"      --off-cpu           sample: also where threads wait (context switches with\n" \
	"                          callchains; decode --metric off-cpu; paranoid 1 or root)\n" \
	"  -u / -k                 user / kernel code (default: user only; both: -u -k;\n"  \
	"                          kernel: perf_event_paranoid 1 or root)\n"               \
	"\n"                                                                                    \
	"hardware modes (pt, lbr; see docs/mode-pt.md, docs/mode-lbr.md):\n"                   \
	"  -g lbr, --call-graph lbr  lbr: LBR call-stack mode instead of any-branch stacks\n" \
	"      --pt-opts LIST      pt: cyc,cyc_thresh=N,mtc,mtc_period=N,tsc,noretcomp,\n"    \
	"                          psb_period=N,branch (NAME=0 turns a default off)\n"       \
	"      --filter SPEC       pt: 'filter SYM @ /path' or 'filter START/SIZE@/path',\n"   \
	"                          comma separated ('stop ...' ends tracing there)\n"         \
	"      --snapshot          pt: keep only the last --aux-size of trace per CPU and\n"  \
	"                          write it on SIGUSR2, --trigger, Ctrl-C or the end\n"       \
	"      --trigger SYM[@PATH]  pt --snapshot: also write one when SYM runs (uprobe)\n"  \
	"      --aux-size SIZE     pt: AUX buffer per CPU, power of two, K/M suffix\n"        \
	"                          (default 4M as root, else 128K)\n"                         \
	"      --sysfs-root DIR    read PMU descriptions under DIR (tests, other machines)\n"\
	"\n"                                                                                    \
	"step mode (ptrace branch tracer writing Intel PT; see docs/mode-step.md):\n"         \
	"      --filter START-END@MODULE | SYMBOL[@MODULE][,...]   (or pt's 'filter ...')\n" \
	"                          trace only these code ranges (ELF addresses in hex as nm\n" \
	"                          prints them, or a function, of the program by default);\n" \
	"                          elsewhere the command runs at full speed and the trace\n" \
	"                          shows TIP.PGD/TIP.PGE; checked before recording\n"        \
	"      --psb-period BYTES  PSB+ every BYTES of trace (power of two, default 4096;\n"  \
	"                          dbt too: there a PSB+ follows the first TIP past it)\n"      \
	"  -p, --pid PID           seize the running process's threads and trace each from\n" \
	"                          its current instruction; at --duration or Ctrl-C they are\n" \
	"                          detached, running on unchanged (no int3 left)\n"             \
	"\n"                                                                                    \
	"dbt mode (valgrind runs the command with xptrace's tool; see docs/mode-dbt.md):\n"   \
	"                          the same trace as step mode, several times faster; the\n"  \
	"                          program sees valgrind's CPUID (decode and info say which);\n" \
	"                          only by name (--mode auto never picks it); no -p, --filter\n" \
	"\n"                                                                                    \
	"modes:\n"

/* The mode list comes from rec_modes[], so the help text is built at startup. */
static char usage_text[8192];

__attribute__((constructor)) static void build_usage(void)
{
	size_t n = (size_t)snprintf(usage_text, sizeof(usage_text), "%s", USAGE);

	for (int i = 0; rec_modes[i] && n < sizeof(usage_text); i++)
		n += (size_t)snprintf(usage_text + n, sizeof(usage_text) - n, "  %-22s%s\n",
				      rec_modes[i]->name, rec_modes[i]->summary);
	if (n < sizeof(usage_text))
		snprintf(usage_text + n, sizeof(usage_text) - n, "%s",
			 "\nThe recording is finalized when the command exits or crashes, when it is killed,\n"
	      "and on SIGINT/SIGTERM to xptrace; if the disk fills, what was written stays\n"
			 "readable.  Inspect it with 'xptrace decode -i DIR' or 'perf report -i DIR/perf.data'.\n");
}

/* SIGINT/SIGTERM/SIGHUP received: stop_child() leaves a target that outlives the
 * recording running at the next one. */
static volatile sig_atomic_t stop_signals;

static void on_stop(int sig)
{
	rec_stop_requested = sig;
	rec_signalled = 1;
	stop_signals++;
}

static void on_child(int sig)
{
	(void)sig;	/* wakes rec_wait() so the loop reaps the child at once */
	rec_signalled = 1;
}

/* What xptrace was started with for the signals it handles itself: the command gets
 * them back (a signal ignored by whoever started xptrace stays ignored in the command,
 * as without xptrace: gzip, for one, then leaves SIGINT alone). */
static const int own_sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
static struct sigaction saved_sigs[4];

static void install_signals(void)
{
	struct sigaction sa;

	for (int i = 0; i < 4; i++)
		sigaction(own_sigs[i], NULL, &saved_sigs[i]);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;	/* no SA_RESTART: poll() returns on the signal */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_child;
	sa.sa_flags = SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-')
		return -EINVAL;
	*v = x;
	return 0;
}

static int parse_callgraph(struct rec_opts *o, const char *s)
{
	uint64_t size;

	if (strcmp(s, "fp") == 0) {
		o->callgraph = REC_CG_FP;
		return 0;
	}
	if (strcmp(s, "lbr") == 0) {
		o->callgraph = REC_CG_LBR;
		return 0;
	}
	if (strncmp(s, "dwarf", 5) == 0 && (s[5] == 0 || s[5] == ',')) {
		o->callgraph = REC_CG_DWARF;
		o->stack_size = REC_DEFAULT_STACK;
		if (s[5] == 0)
			return 0;
		/* The kernel wants a multiple of 8 below 64 KiB (the record size limit). */
		if (parse_u64(s + 6, &size) < 0 || size == 0 || size > 65528)
			return -EINVAL;
		o->stack_size = (uint32_t)((size + 7) & ~7ULL);
		return 0;
	}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct rec_opts *o)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "mode", required_argument, NULL, 'm' },
		{ "event", required_argument, NULL, 'e' },
		{ "freq", required_argument, NULL, 'F' },
		{ "count", required_argument, NULL, 'c' },
		{ "call-graph", required_argument, NULL, 'G' },
		{ "duration", required_argument, NULL, 'd' },
		{ "pid", required_argument, NULL, 'p' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "psb-period", required_argument, NULL, 'P' },
		{ "all-cpus", no_argument, NULL, 'a' },
		{ "cpu", required_argument, NULL, 'C' },
		{ "off-cpu", no_argument, NULL, 290 },
		{ "pt-opts", required_argument, NULL, 256 },
		{ "filter", required_argument, NULL, 257 },
		{ "snapshot", no_argument, NULL, 258 },
		{ "trigger", required_argument, NULL, 259 },
		{ "aux-size", required_argument, NULL, 260 },
		{ "sysfs-root", required_argument, NULL, 261 },
		{ "probe", required_argument, NULL, 262 },
		{ "probe-limit", required_argument, NULL, 263 },
		{ "adaptive", optional_argument, NULL, 264 },
		{ "adaptive-interval", required_argument, NULL, 265 },
		{ "adaptive-depth", required_argument, NULL, 266 },
		{ "max-overhead", required_argument, NULL, 267 },
		{ NULL, 0, NULL, 0 },
	};
	int c, limit_given = 0;
	const char *adaptive_opt = NULL;
	uint64_t v;

	memset(o, 0, sizeof(*o));
	o->outdir = "xptrace.data";
	o->mode = "auto";
	o->probe_limit = 10000;
	o->adaptive_interval_ms = 100;
	o->adaptive_depth = 4;
	o->max_overhead = 5;
	o->argc = argc;
	o->argv = argv;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+o:fm:e:F:c:gd:p:qvaukC:", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->outdir = optarg;
			break;
		case 'f':
			o->force = 1;
			break;
		case 'm':
			o->mode = optarg;
			break;
		case 'e':
			if (rec_events_ungroup(optarg) < 0)
				return xp_usage_error("record", "-e %s: xptrace records one event group, "
						      "'{a,b}' or '{a,b}:S' as a,b: the first samples, the "
						      "others are read at each of its samples", optarg);
			o->events = optarg;
			break;
		case 'F':
			if (parse_u64(optarg, &o->freq) < 0 || o->freq == 0)
				return xp_usage_error("record", "-F wants a positive frequency, not '%s'", optarg);
			break;
		case 'c':
			if (parse_u64(optarg, &o->period) < 0 || o->period == 0)
				return xp_usage_error("record", "-c wants a positive count, not '%s'", optarg);
			break;
		case 'g':
			o->callgraph = REC_CG_FP;
			/* perf's `-g lbr`: the mode word follows as its own argument. */
			if (optind < argc && strcmp(argv[optind], "lbr") == 0) {
				o->callgraph = REC_CG_LBR;
				optind++;
			}
			break;
		case 'a':
			o->all_cpus = 1;
			break;
		case 'C': {
			int *cpus = NULL;
			int n = rec_parse_cpu_list(optarg, &cpus);
			free(cpus);
			if (n <= 0)
				return xp_usage_error("record", "-C %s: expected CPUs as 0,2-3", optarg);
			o->cpu_list = optarg;
			o->all_cpus = 1;	/* as perf: every process on those CPUs */
			break;
		}
		case 'u':
			o->user = 1;
			break;
		case 'k':
			o->kernel = 1;
			break;
		case 256: {
			struct x86_pt_cfg cfg;
			char why[256];
			x86_pt_cfg_init(&cfg);
			if (x86_pt_opts_parse(optarg, &cfg, why, sizeof(why)) < 0)
				return xp_usage_error("record", "--pt-opts: %s", why);
			o->pt_opts = optarg;
			break;
		}
		case 257:
			o->filter = optarg;
			break;
		case 258:
			o->snapshot = 1;
			break;
		case 259:
			o->trigger = optarg;
			break;
		case 260: {
			char *end;
			unsigned long long sz = strtoull(optarg, &end, 10);
			if (*end == 'K' || *end == 'k')
				sz <<= 10, end++;
			else if (*end == 'M' || *end == 'm')
				sz <<= 20, end++;
			if (end == optarg || *end || sz < 4096 || (sz & (sz - 1)))
				return xp_usage_error("record", "--aux-size wants a power of two of at least "
						      "4K (e.g. 4M), not '%s'", optarg);
			o->aux_size = sz;
			break;
		}
		case 261:
			o->sysfs_root = optarg;
			break;
		case 262: {
			struct rec_probe_item *items;
			char why[256];
			int n = rec_probe_parse(optarg, &items, why, sizeof(why));
			if (n == -EINVAL)
				return xp_usage_error("record", "--probe: %s", why);
			rec_probe_items_free(items, n);
			o->probe = optarg;
			break;
		}
		case 263:
			if (parse_u64(optarg, &o->probe_limit) < 0 || o->probe_limit > INT_MAX)
				return xp_usage_error("record", "--probe-limit wants a count of calls "
						      "(0: no limit), not '%s'", optarg);
			limit_given = 1;
			break;
		case 264:
			o->adaptive = 5;
			if (optarg && (parse_u64(optarg, &v) < 0 || v == 0 || v > 1000))
				return xp_usage_error("record", "--adaptive=K wants a number of functions "
						      "from 1 to 1000, not '%s'", optarg);
			if (optarg)
				o->adaptive = (int)v;
			break;
		case 265:
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > 3600000)
				return xp_usage_error("record", "--adaptive-interval wants milliseconds "
						      "> 0, not '%s'", optarg);
			o->adaptive_interval_ms = (unsigned)v;
			adaptive_opt = "--adaptive-interval";
			break;
		case 266:
			if (parse_u64(optarg, &v) < 0 || v > 64)
				return xp_usage_error("record", "--adaptive-depth wants a number of "
						      "levels from 0 to 64, not '%s'", optarg);
			o->adaptive_depth = (int)v;
			adaptive_opt = "--adaptive-depth";
			break;
		case 290:
			o->off_cpu = 1;
			break;
		case 267:
			if (parse_u64(optarg, &v) < 0 || v > 100)
				return xp_usage_error("record", "--max-overhead wants a percentage from 0 "
						      "(no budget) to 100, not '%s'", optarg);
			o->max_overhead = (unsigned)v;
			adaptive_opt = "--max-overhead";
			break;
		case 'G':
			if (parse_callgraph(o, optarg) < 0)
				return xp_usage_error("record", "--call-graph wants fp or dwarf[,SIZE<=65528], not '%s'",
						      optarg);
			break;
		case 'd': {
			char *end;
			o->duration = strtod(optarg, &end);
			if (end == optarg || *end || !(o->duration > 0))
				return xp_usage_error("record", "--duration wants seconds > 0, not '%s'", optarg);
			break;
		}
		case 'p':
			if (parse_u64(optarg, &v) < 0 || v == 0 || v > INT_MAX)
				return xp_usage_error("record", "-p wants a process id, not '%s'", optarg);
			o->pid = (pid_t)v;
			break;
		case 'q':
			o->quiet = 1;
			break;
		case 'v':
			o->verbose = 1;
			break;
		case 'P':
			/* the hardware's PSB periods are powers of two from 2K to 64K */
			if (parse_u64(optarg, &o->psb_period) < 0 || o->psb_period < 2048 ||
			    o->psb_period > 65536 || (o->psb_period & (o->psb_period - 1)))
				return xp_usage_error("record", "--psb-period wants a power of two "
						      "from 2048 to 65536, not '%s'", optarg);
			break;
		default:
			if (optopt && strchr("ofmeFcdpG", optopt))
				return xp_usage_error("record", "option -%c needs a value", optopt);
			return xp_usage_error("record", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (o->freq && o->period)
		return xp_usage_error("record", "-F and -c exclude each other");
	{
		char names[128];
		if (!rec_mode_known(o->mode, names, sizeof(names)))
			return xp_usage_error("record", "unknown mode '%s' (modes: %s)", o->mode, names);
	}
	if (o->events) {
		char bad[96];
		if (rec_events_check(o->events, o->sysfs_root, bad, sizeof(bad)) < 0)
			return xp_usage_error("record", "event syntax error: unknown event '%s' (perf "
					      "list, or libpfm4's showevtinfo, lists the names)", bad);
	}
	if (limit_given && !o->probe && !o->adaptive)
		return xp_usage_error("record", "--probe-limit bounds probes: add --probe or --adaptive");
	if (adaptive_opt && !o->adaptive)
		return xp_usage_error("record", "%s tunes --adaptive: add it", adaptive_opt);
	/* the merged trees hang samples by their stacks, and the walk up reads the frame
	 * above a sample's */
	if (o->adaptive && o->callgraph == REC_CG_NONE)
		o->callgraph = REC_CG_FP;
	if (o->trigger && !o->snapshot)
		return xp_usage_error("record", "--trigger takes a snapshot: add --snapshot");
	{
		/* "out/" must give "out.old", not "out/.old". */
		static char dir[PATH_MAX];
		size_t n = strlen(o->outdir);
		if (n == 0 || n >= sizeof(dir))
			return xp_usage_error("record", "-o wants a directory name");
		memcpy(dir, o->outdir, n + 1);
		while (n > 1 && dir[n - 1] == '/')
			dir[--n] = 0;
		o->outdir = dir;
	}
	if (optind < argc)
		o->cmd = argv + optind;
	if (o->pid && o->cmd)
		return xp_usage_error("record", "give either -p PID or a command, not both");
	/* -a / -C without a command: every process on those CPUs until a signal or -d, as
	 * perf record -a */
	if (!o->pid && !o->cmd && !o->all_cpus)
		return xp_usage_error("record", "nothing to record: give a command after --, -p PID, or -a");
	if (!o->pid && !o->cmd && (o->probe || o->adaptive))
		return xp_usage_error("record", "%s probes a program: give a command after -- or -p PID",
				      o->probe ? "--probe" : "--adaptive");
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) < 0 ? -errno : 0;	/* non-zero stops nftw */
}

/* DIR must not exist, unless -f: then it becomes DIR.old (replacing an older one).
 * -f moves and removes only a directory xptrace record made (-EPERM, a usage error,
 * otherwise): a user's directory given to -o by mistake stays as it was.  The new DIR
 * gets the mark that says so first, so that even a recording killed at once has it. */
static int prepare_dir(const struct rec_opts *o)
{
	struct stat st;
	char old[PATH_MAX], why[PATH_MAX + 64];
	int e;

	if (lstat(o->outdir, &st) == 0) {
		if (rec_dir_what(o->outdir, why, sizeof(why)) == -ENOTDIR)
			return xp_err_code(-EPERM, o->outdir, "choose another -o DIR, or move it away",
					   "it is %s, not a trace directory", why);
		if (!o->force)
			return xp_err(o->outdir, "use -f to replace it; the old one is kept as .old",
				      "the trace directory already exists");
		if (rec_dir_outside_cwd(o->outdir) < 0)
			return xp_err_code(-EPERM, o->outdir, "choose another -o DIR",
					   "-f cannot replace the current directory or one that holds it");
		if (rec_dir_is_trace(o->outdir, why, sizeof(why)) < 0)
			return xp_err_code(-EPERM, o->outdir, "choose another -o DIR, or move it away by hand",
					   "-f replaces only a trace directory, and %s", why);
		if (snprintf(old, sizeof(old), "%s.old", o->outdir) >= (int)sizeof(old))
			return xp_err(o->outdir, NULL, "path too long");
		if (lstat(old, &st) == 0) {
			if (rec_dir_is_trace(old, why, sizeof(why)) < 0)
				return xp_err_code(-EPERM, old, "move it away by hand",
						   "-f would remove it to keep %s there, but it is not a trace "
						   "directory: %s", o->outdir, why);
			if (nftw(old, rm_entry, 16, FTW_DEPTH | FTW_PHYS) < 0)
				return xp_err(old, "remove it by hand", "cannot remove: %s", strerror(errno));
		}
		if (rename(o->outdir, old) < 0)
			return xp_err(o->outdir, "choose another place with -o DIR",
				      "cannot rename to %s: %s", old, strerror(errno));
		if (!o->quiet)
			xp_warn("%s: the previous trace is now %s", o->outdir, old);
	}
	if (mkdir(o->outdir, 0755) < 0)
		return xp_err(o->outdir, "choose a writable place with -o DIR",
			      "cannot create the trace directory: %s", strerror(errno));
	if ((e = rec_dir_mark(o->outdir)) < 0) {
		rmdir(o->outdir);
		return xp_err(o->outdir, "choose a writable place with -o DIR",
			      "cannot write its %s: %s", REC_DIR_MARK, strerror(-e));
	}
	return 0;
}

/* Forks the command stopped before exec: events get attached to its pid first. */
static int spawn(struct rec *r)
{
	int go[2], err[2];
	pid_t pid;

	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		return xp_err("start the command", NULL, "pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		return xp_err("start the command", NULL, "fork: %s", strerror(errno));
	if (pid == 0) {
		char c;
		int e;
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		for (int i = 0; i < 4; i++)
			if (saved_sigs[i].sa_handler == SIG_IGN)
				signal(own_sigs[i], SIG_IGN);
			else
				signal(own_sigs[i], SIG_DFL);
		/* the command lives as long as its recording: if xptrace is killed, it gets
		 * the SIGTERM a stopped recording sends (docs/record.md) */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		close(go[1]);
		close(err[0]);
		if (read(go[0], &c, 1) != 1)
			_exit(127);	/* xptrace gave up before starting us */
		execvp(r->exec_argv ? r->exec_argv[0] : r->opts->cmd[0],
		       r->exec_argv ? r->exec_argv : r->opts->cmd);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	close(go[0]);
	close(err[1]);
	r->go_fd = go[1];
	r->exec_err_fd = err[0];
	r->child = r->target = pid;
	return 0;
}

/* Ends a command still running (--duration, SIGINT to xptrace only, errors).  One
 * that ignores SIGTERM is waited for, saying so after a second; another SIGINT or
 * SIGTERM leaves it running, and says so. */
static void stop_child(struct rec *r)
{
	int st;

	if (!r->child || r->target_done)
		return;
	if (r->go_fd >= 0) {	/* never started: let it exit on EOF */
		close(r->go_fd);
		r->go_fd = -1;
		r->exec_failed = 1;
	} else {
		kill(r->child, SIGTERM);
		r->stopped_by_us = 1;
	}
	sig_atomic_t seen = stop_signals;
	for (int i = 0;; i++) {
		pid_t p = waitpid(r->child, &st, WNOHANG);
		if (p == r->child) {
			r->target_status = st;
			r->target_done = 1;
			return;
		}
		if (p < 0)
			return;
		if (stop_signals != seen) {
			xp_warn("PID %d left running, no longer recorded", (int)r->child);
			return;
		}
		if (i == 10)
			xp_warn("waiting for PID %d to exit (it was sent SIGTERM); Ctrl-C again to stop "
				"waiting and leave it running", (int)r->child);
		rec_wait(NULL, 0, 100);
	}
}

static void add_build_ids(struct rec *r)
{
	for (size_t i = 0; i < ms_store_count(r->ms); i++) {
		const char *name;
		const uint8_t *bid;
		size_t bsz;
		if (ms_store_entry(r->ms, i, &name, &bid, &bsz) == 0)
			pd_writer_add_build_id(r->w, -1, PERF_RECORD_MISC_USER, bid, bsz, name);
	}
}

static void describe_target(const struct rec *r)
{
	int st = r->target_status;

	if (!r->child || !r->target_done || r->opts->quiet || r->exec_failed)
		return;
	if (WIFSIGNALED(st))
		xp_warn("the command was killed by signal %d (%s)%s", WTERMSIG(st), strsignal(WTERMSIG(st)),
			WCOREDUMP(st) ? ", core dumped" : "");
	else if (WIFEXITED(st) && WEXITSTATUS(st))
		xp_warn("the command exited with status %d", WEXITSTATUS(st));
}

/* A command that gains privileges at exec (setuid...) leaves the samples of an
 * unprivileged recording empty, without a word from the kernel. */
static void explain_no_samples(const struct rec *r)
{
	char why[PATH_MAX + 64];

	if (rec_secure_exec(r->opts->cmd[0], why, sizeof(why)))
		xp_warn("no samples: %s: the kernel does not let you trace it (it detaches your events "
			"at its exec) (record as root, or a copy of it you own)", why);
}

static int finish(struct rec *r, int run_err)
{
	int e, rc = run_err < 0 ? XP_EXIT_RUNTIME : XP_EXIT_OK;
	uint64_t size, kept;

	add_build_ids(r);
	pd_writer_feat_host(r->w);
	/* The full command line, "xptrace record ...", as perf records its own: main()
	 * passes argv + 1, so argv[-1] is the program name. */
	pd_writer_feat_cmdline(r->w, r->opts->argc + 1, r->opts->argv - 1);
	if (r->samples)
		pd_writer_feat_sample_time(r->w, r->first_time, r->last_time);
	e = pd_writer_finalize(r->w);
	size = pd_writer_data_size(r->w);
	kept = pd_writer_samples(r->w);
	/* Postponed snapshot copies come after perf.data is safe: on a full disk the
	 * trace matters more than copies of binaries that may still exist elsewhere. */
	ms_store_flush(r->ms);
	{
		int fe;
		const char *failed;
		for (size_t i = 0; (failed = ms_store_failed(r->ms, i, &fe)); i++)
			xp_warn("no snapshot of %s: %s (decoding reads it from its path while it is "
				"unchanged)", failed, strerror(-fe));
	}
	size_t jit_kept = rec_jit_keep(r);
	char jit_note[48] = "";
	if (jit_kept)
		snprintf(jit_note, sizeof(jit_note), ", %zu JIT files kept", jit_kept);
	if (r->write_err || pd_writer_error(r->w)) {
		int we = r->write_err ? r->write_err : pd_writer_error(r->w);
		uint64_t aux = pd_writer_aux_bytes(r->w);
		/* a trace is kept as a prefix of each thread's: what of it the file holds */
		if (e == 0 && r->aux_traced)
			xp_err(r->data_path, "free space and record again",
			       "%s; recording stopped: %llu of the %llu bytes of Intel PT traced were kept"
			       " (%.1f%%: each thread's trace up to where the disk filled, less the end"
			       " given back to finish the file) and are readable, %llu bytes were lost",
			       strerror(-we), (unsigned long long)aux, (unsigned long long)r->aux_traced,
			       100.0 * (double)aux / (double)r->aux_traced,
			       (unsigned long long)(r->aux_traced - aux));
		else if (e == 0 && kept)
			xp_err(r->data_path, "free space and record again",
			       "%s; recording stopped, the %.1f MB written before (%llu samples) were kept"
			       " and are readable (the last %.1f MB were dropped to finish the file)",
			       strerror(-we), size / 1e6, (unsigned long long)kept,
			       pd_writer_truncated(r->w) / 1e6);
		else if (e == 0)
			xp_err(r->data_path, "free space and record again",
			       "%s; recording stopped and no samples were kept: the %.1f MB recorded were"
			       " dropped to finish the file, which holds the events but no records",
			       strerror(-we), pd_writer_truncated(r->w) / 1e6);
		else
			xp_err(r->data_path, "free space and record again", "%s; the file could not be finished",
			       strerror(-we));
		rc = XP_EXIT_RUNTIME;
	} else if (e < 0) {
		xp_err(r->data_path, NULL, "cannot finish the file: %s", strerror(-e));
		rc = XP_EXIT_RUNTIME;
	}
	pd_writer_free(r->w);
	r->w = NULL;
	free(r->held.buf);
	r->held = (struct rec_held){ 0 };
	describe_target(r);
	/* the kernel counts what a full ring lost in records of every kind, samples
	 * mostly; the samples it never wrote (LOST_SAMPLES) it counts apart */
	if (r->lost)
		xp_warn("%llu records were lost, samples among them: xptrace fell behind the kernel "
			"and its ring filled (lower -F, or the stack size of --call-graph dwarf)",
			(unsigned long long)r->lost);
	if (r->lost_samples)
		xp_warn("the kernel dropped %llu samples it could not write (lower -F, or the stack "
			"size of --call-graph dwarf)", (unsigned long long)r->lost_samples);
	if (!r->opts->quiet && !r->exec_failed && r->recorded[0])
		fprintf(stderr, "xptrace: recorded %s, %zu modules snapshotted%s, %.2f MB in %s/\n",
			r->recorded, ms_store_count(r->ms), jit_note, size / 1e6, r->dir);
	else if (!r->opts->quiet && !r->exec_failed) {
		/* the probes' hits are samples of their own events, not of the sampled one */
		uint64_t hits = r->probe_hits < kept ? r->probe_hits : kept;
		char probes[64] = "";
		if (r->opts->probe || r->opts->adaptive)
			snprintf(probes, sizeof(probes), " and %llu probe hits", (unsigned long long)hits);
		fprintf(stderr,
			"xptrace: recorded %llu %s%ssamples%s, %llu records lost%s, %zu modules "
			"snapshotted%s, %.2f MB in %s/\n",
			(unsigned long long)(kept - hits), r->sampled, r->sampled[0] ? " " : "", probes,
			(unsigned long long)r->lost, r->lost_samples ? " (and samples dropped)" : "",
			ms_store_count(r->ms), jit_note, size / 1e6, r->dir);
	}
	if (r->child && !r->exec_failed && !r->recorded[0] && !kept && rc == XP_EXIT_OK)
		explain_no_samples(r);
	return rc;
}

/* Options of the hardware modes make no sense in another mode (auto may have fallen
 * back): say so instead of silently recording something else. */
static int hw_options_fit(const struct rec_opts *o, const struct rec_mode *m)
{
	const char *opt = NULL;

	if (strcmp(m->name, "pt") != 0)
		opt = o->snapshot ? "--snapshot" : o->pt_opts ? "--pt-opts" :
		      o->aux_size ? "--aux-size" : NULL;
	if (opt)
		return xp_err("record", "drop it, or record where Intel PT exists",
			      "%s needs --mode pt, and this recording is in %s mode", opt, m->name);
	if (o->filter && strcmp(m->name, "pt") != 0 && strcmp(m->name, "step") != 0)
		return xp_err("record", "drop it, or use --mode step (any machine) or --mode pt",
			      "--filter needs --mode pt or --mode step, and this recording is in %s mode",
			      m->name);
	/* before -g: --adaptive implies it */
	if (o->adaptive && strcmp(m->name, "sample") != 0 && strcmp(m->name, "lbr") != 0)
		return xp_err("record", "use --mode sample (or lbr)",
			      "--adaptive places probes from samples, in sample and lbr modes, and this "
			      "recording is in %s mode", m->name);
	/* step, dbt and pt record every branch: nothing is sampled, no stack is walked */
	int sw = strcmp(m->name, "step") == 0 || strcmp(m->name, "dbt") == 0;
	if (sw || strcmp(m->name, "pt") == 0) {
		const char *so = o->callgraph != REC_CG_NONE ? "-g/--call-graph" : o->freq ? "-F" :
				 o->period ? "-c" : o->events && sw ? "-e" : NULL;
		if (so)
			return xp_err("record", sw ?
				      "drop it; for samples use --mode sample" :
				      "drop it; for samples use --mode sample or lbr",
				      "%s does not apply to %s mode: it records every branch (exact calls "
				      "and returns), it samples nothing%s", so, m->name,
				      strcmp(so, "-e") == 0 ? " and counts no event" : "");
	}
	if (o->psb_period && !sw)
		return xp_err("record", "with --mode pt use --pt-opts psb_period=N",
			      "--psb-period is for --mode step and dbt, and this recording is in %s mode",
			      m->name);
	if (o->probe && sw)
		return xp_err("record", "drop --probe: every call and return is in the trace",
			      "--probe adds exact events to sampled modes, and --mode %s is exact already",
			      m->name);
	/* valgrind starts the command itself */
	if (o->pid && strcmp(m->name, "dbt") == 0)
		return xp_err("record", "run the command under xptrace instead",
			      "--mode dbt cannot attach to a running process (-p)");
	if (o->callgraph == REC_CG_LBR && strcmp(m->name, "lbr") != 0)
		return xp_err("record", "use -g (frame pointers) or --call-graph dwarf",
			      "-g lbr needs --mode lbr, and this recording is in %s mode", m->name);
	if (o->off_cpu && strcmp(m->name, "sample") != 0)
		return xp_err("record", "use --mode sample", "--off-cpu is for sample mode, and this "
			      "recording is in %s mode", m->name);
	if ((o->all_cpus || o->kernel) && strcmp(m->name, "pt") != 0 && strcmp(m->name, "lbr") != 0 &&
	    strcmp(m->name, "sample") != 0)
		return xp_err("record", "drop the option", "%s is for --mode pt and lbr, and this "
			      "recording is in %s mode", o->all_cpus ? "-a" : "-k", m->name);
	return 0;
}

/* -p: the process exists and may be recorded by this user.  perf_event_open on
 * another user's process needs the ptrace access check to pass (kernel/events/core.c:
 * PTRACE_MODE_READ_REALCREDS): same uid, or CAP_SYS_PTRACE; perf_event_paranoid
 * cannot lift it.  kill(pid, 0) answers the same question for uids. */
static int check_pid(pid_t pid)
{
	char path[64];
	struct stat st;
	int level = -9;
	FILE *f;

	if (kill(pid, 0) == 0)
		return 0;
	if (errno != EPERM)
		return xp_err("attach", "check the pid", "process %d: %s", (int)pid, strerror(errno));
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) < 0)
		st.st_uid = (uid_t)-1;
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = -9;
		fclose(f);
	}
	char para[64] = "";
	if (level != -9)
		snprintf(para, sizeof(para), "; perf_event_paranoid (%d) does not change this", level);
	return xp_err_code(-EPERM, "attach",
			   "run xptrace as root or as that user, or give it CAP_SYS_PTRACE and CAP_PERFMON",
			   "process %d belongs to uid %d and you are uid %d: recording another user's "
			   "process needs privilege (root, or CAP_SYS_PTRACE)%s",
			   (int)pid, (int)st.st_uid, (int)geteuid(), para);
}

/* perf record's exit status: the command's exit code, or, when a signal killed it,
 * 128 + the signal (perf re-raises the signal on itself, which a shell reports as
 * 128 + N; xptrace exits with that number instead of dumping its own core).  A
 * recording xptrace ended (--duration, SIGINT/SIGTERM to xptrace, -p) exits 0: the
 * command's end was not its own. */
static int command_status(const struct rec *r)
{
	int st = r->target_status;

	if (!r->child || !r->target_done || r->exec_failed || r->stop_signal || rec_stop_requested ||
	    r->stopped_by_us)
		return XP_EXIT_OK;
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return XP_EXIT_OK;
}

static int run(int argc, char **argv)
{
	struct rec_opts o;
	struct rec r;
	const struct rec_mode *mode;
	char path[PATH_MAX];
	int e, rc;

	rc = parse_args(argc, argv, &o);
	if (rc)
		return rc;
	/* a mode named on the command line: an option that does not fit it is a usage
	 * error on any machine, said before whether this one has the mode */
	for (int i = 0; strcmp(o.mode, "auto") != 0 && rec_modes[i]; i++)
		if (strcmp(rec_modes[i]->name, o.mode) == 0 && hw_options_fit(&o, rec_modes[i]) < 0)
			return XP_EXIT_USAGE;
	struct rec_choice choice = { .verbose = o.verbose };
	mode = rec_mode_resolve(&o, &choice);
	if (!mode)
		return XP_EXIT_RUNTIME;
	/* a mode named on the command line makes a misfit option a usage error; one auto
	 * chose depends on the machine */
	if (hw_options_fit(&o, mode) < 0)
		return strcmp(o.mode, "auto") != 0 ? XP_EXIT_USAGE : XP_EXIT_RUNTIME;
	if (o.pid && check_pid(o.pid) < 0)
		return XP_EXIT_RUNTIME;
	/* before the directory exists: a step recording needs the process to itself */
	if (o.pid && strcmp(mode->name, "step") == 0 && rec_check_untraced(o.pid) < 0)
		return XP_EXIT_RUNTIME;
	memset(&r, 0, sizeof(r));
	/* before the directory exists: a filter or probe that cannot work leaves nothing */
	if (mode->check && (e = mode->check(&o)) < 0)
		return e == -EINVAL ? XP_EXIT_USAGE : XP_EXIT_RUNTIME;
	if ((o.probe || o.adaptive) && rec_probes_prepare(&o, &r.probes) < 0)
		return XP_EXIT_RUNTIME;
	/* Beside the command when only --adaptive places probes: none is armed before its
	 * figures are in.  Probes armed from the start are calibrated first: hits of the
	 * target and of the calibration at once made each other dearer (compensated Cum
	 * +13-23 % off the unprobed run where it was +2-12 %). */
	if (r.probes) {
		rec_probes_calibrate(r.probes);
		if (o.probe)
			rec_probes_calibrated(r.probes, 1);
	}
	if (o.adaptive && rec_adp_new(&r.adaptive) < 0) {
		rec_probes_free(r.probes);
		return xp_err("--adaptive", NULL, "%s", strerror(ENOMEM)), XP_EXIT_RUNTIME;
	}
	if (r.probes)
		rec_probes_hook(&r);
	if (r.adaptive)
		rec_adp_hook(&r);
	int pr = prepare_dir(&o);
	if (pr < 0) {
		rec_adp_free(r.adaptive);
		rec_probes_free(r.probes);
		return pr == -EPERM ? XP_EXIT_USAGE : XP_EXIT_RUNTIME;
	}

	if (!o.quiet)
		for (const char *l = choice.notes, *nl; (nl = strchr(l, '\n')); l = nl + 1)
			xp_warn("%.*s", (int)(nl - l), l);
	r.opts = &o;
	r.go_fd = r.exec_err_fd = -1;
	r.time_off = -1;
	r.dir = (char *)o.outdir;
	snprintf(path, sizeof(path), "%s/perf.data", o.outdir);
	r.data_path = path;
	e = pd_writer_create(&r.w, path);
	if (e < 0) {
		rec_adp_free(r.adaptive);
		rec_probes_free(r.probes);
		return xp_err(path, "choose a writable place with -o DIR", "cannot create: %s",
			      strerror(-e)),
		       XP_EXIT_RUNTIME;
	}
	e = ms_store_open(&r.ms, o.outdir);
	if (e < 0) {
		xp_err(o.outdir, NULL, "cannot create the module store: %s", strerror(-e));
		pd_writer_free(r.w);
		rec_adp_free(r.adaptive);
		rec_probes_free(r.probes);
		return XP_EXIT_RUNTIME;
	}
	ms_store_defer_copies(r.ms, 1);
	rec_stop_requested = 0;
	install_signals();
	if (mode->prepare && (e = mode->prepare(&r)) < 0) {
		r.exec_failed = 1;
		goto out;
	}
	if (o.pid) {
		r.target = o.pid;
	} else if (o.cmd && (e = spawn(&r)) < 0) {
		goto out;
	}
	if (r.probes)
		r.probes->t0 = xp_now_ns();
	if (o.duration > 0)
		r.deadline_ns = xp_now_ns() + (uint64_t)(o.duration * 1e9);
	e = mode->run(&r);
out:
	if (r.probes && !r.exec_failed && rec_probes_report(r.probes, &r) < 0)
		xp_warn("the probes' windows could not be stored: decode will not know them");
	/* before the probes are freed: their last closes are left to a detached process
	 * once the command has ended */
	stop_child(&r);
	rec_adp_free(r.adaptive);
	r.adaptive = NULL;
	rec_probes_free(r.probes);
	r.probes = NULL;
	if (r.exec_err_fd >= 0)
		close(r.exec_err_fd);
	rc = finish(&r, e);
	ms_store_close(r.ms);
	rec_jit_free(&r);
	if (r.exec_failed)
		nftw(o.outdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	if (rec_stop_requested && !o.quiet)
		xp_warn("stopped by %s", strsignal((int)rec_stop_requested));
	return rc == XP_EXIT_OK ? command_status(&r) : rc;
}

const struct xp_cmd xp_cmd_record = {
	.name = "record",
	.summary = "record a command or process into a trace directory",
	.usage = usage_text,
	.run = run,
	.modes = XP_CMD_MODES_AUTO,
};
