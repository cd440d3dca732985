/* Call trees as gzipped pprof profiles (out.h), encoded by libprotobuf-c from
 * out_profile.proto.  Protobuf messages concatenate into their merge (repeated fields
 * append), so the profile goes out as a series of Profile messages: one per sample
 * while the tree is walked, then one with the tables that the samples referred to
 * (functions, locations, mappings, strings).  Each is fed through zlib as it is
 * packed: memory holds the tables, never the encoded profile. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "output/out.h"
#include "output/out_profile.pb-c.h"
#include "util/xp_grow.h"
#include "util/xp_map.h"

#define PP_CHUNK (64u << 10)

struct pp_gz {
	ProtobufCBuffer base;	/* first: protobuf-c calls base.append with it */
	FILE *f;
	z_stream z;
	unsigned char out[PP_CHUNK];
	int err;
};

static void gz_run(struct pp_gz *g, int flush)
{
	do {
		g->z.next_out = g->out;
		g->z.avail_out = sizeof(g->out);
		if (deflate(&g->z, flush) == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		size_t n = sizeof(g->out) - g->z.avail_out;
		if (n && fwrite(g->out, 1, n, g->f) != n)
			g->err = -EIO;
	} while (g->z.avail_out == 0 && !g->err);
}

static void gz_append(ProtobufCBuffer *b, size_t len, const uint8_t *data)
{
	struct pp_gz *g = (struct pp_gz *)b;

	if (g->err)
		return;
	g->z.next_in = (unsigned char *)(uintptr_t)data;
	g->z.avail_in = (uInt)len;
	gz_run(g, Z_NO_FLUSH);
}

struct pp {
	const struct ct_tree *t;
	const struct out_names *n;
	out_where_fn where;
	unsigned nm;
	struct pp_gz *gz;
	struct xp_map fn_ids;	/* fn -> function (= location) id */
	uint32_t *fns;		/* id - 1 -> fn */
	uint32_t nfns, capfns;
	struct xp_map mod_ids;	/* module -> mapping id */
	struct out_fn_where *mods;	/* mapping id - 1 -> where */
	uint32_t nmods, capmods;
	uint64_t *locs;		/* a sample's location ids */
	uint32_t caplocs;
	int64_t vals[CT_MAX_METRICS];
};

static int fn_id(struct pp *p, uint32_t fn, uint64_t *id)
{
	if (xp_map_get(&p->fn_ids, fn, id))
		return 0;
	if (XP_GROW(p->fns, p->capfns, p->nfns + 1) < 0)
		return -ENOMEM;
	p->fns[p->nfns++] = fn;
	*id = p->nfns;
	return xp_map_put(&p->fn_ids, fn, *id);
}

static int sample(void *arg, const struct ct_tree *t, uint32_t node)
{
	struct pp *p = arg;
	const struct ct_node *nd = ct_node(t, node);
	bool any = false;

	for (unsigned m = 0; m < p->nm; m++) {
		p->vals[m] = (int64_t)ct_base(t, node, m);
		any |= p->vals[m] != 0;
	}
	if (!any)
		return 0;
	if (XP_GROW(p->locs, p->caplocs, nd->lvl) < 0)
		return -ENOMEM;
	uint32_t k = 0;
	for (uint32_t u = node; u != CT_ROOT; u = ct_node(t, u)->parent)
		if (fn_id(p, ct_node(t, u)->fn, &p->locs[k++]) < 0)
			return -ENOMEM;
	Perftools__Profiles__Sample s = PERFTOOLS__PROFILES__SAMPLE__INIT;
	Perftools__Profiles__Sample *sp = &s;
	Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
	s.n_location_id = k;
	s.location_id = p->locs;
	s.n_value = p->nm;
	s.value = p->vals;
	pr.n_sample = 1;
	pr.sample = &sp;
	perftools__profiles__profile__pack_to_buffer(&pr, &p->gz->base);
	return p->gz->err;
}

/* The string table: the strings stay owned by the names.  A string that finds no
 * memory sets oom (and gets index 0). */
struct pp_strs {
	char **s;
	size_t n, cap;
	bool oom;
};

static int64_t str_add(struct pp_strs *st, const char *s)
{
	if (XP_GROW(st->s, st->cap, st->n + 1) < 0) {
		st->oom = true;
		return 0;
	}
	st->s[st->n] = (char *)(uintptr_t)(s ? s : "");
	return (int64_t)st->n++;
}

/* pprof takes the first mapping for the program ("File:" in -top, the binary a
 * backend files the profile under): the module holding main goes first. */
static void main_first(struct pp *p, Perftools__Profiles__Location *loc, size_t nf)
{
	uint64_t m = 0;

	for (size_t i = 0; i < nf && !m; i++)
		if (loc[i].mapping_id && strcmp(p->n->name(p->n->ctx, p->fns[i]), "main") == 0)
			m = loc[i].mapping_id;
	if (m <= 1)
		return;
	struct out_fn_where w = p->mods[0];
	p->mods[0] = p->mods[m - 1];
	p->mods[m - 1] = w;
	for (size_t i = 0; i < nf; i++)
		loc[i].mapping_id = loc[i].mapping_id == m ? 1 : loc[i].mapping_id == 1 ? m : loc[i].mapping_id;
}

static int tables(struct pp *p, const struct out_metric *m, unsigned dflt, uint64_t duration_ns)
{
	struct pp_strs st = { 0 };
	size_t nf = p->nfns;
	Perftools__Profiles__Profile pr = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[CT_MAX_METRICS], *vtp[CT_MAX_METRICS];
	Perftools__Profiles__Function *fun = calloc(nf, sizeof(*fun)), **funp = calloc(nf, sizeof(*funp));
	Perftools__Profiles__Location *loc = calloc(nf, sizeof(*loc)), **locp = calloc(nf, sizeof(*locp));
	Perftools__Profiles__Line *line = calloc(nf, sizeof(*line)), **linep = calloc(nf, sizeof(*linep));
	Perftools__Profiles__Mapping *map = NULL, **mapp = NULL;
	char *bids = NULL;
	int rc = -ENOMEM;

	str_add(&st, "");
	if (!fun || !funp || !loc || !locp || !line || !linep)
		goto out;
	for (unsigned i = 0; i < p->nm; i++) {
		vt[i] = (Perftools__Profiles__ValueType)PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		vt[i].type = str_add(&st, m[i].type);
		vt[i].unit = str_add(&st, m[i].unit);
		vtp[i] = &vt[i];
	}
	for (size_t i = 0; i < nf; i++) {
		uint32_t fn = p->fns[i];
		struct out_fn_where w = { 0 };
		uint64_t mid = 0;
		const char *file = NULL;
		int ln = 0;
		fun[i] = (Perftools__Profiles__Function)PERFTOOLS__PROFILES__FUNCTION__INIT;
		fun[i].id = i + 1;
		fun[i].name = fun[i].system_name = str_add(&st, p->n->name(p->n->ctx, fn));
		if (p->n->srcline && p->n->srcline(p->n->ctx, fn, &file, &ln) && ln > 0) {
			fun[i].filename = str_add(&st, file);
			fun[i].start_line = ln;
		}
		if (p->where && p->where(p->n->ctx, fn, &w) && !xp_map_get(&p->mod_ids, w.module, &mid)) {
			if (XP_GROW(p->mods, p->capmods, p->nmods + 1) < 0)
				goto out;
			p->mods[p->nmods++] = w;
			mid = p->nmods;
			if (xp_map_put(&p->mod_ids, w.module, mid) < 0)
				goto out;
		}
		line[i] = (Perftools__Profiles__Line)PERFTOOLS__PROFILES__LINE__INIT;
		line[i].function_id = i + 1;
		line[i].line = ln > 0 ? ln : 0;
		linep[i] = &line[i];
		loc[i] = (Perftools__Profiles__Location)PERFTOOLS__PROFILES__LOCATION__INIT;
		loc[i].id = i + 1;
		loc[i].mapping_id = mid;
		loc[i].address = w.addr;
		loc[i].n_line = 1;
		loc[i].line = &linep[i];
		funp[i] = &fun[i];
		locp[i] = &loc[i];
	}
	main_first(p, loc, nf);
	map = calloc(p->nmods, sizeof(*map));
	mapp = calloc(p->nmods, sizeof(*mapp));
	bids = calloc(p->nmods, 41);
	if (p->nmods && (!map || !mapp || !bids))
		goto out;
	for (uint32_t i = 0; i < p->nmods; i++) {
		const struct out_fn_where *w = &p->mods[i];
		char *hex = bids + 41 * i;
		for (unsigned k = 0; k < w->build_id_size && k < 20; k++)
			snprintf(hex + 2 * k, 3, "%02x", w->build_id[k]);
		map[i] = (Perftools__Profiles__Mapping)PERFTOOLS__PROFILES__MAPPING__INIT;
		map[i].id = i + 1;
		map[i].filename = str_add(&st, w->file);
		map[i].build_id = str_add(&st, hex);
		/* locations hold the module's ELF virtual addresses (what its symbols and
		 * debug info use): the mapping spans them from 0 */
		for (size_t k = 0; k < nf; k++)
			if (loc[k].mapping_id == i + 1 && loc[k].address >= map[i].memory_limit)
				map[i].memory_limit = loc[k].address + 1;
		/* names come with the profile: consumers need not symbolize */
		map[i].has_functions = map[i].has_filenames = true;
		mapp[i] = &map[i];
	}
	if (st.oom)
		goto out;
	pr.n_sample_type = p->nm;
	pr.sample_type = vtp;
	pr.n_mapping = p->nmods;
	pr.mapping = mapp;
	pr.n_location = nf;
	pr.location = locp;
	pr.n_function = nf;
	pr.function = funp;
	pr.n_string_table = st.n;
	pr.string_table = st.s;
	pr.duration_nanos = (int64_t)duration_ns;
	pr.default_sample_type = vt[dflt < p->nm ? dflt : 0].type;
	perftools__profiles__profile__pack_to_buffer(&pr, &p->gz->base);
	rc = p->gz->err;
out:
	free(fun);
	free(funp);
	free(loc);
	free(locp);
	free(line);
	free(linep);
	free(map);
	free(mapp);
	free(bids);
	free(st.s);
	return rc;
}

int out_pprof(FILE *f, const struct ct_tree *t, const struct out_metric *m, unsigned nm, unsigned dflt,
	      uint64_t duration_ns, const struct out_names *n, out_where_fn where)
{
	struct pp p = { .t = t, .n = n, .where = where, .nm = nm < CT_MAX_METRICS ? nm : CT_MAX_METRICS };
	struct pp_gz *g = calloc(1, sizeof(*g));
	int rc;

	if (!g)
		return -ENOMEM;
	g->base.append = gz_append;
	g->f = f;
	p.gz = g;
	/* windowBits 15 + 16: a gzip header and trailer, as pprof files have */
	if (deflateInit2(&g->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(g);
		return -ENOMEM;
	}
	rc = ct_walk(t, 0, sample, &p);
	if (rc == 0)
		rc = tables(&p, m, dflt, duration_ns);
	if (rc == 0) {
		g->z.next_in = NULL;
		g->z.avail_in = 0;
		gz_run(g, Z_FINISH);
		rc = g->err;
	}
	deflateEnd(&g->z);
	free(g);
	xp_map_free(&p.fn_ids);
	xp_map_free(&p.mod_ids);
	free(p.fns);
	free(p.mods);
	free(p.locs);
	return rc < 0 ? rc : 0;
}
