/* DWARF sections inflated in an image of our own (sym_dwsec.h).
 *
 * The image is an ELF file in anonymous memory: header, the kept sections' bytes,
 * their names, section headers.  libelf reads it in place (elf_memory), so libdw's
 * pointers into .debug_line point at the bytes inflated there when lines are first
 * asked for; until then they are untouched zero pages. */
#include <errno.h>
#include <gelf.h>
#include <libdeflate.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "session/sym_dwsec.h"

struct sym_dwsec {
	void *img;
	size_t len;
	Elf *elf;
	/* .debug_line's compressed bytes (in the file's mapping) and its room in the
	 * image: filled once */
	const uint8_t *line_src;
	size_t line_srclen;
	uint8_t *line_dst;
	size_t line_len;
	int line_rc;		/* 1: not yet */
};

/* What libdw reads for address -> CU, DIEs, ranges, names and lines; the rest of
 * .debug_* (location lists, .debug_frame, macros) symbols never ask for. */
static bool unused(const char *name)
{
	static const char *const skip[] = { ".debug_loc", ".debug_loclists", ".debug_frame",
					    ".debug_macro", ".debug_macinfo" };
	for (size_t i = 0; i < sizeof(skip) / sizeof(skip[0]); i++)
		if (!strcmp(name, skip[i]))
			return true;
	return false;
}

/* A compressed section's zlib stream, inflated by libdeflate: a whole buffer of
 * known size at once, in under half zlib's time (0.017 s for libc's 10 MB). */
static int inflate_to(const uint8_t *src, size_t srclen, uint8_t *dst, size_t len)
{
	struct libdeflate_decompressor *z = libdeflate_alloc_decompressor();
	enum libdeflate_result rc;

	if (!z)
		return -ENOMEM;
	rc = libdeflate_zlib_decompress(z, src, srclen, dst, len, NULL);
	libdeflate_free_decompressor(z);
	return rc == LIBDEFLATE_SUCCESS ? 0 : -EINVAL;
}

struct kept {
	GElf_Shdr sh;
	const char *name;
	const uint8_t *src;	/* the file's bytes: compressed (after the Chdr) or as they are */
	size_t srclen;
	bool compressed;
	uint64_t off, len;	/* in the image */
};

/* The sections to keep, in `k` (room for `max`); their count, or < 0 for a file to
 * leave to libdw. */
static int pick(Elf *e, struct kept *k, int max)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int n = 0;
	bool any_compressed = false;

	if (elf_getshdrstrndx(e, &shstrndx) != 0)
		return -EINVAL;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strncmp(name, ".zdebug", 7) || !strcmp(name, ".gnu_debugaltlink"))
			return -ENOTSUP;
		if (strncmp(name, ".debug_", 7) || unused(name) || sh.sh_type == SHT_NOBITS)
			continue;
		Elf_Data *raw = elf_rawdata(scn, NULL);
		if (!raw || !raw->d_buf || raw->d_size != sh.sh_size)
			continue;	/* as libdw: a section it cannot read is not there */
		if (n == max)
			return -E2BIG;
		struct kept *s = &k[n];
		*s = (struct kept){ .sh = sh, .name = name, .src = raw->d_buf, .srclen = raw->d_size,
				    .len = sh.sh_size };
		if (sh.sh_flags & SHF_COMPRESSED) {
			Elf64_Chdr ch;
			if (raw->d_size < sizeof(ch))
				return -EINVAL;
			memcpy(&ch, raw->d_buf, sizeof(ch));
			/* deflate expands at most 1032 times */
			if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size / 1032 > raw->d_size ||
			    ch.ch_size > (1ull << 34))
				return -ENOTSUP;
			s->compressed = any_compressed = true;
			s->src += sizeof(ch);
			s->srclen -= sizeof(ch);
			s->len = ch.ch_size;
			s->sh.sh_addralign = ch.ch_addralign;
			s->sh.sh_flags &= ~(uint64_t)SHF_COMPRESSED;
		}
		n++;
	}
	return any_compressed ? n : -ENOTSUP;
}

#define MAX_SECTIONS 64

/* Whether libelf gives .debug_line's bytes where they will be inflated (it does for
 * an image in memory, byte sections in the host's order); if not, they are inflated
 * at once. */
