/* Build-ids of ELF files and in-memory images (libelf), and this process's vdso. */
#include "session/ms_store.h"
#include "util/xp_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>

static int note_build_id(Elf_Data *d, uint8_t *bid, size_t *bid_size)
{
	GElf_Nhdr nh;
	size_t off = 0, noff, doff;

	while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp((char *)d->d_buf + noff, "GNU", 4) == 0 && nh.n_descsz > 0) {
			size_t n = nh.n_descsz < MS_BUILD_ID_MAX ? nh.n_descsz : MS_BUILD_ID_MAX;
			memcpy(bid, (char *)d->d_buf + doff, n);
			*bid_size = n;
			return 0;
		}
	}
	return -ENODATA;
}

/* Program headers first: that is where the kernel looks, and stripped files keep them. */
static int elf_build_id(Elf *e, uint8_t *bid, size_t *bid_size)
{
	size_t nph;
	Elf_Scn *scn = NULL;

	if (elf_kind(e) != ELF_K_ELF)
		return -EINVAL;
	if (elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;
			Elf_Data *d;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_NOTE)
				continue;
			d = elf_getdata_rawchunk(e, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_NHDR);
			if (d && note_build_id(d, bid, bid_size) == 0)
				return 0;
		}
	}
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (d && note_build_id(d, bid, bid_size) == 0)
			return 0;
	}
	return -ENODATA;
}

int ms_build_id_file(const char *path, uint8_t *bid, size_t *bid_size)
{
	int fd, r;
	Elf *e;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e) {
		close(fd);
		return -EINVAL;
	}
	r = elf_build_id(e, bid, bid_size);
	elf_end(e);
	close(fd);
	return r;
}

int ms_build_id_mem(const void *img, size_t size, uint8_t *bid, size_t *bid_size)
{
	Elf *e;
	int r;

	elf_version(EV_CURRENT);
	e = elf_memory((char *)img, size);
	if (!e)
		return -EINVAL;
	r = elf_build_id(e, bid, bid_size);
	elf_end(e);
	return r;
}

int ms_vdso_self(const void **img, size_t *size)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	struct xp_maps it;
	struct xp_maps_line m;
	int r;

	if (!base)
		return -ENOENT;
	/* The mapping's extent comes from /proc/self/maps: the ELF headers do not say how
	 * many pages the kernel mapped. */
	if ((r = xp_maps_open(&it, 0)) < 0)
		return r;
	r = -ENOENT;
	while (xp_maps_next(&it, &m))
		if (m.start == base && strcmp(m.path, "[vdso]") == 0) {
			*img = (const void *)(uintptr_t)m.start;
			*size = m.end - m.start;
			r = 0;
			break;
		}
	xp_maps_close(&it);
	return r;
}

void ms_hex(char *out, const uint8_t *bid, size_t size)
{
	static const char hx[] = "0123456789abcdef";

	for (size_t i = 0; i < size; i++) {
		out[2 * i] = hx[bid[i] >> 4];
		out[2 * i + 1] = hx[bid[i] & 15];
	}
	out[2 * size] = 0;
}
