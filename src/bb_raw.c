/* Raw PT mode of `xptrace decode` (ptxed-style): a raw PT byte stream decoded against
 * raw memory images and ELF files given on the command line, into the PT views. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bb.h"
#include "bb_cli.h"
#include "pt.h"
#include "xp_cli.h"
#include "xp_err.h"

bool bb_pt_raw_wanted(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--pt") == 0 || strncmp(argv[i], "--pt=", 5) == 0)
			return true;
	return false;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return end == s || *end || errno ? -1 : 0;
}

/* "FILE:BASE": the base is after the last ':' (paths may hold colons). */
static int split_base(const char *arg, char **file, uint64_t *base, bool *have)
{
	const char *colon = strrchr(arg, ':');
	*have = false;
	if (colon && parse_u64(colon + 1, base) == 0) {
		*file = strndup(arg, (size_t)(colon - arg));
		*have = true;
	} else {
		*file = strdup(arg);
	}
	return *file ? 0 : -1;
}

struct raw_env {
	struct dpt_image *img;
};

static size_t raw_read(void *ctx, int32_t pid, uint64_t time, uint64_t ip, uint8_t *buf, size_t n)
{
	struct raw_env *e = ctx;
	(void)pid;
	(void)time;
	return dpt_image_read(e->img, ip, buf, n);
}

static int load_file(const char *path, const uint8_t **data, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	*len = (size_t)st.st_size;
	*data = NULL;
	if (*len) {
		void *m = mmap(NULL, *len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			int e = -errno;
			close(fd);
			return e;
		}
		*data = m;
	}
	close(fd);
	return 0;
}

