/* perf.data writer: attrs and ids in an area before the data, rewritten (and the
 * header pointed at them) before data that needs them reaches the disk; records
 * stream through one buffer of whole records, flushed when the next record does not
 * fit and at least every FLUSH_NS, each flush followed by the header's data size;
 * features are appended after the data at close (layout in pd_write.h). */
#include "perfdata/pd_write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/uio.h>

#include "util/xp_grow.h"

#define BUF_SIZE (256 * 1024)
/* Record boundaries remembered for the ENOSPC cut: one per CKPT_STEP of data. */
#define CKPT_STEP (16 * 1024)
/* enough to reach PD_WRITE_RESERVE back past a whole buffer that did not reach the disk */
#define NCKPT ((BUF_SIZE + PD_WRITE_RESERVE) / CKPT_STEP + 4)
/* Each half of the attr area (attrs, ids) before the data: a new version is written
 * to the half not in use, then the header is pointed at it, so a recorder killed
 * in between leaves the previous version whole.  64 KiB: ~250 attrs with 3000 ids;
 * more than that go after the data at close (a killed recording then has none). */
#define ATTR_AREA PD_WRITE_ATTR_AREA
/* Buffered records reach the disk at the first record boundary this long after the
 * last flush: what a killed recorder loses. */
#define FLUSH_NS 100000000ULL

struct pd_attr_ent {
	struct perf_event_attr attr;
	char *name;
	uint64_t *ids;
	size_t nids, cap;
};

struct pd_id_ent {
	uint64_t id, idx, cpu, tid;
};

/* A record boundary and what the data before it holds. */
struct pd_ckpt {
	uint64_t pos, samples, aux;
};

struct pd_writer {
	int fd;
	int err;
	uint64_t data_off;	/* file offset of the data section */
	uint64_t pos;		/* data bytes accepted (logical end) */
	uint64_t disk;		/* data bytes on disk */
	uint64_t truncated;
	unsigned char *buf;
	size_t blen;
	struct pd_ckpt ckpt[NCKPT];	/* record boundaries, ascending, ring */
	uint64_t samples;	/* PERF_RECORD_SAMPLEs accepted (and not given back) */
	uint64_t aux;		/* AUXTRACE payload bytes accepted (and not given back) */
	unsigned nckpt, ckpt_head;
	struct pd_attr_ent *attrs;
	size_t nattrs;
	struct pd_id_ent *index;
	size_t nindex, index_cap;
	void *feat[PD_FEAT_BITS];
	size_t feat_size[PD_FEAT_BITS];
	unsigned char *bids;	/* HEADER_BUILD_ID payload */
	size_t bids_len, bids_cap;
	int finalized;		/* 1 done, <0 failed */
	int attrs_dirty;	/* attrs or ids added since the area was written */
	int attrs_in_area;	/* the area holds every attr (else they go after the data) */
	unsigned attr_half;	/* the half of the area the next version goes to */
	uint64_t attrs_off, attrs_size;	/* the attrs section the header points at */
	uint64_t flushed_ns;	/* CLOCK_MONOTONIC_COARSE of the last flush */
};

/* Writes at *off and advances it by what was written, also when it fails midway (a
 * full disk takes part of a write: the records in that part can be kept). */
