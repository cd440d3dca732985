/* Raw Intel PT (ptxed-style): `xptrace decode --pt FILE [--raw FILE:BASE]...
 * [--elf FILE[:BASE]]... [--cpu F/M[/S]] [--resync-on-error] VIEW`.
 *
 * The images also go into the session as mappings of one process, so every view
 * (symbols of the ELF files, --calltree, --functions, --annotate) works as on a
 * perf.data.  Without --resync-on-error the first decode error ends the decode, as
 * in ptxed (what was decoded until then is shown by streaming views). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decode/dec_par.h"
#include "decode/decoder.h"
#include "decoders/pt/dpt.h"
#include "decoders/pt/dpt_plug.h"
#include "util/xp_err.h"

#define RAW_PID 1	/* the one process a raw trace describes */

static const struct dec_option options[] = {
	{ "pt", "FILE", "raw Intel PT to decode instead of a perf.data (ptxed-style)" },
	{ "raw", "FILE:BASE", "--pt: raw memory image FILE at address BASE (repeatable)" },
	{ "elf", "FILE[:BASE]", "--pt: executable segments of an ELF file, at BASE if given (repeatable)" },
	{ "cpu", "F/M[/S]", "--pt: cpu family/model/stepping of the trace: applies its errata" },
	{ "nom-freq", "N", "--pt: nominal core:bus ratio (MSR_PLATFORM_INFO[15:8]): CYC -> cycles" },
	{ "mtc-freq", "N", "--pt: MTC frequency (IA32_RTIT_CTL.MTCFreq)" },
	{ "cpuid-0x15.eax", "N", "--pt: CPUID 0x15 eax (TSC:crystal ratio denominator): MTC -> time" },
	{ "cpuid-0x15.ebx", "N", "--pt: CPUID 0x15 ebx (TSC:crystal ratio numerator): MTC -> time" },
	{ "tsc-hz", "HZ", "--pt: TSC frequency: times in ns (else TSC ticks: --metric tsc)" },
	{ "resync-on-error", NULL, "--pt: on a decode error report a gap and resume at the next PSB" },
	{ "insn-decoder", NULL, "--pt: libipt's instruction decoder instead of its block decoder (a cross-check)" },
	DPT_PLUG_DECODER_OPTION,
	{ NULL, NULL, NULL },
};

static bool claims(const struct dec_opts *o)
{
	for (unsigned i = 0; i < o->nextra; i++)
		if (strcmp(o->extra[i].name, "pt") == 0)
			return true;
	return false;
}

/* Raw PT has TSC ticks; ns need the TSC frequency, which the stream does not hold. */
static int setup(struct dec_ctx *c)
{
	bool hz = dec_opt(c, "tsc-hz") != NULL;
	if (!hz && c->opts->metric && strcmp(c->opts->metric, "time") == 0)
		return xp_err("decode", "give --tsc-hz HZ, or --metric tsc for TSC ticks",
			      "--metric time: raw PT has TSC ticks, not ns");
	/* whether the stream has CYC packets shows only in decoding it */
	return dpt_setup_metrics(c, hz ? "time" : "tsc", true);
}

/* ns = tsc * 1e9 / hz as perf's tsc_to_perf_time computes it: (tsc * mult) >> shift
 * with the largest shift whose mult still fits in 32 bits (the most precision). */
static int tsc_conv(const char *val, struct dpt_options *opt)
{
	char *end;
	errno = 0;
	double hz = strtod(val, &end);
	if (end == val || *end || errno || !(hz >= 1e6 && hz <= 1e11))
		return xp_err("decode", "e.g. --tsc-hz 2400000000", "--tsc-hz %s: expected a frequency in Hz", val);
	int shift = 32;
	while (shift > 0 && 1e9 * (double)(1ULL << shift) / hz >= 4294967295.0)
		shift--;
	opt->have_time_conv = 1;
	opt->time_shift = (uint16_t)shift;
	opt->time_mult = (uint32_t)(1e9 * (double)(1ULL << shift) / hz + 0.5);
	opt->time_zero = 0;
	return 0;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	errno = 0;
	*v = strtoull(s, &end, 0);
	return end == s || *end || errno ? -EINVAL : 0;
}

