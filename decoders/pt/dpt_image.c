/* The traced memory image: file sections go to libipt through an image section cache
 * (so its block cache applies), and are also kept here so views can read code bytes
 * without a decoder.  In-memory sections (JIT code) reach libipt through the image's
 * read callback. */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoders/pt/dpt.h"
#include "util/xp_fmap.h"
#include "util/xp_grow.h"

struct dpt_file {
	char *path;
	const uint8_t *map;
	size_t size;
};

struct dpt_section {
	uint64_t vaddr, size;
	const uint8_t *data;
	int mem;		/* not known to libipt's file sections */
	size_t file;		/* else: which file, from where */
	uint64_t offset;
};

struct dpt_image {
	struct pt_image *pt;
	struct pt_image_section_cache *iscache;
	struct dpt_file *files;
	size_t nfiles, capfiles;
	struct dpt_section *secs;	/* in insertion order: later ones shadow */
	size_t nsecs, capsecs;
	dpt_fallback_fn fallback;
	void *fallback_ctx;
};

static int read_mem_cb(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		       uint64_t ip, void *context)
{
	const struct dpt_image *img = context;
	(void)asid;
	for (size_t i = img->nsecs; i-- > 0;) {
		const struct dpt_section *s = &img->secs[i];
		if (!s->mem || ip < s->vaddr || ip - s->vaddr >= s->size)
			continue;
		uint64_t avail = s->size - (ip - s->vaddr);
		size_t n = size < avail ? size : (size_t)avail;
		memcpy(buffer, s->data + (ip - s->vaddr), n);
		return (int)n;
	}
	if (img->fallback) {
		size_t n = img->fallback(img->fallback_ctx, ip, buffer, size);
		if (n)
			return (int)n;
	}
	return -pte_nomap;
}

void dpt_image_set_fallback(struct dpt_image *img, dpt_fallback_fn fn, void *ctx)
{
	img->fallback = fn;
	img->fallback_ctx = ctx;
}

struct dpt_image *dpt_image_new(const char *name)
{
	struct dpt_image *img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	img->pt = pt_image_alloc(name);
	img->iscache = pt_iscache_alloc(name);
	if (!img->pt || !img->iscache) {
		dpt_image_free(img);
		return NULL;
	}
	pt_image_set_callback(img->pt, read_mem_cb, img);
	return img;
}

void dpt_image_free(struct dpt_image *img)
{
	if (!img)
		return;
	if (img->pt)
		pt_image_free(img->pt);
	if (img->iscache)
		pt_iscache_free(img->iscache);
	for (size_t i = 0; i < img->nfiles; i++) {
		xp_funmap(img->files[i].map, img->files[i].size);
		free(img->files[i].path);
	}
	free(img->files);
	free(img->secs);
	free(img);
}

struct pt_image *dpt_image_pt(struct dpt_image *img)
{
	return img->pt;
}

static const struct dpt_file *map_file(struct dpt_image *img, const char *path)
{
	for (size_t i = 0; i < img->nfiles; i++)
		if (strcmp(img->files[i].path, path) == 0)
			return &img->files[i];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size <= 0) {
		close(fd);
		errno = errno ? errno : EINVAL;
		return NULL;
	}
	const void *map = xp_fmap(fd, (size_t)st.st_size);
	close(fd);
	if (!map)
		return NULL;
	if (XP_GROW(img->files, img->capfiles, img->nfiles + 1) < 0) {
		xp_funmap(map, (size_t)st.st_size);
		return NULL;
	}
	struct dpt_file *f = &img->files[img->nfiles];
	f->path = strdup(path);
	if (!f->path) {
		xp_funmap(map, (size_t)st.st_size);
		return NULL;
	}
	f->map = map;
	f->size = (size_t)st.st_size;
	img->nfiles++;
	return f;
}

static int add_section(struct dpt_image *img, uint64_t vaddr, uint64_t size,
		       const uint8_t *data, int mem, size_t file, uint64_t offset)
{
	if (XP_GROW(img->secs, img->capsecs, img->nsecs + 1) < 0)
		return -ENOMEM;
	img->secs[img->nsecs++] = (struct dpt_section){ vaddr, size, data, mem, file, offset };
	return 0;
}