static int pwrite_some(int fd, const void *p, size_t n, uint64_t *off)
{
	const unsigned char *c = p;

	while (n) {
		ssize_t r = pwrite(fd, c, n, (off_t)*off);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO;
		c += r;
		n -= (size_t)r;
		*off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_all(int fd, const void *p, size_t n, uint64_t off)
{
	return pwrite_some(fd, p, n, &off);
}

/* The data ends at c: what follows is given back. */
static int cut_to(struct pd_writer *w, const struct pd_ckpt *c)
{
	if (ftruncate(w->fd, (off_t)(w->data_off + c->pos)) < 0)
		return -errno;
	w->truncated += w->pos - c->pos;
	w->samples = c->samples;
	w->aux = c->aux;
	w->disk = w->pos = c->pos;
	w->blen = 0;
	return 0;
}

/* Gives back data at the end so features and attrs fit: cut at a record boundary at
 * least PD_WRITE_RESERVE before `reached`, the end of the data that reached the disk
 * (a write the disk took only part of included). */
static void give_back_space(struct pd_writer *w, uint64_t reached)
{
	struct pd_ckpt cut = { 0, 0, 0 };
	unsigned i, k = 0;

	for (i = 0; i < w->nckpt; i++) {
		k = (w->ckpt_head + NCKPT - 1 - i) % NCKPT;
		cut = w->ckpt[k];	/* oldest known boundary if none is far enough back */
		if (cut.pos + PD_WRITE_RESERVE <= reached)
			break;
	}
	if (i == w->nckpt)
		i--;
	if (cut.pos > reached)
		cut = (struct pd_ckpt){ 0, 0, 0 };
	if (cut_to(w, &cut) == 0) {
		/* the boundaries up to the cut stay, for pd_writer_finalize() to cut further */
		if (cut.pos && w->nckpt) {
			w->nckpt -= i;
			w->ckpt_head = (k + 1) % NCKPT;
		} else {
			w->nckpt = 0;
			w->ckpt_head = 0;
		}
	}
}

static int write_header(struct pd_writer *w, uint64_t data_size, int features);
static int sync_attrs(struct pd_writer *w);

static uint64_t coarse_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Pieces that end at a record boundary to the disk, then the header's data size to
 * them: a recorder killed at any moment leaves a header that ends the data at a whole
 * record (perf reads no data of a header that says 0, and stops at a record cut). */
static int write_out(struct pd_writer *w, const struct iovec *iov, int n)
{
	uint64_t at = w->disk;
	int r;

	if ((r = sync_attrs(w)) < 0) {
		w->err = r;
		return r;
	}
	at += w->data_off;
	for (int i = 0; i < n && r == 0; i++)
		r = pwrite_some(w->fd, iov[i].iov_base, iov[i].iov_len, &at);
	if (r < 0) {
		w->err = r;
		if (r == -ENOSPC || r == -EDQUOT || r == -EFBIG)
			give_back_space(w, at - w->data_off);
		return r;
	}
	w->disk = at - w->data_off;
	if ((r = write_header(w, w->disk, 0)) < 0)
		w->err = r;
	return r;
}

static int flush(struct pd_writer *w)
{
	if (w->err)
		return w->err;
	w->flushed_ns = coarse_ns();
	if (!w->blen)
		return 0;
	struct iovec v = { w->buf, w->blen };
	int r = write_out(w, &v, 1);
	if (r == 0)
		w->blen = 0;
	return r;
}

/* One record in pieces.  The buffer holds whole records only, so each flush ends at a
 * record boundary; a record larger than the buffer (AUX data) goes to the disk
 * directly, after what is buffered. */
static int put_rec(struct pd_writer *w, const struct iovec *iov, int n)
{
	size_t total = 0;
	int r;

	if (w->err)
		return w->err;
	for (int i = 0; i < n; i++)
		total += iov[i].iov_len;
	if (w->blen + total > BUF_SIZE && (r = flush(w)) < 0)
		return r;
	/* counted as accepted before a direct write: an ENOSPC cut counts it as dropped */
	w->pos += total;
	if (total > BUF_SIZE)
		return write_out(w, iov, n);
	for (int i = 0; i < n; i++) {
		if (iov[i].iov_len)	/* an absent piece may be NULL */
			memcpy(w->buf + w->blen, iov[i].iov_base, iov[i].iov_len);
		w->blen += iov[i].iov_len;
	}
	return 0;
}

/* After a whole record: to the disk when the last flush is FLUSH_NS old. */
static int flush_due(struct pd_writer *w)
{
	if (!w->blen || coarse_ns() - w->flushed_ns < FLUSH_NS)
		return 0;
	return flush(w);
}

/* Called before each record: remembers boundaries for the ENOSPC cut. */
static void boundary(struct pd_writer *w)
{
	uint64_t last = w->nckpt ? w->ckpt[(w->ckpt_head + NCKPT - 1) % NCKPT].pos : 0;

	if (w->nckpt && w->pos < last + CKPT_STEP)
		return;
	w->ckpt[w->ckpt_head] = (struct pd_ckpt){ w->pos, w->samples, w->aux };
	w->ckpt_head = (w->ckpt_head + 1) % NCKPT;
	if (w->nckpt < NCKPT)
		w->nckpt++;
}

/* No features while recording, and the data size of what reached the disk: readers
 * stop at the last whole record a killed recorder wrote. */
static int write_header(struct pd_writer *w, uint64_t data_size, int features)
{
	struct pd_file_header h;

	memset(&h, 0, sizeof(h));
	h.magic = PD_MAGIC2;
	h.size = sizeof(h);
	h.attr_size = PD_ATTR_SIZE + sizeof(struct pd_section);
	h.attrs.offset = w->attrs_off;
	h.attrs.size = w->attrs_size;
	h.data.offset = w->data_off;
	h.data.size = data_size;
	for (int f = 0; features && f < PD_FEAT_BITS; f++)
		if (w->feat[f])
			h.features[f / 64] |= 1ULL << (f % 64);
	return pwrite_all(w->fd, &h, sizeof(h), 0);
}

/* The ids of every attr, then the attrs (each with the section of its ids), as one
 * block whose first byte lands at file offset `off`; NULL when out of memory. */
static unsigned char *attr_block(const struct pd_writer *w, uint64_t off, size_t *size)
{
	size_t nids = 0, fa = PD_ATTR_SIZE + sizeof(struct pd_section);
	for (size_t i = 0; i < w->nattrs; i++)
		nids += w->attrs[i].nids;
	*size = nids * 8 + w->nattrs * fa;
	unsigned char *b = malloc(*size ? *size : 1), *q = b, *at = b + nids * 8;
	if (!b)
		return NULL;
	for (size_t i = 0; i < w->nattrs; i++) {
		struct pd_section sec = { off + (uint64_t)(q - b), w->attrs[i].nids * 8 };
		if (sec.size)
			memcpy(q, w->attrs[i].ids, sec.size);
		q += sec.size;
		memcpy(at, &w->attrs[i].attr, PD_ATTR_SIZE);
		memcpy(at + PD_ATTR_SIZE, &sec, sizeof(sec));
		at += fa;
	}
	return b;
}

/* Attrs and ids added since the last time into the free half of the area, then the
 * header points at them: before any data that may use them reaches the disk. */
static int sync_attrs(struct pd_writer *w)
{
	if (!w->attrs_dirty)
		return 0;
	uint64_t off = sizeof(struct pd_file_header) + (uint64_t)w->attr_half * ATTR_AREA;
	size_t n;
	unsigned char *b = attr_block(w, off, &n);
	if (!b)
		return -ENOMEM;
	w->attrs_dirty = 0;
	w->attrs_in_area = n <= ATTR_AREA;
	int r = 0;
	if (w->attrs_in_area) {
		r = pwrite_all(w->fd, b, n, off);
		if (r == 0) {
			w->attrs_off = off + n - w->nattrs * (PD_ATTR_SIZE + sizeof(struct pd_section));
			w->attrs_size = n - (w->attrs_off - off);
			w->attr_half ^= 1;
			r = write_header(w, w->disk, 0);
		}
	}
	free(b);
	return r;
}

int pd_writer_create(struct pd_writer **out, const char *path)
{
	struct pd_writer *w = calloc(1, sizeof(*w));
	int r;

	*out = NULL;
	if (!w)
		return -ENOMEM;
	w->buf = malloc(BUF_SIZE);
	if (!w->buf) {
		free(w);
		return -ENOMEM;
	}
	w->fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		r = -errno;
		free(w->buf);
		free(w);
		return r;
	}
	w->data_off = PD_WRITE_DATA_OFFSET;
	w->flushed_ns = coarse_ns();
	r = write_header(w, 0, 0);
	/* the area's blocks now: attrs added on a full disk still find their place */
	for (uint64_t off = sizeof(struct pd_file_header); r == 0 && off < w->data_off; off += BUF_SIZE / 2) {
		memset(w->buf, 0, BUF_SIZE / 2);
		r = pwrite_all(w->fd, w->buf, w->data_off - off < BUF_SIZE / 2 ? w->data_off - off : BUF_SIZE / 2, off);
	}
	if (r < 0) {
		close(w->fd);
		free(w->buf);
		free(w);
		return r;
	}
	*out = w;
	return 0;
}

int pd_writer_add_attr(struct pd_writer *w, const struct perf_event_attr *attr, const char *name)
{
	struct pd_attr_ent *a;
	const unsigned char *extra = (const unsigned char *)attr;

	for (size_t i = PD_ATTR_SIZE; i < sizeof(*attr); i++)
		if (extra[i])
			return -EINVAL;
	a = realloc(w->attrs, (w->nattrs + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	w->attrs = a;
	a = &w->attrs[w->nattrs];
	memset(a, 0, sizeof(*a));
	memcpy(&a->attr, attr, sizeof(*attr) < PD_ATTR_SIZE ? sizeof(*attr) : PD_ATTR_SIZE);
	a->attr.size = PD_ATTR_SIZE;
	a->name = strdup(name ? name : "");
	if (!a->name)
		return -ENOMEM;
	w->attrs_dirty = 1;
	return (int)w->nattrs++;
}

int pd_writer_add_id(struct pd_writer *w, int idx, uint64_t id, int cpu, int tid)
{
	struct pd_attr_ent *a;

	if (idx < 0 || (size_t)idx >= w->nattrs)
		return -EINVAL;
	a = &w->attrs[idx];
	if (XP_GROW(a->ids, a->cap, a->nids + 1) < 0)
		return -ENOMEM;
	a->ids[a->nids++] = id;
	w->attrs_dirty = 1;
	if (XP_GROW(w->index, w->index_cap, w->nindex + 1) < 0)
		return -ENOMEM;
	w->index[w->nindex++] = (struct pd_id_ent){ id, (uint64_t)idx, (uint64_t)(int64_t)cpu,
						    (uint64_t)(int64_t)tid };
	return 0;
}

int pd_writer_nr_attrs(const struct pd_writer *w)
{
	return (int)w->nattrs;
}

const struct perf_event_attr *pd_writer_attr(const struct pd_writer *w, int idx)
{
	return idx >= 0 && (size_t)idx < w->nattrs ? &w->attrs[idx].attr : NULL;
}

int pd_writer_record2(struct pd_writer *w, const void *a, size_t na, const void *b, size_t nb)
{
	int r;

	if ((na + nb) < sizeof(struct perf_event_header) || (na + nb) % 8)
		return -EINVAL;
	struct iovec v[2] = { { (void *)a, na }, { (void *)b, nb } };
	boundary(w);
	r = put_rec(w, v, 2);
	if (r < 0)
		return r;
	/* counted once whole in the data: what the summary says is what the file holds */
	if (na >= sizeof(struct perf_event_header) &&
	    ((const struct perf_event_header *)a)->type == PERF_RECORD_SAMPLE)
		w->samples++;
	return flush_due(w);
}

int pd_writer_record(struct pd_writer *w, const struct perf_event_header *hdr)
{
	return pd_writer_record2(w, hdr, hdr->size, NULL, 0);
}

int pd_writer_finished_round(struct pd_writer *w)
{
	struct perf_event_header h = { .type = PD_RECORD_FINISHED_ROUND, .size = sizeof(h) };

	return pd_writer_record(w, &h);
}

int pd_writer_finished_init(struct pd_writer *w)
{
	struct perf_event_header h = { .type = PD_RECORD_FINISHED_INIT, .size = sizeof(h) };

	return pd_writer_record(w, &h);
}

int pd_writer_auxtrace2(struct pd_writer *w, struct pd_auxtrace_event *ev, const void *a,
			size_t na, const void *b, size_t nb)
{
	static const unsigned char zero[8];
	size_t n = na + nb, pad = (8 - n % 8) % 8;
	int r;

	ev->header.type = PD_RECORD_AUXTRACE;
	ev->header.misc = 0;
	ev->header.size = sizeof(*ev);
	ev->size = n + pad;
	struct iovec v[4] = { { ev, sizeof(*ev) }, { (void *)a, na }, { (void *)b, nb },
			      { (void *)zero, pad } };
	boundary(w);
	r = put_rec(w, v, 4);
	if (r < 0)
		return r;
	w->aux += n;
	return flush_due(w);
}

int pd_writer_auxtrace(struct pd_writer *w, struct pd_auxtrace_event *ev, const void *data,
		       size_t n)
{
	return pd_writer_auxtrace2(w, ev, data, n, NULL, 0);
}

int pd_writer_auxtrace_info(struct pd_writer *w, uint32_t type, const uint64_t *priv, size_t n)
{
	struct pd_auxtrace_info_event ev;

	if (sizeof(ev) + n * 8 > 0xffff)
		return -EINVAL;
	memset(&ev, 0, sizeof(ev));
	ev.header.type = PD_RECORD_AUXTRACE_INFO;
	ev.header.size = (uint16_t)(sizeof(ev) + n * 8);
	ev.type = type;
	struct iovec v[2] = { { &ev, sizeof(ev) }, { (void *)priv, n * 8 } };
	boundary(w);
	return put_rec(w, v, 2);
}

int pd_writer_time_conv(struct pd_writer *w, struct pd_time_conv_event *tc)
{
	tc->header.type = PD_RECORD_TIME_CONV;
	tc->header.misc = 0;
	tc->header.size = sizeof(*tc);
	return pd_writer_record(w, &tc->header);
}

int pd_writer_id_index(struct pd_writer *w)
{
	/* A record is at most 64 KiB: split the index into several records. */
	const size_t per = (0xffff - 16) / sizeof(struct pd_id_index_entry);
	size_t done = 0;
	int r = 0;

	while (r == 0 && done < w->nindex) {
		size_t n = w->nindex - done < per ? w->nindex - done : per;
		struct {
			struct perf_event_header h;
			uint64_t nr;
		} hd = { { PD_RECORD_ID_INDEX, 0, (uint16_t)(16 + n * sizeof(struct pd_id_index_entry)) },
			 n };
		struct pd_id_index_entry *e = malloc(n * sizeof(*e));
		if (!e)
			return -ENOMEM;
		for (size_t i = 0; i < n; i++)
			e[i] = (struct pd_id_index_entry){ w->index[done + i].id, w->index[done + i].idx,
							   w->index[done + i].cpu, w->index[done + i].tid };
		struct iovec v[2] = { { &hd, sizeof(hd) }, { e, n * sizeof(*e) } };
		boundary(w);
		r = put_rec(w, v, 2);
		free(e);
		done += n;
	}
	return r;
}

int pd_writer_feature(struct pd_writer *w, enum pd_feature feat, const void *payload, size_t size)
{
	void *p;

	if ((int)feat <= 0 || feat >= PD_FEAT_BITS)
		return -EINVAL;
	p = malloc(size ? size : 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, payload, size);
	free(w->feat[feat]);
	w->feat[feat] = p;
	w->feat_size[feat] = size;
	return 0;
}

size_t pd_encode_string(void *buf, size_t bufsize, const char *s)
{
	size_t len = strlen(s) + 1, olen = (len + 63) & ~(size_t)63;
	uint32_t l32 = (uint32_t)olen;

	if (buf && bufsize >= 4 + olen) {
		memcpy(buf, &l32, 4);
		memset((char *)buf + 4, 0, olen);
		memcpy((char *)buf + 4, s, len);
	}
	return 4 + olen;
}

int pd_writer_feat_string(struct pd_writer *w, enum pd_feature feat, const char *s)
{
	size_t n = pd_encode_string(NULL, 0, s);
	void *p = malloc(n);
	int r;

	if (!p)
		return -ENOMEM;
	pd_encode_string(p, n, s);
	r = pd_writer_feature(w, feat, p, n);
	free(p);
	return r;
}

int pd_writer_feat_group(struct pd_writer *w, uint32_t leader, uint32_t members)
{
	static const char name[] = "{anon_group}";	/* perf's name of an unnamed group */
	size_t ns = pd_encode_string(NULL, 0, name), n = 4 + ns + 8;
	unsigned char *p = malloc(n);
	uint32_t one = 1;
	int r;

	if (!p)
		return -ENOMEM;
	memcpy(p, &one, 4);
	pd_encode_string(p + 4, ns, name);
	memcpy(p + 4 + ns, &leader, 4);
	memcpy(p + 8 + ns, &members, 4);
	r = pd_writer_feature(w, PD_FEAT_GROUP_DESC, p, n);
	free(p);
	return r;
}

int pd_writer_feat_cmdline(struct pd_writer *w, int argc, char *const *argv)
{
	size_t n = 4;
	unsigned char *p, *q;
	uint32_t nr = (uint32_t)argc;
	int r;

	for (int i = 0; i < argc; i++)
		n += pd_encode_string(NULL, 0, argv[i]);
	p = malloc(n);
	if (!p)
		return -ENOMEM;
	memcpy(p, &nr, 4);
	q = p + 4;
	for (int i = 0; i < argc; i++)
		q += pd_encode_string(q, n - (size_t)(q - p), argv[i]);
	r = pd_writer_feature(w, PD_FEAT_CMDLINE, p, n);
	free(p);
	return r;
}

int pd_writer_feat_clockid(struct pd_writer *w, uint64_t res_ns)
{
	return pd_writer_feature(w, PD_FEAT_CLOCKID, &res_ns, sizeof(res_ns));
}

int pd_writer_feat_sample_time(struct pd_writer *w, uint64_t first, uint64_t last)
{
	uint64_t t[2] = { first, last };

	return pd_writer_feature(w, PD_FEAT_SAMPLE_TIME, t, sizeof(t));
}

int pd_writer_add_build_id(struct pd_writer *w, int32_t pid, uint16_t misc, const uint8_t *bid,
			   size_t bid_size, const char *filename)
{
	struct pd_build_id_event b;
	size_t nlen = strlen(filename) + 1, plen = (nlen + 63) & ~(size_t)63;
	size_t need = sizeof(b) + plen;

	if (bid_size > sizeof(b.build_id) || need > 0xffff)
		return -EINVAL;
	if (XP_GROW(w->bids, w->bids_cap, w->bids_len + need) < 0)
		return -ENOMEM;
	memset(&b, 0, sizeof(b));
	b.header.type = PD_RECORD_HEADER_BUILD_ID;
	b.header.misc = misc | PD_MISC_BUILD_ID_SIZE;
	b.header.size = (uint16_t)need;
	b.pid = pid;
	memcpy(b.build_id, bid, bid_size);
	b.build_id_size = (uint8_t)bid_size;
	memcpy(w->bids + w->bids_len, &b, sizeof(b));
	memset(w->bids + w->bids_len + sizeof(b), 0, plen);
	memcpy(w->bids + w->bids_len + sizeof(b), filename, nlen);
	w->bids_len += need;
	return 0;
}

/* EVENT_DESC: u32 nr, u32 attr_size, then per attr: attr, u32 nr_ids, string, ids. */
static int build_event_desc(struct pd_writer *w)
{
	size_t n = 8;
	unsigned char *p, *q;
	uint32_t v;
	int r;

	for (size_t i = 0; i < w->nattrs; i++)
		n += PD_ATTR_SIZE + 4 + pd_encode_string(NULL, 0, w->attrs[i].name) +
		     w->attrs[i].nids * 8;
	p = malloc(n);
	if (!p)
		return -ENOMEM;
	v = (uint32_t)w->nattrs;
	memcpy(p, &v, 4);
	v = PD_ATTR_SIZE;
	memcpy(p + 4, &v, 4);
	q = p + 8;
	for (size_t i = 0; i < w->nattrs; i++) {
		struct pd_attr_ent *a = &w->attrs[i];
		memcpy(q, &a->attr, PD_ATTR_SIZE);
		q += PD_ATTR_SIZE;
		v = (uint32_t)a->nids;
		memcpy(q, &v, 4);
		q += 4;
		q += pd_encode_string(q, n - (size_t)(q - p), a->name);
		if (a->nids)
			memcpy(q, a->ids, a->nids * 8);
		q += a->nids * 8;
	}
	r = pd_writer_feature(w, PD_FEAT_EVENT_DESC, p, n);
	free(p);
	return r;
}

/* Features right after the data (perf finds them there); attrs and ids in their
 * area, or after the features when they outgrew it; the header last. */
static int write_tail(struct pd_writer *w)
{
	uint64_t off, sec_off, payload;
	unsigned nfeat = 0;
	int r;

	/* perf takes a data size of 0 for a recording that was not finalized (and reads
	 * the features as records): a file whose data was all given back holds one
	 * FINISHED_ROUND, so its data section says "no events" to every reader */
	if (w->pos == 0) {
		struct perf_event_header h = { .type = PD_RECORD_FINISHED_ROUND, .size = sizeof(h) };
		r = pwrite_all(w->fd, &h, sizeof(h), w->data_off);
		if (r < 0)
			return r;
		w->pos = w->disk = sizeof(h);
	}
	off = w->data_off + w->pos;
	if (w->bids_len && !w->feat[PD_FEAT_BUILD_ID]) {
		r = pd_writer_feature(w, PD_FEAT_BUILD_ID, w->bids, w->bids_len);
		if (r < 0)
			return r;
	}
	if (!w->feat[PD_FEAT_EVENT_DESC] && w->nattrs) {
		r = build_event_desc(w);
		if (r < 0)
			return r;
	}
	for (int f = 0; f < PD_FEAT_BITS; f++)
		nfeat += w->feat[f] != NULL;
	sec_off = off;
	payload = off + nfeat * sizeof(struct pd_section);
	for (int f = 0; f < PD_FEAT_BITS; f++) {
		struct pd_section s;
		if (!w->feat[f])
			continue;
		s.offset = payload;
		s.size = w->feat_size[f];
		r = pwrite_all(w->fd, &s, sizeof(s), sec_off);
		if (r == 0)
			r = pwrite_all(w->fd, w->feat[f], w->feat_size[f], payload);
		if (r < 0)
			return r;
		sec_off += sizeof(s);
		payload += w->feat_size[f];
	}
	/* the area, or when they outgrew it, after the features */
	w->attrs_dirty = 1;
	r = sync_attrs(w);
	if (r == 0 && !w->attrs_in_area) {
		off = (payload + 7) & ~7ULL;
		size_t n;
		unsigned char *b = attr_block(w, off, &n);
		if (!b)
			return -ENOMEM;
		r = pwrite_all(w->fd, b, n, off);
		free(b);
		w->attrs_off = off + n - w->nattrs * (PD_ATTR_SIZE + sizeof(struct pd_section));
		w->attrs_size = n - (w->attrs_off - off);
	}
	return r < 0 ? r : write_header(w, w->pos, 1);
}

int pd_writer_finalize(struct pd_writer *w)
{
	int r;

	if (w->finalized)
		return w->finalized < 0 ? w->finalized : 0;
	flush(w);
	/* After ENOSPC the data was cut back to make room: finalize what is left.  If the
	 * tail still does not fit, keep giving back data (halving) until it does. */
	r = write_tail(w);
	while ((r == -ENOSPC || r == -EDQUOT || r == -EFBIG) &&
	       w->pos > sizeof(struct perf_event_header)) {
		/* the latest boundary in the first half, else the oldest known one: each
		 * round gives back more (the boundaries may all lie in the last half) */
		struct pd_ckpt cut = { 0, 0, 0 }, oldest = { w->pos, 0, 0 };
		for (unsigned i = 0; i < w->nckpt; i++) {
			const struct pd_ckpt *c = &w->ckpt[(w->ckpt_head + NCKPT - 1 - i) % NCKPT];
			if (c->pos <= w->pos / 2 && c->pos > cut.pos)
				cut = *c;
			if (c->pos > 0 && c->pos < oldest.pos)
				oldest = *c;
		}
		if (cut.pos == 0 && oldest.pos < w->pos)
			cut = oldest;
		/* boundaries past the cut are skipped from now on: none is below it */
		if (cut_to(w, &cut) < 0)
			break;
		if (!w->err)
			w->err = r;
		r = write_tail(w);
	}
	w->finalized = r < 0 ? r : 1;
	return r;
}

void pd_writer_free(struct pd_writer *w)
{
	if (!w)
		return;
	close(w->fd);
	for (size_t i = 0; i < w->nattrs; i++) {
		free(w->attrs[i].name);
		free(w->attrs[i].ids);
	}
	free(w->attrs);
	free(w->index);
	for (int f = 0; f < PD_FEAT_BITS; f++)
		free(w->feat[f]);
	free(w->bids);
	free(w->buf);
	free(w);
}

int pd_writer_close(struct pd_writer *w)
{
	int r, err;

	if (!w)
		return 0;
	r = pd_writer_finalize(w);
	err = w->err;
	pd_writer_free(w);
	return err ? err : r;
}

uint64_t pd_writer_data_size(const struct pd_writer *w)
{
	return w->pos;
}

int pd_writer_error(const struct pd_writer *w)
{
	return w->err;
}

uint64_t pd_writer_truncated(const struct pd_writer *w)
{
	return w->truncated;
}

uint64_t pd_writer_samples(const struct pd_writer *w)
{
	return w->samples;
}

uint64_t pd_writer_aux_bytes(const struct pd_writer *w)
{
	return w->aux;
}