/* "FILE:BASE": the base is after the last ':' (paths may hold colons). */
static char *split_base(const char *arg, uint64_t *base, bool *have)
{
	const char *colon = strrchr(arg, ':');
	*have = colon && parse_u64(colon + 1, base) == 0;
	return *have ? strndup(arg, (size_t)(colon - arg)) : strdup(arg);
}

/* The session learns where each ELF segment is (by absolute path, as mappings record
 * them), so symbols and code bytes are found. */
struct elf_maps {
	struct dec_ctx *c;
	const char *path;
	uint8_t bid[20];
	int nbid;
};

static int add_elf_map(void *ctx, uint64_t start, uint64_t len, uint64_t pgoff)
{
	struct elf_maps *e = ctx;
	return sb_add_map(e->c->sb, RAW_PID, start, len, pgoff, PROT_READ | PROT_EXEC, e->path,
			  e->nbid > 0 ? e->bid : NULL, (uint8_t)(e->nbid > 0 ? e->nbid : 0), 0) < 0;
}

/* 1 when `file` is an ELF shared object or PIE (ET_DYN): its addresses are offsets
 * until it is given the base it ran at. */
static int elf_is_dyn(const char *file)
{
	unsigned char h[18];
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return 0;
	n = pread(fd, h, sizeof(h), 0);
	close(fd);
	return n == (ssize_t)sizeof(h) && memcmp(h, "\177ELF", 4) == 0 && h[5] == 1 /* LE */ &&
	       h[16] == 3 && h[17] == 0;	/* e_type ET_DYN */
}

static int load_inputs(struct dec_ctx *c, struct dpt_image *img, struct dpt_options *opt,
		       const char **pie_no_base)
{
	const struct dec_opts *o = c->opts;
	int n = 0;

	for (unsigned i = 0; i < o->nextra; i++) {
		const char *name = o->extra[i].name, *val = o->extra[i].value;
		uint64_t base = 0, v;
		bool have;
		if (strcmp(name, "raw") == 0 || strcmp(name, "elf") == 0) {
			char *arg = split_base(val, &base, &have);
			char *file = arg ? realpath(arg, NULL) : NULL;
			int r;
			if (!file) {
				int e = errno;
				xp_err(arg ? arg : val, "give a readable code image", "cannot load: %s", strerror(e));
				free(arg);
				return -e;
			}
			free(arg);
			if (name[0] == 'r' && !have) {
				free(file);
				return xp_err("decode", "give --raw FILE:BASE", "--raw %s: missing :BASE", val);
			}
			if (name[0] == 'r') {
				r = dpt_image_add_file(img, file, 0, UINT64_MAX, base);
				struct stat st;
				if (r == 0 && stat(file, &st) == 0)
					r = sb_add_map(c->sb, RAW_PID, base, (uint64_t)st.st_size, 0,
						       PROT_READ | PROT_EXEC, file, NULL, 0, 0) < 0 ? -ENOMEM : 0;
			} else {
				struct elf_maps e = { c, file, { 0 }, 0 };
				if (!have && !*pie_no_base && elf_is_dyn(file))
					*pie_no_base = val;
				e.nbid = sym_file_build_id(file, e.bid);
				r = dpt_image_add_elf(img, file, have, base, add_elf_map, &e);
			}
			if (r < 0) {
				xp_err(file, "give a readable code image", "cannot load: %s",
				       r == -ENOEXEC ? "not an ELF file with executable segments" : strerror(-r));
				free(file);
				return r;
			}
			free(file);
			n++;
		} else if (strcmp(name, "cpu") == 0) {
			if (dpt_parse_cpu(val, &opt->cpu) < 0)
				return xp_err("decode", "e.g. --cpu 6/158/10", "--cpu %s: expected FAMILY/MODEL[/STEPPING]",
					      val);
		} else if (strcmp(name, "nom-freq") == 0 || strcmp(name, "mtc-freq") == 0) {
			if (parse_u64(val, &v) < 0 || v > 255)
				return xp_err("decode", NULL, "--%s %s: expected 0-255", name, val);
			if (name[0] == 'n')
				opt->nom_freq = (uint8_t)v;
			else
				opt->mtc_freq = (uint8_t)v;
		} else if (strncmp(name, "cpuid-0x15.e", 12) == 0) {
			if (parse_u64(val, &v) < 0 || v > UINT32_MAX)
				return xp_err("decode", NULL, "--%s %s: expected a 32-bit number", name, val);
			if (strcmp(name + 12, "ax") == 0)
				opt->cpuid_0x15_eax = (uint32_t)v;
			else
				opt->cpuid_0x15_ebx = (uint32_t)v;
		} else if (strcmp(name, "tsc-hz") == 0) {
			int r = tsc_conv(val, opt);
			if (r < 0)
				return r;
		} else if (strcmp(name, "resync-on-error") == 0) {
			opt->strict = 0;
		} else if (strcmp(name, "insn-decoder") == 0) {
			opt->mode = DPT_INSNS;
		}
	}
	if (!n)
		return xp_err("decode", "give --raw FILE:BASE or --elf FILE",
			      "--pt needs the code the trace ran");
	return 0;
}