int bb_pt_raw_main(int argc, char **argv)
{
	struct bb_view_opts vo = { .format = BB_TEXT, .out = stdout, .raw_time = true };
	struct dpt_options opt;
	const char *pt_file = NULL, *annotate = NULL, *sym = NULL;
	enum { V_NONE, V_INSN, V_BLOCKS, V_ANNOTATE, V_CALLGRIND } view = V_NONE;
	bool callgrind = false;
	int32_t tid = -1;
	uint64_t t0 = 0, t1 = UINT64_MAX;
	bool resync = false;
	int ret = XP_EXIT_RUNTIME;
	struct dpt_image *img = dpt_image_new("raw");
	struct raw_env renv = { img };
	struct bb_env env = { .read = raw_read, .ctx = &renv };

	if (!img)
		return xp_err("decode", NULL, "out of memory"), XP_EXIT_RUNTIME;
	dpt_options_init(&opt);
	vo.env = &env;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;
#define NEED_VAL() do { if (!val) { ret = xp_usage_error("decode", "%s needs a value", a); goto out; } i++; } while (0)
		if (strcmp(a, "--pt") == 0) {
			NEED_VAL();
			pt_file = val;
		} else if (strcmp(a, "--raw") == 0 || strcmp(a, "--elf") == 0) {
			NEED_VAL();
			char *file;
			uint64_t base = 0;
			bool have;
			int r;
			if (split_base(val, &file, &base, &have) < 0)
				goto out;
			if (a[2] == 'r') {
				if (!have) {
					free(file);
					ret = xp_usage_error("decode", "--raw %s: missing :BASE", val);
					goto out;
				}
				r = dpt_image_add_file(img, file, 0, UINT64_MAX, base);
			} else {
				r = dpt_image_add_elf(img, file, have, base);
			}
			if (r < 0) {
				xp_err(file, "give a readable code image", "cannot load: %s",
				       r == -ENOEXEC ? "not an ELF file with executable segments" : strerror(-r));
				free(file);
				goto out;
			}
			free(file);
		} else if (strcmp(a, "--cpu") == 0) {
			NEED_VAL();
			if (dpt_parse_cpu(val, &opt.cpu) < 0) {
				ret = xp_usage_error("decode", "--cpu %s: expected FAMILY/MODEL[/STEPPING]", val);
				goto out;
			}
		} else if (strcmp(a, "--nom-freq") == 0 || strcmp(a, "--mtc-freq") == 0) {
			NEED_VAL();
			uint64_t v;
			if (parse_u64(val, &v) < 0 || v > 255) {
				ret = xp_usage_error("decode", "%s %s: expected 0-255", a, val);
				goto out;
			}
			if (a[2] == 'n')
				opt.nom_freq = (uint8_t)v;
			else
				opt.mtc_freq = (uint8_t)v;
		} else if (strcmp(a, "--resync-on-error") == 0) {
			resync = true;
		} else if (strcmp(a, "--insn") == 0) {
			view = V_INSN;
		} else if (strcmp(a, "--blocks") == 0) {
			view = V_BLOCKS;
		} else if (strcmp(a, "--annotate") == 0) {
			NEED_VAL();
			view = V_ANNOTATE;
			annotate = val;
		} else if (strcmp(a, "--format") == 0) {
			NEED_VAL();
			if (strcmp(val, "text") == 0)
				vo.format = BB_TEXT;
			else if (strcmp(val, "jsonl") == 0)
				vo.format = BB_JSONL;
			else if (strcmp(val, "callgrind") == 0)
				callgrind = true;
			else {
				ret = xp_usage_error("decode", "--format %s: expected text, jsonl or callgrind", val);
				goto out;
			}
		} else if (strcmp(a, "--syntax") == 0) {
			NEED_VAL();
			if (strcmp(val, "intel") && strcmp(val, "att")) {
				ret = xp_usage_error("decode", "--syntax %s: expected intel or att", val);
				goto out;
			}
			vo.intel = strcmp(val, "intel") == 0;
		} else if (strcmp(a, "--srcline") == 0) {
			vo.srcline = true;
		} else if (strcmp(a, "--tid") == 0) {
			NEED_VAL();
			uint64_t v;
			if (parse_u64(val, &v) < 0 || v > INT32_MAX) {
				ret = xp_usage_error("decode", "--tid %s: expected a thread id", val);
				goto out;
			}
			tid = (int32_t)v;
		} else if (strcmp(a, "--time") == 0) {
			NEED_VAL();
			if (bb_parse_time_range(val, &t0, &t1) < 0) {
				ret = xp_usage_error("decode", "--time %s: expected A-B, A- or -B", val);
				goto out;
			}
		} else if (strcmp(a, "--sym") == 0) {
			NEED_VAL();
			sym = val;
		} else {
			ret = xp_usage_error("decode", "unknown option '%s' in --pt mode", a);
			goto out;
		}
#undef NEED_VAL
	}
	if (!pt_file) {
		ret = xp_usage_error("decode", "--pt needs a file");
		goto out;
	}
	if (callgrind) {
		if (view != V_NONE) {
			ret = xp_usage_error("decode", "--format callgrind is a profile of its own: drop the view option");
			goto out;
		}
		view = V_CALLGRIND;
	}
	if (view == V_NONE) {
		ret = xp_usage_error("decode", "choose a view: --insn, --blocks, --annotate SYM or --format callgrind");
		goto out;
	}
	if ((view == V_ANNOTATE || sym) && !env.symbol) {
		xp_err("decode", "use --insn or --blocks with addresses",
		       "symbol names are not available for raw PT images in this build");
		goto out;
	}
	if (dpt_image_nsections(img) == 0) {
		ret = xp_usage_error("decode", "--pt needs the code it ran: give --raw FILE:BASE or --elf FILE");
		goto out;
	}

	const uint8_t *buf = NULL;
	size_t len = 0;
	int r = load_file(pt_file, &buf, &len);
	if (r < 0) {
		xp_err(pt_file, "give a raw PT file", "cannot read: %s", strerror(-r));
		goto out;
	}

	struct bb_tally *tally = NULL;
	struct bb_insn_view *iv = NULL;
	struct bb_cg *cg = NULL;
	struct xev_sink view_sink;
	if (view == V_INSN) {
		iv = bb_insn_view_new(&vo);
		view_sink = (struct xev_sink){ bb_insn_view_event, iv };
		/* blocks expanded by the view from its cache beat libipt's instruction
		 * decoder (same stream, checked against perf script) */
		opt.mode = DPT_BLOCKS;
		opt.ignore = (1u << XEV_BRANCH) | (1u << XEV_CALL) | (1u << XEV_RETURN);
	} else if (view == V_CALLGRIND) {
		cg = bb_cg_new(&env);
		view_sink = (struct xev_sink){ bb_cg_event, cg };
		opt.mode = DPT_BLOCKS;
	} else {
		tally = bb_tally_new();
		view_sink = (struct xev_sink){ bb_tally_event, tally };
		opt.ignore = BB_TALLY_IGNORE;
		opt.mode = DPT_BLOCKS;
	}
	if (!iv && !tally && !cg) {
		xp_err("decode", NULL, "out of memory");
		goto unmap;
	}
	struct bb_filter filt;
	bb_filter_init(&filt, &env, view_sink);
	filt.tid = tid;
	filt.t0 = t0;
	filt.t1 = t1;
	filt.sym = sym;
	struct xev_sink sink = { bb_filter_event, &filt };
	if (tid < 0 && !t0 && t1 == UINT64_MAX && !sym)
		sink = view_sink;	/* nothing to filter: one call less per event */
	struct dpt_stats st;
	opt.strict = !resync;
	opt.release_behind = 1;	/* load_file mapped it read-only */
	r = dpt_decode(buf, len, img, &opt, &sink, &st);
	int wfail = iv ? bb_insn_view_free(iv) : 0;
	if (wfail)
		xp_err("decode", NULL, "writing the output failed: %s", strerror(errno));
	if (r == 0 || r == -1) {
		int rep = 0;
		if (view == V_BLOCKS)
			rep = bb_blocks_report(tally, &vo);
		else if (view == V_CALLGRIND)
			rep = bb_cg_write(cg, stdout, pt_file);
		else if (view == V_ANNOTATE && bb_annotate_report(tally, annotate, &vo) < 0) {
			xp_err(annotate, "check the name with --blocks", "no executed code in this function");
			rep = -1;
		}
		fflush(stdout);
		if (r == -1)
			xp_err(pt_file, "use --resync-on-error to skip to the next PSB",
			       "decode error at offset %lu: %s", (unsigned long)st.first_error_offset,
			       pt_errstr(pt_errcode(st.first_error)));
		else if (st.gaps)
			xp_warn("%s: %lu gaps, %lu trace bytes skipped", pt_file, (unsigned long)st.gaps,
				(unsigned long)st.lost_bytes);
		ret = r == 0 && rep == 0 && !wfail ? XP_EXIT_OK : XP_EXIT_RUNTIME;
	} else {
		xp_err(pt_file, NULL, "decode failed (%d)", r);
	}
	bb_tally_free(tally);
	bb_cg_free(cg);
unmap:
	if (len)
		munmap((void *)buf, len);
out:
	dpt_image_free(img);
	return ret;
}
