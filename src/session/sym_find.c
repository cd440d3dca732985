/* Functions of an ELF file by name or glob; see sym_find.h. */
#include "session/sym_find.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int sym_vaddr_offset(const struct sym_seg *segs, size_t n, uint64_t vaddr, uint64_t *off)
{
	for (size_t i = 0; i < n; i++) {
		if (vaddr >= segs[i].vaddr && vaddr - segs[i].vaddr < segs[i].filesz) {
			*off = vaddr - segs[i].vaddr + segs[i].offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int read_segs(Elf *e, struct sym_seg **out, size_t *nout)
{
	size_t n, k = 0;
	struct sym_seg *v;

	if (elf_getphdrnum(e, &n))
		return -ENOEXEC;
	v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		v[k].vaddr = ph.p_vaddr;
		v[k].offset = ph.p_offset;
		v[k].filesz = ph.p_filesz;
		k++;
	}
	*out = v;
	*nout = k;
	return 0;
}

static Elf_Scn *symbol_table(Elf *e, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL, *dyn = NULL;
	GElf_Shdr s, dsh;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &s) || !s.sh_entsize)
			continue;
		if (s.sh_type == SHT_SYMTAB) {
			*sh = s;
			return scn;
		}
		if (s.sh_type == SHT_DYNSYM) {
			dyn = scn;
			dsh = s;
		}
	}
	if (dyn)
		*sh = dsh;
	return dyn;
}

static int seen_vaddr(const struct sym_found *v, int n, uint64_t vaddr)
{
	for (int i = 0; i < n; i++)
		if (v[i].vaddr == vaddr)
			return 1;
	return 0;
}

static int scan(Elf *e, const char *pattern, int glob, struct sym_found **out)
{
	GElf_Shdr sh;
	Elf_Scn *scn = symbol_table(e, &sh);
	Elf_Data *d = scn ? elf_getdata(scn, NULL) : NULL;
	struct sym_seg *segs = NULL;
	size_t nsegs = 0, nsyms;
	struct sym_found *v = NULL;
	int n = 0, cap = 0, rc;

	if (!d)
		return 0;
	rc = read_segs(e, &segs, &nsegs);
	if (rc < 0)
		return rc;
	/* the section header's size is a claim: only what the data holds is read */
	nsyms = sh.sh_size / sh.sh_entsize;
	if (nsyms > d->d_size / sh.sh_entsize)
		nsyms = d->d_size / sh.sh_entsize;
	for (size_t i = 0; i < nsyms; i++) {
		GElf_Sym s;
		const char *name;
		int type;

		if (!gelf_getsym(d, (int)i, &s) || s.st_shndx == SHN_UNDEF)
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		name = elf_strptr(e, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (glob ? fnmatch(pattern, name, 0) != 0 : strcmp(pattern, name) != 0)
			continue;
		if (seen_vaddr(v, n, s.st_value))
			continue;
		if (n == cap) {
			int nc = cap ? cap * 2 : 8;
			struct sym_found *nv = realloc(v, (size_t)nc * sizeof(*nv));
			if (!nv) {
				rc = -ENOMEM;
				break;
			}
			v = nv;
			cap = nc;
		}
		memset(&v[n], 0, sizeof(v[n]));
		v[n].name = strdup(name);
		if (!v[n].name) {
			rc = -ENOMEM;
			break;
		}
		v[n].vaddr = s.st_value;
		v[n].size = s.st_size;
		v[n].ifunc = type == STT_GNU_IFUNC;
		v[n].no_offset = sym_vaddr_offset(segs, nsegs, s.st_value, &v[n].offset) < 0;
		n++;
	}
	free(segs);
	if (rc < 0) {
		sym_found_free(v, n);
		return rc;
	}
	*out = v;
	return n;
}

int sym_find_funcs(const char *path, const char *pattern, int glob, struct sym_found **out)
{
	int fd, n;
	Elf *e;

	*out = NULL;
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF) {
		if (e)
			elf_end(e);
		close(fd);
		return -ENOEXEC;
	}
	n = scan(e, pattern, glob, out);
	elf_end(e);
	close(fd);
	return n;
}

void sym_found_free(struct sym_found *v, int n)
{
	for (int i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

void sym_func_at(const char *path, uint64_t off, char *out, size_t len)
{
	struct sym_found *v = NULL;
	int n = sym_find_funcs(path, "*", 1, &v);

	snprintf(out, len, "?");
	for (int i = 0; i < n; i++)
		if (!v[i].no_offset && off >= v[i].offset && off < v[i].offset + (v[i].size ? v[i].size : 1)) {
			snprintf(out, len, "%s+%#llx", v[i].name, (unsigned long long)(off - v[i].offset));
			break;
		}
	if (n > 0)
		sym_found_free(v, n);
}
