/* Intel PT address filters: perf's `--filter` syntax to the kernel's
 * PERF_EVENT_IOC_SET_FILTER string.  The kernel matches `START/SIZE@PATH` against the
 * file offsets of PATH's mappings, so symbols are turned into file offsets through the
 * ELF program headers (st_value is a virtual address). */
#include "record/hw/x86_pt_attr.h"
#include "record/hw/x86_attr.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static int vaddr_to_offset(Elf *elf, uint64_t vaddr, uint64_t *off)
{
	size_t n;

	if (elf_getphdrnum(elf, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

/* Finds function `name` in .symtab, else .dynsym.  *off is its file offset. */
int x86_elf_func_offset(const char *path, const char *name, uint64_t *off, uint64_t *size,
		       char *err, size_t errlen)
{
	int fd, rc = -ENOENT;
	Elf *elf;
	Elf_Scn *scn = NULL;
	GElf_Sym found = { 0 };
	int have = 0;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return x86_attr_fail(err, errlen, -EINVAL, "%s: %s", path, strerror(errno));
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		if (elf)
			elf_end(elf);
		close(fd);
		return x86_attr_fail(err, errlen, -EINVAL, "%s: not an ELF file", path);
	}
	for (int pass = 0; pass < 2 && !have; pass++) {
		scn = NULL;
		while ((scn = elf_nextscn(elf, scn)) && !have) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(scn, &sh) ||
			    sh.sh_type != (pass == 0 ? SHT_SYMTAB : SHT_DYNSYM) || !sh.sh_entsize)
				continue;
			d = elf_getdata(scn, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym s;
				const char *n;

				if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_FUNC ||
				    s.st_shndx == SHN_UNDEF)
					continue;
				n = elf_strptr(elf, sh.sh_link, s.st_name);
				if (n && strcmp(n, name) == 0) {
					found = s;
					have = 1;
					break;
				}
			}
		}
	}
	if (!have)
		rc = x86_attr_fail(err, errlen, -EINVAL, "no function '%s' in %s", name, path);
	else if (vaddr_to_offset(elf, found.st_value, off))
		rc = x86_attr_fail(err, errlen, -EINVAL, "'%s' in %s is outside every loadable segment", name, path);
	else {
		*size = found.st_size;
		rc = 0;
	}
	elf_end(elf);
	close(fd);
	return rc;
}

static int parse_num(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 0);
	return errno || end == s || *end ? -EINVAL : 0;
}

static int one_filter(char *item, struct x86_pt_cfg *c, char *err, size_t errlen)
{
	char *at, *target, *slash, *path, *action;
	char real[PATH_MAX];
	uint64_t start = 0, size = 0;
	size_t used = strlen(c->filter);
	int n;

	item = trim(item);
	action = item;
	while (*item && !isspace((unsigned char)*item))
		item++;
	if (!*item)
		return x86_attr_fail(err, errlen, -EINVAL, "'%s': expected 'filter SYM @ /path' or "
			    "'filter START/SIZE@/path'", action);
	*item++ = 0;
	if (strcmp(action, "start") == 0)
		return x86_attr_fail(err, errlen, -EINVAL, "Intel PT has no 'start' filters (use 'filter' or 'stop')");
	if (strcmp(action, "filter") && strcmp(action, "stop"))
		return x86_attr_fail(err, errlen, -EINVAL, "'%s': unknown filter action (use 'filter' or 'stop')", action);
	at = strchr(item, '@');
	if (!at)
		return x86_attr_fail(err, errlen, -EINVAL, "'%s %s': missing '@ /path' (user-space filters name "
			    "their object file)", action, trim(item));
	*at = 0;
	target = trim(item);
	path = trim(at + 1);
	if (!*target || !*path)
		return x86_attr_fail(err, errlen, -EINVAL, "'%s': expected SYM or START[/SIZE] before '@' and a "
			    "path after it", action);
	if (!realpath(path, real))
		return x86_attr_fail(err, errlen, -EINVAL, "%s: %s", path, strerror(errno));
	slash = strchr(target, '/');
	if (slash) {
		*slash = 0;
		if (parse_num(trim(slash + 1), &size) || !size)
			return x86_attr_fail(err, errlen, -EINVAL, "'%s': bad size", trim(slash + 1));
	}
	target = trim(target);
	if (isdigit((unsigned char)target[0])) {
		if (parse_num(target, &start))
			return x86_attr_fail(err, errlen, -EINVAL, "'%s': bad address", target);
		if (!size)
			return x86_attr_fail(err, errlen, -EINVAL, "'%s@%s': an address range needs /SIZE", target, path);
	} else {
		uint64_t symsize = 0;
		int rc = x86_elf_func_offset(real, target, &start, &symsize, err, errlen);

		if (rc)
			return rc;
		if (!size)
			size = symsize;
		if (!size)
			return x86_attr_fail(err, errlen, -EINVAL, "'%s' in %s has no size: give one as %s/SIZE",
				    target, path, target);
	}
	n = snprintf(c->filter + used, sizeof(c->filter) - used, "%s%s 0x%" PRIx64 "/0x%" PRIx64 "@%s",
		     used ? "," : "", action, start, size, real);
	if (n < 0 || (size_t)n >= sizeof(c->filter) - used) {
		c->filter[used] = 0;
		return x86_attr_fail(err, errlen, -EINVAL, "filter string too long");
	}
	c->nfilters++;
	return 0;
}

int x86_pt_filter_parse(const struct pmu *pt, const char *spec, struct x86_pt_cfg *c,
			char *err, size_t errlen)
{
	char *copy = strdup(spec), *save = NULL;
	uint64_t ranges;
	int rc = 0;

	if (!copy)
		return -ENOMEM;
	for (char *it = strtok_r(copy, ",", &save); it && !rc; it = strtok_r(NULL, ",", &save))
		rc = one_filter(it, c, err, errlen);
	free(copy);
	if (rc)
		return rc;
	if (pmu_cap_u64(pt, "num_address_ranges", &ranges) < 0)
		ranges = 0;
	if (pt->nr_addr_filters >= 0 && (uint64_t)pt->nr_addr_filters < ranges)
		ranges = (uint64_t)pt->nr_addr_filters;
	if (c->nfilters > ranges)
		return x86_attr_fail(err, errlen, -EINVAL, "%u address filters, this CPU has %" PRIu64
			    " (caps/num_address_ranges)", c->nfilters, ranges);
	return 0;
}