/* -j: the stream in pieces (dpt_split), each decoded with its worker's copy of the
 * image. */
struct raw_par {
	const uint8_t *buf;
	size_t len;
	struct dpt_image *img;
	struct dpt_image **imgs;	/* per worker, made at its first piece */
	const struct dpt_options *opt;
	struct dpt_split split;
	struct dpt_stats *st;		/* per piece */
	struct dpt_stats total;
};

/* A piece no smaller than this (the PSB+ of a trace come every few KB): below it
 * a piece's setup costs more than its decode. */
#define PIECE_MIN (256u << 10)
/* and no larger than this: a running piece keeps up to about its size of the trace
 * mapped (decode release_behind), so memory stays N times this whatever the trace */
#define PIECE_MAX (2u << 20)

static int raw_piece(void *arg, unsigned w, size_t i, const struct xev_sink *sink, size_t *next)
{
	struct raw_par *rp = arg;
	if (!rp->imgs[w]) {
		rp->imgs[w] = dpt_image_clone(rp->img);
		if (!rp->imgs[w])
			return -ENOMEM;
	}
	struct dpt_options o = *rp->opt;
	uint64_t off = dpt_split_piece(&rp->split, i, &o);
	o.base_offset += off;
	int r = dpt_decode(rp->buf + off, rp->len - off, rp->imgs[w], &o, sink, &rp->st[i]);
	*next = dpt_split_next(&rp->split, i, &rp->st[i]);
	const struct dpt_split *s = &rp->split;
	dpt_split_release(rp->buf, off, *next < s->npieces ? s->psbs[s->start[*next]] : rp->len);
	return r;
}

static void raw_piece_done(void *arg, size_t i)
{
	struct raw_par *rp = arg;
	const struct dpt_stats *s = &rp->st[i];
	rp->total.insns += s->insns;
	rp->total.blocks += s->blocks;
	rp->total.gaps += s->gaps;
	rp->total.lost_bytes += s->lost_bytes;
	rp->total.overflows += s->overflows;
	if (!rp->total.first_error && s->first_error) {
		rp->total.first_error = s->first_error;
		rp->total.first_error_offset = s->first_error_offset;
	}
}

/* The decode on c->par's workers; *ran false when it is not worth splitting (the
 * caller decodes on this thread). */
static int decode_par(struct dec_ctx *c, const uint8_t *buf, size_t len, struct dpt_image *img,
		      const struct dpt_options *opt, const struct xev_sink *sink, struct dpt_stats *stats,
		      bool *ran)
{
	unsigned jobs = c->par->jobs;
	uint64_t size = len / (8 * (uint64_t)jobs);
	struct raw_par rp = { .buf = buf, .len = len, .img = img, .opt = opt };
	int r;

	*ran = false;
	if (size < PIECE_MIN)
		size = PIECE_MIN;
	if (size > PIECE_MAX)
		size = PIECE_MAX;
	if (c->par->piece_size)
		size = c->par->piece_size;
	if (len < 2 * size || dpt_counts_cycles(buf, len, opt))
		return 0;
	if ((r = dpt_split(buf, len, size, true, &rp.split)) < 0)
		return xp_err_code(r, "decode", NULL, "out of memory");
	if (rp.split.npieces < 2) {
		dpt_split_free(&rp.split);
		return 0;
	}
	*ran = true;
	rp.imgs = calloc(jobs + 1, sizeof(*rp.imgs));
	rp.st = calloc(rp.split.npieces, sizeof(*rp.st));
	if (!rp.imgs || !rp.st)
		r = xp_err_code(-ENOMEM, "decode", NULL, "out of memory");
	else
		r = c->par->run(c->par, rp.split.npieces, raw_piece, raw_piece_done, &rp, sink);
	*stats = rp.total;
	for (unsigned w = 0; rp.imgs && w <= jobs; w++)
		dpt_image_free(rp.imgs[w]);
	free(rp.imgs);
	free(rp.st);
	dpt_split_free(&rp.split);
	return r;
}

