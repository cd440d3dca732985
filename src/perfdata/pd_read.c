/* perf.data reader: file and pipe headers, features, and the record loop (mapping windows over the data section, user records delivered at once, kernel
 * records through the ordering queue). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "perfdata/pd_read_int.h"
#include "util/xp_err.h"

#define DEFAULT_WINDOW (8u << 20)
#define DEFAULT_QUEUE (256u << 20)
/* Largest AUXTRACE payload we accept in one record (perf's own buffers are far smaller). */
#define MAX_AUX_BYTES (1ull << 32)

static const char *const rec_names[] = {
	[PERF_RECORD_MMAP] = "MMAP", [PERF_RECORD_LOST] = "LOST", [PERF_RECORD_COMM] = "COMM",
	[PERF_RECORD_EXIT] = "EXIT", [PERF_RECORD_THROTTLE] = "THROTTLE",
	[PERF_RECORD_UNTHROTTLE] = "UNTHROTTLE", [PERF_RECORD_FORK] = "FORK",
	[PERF_RECORD_READ] = "READ", [PERF_RECORD_SAMPLE] = "SAMPLE", [PERF_RECORD_MMAP2] = "MMAP2",
	[PERF_RECORD_AUX] = "AUX", [PERF_RECORD_ITRACE_START] = "ITRACE_START",
	[PERF_RECORD_LOST_SAMPLES] = "LOST_SAMPLES", [PERF_RECORD_SWITCH] = "SWITCH",
	[PERF_RECORD_SWITCH_CPU_WIDE] = "SWITCH_CPU_WIDE", [PERF_RECORD_NAMESPACES] = "NAMESPACES",
	[PERF_RECORD_KSYMBOL] = "KSYMBOL", [PERF_RECORD_BPF_EVENT] = "BPF_EVENT",
	[PERF_RECORD_CGROUP] = "CGROUP", [PERF_RECORD_TEXT_POKE] = "TEXT_POKE",
	[PERF_RECORD_AUX_OUTPUT_HW_ID] = "AUX_OUTPUT_HW_ID",
	[PD_RECORD_HEADER_ATTR] = "HEADER_ATTR", [PD_RECORD_HEADER_EVENT_TYPE] = "HEADER_EVENT_TYPE",
	[PD_RECORD_HEADER_TRACING_DATA] = "HEADER_TRACING_DATA",
	[PD_RECORD_HEADER_BUILD_ID] = "HEADER_BUILD_ID", [PD_RECORD_FINISHED_ROUND] = "FINISHED_ROUND",
	[PD_RECORD_ID_INDEX] = "ID_INDEX", [PD_RECORD_AUXTRACE_INFO] = "AUXTRACE_INFO",
	[PD_RECORD_AUXTRACE] = "AUXTRACE", [PD_RECORD_AUXTRACE_ERROR] = "AUXTRACE_ERROR",
	[PD_RECORD_THREAD_MAP] = "THREAD_MAP", [PD_RECORD_CPU_MAP] = "CPU_MAP",
	[PD_RECORD_STAT_CONFIG] = "STAT_CONFIG", [PD_RECORD_STAT] = "STAT",
	[PD_RECORD_STAT_ROUND] = "STAT_ROUND", [PD_RECORD_EVENT_UPDATE] = "EVENT_UPDATE",
	[PD_RECORD_TIME_CONV] = "TIME_CONV", [PD_RECORD_HEADER_FEATURE] = "HEADER_FEATURE",
	[PD_RECORD_COMPRESSED] = "COMPRESSED", [PD_RECORD_FINISHED_INIT] = "FINISHED_INIT",
};

const char *pd_record_name(uint32_t type)
{
	if (type < sizeof(rec_names) / sizeof(rec_names[0]) && rec_names[type])
		return rec_names[type];
	return "UNKNOWN";
}

static bool known_type(uint32_t t)
{
	return t < sizeof(rec_names) / sizeof(rec_names[0]) && rec_names[t];
}

/* ---- features ---- */

struct fcur {
	const uint8_t *p, *end;
};

static int f_u32(struct fcur *c, uint32_t *v)
{
	if (c->end - c->p < 4)
		return -EINVAL;
	memcpy(v, c->p, 4);
	c->p += 4;
	return 0;
}

static int f_u64(struct fcur *c, uint64_t *v)
{
	if (c->end - c->p < 8)
		return -EINVAL;
	memcpy(v, c->p, 8);
	c->p += 8;
	return 0;
}

/* perf's do_read_string: u32 length (padded), then the bytes (NUL inside). */
static char *f_str(struct fcur *c)
{
	uint32_t len;

	if (f_u32(c, &len) < 0 || len > (size_t)(c->end - c->p))
		return NULL;
	char *s = strndup((const char *)c->p, len);
	c->p += len;
	return s;
}

int pd_add_build_id(struct pd_file *f, const void *rec, size_t n)
{
	struct pd_build_id_event ev, *b = &ev;
	struct pd_build_id *nb;

	if (n < sizeof(*b) + 1 || f->nbids >= (1u << 20))
		return -EINVAL;
	/* entries of the feature section follow each other at their own sizes: any
	 * alignment */
	memcpy(b, rec, sizeof(*b));
	const char *name = (const char *)rec + sizeof(*b);
	size_t nlen = strnlen(name, n - sizeof(*b));
	nb = realloc(f->bids, (f->nbids + 1) * sizeof(*nb));
	if (!nb)
		return -ENOMEM;
	f->bids = nb;
	nb = &f->bids[f->nbids];
	nb->pid = b->pid;
	memcpy(nb->build_id, b->build_id, 20);
	nb->size = (b->header.misc & PD_MISC_BUILD_ID_SIZE) && b->build_id_size <= 20 ?
		b->build_id_size : 20;
	nb->filename = strndup(name, nlen);
	if (!nb->filename)
		return -ENOMEM;
	f->nbids++;
	return 0;
}