static bool lines_in_place(struct sym_dwsec *s)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (!s->line_dst || elf_getshdrstrndx(s->elf, &shstrndx) != 0)
		return !s->line_dst;
	while ((scn = elf_nextscn(s->elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(s->elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".debug_line")) {
			Elf_Data *d = elf_getdata(scn, NULL);
			return d && d->d_buf == s->line_dst;
		}
	}
	return false;
}

Elf *sym_dwsec_open(Elf *e, struct sym_dwsec **out)
{
	struct kept k[MAX_SECTIONS];
	GElf_Ehdr eh;
	const char *ident = elf_getident(e, NULL);
	int n;

	if (!ident || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB || !gelf_getehdr(e, &eh) ||
	    eh.e_type == ET_REL || (n = pick(e, k, MAX_SECTIONS)) < 0)
		return NULL;
	/* header, sections (8-aligned), names, section headers */
	uint64_t off = sizeof(Elf64_Ehdr), names = 1;
	for (int i = 0; i < n; i++) {
		off = (off + 7) & ~7ull;
		k[i].off = off;
		off += k[i].len;
		names += strlen(k[i].name) + 1;
	}
	uint64_t names_off = off;
	names += sizeof(".shstrtab");
	uint64_t shoff = (names_off + names + 7) & ~7ull;
	size_t len = shoff + (size_t)(n + 2) * sizeof(Elf64_Shdr);
	struct sym_dwsec *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->len = len;
	s->line_rc = 1;
	s->img = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (s->img == MAP_FAILED) {
		free(s);
		return NULL;
	}
	uint8_t *img = s->img;
	Elf64_Ehdr *h = s->img;
	memcpy(h->e_ident, ident, EI_NIDENT);
	h->e_type = eh.e_type;
	h->e_machine = eh.e_machine;
	h->e_version = EV_CURRENT;
	h->e_ehsize = sizeof(Elf64_Ehdr);
	h->e_shentsize = sizeof(Elf64_Shdr);
	h->e_shoff = shoff;
	h->e_shnum = (Elf64_Half)(n + 2);
	h->e_shstrndx = (Elf64_Half)(n + 1);
	Elf64_Shdr *sh = (Elf64_Shdr *)(img + shoff);
	char *nm = (char *)img + names_off;
	size_t at = 1;
	for (int i = 0; i < n; i++) {
		sh[i + 1] = (Elf64_Shdr){ .sh_name = (Elf64_Word)at, .sh_type = k[i].sh.sh_type,
					  .sh_flags = k[i].sh.sh_flags, .sh_offset = k[i].off, .sh_size = k[i].len,
					  .sh_addralign = k[i].sh.sh_addralign, .sh_entsize = k[i].sh.sh_entsize };
		memcpy(nm + at, k[i].name, strlen(k[i].name) + 1);
		at += strlen(k[i].name) + 1;
		uint8_t *dst = img + k[i].off;
		int rc = 0;
		if (!k[i].compressed)
			memcpy(dst, k[i].src, k[i].len);
		else if (!strcmp(k[i].name, ".debug_line")) {
			s->line_src = k[i].src;
			s->line_srclen = k[i].srclen;
			s->line_dst = dst;
			s->line_len = k[i].len;
		} else
			rc = inflate_to(k[i].src, k[i].srclen, dst, k[i].len);
		if (rc < 0) {
			sym_dwsec_free(s);
			return NULL;
		}
	}
	sh[n + 1] = (Elf64_Shdr){ .sh_name = (Elf64_Word)at, .sh_type = SHT_STRTAB, .sh_offset = names_off,
				  .sh_size = names, .sh_addralign = 1 };
	memcpy(nm + at, ".shstrtab", sizeof(".shstrtab"));
	s->elf = elf_memory((char *)img, len);
	if (!s->elf || (!lines_in_place(s) && sym_dwsec_lines(s) < 0)) {
		sym_dwsec_free(s);
		return NULL;
	}
	*out = s;
	return s->elf;
}

int sym_dwsec_lines(struct sym_dwsec *s)
{
	if (s->line_rc == 1)
		s->line_rc = !s->line_dst ? 0 : inflate_to(s->line_src, s->line_srclen, s->line_dst, s->line_len);
	return s->line_rc;
}

void sym_dwsec_free(struct sym_dwsec *s)
{
	if (!s)
		return;
	if (s->elf)
		elf_end(s->elf);
	munmap(s->img, s->len);
	free(s);
}