int dpt_image_add_file(struct dpt_image *img, const char *path, uint64_t offset,
		       uint64_t size, uint64_t vaddr)
{
	const struct dpt_file *f = map_file(img, path);
	if (!f)
		return -(errno ? errno : ENOENT);
	if (offset >= f->size)
		return -EINVAL;
	if (size > f->size - offset)
		size = f->size - offset;	/* libipt truncates the same way */
	if (size == 0)
		return 0;
	int isid = pt_iscache_add_file(img->iscache, path, offset, size, vaddr);
	if (isid < 0)
		return -EINVAL;
	if (pt_image_add_cached(img->pt, img->iscache, isid, NULL) < 0)
		return -EINVAL;
	return add_section(img, vaddr, size, f->map + offset, 0, (size_t)(f - img->files), offset);
}

int dpt_image_add_mem(struct dpt_image *img, const uint8_t *bytes, uint64_t size,
		      uint64_t vaddr)
{
	if (size == 0)
		return 0;
	return add_section(img, vaddr, size, bytes, 1, 0, 0);
}

int dpt_image_add_elf(struct dpt_image *img, const char *path, int have_base,
		      uint64_t base, dpt_segment_fn each, void *ctx)
{
	const struct dpt_file *f = map_file(img, path);
	if (!f)
		return -(errno ? errno : ENOENT);
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)f->map, f->size);
	if (!elf)
		return -EINVAL;
	int ret = -ENOEXEC;
	size_t nph;
	if (elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &nph) != 0)
		goto out;
	uint64_t lowest = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < lowest)
			lowest = ph.p_vaddr;
	}
	if (lowest == UINT64_MAX)
		goto out;
	uint64_t bias = have_base ? base - (lowest & ~0xfffULL) : 0;
	int added = 0;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		if (ph.p_filesz == 0)
			continue;
		ret = dpt_image_add_file(img, path, ph.p_offset, ph.p_filesz, ph.p_vaddr + bias);
		if (ret < 0)
			goto out;
		uint64_t start = (ph.p_vaddr + bias) & ~0xfffULL;
		if (each && each(ctx, start, ph.p_vaddr + bias + ph.p_memsz - start, ph.p_offset & ~0xfffULL)) {
			ret = -ENOMEM;
			goto out;
		}
		added++;
	}
	ret = added ? 0 : -ENOEXEC;
out:
	elf_end(elf);
	return ret;
}

static size_t read_one(const struct dpt_image *img, uint64_t addr, uint8_t *buf, size_t n)
{
	for (size_t i = img->nsecs; i-- > 0;) {
		const struct dpt_section *s = &img->secs[i];
		if (addr < s->vaddr || addr - s->vaddr >= s->size)
			continue;
		uint64_t avail = s->size - (addr - s->vaddr);
		size_t k = n < avail ? n : (size_t)avail;
		memcpy(buf, s->data + (addr - s->vaddr), k);
		return k;
	}
	return 0;
}

/* An instruction may straddle two adjacent sections: keep reading across them. */
size_t dpt_image_read_sections(const struct dpt_image *img, uint64_t addr, uint8_t *buf, size_t n)
{
	size_t got = 0, k;
	while (got < n && (k = read_one(img, addr + got, buf + got, n - got)) > 0)
		got += k;
	return got;
}

size_t dpt_image_read(const struct dpt_image *img, uint64_t addr, uint8_t *buf, size_t n)
{
	size_t got = dpt_image_read_sections(img, addr, buf, n);
	if (got < n && img->fallback)
		got += img->fallback(img->fallback_ctx, addr + got, buf + got, n - got);
	return got;
}

struct dpt_image *dpt_image_clone(const struct dpt_image *src)
{
	struct dpt_image *img = dpt_image_new("clone");
	for (size_t i = 0; img && i < src->nsecs; i++) {
		const struct dpt_section *s = &src->secs[i];
		int r = s->mem ? dpt_image_add_mem(img, s->data, s->size, s->vaddr) :
			dpt_image_add_file(img, src->files[s->file].path, s->offset, s->size, s->vaddr);
		if (r < 0) {
			dpt_image_free(img);
			return NULL;
		}
	}
	if (img)
		dpt_image_set_fallback(img, src->fallback, src->fallback_ctx);
	return img;
}

size_t dpt_image_nsections(const struct dpt_image *img)
{
	return img->nsecs;
}