int pd_parse_feature(struct pd_file *f, unsigned feat, const uint8_t *p, size_t n)
{
	struct fcur c = { p, p + n };

	switch (feat) {
	case PD_FEAT_HOSTNAME:
	case PD_FEAT_OSRELEASE:
	case PD_FEAT_VERSION:
	case PD_FEAT_ARCH:
	case PD_FEAT_CPUDESC:
	case PD_FEAT_CPUID:
	case PD_FEAT_XPTRACE_PROBES:
	case PD_FEAT_XPTRACE_FAULTS:
	case PD_FEAT_XPTRACE_LOSSES:
	case PD_FEAT_XPTRACE_ENGINE:
		free(f->feat_str[feat]);
		f->feat_str[feat] = f_str(&c);
		return f->feat_str[feat] ? 0 : -EINVAL;
	case PD_FEAT_SAMPLE_TIME: {
		uint64_t first, last;

		if (f_u64(&c, &first) < 0 || f_u64(&c, &last) < 0 || first > last)
			return -EINVAL;
		f->first_sample = first;
		f->last_sample = last;
		return 0;
	}
	case PD_FEAT_NRCPUS: {
		uint32_t avail, online;

		if (f_u32(&c, &avail) < 0 || f_u32(&c, &online) < 0)
			return -EINVAL;
		f->nr_cpus = avail;
		return 0;
	}
	case PD_FEAT_CMDLINE: {
		uint32_t nr;
		size_t len = 0;
		char *out = NULL;

		if (f_u32(&c, &nr) < 0 || nr > n)
			return -EINVAL;
		for (uint32_t i = 0; i < nr; i++) {
			char *s = f_str(&c);
			if (!s) {
				free(out);
				return -EINVAL;
			}
			size_t sl = strlen(s);
			char *no = realloc(out, len + sl + 2);
			if (!no) {
				free(s);
				free(out);
				return -ENOMEM;
			}
			out = no;
			if (len)
				out[len++] = ' ';
			memcpy(out + len, s, sl + 1);
			len += sl;
			free(s);
		}
		free(f->feat_str[feat]);
		f->feat_str[feat] = out ? out : strdup("");
		return 0;
	}
	case PD_FEAT_EVENT_DESC: {
		uint32_t nre, asz;

		if (f_u32(&c, &nre) < 0 || f_u32(&c, &asz) < 0 || asz < PERF_ATTR_SIZE_VER0)
			return -EINVAL;
		for (uint32_t i = 0; i < nre; i++) {
			uint32_t nids;
			char *name;

			if ((size_t)(c.end - c.p) < asz)
				return -EINVAL;
			c.p += asz;
			if (f_u32(&c, &nids) < 0 || !(name = f_str(&c)))
				return -EINVAL;
			if (nids > (size_t)(c.end - c.p) / 8) {
				free(name);
				return -EINVAL;
			}
			uint64_t id0 = 0;
			if (nids)
				memcpy(&id0, c.p, 8);
			c.p += (size_t)nids * 8;
			/* match by first id, else by position */
			struct pd_attr *a = NULL;
			const struct pd_attr *ca = nids ? pd_attr_by_id(f, id0) : NULL;
			if (ca)
				a = &f->attrs[ca->index];
			else if (i < f->nattrs)
				a = &f->attrs[i];
			if (a && *name) {
				free(a->name);
				a->name = name;
			} else {
				free(name);
			}
		}
		return 0;
	}
	case PD_FEAT_BUILD_ID:
		while (c.end - c.p >= (ptrdiff_t)sizeof(struct perf_event_header)) {
			struct perf_event_header h;
			int rc;

			memcpy(&h, c.p, sizeof(h));
			if (h.size < sizeof(struct pd_build_id_event) || h.size > c.end - c.p)
				return -EINVAL;
			if ((rc = pd_add_build_id(f, c.p, h.size)) < 0)
				return rc;
			c.p += h.size;
		}
		return 0;
	default:
		return 0;
	}
}

/* ---- file mode ---- */