static int run(struct dec_ctx *c, const struct xev_sink *sink)
{
	const char *path = dec_opt(c, "pt");
	struct dpt_options opt;
	struct dpt_image *img = dpt_image_new("raw");
	int ret;

	if (!img)
		return xp_err_code(-ENOMEM, "decode", NULL, "out of memory");
	dpt_options_init(&opt);
	opt.strict = 1;
	opt.pid = RAW_PID;
	const char *pie = NULL;	/* an --elf PIE given without :BASE */
	ret = load_inputs(c, img, &opt, &pie);
	if (ret < 0 || (ret = dpt_plug_decoder(c, &opt.libipt_only)) < 0)
		goto out;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0) {
		ret = -errno;
		xp_err(path, "give a raw PT file", "cannot read: %s", strerror(-ret));
		if (fd >= 0)
			close(fd);
		goto out;
	}
	size_t len = (size_t)st.st_size;
	if (!len) {
		close(fd);
		ret = xp_err_code(-ENODATA, path, "give a file holding Intel PT packets", "the file is empty");
		goto out;
	}
	const uint8_t *buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	if (buf == MAP_FAILED)
		ret = -errno;
	close(fd);
	if (buf == MAP_FAILED) {
		xp_err(path, NULL, "cannot map: %s", strerror(-ret));
		goto out;
	}
	opt.release_behind = 1;
	opt.ignore = ~c->wants & DEC_WANT_ALL;
	struct dpt_stats stats;
	bool ran = false;
	bool ordered = (c->wants & DEC_WANT_FINE_ORDER) && dpt_walkable(buf, len, &opt);	/* (dpt.h) */
	int r = c->par && c->par->jobs > 1 && !ordered ? decode_par(c, buf, len, img, &opt, sink, &stats, &ran) : 0;
	if (!ran && r == 0)
		r = dpt_decode(buf, len, img, &opt, sink, &stats);
	munmap((void *)buf, len);
	char pie_hint[512];
	if (r == DPT_EDECODE && pie && pt_errcode(stats.first_error) == pte_nomap)
		snprintf(pie_hint, sizeof(pie_hint), "%s is a PIE, loaded at a base address: give "
			 "--elf %s:BASE, the start of its first mapping (/proc/PID/maps, perf script "
			 "--show-mmap-events)", pie, pie);
	if (r == DPT_EDECODE)
		xp_err(path, pie && pt_errcode(stats.first_error) == pte_nomap ? pie_hint :
		       "use --resync-on-error to skip to the next PSB", "decode error at offset %llu: %s",
		       (unsigned long long)stats.first_error_offset, pt_errstr(pt_errcode(stats.first_error)));
	else if (r == 0 && stats.gaps)
		xp_warn("%s: %llu gaps, %llu trace bytes skipped", path, (unsigned long long)stats.gaps,
			(unsigned long long)stats.lost_bytes);
	else if (r < 0)
		xp_err(path, NULL, "decode failed: %s", strerror(-r));
	ret = r > 0 ? -ECANCELED : r;	/* a sink that stopped the decode failed it */
out:
	dpt_image_free(img);
	return ret;
}

const struct dec_decoder dec_pt_raw = {
	.name = "pt-raw",
	.default_view = "functions",
	.options = options,
	.claims = claims,
	.setup = setup,
	.run = run,
};