static int read_at(struct pd_file *f, uint64_t off, void *buf, size_t n)
{
	size_t got = 0;

	if (f->mem) {
		if (off > f->file_size || n > f->file_size - off)
			return -EIO;
		memcpy(buf, f->mem + off, n);
		return 0;
	}
	while (got < n) {
		ssize_t r = pread(f->fd, (char *)buf + got, n - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;	/* -EIO: ends early */
		got += (size_t)r;
	}
	return 0;
}

static bool section_ok(const struct pd_file *f, const struct pd_section *s)
{
	return s->offset <= f->file_size && s->size <= f->file_size - s->offset;
}

static int read_attrs(struct pd_file *f)
{
	const struct pd_file_header *h = &f->hdr;
	size_t esz = h->attr_size;

	/* A plausible section (up to 16 MB of attrs: ~100K events) that runs past the
	 * end: the file was cut, not scrambled. */
	if (esz >= PERF_ATTR_SIZE_VER0 + sizeof(struct pd_section) && esz <= 4096 &&
	    h->attrs.size % esz == 0 && h->attrs.offset <= UINT64_MAX - h->attrs.size &&
	    h->attrs.size <= (16u << 20) && h->attrs.offset <= (1ull << 40) && !section_ok(f, &h->attrs))
		return xp_err_code(-EINVAL, f->name, "the file is damaged; record again",
				   "truncated at byte %llu: the event attributes need bytes %llu to %llu",
				   (unsigned long long)f->file_size, (unsigned long long)h->attrs.offset,
				   (unsigned long long)(h->attrs.offset + h->attrs.size));
	if (esz < PERF_ATTR_SIZE_VER0 + sizeof(struct pd_section) || esz > 4096 ||
	    !section_ok(f, &h->attrs) || h->attrs.size % esz)
		return xp_err_code(-EINVAL, f->name, "the file is damaged", "bad attribute section "
				   "(entry size %zu, section size %llu)", esz,
				   (unsigned long long)h->attrs.size);
	uint64_t n = h->attrs.size / esz;
	if (n == 0)
		return xp_err_code(-EINVAL, f->name, "the file is damaged", "no event attributes");
	uint8_t *buf = malloc(esz);
	if (!buf)
		return -ENOMEM;
	for (uint64_t i = 0; i < n; i++) {
		struct pd_section ids;
		uint64_t *idv = NULL;

		if (read_at(f, h->attrs.offset + i * esz, buf, esz) < 0)
			goto bad;
		memcpy(&ids, buf + esz - sizeof(ids), sizeof(ids));
		if (!section_ok(f, &ids) || ids.size % 8 || ids.size > (64u << 20))
			goto bad;
		if (ids.size) {
			idv = malloc(ids.size);
			if (!idv || read_at(f, ids.offset, idv, ids.size) < 0) {
				free(idv);
				goto bad;
			}
		}
		int rc = pd_add_attr(f, buf, esz - sizeof(ids), idv, ids.size / 8);
		free(idv);
		if (rc < 0)
			goto bad;
	}
	free(buf);
	return 0;
bad:
	free(buf);
	return xp_err_code(-EINVAL, f->name, "the file is damaged", "cannot read event attribute section");
}

/* What the recording lost and said when it ended: every reader says it again, so a
 * trace with a hole never passes for a whole one. */
static void say_losses(const struct pd_file *f)
{
	const char *t = f->feat_str[PD_FEAT_XPTRACE_LOSSES];

	if (!t)
		return;
	if (strncmp(t, "xptrace-losses ", 15) == 0)
		t = strchr(t, '\n') ? strchr(t, '\n') + 1 : "";
	while (*t) {
		size_t n = strcspn(t, "\n");

		if (n)
			xp_warn("%s: the recording lost part of the trace: %.*s", f->name, (int)n, t);
		t += n + (t[n] == '\n');
	}
}

int pd_engine(const struct pd_file *f, char *engine, size_t n, char *cpu, size_t m)
{
	const char *t = f->feat_str[PD_FEAT_XPTRACE_ENGINE], *nl, *c;

	if (!t || strncmp(t, "xptrace-engine ", 15) != 0 || !(nl = strchr(t, '\n')))
		return -ENOENT;
	t = nl + 1;
	nl = strchr(t, '\n');
	snprintf(engine, n, "%.*s", (int)(nl ? nl - t : (ptrdiff_t)strlen(t)), t);
	c = nl && strncmp(nl + 1, "cpu ", 4) == 0 ? nl + 5 : "unknown\n";
	snprintf(cpu, m, "%.*s", (int)strcspn(c, "\n"), c);
	return 0;
}

static void read_features(struct pd_file *f)
{
	unsigned nfeat = 0;

	for (unsigned b = 0; b < PD_FEAT_BITS; b++)
		if (f->hdr.features[b / 64] >> (b % 64) & 1)
			nfeat++;
	if (!nfeat)
		return;
	uint64_t off = f->hdr.data.offset + f->hdr.data.size;
	struct pd_section *secs = calloc(nfeat, sizeof(*secs));
	if (!secs) {
		xp_warn("%s: feature sections unread: out of memory (header information missing)",
			f->name);
		return;
	}
	int rc = read_at(f, off, secs, nfeat * sizeof(*secs));
	if (rc < 0) {
		free(secs);
		if (rc == -EIO)
			xp_warn("%s: the feature section table at byte %llu is cut off (truncated): "
				"header information missing", f->name, (unsigned long long)off);
		else
			xp_warn("%s: feature section table unreadable: %s (header information "
				"missing)", f->name, strerror(-rc));
		return;
	}
	unsigned i = 0;
	for (unsigned b = 0; b < PD_FEAT_BITS; b++) {
		if (!(f->hdr.features[b / 64] >> (b % 64) & 1))
			continue;
		struct pd_section *s = &secs[i++];
		/* a feature this reader has no use for still says when the file was cut */
		if (!section_ok(f, s)) {
			xp_warn("%s: feature %u has a bad section, ignored", f->name, b);
			continue;
		}
		if (b != PD_FEAT_HOSTNAME && b != PD_FEAT_OSRELEASE && b != PD_FEAT_VERSION &&
		    b != PD_FEAT_ARCH && b != PD_FEAT_NRCPUS && b != PD_FEAT_CPUDESC &&
		    b != PD_FEAT_CPUID && b != PD_FEAT_CMDLINE && b != PD_FEAT_EVENT_DESC &&
		    b != PD_FEAT_BUILD_ID && b != PD_FEAT_XPTRACE_PROBES && b != PD_FEAT_XPTRACE_FAULTS &&
		    b != PD_FEAT_XPTRACE_LOSSES && b != PD_FEAT_SAMPLE_TIME && b != PD_FEAT_XPTRACE_ENGINE)
			continue;
		if (s->size > (256u << 20)) {
			xp_warn("%s: feature %u has a bad section, ignored", f->name, b);
			continue;
		}
		uint8_t *p = malloc(s->size ? s->size : 1);
		if (!p || read_at(f, s->offset, p, s->size) < 0 ||
		    pd_parse_feature(f, b, p, s->size) < 0)
			xp_warn("%s: feature %u is damaged, ignored", f->name, b);
		free(p);
	}
	free(secs);
	say_losses(f);
}

static int open_file(struct pd_file *f)
{
	struct pd_file_header *h = &f->hdr;
	int rc;

	if ((rc = read_at(f, 0, h, sizeof(*h))) < 0)
		return xp_err_code(rc, f->name, "the file is damaged", "too short for a perf.data header");
	if (h->size != sizeof(*h))
		return xp_err_code(-EINVAL, f->name, "the file is damaged", "header size %llu, expected %zu",
				   (unsigned long long)h->size, sizeof(*h));
	if ((rc = read_attrs(f)) < 0)
		return rc;
	if (h->data.offset > f->file_size) {
		/* cut between the attrs and the data: the events are known, none happened */
		xp_warn("%s: data section starts %llu bytes past the end of the file (truncated): "
			"no records", f->name, (unsigned long long)(h->data.offset - f->file_size));
		f->data_off = f->data_end = f->file_size;
		f->st.bytes_lost = h->data.size;
		memset(h->features, 0, sizeof(h->features));
		read_features(f);
		return 0;
	}
	f->data_off = h->data.offset;
	bool no_feat = true;
	for (int i = 0; i < PD_FEAT_BITS / 64; i++)
		no_feat &= !h->features[i];
	/* a writer updates the data size as it goes and adds features when it ends: a
	 * killed one leaves no features, and a data size that may match the file */
	f->finalized = !no_feat;
	if (h->data.size == 0 && f->file_size > f->data_off) {
		xp_warn("%s: header has no data size (recording was not finalized): reading to the "
			"end of the file", f->name);
		f->data_end = f->file_size;
		memset(h->features, 0, sizeof(h->features));
	} else if (no_feat && h->data.size <= f->file_size - f->data_off) {
		xp_warn("%s: header has no features (recording was not finalized): reading to the "
			"end of the file", f->name);
		f->data_end = f->file_size;
		memset(h->features, 0, sizeof(h->features));
	} else if (h->data.size > f->file_size - f->data_off) {
		xp_warn("%s: data section ends %llu bytes past the end of the file (truncated): "
			"reading what is there", f->name,
			(unsigned long long)(h->data.size - (f->file_size - f->data_off)));
		f->st.bytes_lost = h->data.size - (f->file_size - f->data_off);
		f->data_end = f->file_size;
		memset(h->features, 0, sizeof(h->features));
	} else {
		f->data_end = f->data_off + h->data.size;
	}
	read_features(f);
	return 0;
}

/* The intel_pt AUXTRACE_INFO, kept (pd_pt_info).  An event without a name (no
 * EVENT_DESC: a recording that was not finalized, or a writer that leaves it out or
 * empty) is the Intel PT one when AUXTRACE_INFO names its type, as perf finds it:
 * AUXTRACE_INFO comes before the trace, so only the records up to the first AUXTRACE
 * are looked at. */
static void name_pt_attrs(struct pd_file *f)
{
	uint64_t off = f->data_off;

	for (int i = 0; i < 64 && off + 8 <= f->data_end; i++) {
		struct perf_event_header h;
		if (read_at(f, off, &h, sizeof(h)) < 0 || h.size < sizeof(h) || h.type == PD_RECORD_AUXTRACE)
			return;
		struct pd_auxtrace_info_event ai;
		uint64_t pmu_type;
		if (h.type == PD_RECORD_AUXTRACE_INFO && h.size >= sizeof(ai) + 8 && off + sizeof(ai) + 8 <= f->data_end &&
		    read_at(f, off, &ai, sizeof(ai)) == 0 && ai.type == PD_AUXTRACE_INTEL_PT &&
		    read_at(f, off + sizeof(ai), &pmu_type, 8) == 0) {
			uint64_t n = (h.size - sizeof(ai)) / 8;
			n = n < PD_PT_INFO_WORDS ? n : PD_PT_INFO_WORDS;
			if (off + sizeof(ai) + n * 8 <= f->data_end &&
			    read_at(f, off + sizeof(ai), f->pt_info, n * 8) == 0)
				f->pt_info_n = (uint32_t)n;
			for (uint32_t k = 0; k < f->nattrs; k++)
				if (!f->attrs[k].name && f->attrs[k].attr.type == pmu_type)
					f->attrs[k].name = strdup("intel_pt//");
			return;
		}
		off += h.size;
	}
}

/* read(2) on a stream, or its bytes in memory. */
static ssize_t stream_read(struct pd_file *f, void *dst, size_t n)
{
	if (!f->mem)
		return read(f->fd, dst, n);
	size_t k = f->file_size - f->mem_pos < n ? f->file_size - f->mem_pos : n;
	memcpy(dst, f->mem + f->mem_pos, k);
	f->mem_pos += k;
	return (ssize_t)k;
}

static int read_full(struct pd_file *f, void *dst, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t r = stream_read(f, (char *)dst + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EIO;	/* -EIO: ends early */
		got += (size_t)r;
	}
	return 0;
}

/* Pipe mode: the attrs come as HEADER_ATTR records at the start of the stream.  Read
 * them (and the record after them) ahead so the caller knows the events before
 * reading; pd_read_events replays these bytes. */
static void pipe_prefetch(struct pd_file *f)
{
	for (;;) {
		struct perf_event_header h;

		if (f->pre_len > (16u << 20) || read_full(f, &h, sizeof(h)) < 0)
			return;
		uint8_t *np = realloc(f->pre, f->pre_len + (h.size < sizeof(h) ? sizeof(h) : h.size));
		if (!np)
			return;
		f->pre = np;
		memcpy(f->pre + f->pre_len, &h, sizeof(h));
		if (h.size < sizeof(h)) {
			f->pre_len += sizeof(h);
			return;
		}
		uint8_t *body = f->pre + f->pre_len + sizeof(h);
		if (read_full(f, body, h.size - sizeof(h)) < 0) {
			/* keep what arrived: the read then reports the truncation */
			f->pre_len += sizeof(h);
			return;
		}
		f->pre_len += h.size;
		if (h.type != PD_RECORD_HEADER_ATTR)
			return;
		size_t n = h.size - sizeof(h);
		uint32_t asz;
		if (n < PERF_ATTR_SIZE_VER0)
			return;
		memcpy(&asz, body + offsetof(struct perf_event_attr, size), 4);
		if (asz < PERF_ATTR_SIZE_VER0 || asz > n)
			return;
		size_t nids = (n - asz) / 8;
		uint64_t *ids = nids ? malloc(nids * 8) : NULL;
		if (nids && !ids)
			return;
		if (nids)
			memcpy(ids, body + asz, nids * 8);
		int rc = pd_add_attr(f, body, asz, ids, nids);
		free(ids);
		if (rc < 0)
			return;
		f->pre_attrs++;
	}
}

static struct pd_file *pd_new(const char *name)
{
	struct pd_file *f = calloc(1, sizeof(*f));

	if (!f || !(f->name = strdup(name))) {
		free(f);
		xp_err(name, NULL, "out of memory");
		return NULL;
	}
	f->fd = -1;
	f->win_size = DEFAULT_WINDOW;
	f->queue_limit = DEFAULT_QUEUE;
	return f;
}

/* The magic, then a file's header and sections or a stream's attrs, from f's source
 * (fd or mem, file_size set).  `stream`: a pipe, read once from its start. */
static int open_source(struct pd_file *f, bool stream)
{
	const char *name = f->name;
	uint64_t magic[2];
	int rc;

	f->pipe = stream;
	if (stream) {
		if (read_full(f, magic, sizeof(magic)) < 0)
			return xp_err_code(-EINVAL, name, "is it a perf.data stream?",
					   "too short for a perf.data header");
	} else if ((rc = read_at(f, 0, magic, sizeof(magic))) < 0) {
		return xp_err_code(rc, name, "is it a perf.data file?", "too short for a perf.data header");
	}
	if (magic[0] == PD_MAGIC2_SWAPPED)
		return xp_err_code(-EINVAL, name, "decode it on a machine of the recording's byte order",
				   "file was written on a big-endian machine");
	if (magic[0] != PD_MAGIC2)
		return xp_err_code(-EINVAL, name, "xptrace reads perf.data (PERFILE2) files",
				   "not a perf.data file (bad magic)");
	if (!f->pipe && magic[1] == sizeof(struct pd_pipe_header)) {
		f->pipe = true;	/* a pipe-mode stream saved to a file */
		if (f->mem) {
			f->mem_pos = sizeof(magic);
		} else if (lseek(f->fd, sizeof(magic), SEEK_SET) < 0) {
			rc = -errno;
			return xp_err_code(rc, name, NULL, "%s", strerror(-rc));
		}
	}
	if (f->pipe) {
		if (magic[1] != sizeof(struct pd_pipe_header))
			return xp_err_code(-EINVAL, name, "the stream is damaged", "pipe header size %llu",
					   (unsigned long long)magic[1]);
		f->pos = sizeof(magic);
		if (stream)
			f->file_size = UINT64_MAX;
		pipe_prefetch(f);
	} else if ((rc = open_file(f)) < 0) {
		return rc;
	} else {
		name_pt_attrs(f);
	}
	pd_name_attrs(f);
	return 0;
}

int pd_open_fd(int fd, const char *name, struct pd_file **out)
{
	struct pd_file *f = pd_new(name);
	struct stat stt;
	int rc;

	if (!f)
		return -ENOMEM;
	f->fd = fd;
	if (fstat(fd, &stt) < 0) {
		rc = -errno;
		xp_err(name, NULL, "%s", strerror(-rc));
		goto fail;
	}
	f->file_size = (uint64_t)stt.st_size;
	rc = open_source(f, !S_ISREG(stt.st_mode));
	if (rc < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	pd_close(f);
	return rc;
}

int pd_open_mem(const void *data, size_t size, const char *name, struct pd_file **out)
{
	struct pd_file *f = pd_new(name);
	int rc = -ENOMEM;

	if (!f)
		return rc;
	f->mem = data;
	f->file_size = size;
	/* one window over all of it, never replaced: records are delivered in place, and
	 * the queue counts none of these bytes (they are the caller's) */
	f->win = calloc(1, sizeof(*f->win));
	if (!f->win) {
		xp_err(name, NULL, "out of memory");
		goto fail;
	}
	*f->win = (struct pd_win){ .f = f, .p = (uint8_t *)f->mem, .len = size };
	rc = open_source(f, false);
	if (rc < 0)
		goto fail;
	*out = f;
	return 0;
fail:
	pd_close(f);
	return rc;
}

/* Only "-" is read as a stream: a FIFO named as a file would block in open() until a
 * writer came, and a directory would read as a file too short for a header.  Neither
 * is opened. */
static int not_file(const char *path, mode_t mode)
{
	if (S_ISDIR(mode))
		return xp_err_code(-EISDIR, path, "give a perf.data file, or the trace directory "
				   "holding one", "it is a directory, not a perf.data file");
	return xp_err_code(-EINVAL, path, "only -i - reads a stream: cat it | xptrace decode -i -",
			   "it is %s, not a perf.data file",
			   S_ISFIFO(mode) ? "a FIFO" : S_ISSOCK(mode) ? "a socket" : "a device");
}

int pd_open(const char *path, struct pd_file **out)
{
	struct stat st;
	int fd, rc;

	if (strcmp(path, "-") == 0)
		return pd_open_fd(0, "stdin", out);
	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return not_file(path, st.st_mode);
	/* O_NONBLOCK: a FIFO put in its place since the stat() must not block either
	 * (regular files ignore the flag) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		rc = -errno;
		return xp_err_code(rc, path, rc == -ENOENT ? "give the trace with -i" : NULL, "%s",
				   strerror(-rc));
	}
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		close(fd);
		return xp_err_code(rc, path, NULL, "%s", strerror(-rc));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return not_file(path, st.st_mode);
	}
	if ((rc = pd_open_fd(fd, path, out)) < 0) {
		close(fd);
		return rc;
	}
	(*out)->owns_fd = true;
	return 0;
}

void pd_close(struct pd_file *f)
{
	if (!f)
		return;
	if (f->win) {
		if (!f->mem)
			munmap(f->win->p, f->win->len);
		free(f->win);
	}
	if (f->owns_fd)
		close(f->fd);
	for (uint32_t i = 0; i < f->nattrs; i++) {
		free(f->attrs[i].ids);
		free(f->attrs[i].name);
	}
	free(f->attrs);
	xp_map_free(&f->ids);
	for (unsigned i = 0; i < PD_FEAT_BITS; i++)
		free(f->feat_str[i]);
	for (size_t i = 0; i < f->nbids; i++)
		free(f->bids[i].filename);
	free(f->bids);
	free(f->buf);
	free(f->pre);
	free(f->name);
	free(f);
}

void pd_set_queue_limit(struct pd_file *f, size_t bytes) { f->queue_limit = bytes; }
void pd_set_window(struct pd_file *f, size_t bytes)
{
	long pg = sysconf(_SC_PAGESIZE);

	f->win_size = bytes < (size_t)pg ? (size_t)pg : bytes;
}
const char *pd_name(const struct pd_file *f) { return f->name; }
void pd_data_range(const struct pd_file *f, uint64_t *start, uint64_t *end)
{
	*start = f->pipe ? 0 : f->data_off;
	*end = f->pipe ? 0 : f->data_end;
}
bool pd_is_pipe(const struct pd_file *f) { return f->pipe; }
uint32_t pd_nattrs(const struct pd_file *f) { return f->nattrs; }
const struct pd_attr *pd_attr_at(const struct pd_file *f, uint32_t i)
{
	return i < f->nattrs ? &f->attrs[i] : NULL;
}
const struct pd_stats *pd_stats(const struct pd_file *f) { return &f->st; }
bool pd_has_feature(const struct pd_file *f, unsigned feat)
{
	return feat < PD_FEAT_BITS && (f->hdr.features[feat / 64] >> (feat % 64) & 1);
}
const char *pd_feature_str(const struct pd_file *f, unsigned feat)
{
	return feat < PD_FEAT_BITS ? f->feat_str[feat] : NULL;
}
uint32_t pd_nr_cpus(const struct pd_file *f) { return f->nr_cpus; }
bool pd_finalized(const struct pd_file *f) { return f->finalized; }
uint32_t pd_pt_info(const struct pd_file *f, const uint64_t **words)
{
	*words = f->pt_info;
	return f->pt_info_n;
}
bool pd_sample_time(const struct pd_file *f, uint64_t *first, uint64_t *last)
{
	*first = f->first_sample;
	*last = f->last_sample;
	return f->last_sample != 0;
}
size_t pd_build_ids(const struct pd_file *f, const struct pd_build_id **out)
{
	*out = f->bids;
	return f->nbids;
}
const struct pd_build_id *pd_build_id_for(const struct pd_file *f, const char *filename)
{
	for (size_t i = 0; i < f->nbids; i++)
		if (strcmp(f->bids[i].filename, filename) == 0)
			return &f->bids[i];
	return NULL;
}

/* ---- reading records ---- */

static void win_unmap(struct pd_file *f, struct pd_win *w)
{
	if (f->unmap_hook)
		f->unmap_hook(f->unmap_ctx, w->p, w->len);
	else
		munmap(w->p, w->len);
	free(w);
}

/* The last queued record of a replaced window was delivered. */
static void win_release(struct pd_hold *h)
{
	struct pd_win *w = (struct pd_win *)h;

	if (w->retired)
		win_unmap(w->f, w);
}

/* Bytes [off, off+len) of the data section, or NULL past its end (file mode). */
static const uint8_t *win_get(struct pd_file *f, uint64_t off, uint64_t len)
{
	struct pd_win *w = f->win;

	if (off > f->data_end || len > f->data_end - off)
		return NULL;
	if (w && off >= w->off && off + len <= w->off + w->len)
		return w->p + (off - w->off);
	if (f->mem)
		return NULL;	/* its window holds all of it */
	long pg = sysconf(_SC_PAGESIZE);
	uint64_t start = off & ~(uint64_t)(pg - 1);
	uint64_t want = f->win_size;
	if (off + len - start > want)
		want = off + len - start;
	if (start + want > f->file_size)
		want = f->file_size - start;
	if (w && w->hold.live)
		w->retired = true;	/* queued records still point into it */
	else if (w)
		win_unmap(f, w);
	f->win = w = calloc(1, sizeof(*w));
	if (!w)
		return NULL;
	w->f = f;
	w->p = mmap(NULL, want, PROT_READ, MAP_PRIVATE | MAP_POPULATE, f->fd, (off_t)start);
	if (w->p == MAP_FAILED) {
		free(w);
		f->win = NULL;
		return NULL;
	}
	madvise(w->p, want, MADV_SEQUENTIAL);
	w->off = start;
	w->len = want;
	w->hold = (struct pd_hold){ .bytes = want, .release = win_release };
	return w->p + (off - start);
}

/* read(2) on the pipe, served from the read-ahead buffer first. */
static ssize_t pipe_read(struct pd_file *f, void *dst, size_t n)
{
	if (f->pre_pos < f->pre_len) {
		size_t k = f->pre_len - f->pre_pos < n ? f->pre_len - f->pre_pos : n;
		memcpy(dst, f->pre + f->pre_pos, k);
		f->pre_pos += k;
		return (ssize_t)k;
	}
	return stream_read(f, dst, n);
}

/* Reads exactly n bytes from the pipe into f->buf at `at`; 0 on success, 1 on EOF
 * before the first byte, -EIO on a short read (-errno on a failed one, -ENOMEM). */
static int pipe_fill(struct pd_file *f, size_t at, size_t n)
{
	size_t got = 0;
	while (got < n) {
		/* grow as the bytes arrive, never to what a header only claims (an
		 * AUXTRACE can announce 4 GiB and the stream end 20 bytes later) */
		if (at + got == f->buf_cap) {
			size_t nc = f->buf_cap ? f->buf_cap * 2 : 65536;
			uint8_t *nb = realloc(f->buf, nc);
			if (!nb)
				return -ENOMEM;
			f->buf = nb;
			f->buf_cap = nc;
		}
		size_t room = f->buf_cap - at - got;
		ssize_t r = pipe_read(f, f->buf + at + got, n - got < room ? n - got : room);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)	/* a failed read before the first byte ends the stream too */
			return got == 0 && at == 0 ? 1 : r < 0 ? -errno : -EIO;
		got += (size_t)r;
	}
	return 0;
}

struct rd {
	struct pd_file *f;
	struct pd_queue *q;
	pd_rec_fn fn;
	void *ctx;
	bool ordered;
	bool raw;		/* PD_RAW */
	uint64_t next_flush;	/* FINISHED_ROUND limit (perf: max time at the previous round) */
	uint64_t max_time;
	uint64_t delivered_max;
	struct pd_rec rec;
};

static void note_truncated(struct pd_file *f, uint64_t at)
{
	f->st.truncated = true;
	f->st.truncated_at = at;
	if (!f->pipe && f->data_end > at)
		f->st.bytes_lost += f->data_end - at;
}

/* What delivering a parsed kernel record counts (pd_parse_record counts the same). */
static void tally(struct pd_stats *st, uint64_t *delivered_max, const struct pd_rec *rec)
{
	if (rec->type == PERF_RECORD_LOST)
		st->lost += rec->u.lost.lost;
	else if (rec->type == PERF_RECORD_LOST_SAMPLES)
		st->lost_samples += rec->u.lost.lost;
	if (rec->time && rec->time < *delivered_max)
		st->out_of_order++;
	else if (rec->time)
		*delivered_max = rec->time;
	st->records++;
	st->by_type[rec->type]++;
}

/* Parses and delivers one record (kernel records arrive here from the queue); a raw
 * read leaves both to pd_parse_record. */
static int deliver(void *arg, const void *raw, size_t size, uint64_t offset, bool in_place)
{
	struct rd *r = arg;
	struct pd_file *f = r->f;
	struct pd_rec *rec = &r->rec;

	if (r->raw) {
		const struct perf_event_header *h = raw;
		rec->type = h->type;
		rec->misc = h->misc;
		rec->size = (uint32_t)size;
		rec->raw = raw;
		rec->time = 0;
		rec->attr = NULL;
	} else if (pd_parse_rec(f, raw, size, rec) < 0) {
		f->st.bad++;
		return 0;
	}
	rec->offset = offset;
	rec->in_place = in_place;
	rec->aux = NULL;
	rec->aux_size = 0;
	if (!r->raw)
		tally(&f->st, &r->delivered_max, rec);
	return r->fn(r->ctx, rec);
}

/* Time of a kernel record without a full parse (0: none). */
static uint64_t rec_time(struct pd_file *f, const uint8_t *raw, size_t size)
{
	const struct perf_event_header *h = (const void *)raw;
	const struct pd_attr *a = pd_rec_attr(f, raw, size);
	uint64_t t = 0;

	if (!a)
		return 0;
	if (h->type == PERF_RECORD_SAMPLE) {
		size_t off = sizeof(*h) + 8 * (size_t)a->time_pos;
		if (a->time_pos >= 0 && off + 8 <= size)
			memcpy(&t, raw + off, 8);
		return t;
	}
	size_t back = 8 * (size_t)a->time_back;
	if (a->time_back >= 0 && back + sizeof(*h) <= size)
		memcpy(&t, raw + size - back, 8);
	return t;
}

static int user_record(struct rd *r, const uint8_t *raw, size_t size, const uint8_t *aux,
		       uint64_t aux_size, uint64_t offset)
{
	struct pd_file *f = r->f;
	const struct perf_event_header *h = (const void *)raw;
	struct pd_rec *rec = &r->rec;
	int rc = 0;

	/* flush first: delivering queued records reuses r->rec */
	if (h->type == PD_RECORD_FINISHED_ROUND && r->ordered && r->q) {
		rc = pd_queue_flush(r->q, r->next_flush, deliver, r);
		r->next_flush = r->max_time;
		if (rc)
			return rc;
	}
	memset(rec, 0, offsetof(struct pd_rec, u));
	rec->in_place = false;
	rec->type = h->type;
	rec->misc = h->misc;
	rec->size = h->size;
	rec->raw = raw;
	rec->offset = offset;
	if (aux_size) {	/* the payload after AUXTRACE / HEADER_TRACING_DATA */
		rec->aux = aux;
		rec->aux_size = aux_size;
	}
	switch (h->type) {
	case PD_RECORD_HEADER_ATTR: {
		if (size < sizeof(*h) + PERF_ATTR_SIZE_VER0) {
			f->st.bad++;
			return 0;
		}
		uint32_t asz;
		memcpy(&asz, raw + sizeof(*h) + offsetof(struct perf_event_attr, size), 4);
		if (asz < PERF_ATTR_SIZE_VER0 || asz > size - sizeof(*h)) {
			f->st.bad++;
			return 0;
		}
		if (f->pre_attrs) {	/* applied when read ahead at open */
			f->pre_attrs--;
			break;
		}
		size_t nids = (size - sizeof(*h) - asz) / 8;
		uint64_t *ids = nids ? malloc(nids * 8) : NULL;
		if (nids && !ids)
			return -ENOMEM;
		if (nids)
			memcpy(ids, raw + sizeof(*h) + asz, nids * 8);
		if (pd_add_attr(f, raw + sizeof(*h), asz, ids, nids) < 0)
			f->st.bad++;
		free(ids);
		pd_name_attrs(f);
		break;
	}
	case PD_RECORD_HEADER_FEATURE: {
		uint64_t feat;

		if (size < sizeof(*h) + 8) {
			f->st.bad++;
			return 0;
		}
		memcpy(&feat, raw + sizeof(*h), 8);
		if (feat < PD_FEAT_BITS) {
			f->hdr.features[feat / 64] |= 1ull << (feat % 64);
			if (pd_parse_feature(f, (unsigned)feat, raw + sizeof(*h) + 8, size - sizeof(*h) - 8) < 0)
				f->st.bad++;
		}
		break;
	}
	case PD_RECORD_HEADER_BUILD_ID:
		if (pd_add_build_id(f, raw, size) < 0)
			f->st.bad++;
		break;
	case PD_RECORD_EVENT_UPDATE: {
		/* struct { header; u64 type; u64 id; union {...} }: type 1 = name */
		uint64_t ut, id;

		if (size < sizeof(*h) + 16) {
			f->st.bad++;
			return 0;
		}
		memcpy(&ut, raw + sizeof(*h), 8);
		memcpy(&id, raw + sizeof(*h) + 8, 8);
		const struct pd_attr *a = pd_attr_by_id(f, id);
		const char *nm = (const char *)raw + sizeof(*h) + 16;
		size_t nl = size - sizeof(*h) - 16;
		if (ut == 1 && a && nl && memchr(nm, 0, nl)) {
			struct pd_attr *wa = &f->attrs[a->index];
			free(wa->name);
			wa->name = strdup(nm);
		}
		break;
	}
	case PD_RECORD_AUXTRACE:
		if (size < sizeof(struct pd_auxtrace_event)) {
			f->st.bad++;
			return 0;
		}
		rec->u.auxtrace = (const void *)raw;
		rec->aux = aux;
		rec->aux_size = aux_size;
		break;
	case PD_RECORD_AUXTRACE_INFO:
		if (size < sizeof(struct pd_auxtrace_info_event)) {
			f->st.bad++;
			return 0;
		}
		rec->u.auxtrace_info = (const void *)raw;
		break;
	case PD_RECORD_TIME_CONV:
		/* older perf writes only the first three words */
		if (size < sizeof(*h) + 24) {
			f->st.bad++;
			return 0;
		}
		if (size >= sizeof(struct pd_time_conv_event))
			rec->u.time_conv = (const void *)raw;
		break;
	case PD_RECORD_COMPRESSED:
		f->st.compressed++;
		return 0;
	default:
		break;
	}
	f->st.records++;
	f->st.by_type[h->type]++;
	return r->fn(r->ctx, rec);
}

/* `in`: the window the record lies in (queued in place), NULL: copy it. */
static int kernel_record(struct rd *r, const uint8_t *raw, size_t size, uint64_t offset, struct pd_hold *in)
{
	struct pd_file *f = r->f;
	uint64_t t;
	int rc;

	/* perf delivers records without a time at once */
	t = r->ordered ? rec_time(f, raw, size) : 0;
	if (!t)
		return deliver(r, raw, size, offset, in != NULL);
	if (t > r->max_time)
		r->max_time = t;
	if (pd_queue_push(r->q, t, raw, size, offset, in) < 0)
		return xp_err(f->name, "lower the memory use", "out of memory queueing records");
	if (pd_queue_over(r->q)) {
		rc = pd_queue_flush_half(r->q, deliver, r);
		if (rc)
			return rc;
	}
	return 0;
}

/* A pipe that ended inside a record is a truncated trace; memory running out is not. */
static int pipe_short(struct pd_file *f, uint64_t off, int pr)
{
	if (pr == -ENOMEM)
		return xp_err_code(pr, f->name, NULL, "out of memory reading the record at offset %llu",
				   (unsigned long long)off);
	note_truncated(f, off);
	return 0;
}

int pd_read_events(struct pd_file *f, unsigned flags, pd_rec_fn fn, void *ctx)
{
	struct rd r = { .f = f, .fn = fn, .ctx = ctx, .ordered = (flags & PD_ORDERED) != 0,
			.raw = (flags & PD_RAW) != 0 };
	uint64_t off = f->pipe ? f->pos : f->data_off;
	int rc = 0;

	if (f->read_done)
		return xp_err(f->name, NULL, "the trace was already read");
	f->read_done = true;
	if (r.ordered) {
		r.q = pd_queue_new(f->queue_limit);
		if (!r.q)
			return xp_err(f->name, NULL, "out of memory");
	}
	for (;;) {
		struct perf_event_header h;
		const uint8_t *raw;
		uint64_t aux_size = 0;

		if (f->pipe) {
			int pr = pipe_fill(f, 0, sizeof(h));
			if (pr == 1)
				break;
			if (pr < 0) {
				rc = pipe_short(f, off, pr);
				break;
			}
			memcpy(&h, f->buf, sizeof(h));
		} else {
			if (off >= f->data_end)
				break;
			raw = win_get(f, off, sizeof(h));
			if (!raw) {
				note_truncated(f, off);
				break;
			}
			memcpy(&h, raw, sizeof(h));
		}
		/* perf pads kernel records to 8 bytes, not all of its own (HEADER_FEATURE) */
		if (h.size < sizeof(h) || (h.size & 7 && h.type < PD_RECORD_HEADER_ATTR)) {
			/* cannot resynchronize without a trustworthy size */
			note_truncated(f, off);
			f->st.bad++;
			break;
		}
		/* records followed by a payload that header.size does not count */
		size_t have = sizeof(h);
		bool trailing = (h.type == PD_RECORD_AUXTRACE && h.size >= sizeof(struct pd_auxtrace_event)) ||
				(h.type == PD_RECORD_HEADER_TRACING_DATA && h.size >= sizeof(h) + 4);
		if (trailing) {
			uint64_t sz = 0;
			if (f->pipe) {
				int pr = pipe_fill(f, sizeof(h), h.size - sizeof(h));
				if (pr < 0) {
					rc = pipe_short(f, off, pr);
					break;
				}
				have = h.size;
				raw = f->buf;
			} else {
				raw = win_get(f, off, h.size);
				if (!raw) {
					note_truncated(f, off);
					break;
				}
			}
			if (h.type == PD_RECORD_AUXTRACE) {
				memcpy(&sz, raw + sizeof(h), 8);
			} else {
				uint32_t tsz;
				memcpy(&tsz, raw + sizeof(h), 4);
				sz = ((uint64_t)tsz + 7) & ~7ull;
			}
			if (sz > MAX_AUX_BYTES || (!f->pipe && sz > f->data_end - off - h.size)) {
				note_truncated(f, off);
				f->st.bad++;
				break;
			}
			aux_size = sz;
		}
		const uint8_t *aux;
		struct pd_hold *in = NULL;
		if (f->pipe) {
			int pr = pipe_fill(f, have, h.size + aux_size - have);
			if (pr < 0) {
				rc = pipe_short(f, off, pr);
				break;
			}
			raw = f->buf;
			aux = raw + h.size;
		} else {
			raw = win_get(f, off, h.size + aux_size);
			if (!raw) {
				note_truncated(f, off);
				break;
			}
			aux = raw + h.size;
			/* after an odd-sized record, or a data section at an odd offset (perf
			 * reads both): copy, so u64 fields are aligned; the payload is bytes */
			if ((uintptr_t)raw & 7) {
				if (h.size > f->buf_cap) {
					uint8_t *nb = realloc(f->buf, 65536);
					if (!nb)
						break;
					f->buf = nb;
					f->buf_cap = 65536;
				}
				memcpy(f->buf, raw, h.size);
				raw = f->buf;
			} else {
				in = &f->win->hold;
			}
		}
		if (h.type >= PD_RECORD_HEADER_ATTR) {
			if (!known_type(h.type))
				f->st.unknown++;
			else
				rc = user_record(&r, raw, h.size, aux, aux_size, off);
		} else if (!known_type(h.type)) {
			f->st.unknown++;
		} else {
			rc = kernel_record(&r, raw, h.size, off, in);
		}
		off += h.size + aux_size;
		if (rc)
			break;
	}
	if (r.q) {
		if (!rc)
			rc = pd_queue_flush(r.q, UINT64_MAX, deliver, &r);
		pd_queue_free(r.q);
	}
	f->pos = off;
	return rc;
}

void pd_report_losses(const struct pd_file *f)
{
	const struct pd_stats *s = &f->st;

	if (s->truncated)
		xp_warn("%s: trace is truncated or damaged at offset %llu: %llu bytes after it not "
			"read (report is partial)", f->name, (unsigned long long)s->truncated_at,
			(unsigned long long)s->bytes_lost);
	else if (s->bytes_lost)
		xp_warn("%s: %llu bytes of the data section are missing (report is partial)", f->name,
			(unsigned long long)s->bytes_lost);
	if (s->bad)
		xp_warn("%s: %llu damaged records skipped", f->name, (unsigned long long)s->bad);
	if (s->unknown)
		xp_warn("%s: %llu records of unknown type skipped", f->name, (unsigned long long)s->unknown);
	if (s->compressed)
		xp_warn("%s: %llu compressed records skipped (not supported: record without -z)",
			f->name, (unsigned long long)s->compressed);
	if (s->lost)
		xp_warn("%s: kernel lost %llu events while recording", f->name, (unsigned long long)s->lost);
	if (s->lost_samples)
		xp_warn("%s: kernel lost %llu samples while recording", f->name,
			(unsigned long long)s->lost_samples);
	if (s->out_of_order)
		xp_warn("%s: %llu records out of time order (ordering queue overflowed)", f->name,
			(unsigned long long)s->out_of_order);
}

int pd_parse_record(struct pd_file *f, const void *raw, size_t size, uint64_t offset, struct pd_tally *t,
		    struct pd_rec *r)
{
	bool user = size >= sizeof(struct perf_event_header) &&
		((const struct perf_event_header *)raw)->type >= PD_RECORD_HEADER_ATTR;

	if (size < sizeof(struct perf_event_header) || pd_parse_rec(f, raw, size, r) < 0) {
		t->st.bad++;
		return -EINVAL;
	}
	/* the user records a read delivers parsed, and counted (it checked their sizes) */
	if (r->type == PD_RECORD_AUXTRACE_INFO && size >= sizeof(struct pd_auxtrace_info_event))
		r->u.auxtrace_info = raw;
	else if (r->type == PD_RECORD_TIME_CONV && size >= sizeof(struct pd_time_conv_event))
		r->u.time_conv = raw;
	r->offset = offset;
	r->in_place = false;
	r->aux = NULL;
	r->aux_size = 0;
	if (!user)
		tally(&t->st, &t->delivered_max, r);
	return 0;
}

void pd_add_tally(struct pd_file *f, const struct pd_tally *t)
{
	f->st.records += t->st.records;
	for (size_t i = 0; i < sizeof(f->st.by_type) / sizeof(f->st.by_type[0]); i++)
		f->st.by_type[i] += t->st.by_type[i];
	f->st.bad += t->st.bad;
	f->st.lost += t->st.lost;
	f->st.lost_samples += t->st.lost_samples;
	f->st.out_of_order += t->st.out_of_order;
}

void pd_set_unmap_hook(struct pd_file *f, void (*hook)(void *ctx, void *p, size_t len), void *ctx)
{
	f->unmap_hook = hook;
	f->unmap_ctx = ctx;
}
