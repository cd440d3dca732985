/* --filter of --mode step (see col_step_filter.h). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "record/step/col_step_filter.h"

void col_step_filter_free(struct step_filter *f, int n)
{
	for (int i = 0; i < n; i++) {
		free(f[i].module);
		free(f[i].sym);
	}
	free(f);
}

static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	for (n = strlen(s); n && (s[n - 1] == ' ' || s[n - 1] == '\t'); n--)
		s[n - 1] = 0;
	return s;
}

/* An address as nm and objdump print it: hex, 0x optional. */
static int hex(const char *s, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(s, &end, 16);
	return !*s || *s == '-' || *s == '+' || errno || *end ? -EINVAL : 0;
}

/* perf's PT filter syntax, "filter SYM @ FILE" or "filter START/SIZE @ FILE": the
 * keyword dropped; its other actions stop or start tracing, which step mode has not. */
static int pt_syntax(char **tok, char *why, size_t whylen)
{
	static const char *const other[] = { "start", "stop", "tracestop" };
	size_t n = strcspn(*tok, " \t");

	for (size_t i = 0; i < sizeof(other) / sizeof(other[0]); i++)
		if (n == strlen(other[i]) && strncmp(*tok, other[i], n) == 0 && (*tok)[n]) {
			snprintf(why, whylen, "'%s': step mode traces ranges ('filter'); perf's %s "
				 "filters of Intel PT it has not", *tok, other[i]);
			return -EINVAL;
		}
	if (n == 6 && strncmp(*tok, "filter", 6) == 0 && (*tok)[n])
		*tok = trim(*tok + n);
	return 0;
}

static int parse_one(char *tok, struct step_filter *f, char *why, size_t whylen)
{
	char *at, *dash, sep = '-';

	memset(f, 0, sizeof(*f));
	tok = trim(tok);
	if (pt_syntax(&tok, why, whylen) < 0)
		return -EINVAL;
	at = strrchr(tok, '@');
	if (at) {
		*at = 0;
		tok = trim(tok);
		if (!*trim(at + 1)) {
			snprintf(why, whylen, "'%s@': module name missing", tok);
			return -EINVAL;
		}
		f->module = strdup(trim(at + 1));
	}
	dash = strpbrk(tok, "-/");
	if (dash && tok[0] >= '0' && tok[0] <= '9') {
		sep = *dash;
		*dash = 0;
		if (hex(tok, &f->start) < 0 || hex(dash + 1, &f->end) < 0)
			goto bad_range;
		if (sep == '/')	/* START/SIZE */
			f->end = f->end > UINT64_MAX - f->start ? 0 : f->start + f->end;
		if (f->end <= f->start)
			goto bad_range;
		if (!f->module) {
			snprintf(why, whylen, "range %s%c%s: say in which module (START-END@MODULE)",
				 tok, sep, dash + 1);
			return -EINVAL;
		}
		return 0;
	}
	if (!tok[0]) {
		snprintf(why, whylen, "empty filter");
		return -EINVAL;
	}
	f->sym = strdup(tok);
	return f->sym ? 0 : -ENOMEM;
bad_range:
	snprintf(why, whylen, "'%s%c%s' is no START-END address range (hex, as nm and objdump "
		 "print them)", tok, sep, dash + 1);
	return -EINVAL;
}

int col_step_filter_parse(const char *spec, struct step_filter **out, int *n, char *why,
			  size_t whylen)
{
	char *dup = strdup(spec), *save, *tok;
	struct step_filter *f = NULL;
	int cnt = 0, e = 0;

	if (!dup)
		return -ENOMEM;
	for (tok = strtok_r(dup, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct step_filter *nf = realloc(f, (size_t)(cnt + 1) * sizeof(*f));

		if (!nf) {
			e = -ENOMEM;
			break;
		}
		f = nf;
		if ((e = parse_one(tok, &f[cnt], why, whylen)) < 0) {
			free(f[cnt].module);	/* a refused item is not counted */
			break;
		}
		cnt++;
	}
	free(dup);
	if (!e && cnt == 0) {
		snprintf(why, whylen, "empty filter");
		e = -EINVAL;
	}
	if (e < 0) {
		col_step_filter_free(f, cnt);
		return e;
	}
	*out = f;
	*n = cnt;
	return 0;
}

static int module_matches(const struct step_filter *f, const char *path, int is_exe)
{
	const char *base = strrchr(path, '/');

	if (!f->module)
		return is_exe;
	base = base ? base + 1 : path;
	return strcmp(f->module, path) == 0 || strcmp(f->module, base) == 0;
}

/* ELF address -> file offset through the PT_LOAD segments; symbol lookup. */
static int elf_lookup(const char *path, const struct step_filter *f, uint64_t *start,
		      uint64_t *end, char *why, size_t whylen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), e = -ENOENT;
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t nph;
	uint64_t a = f->start, b = f->end;
	int found = !f->sym;

	if (fd < 0) {
		snprintf(why, whylen, "%s: cannot read the module", path);
		return -ENOENT;
	}
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		goto out;
	while (!found && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) ||
		    !(d = elf_getdata(scn, NULL)) || !sh.sh_entsize)
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) || GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !sym.st_value || !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
			    strcmp(name, f->sym) != 0)
				continue;
			a = sym.st_value;
			b = sym.st_value + (sym.st_size ? sym.st_size : 1);
			found = 1;
			break;
		}
	}
	if (!found) {
		snprintf(why, whylen, "no function '%s' in %s", f->sym, path);
		e = -ENOENT;
		goto out;
	}
	e = -ERANGE;
	if (elf_getphdrnum(elf, &nph) == 0)
		for (size_t i = 0; i < nph; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    a < ph.p_vaddr || a >= ph.p_vaddr + ph.p_filesz)
				continue;
			*start = a - ph.p_vaddr + ph.p_offset;
			*end = b - ph.p_vaddr + ph.p_offset;
			e = 0;
			break;
		}
	if (e)
		snprintf(why, whylen, "%#llx is in no loaded segment of %s", (unsigned long long)a, path);
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return e;
}

int col_step_filter_check(struct step_filter *f, int n, const char *exe, char *why, size_t whylen)
{
	const char *base = exe ? strrchr(exe, '/') : NULL;

	base = base ? base + 1 : exe;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		uint64_t s, e;
		int err;

		if (f[i].module && strchr(f[i].module, '/')) {
			/* the mappings name files by their canonical path */
			if (!realpath(f[i].module, path)) {
				snprintf(why, whylen, "%s: %s", f[i].module, strerror(errno));
				return -ENOENT;
			}
			char *abs = strdup(path);
			if (!abs)
				return -ENOMEM;
			free(f[i].module);
			f[i].module = abs;
		} else if (exe && (!f[i].module || strcmp(f[i].module, base) == 0)) {
			if (!realpath(exe, path))
				continue;	/* the command's own error says it */
		} else {
			continue;	/* a library by file name: known once it is mapped */
		}
		if ((err = elf_lookup(path, &f[i], &s, &e, why, whylen)) < 0)
			return err;
	}
	return 0;
}

char *col_step_filter_perf_string(const struct step_filter *f, int n, const char *exe,
				  int *unnamed, int *unsayable)
{
	size_t cap = 1, len = 0;
	char *out = calloc(1, 1), why[512], path[4096];

	*unnamed = *unsayable = 0;
	for (int i = 0; out && i < n; i++) {
		uint64_t s, e;
		const char *mod = f[i].module ? f[i].module : exe;
		char item[4200];
		int k;

		if (!mod || !strchr(mod, '/') || !realpath(mod, path) ||
		    elf_lookup(path, &f[i], &s, &e, why, sizeof(why)) < 0) {
			(*unnamed)++;
			continue;
		}
		if (path[strcspn(path, " \t\n,")]) {
			(*unsayable)++;
			continue;
		}
		k = snprintf(item, sizeof(item), "%sfilter %#llx/%#llx@%s", len ? "," : "",
			     (unsigned long long)s, (unsigned long long)(e - s), path);
		if (k < 0 || (size_t)k >= sizeof(item))
			continue;
		if (len + (size_t)k + 1 > cap) {
			char *no = realloc(out, cap = len + (size_t)k + 1);

			if (!no) {
				free(out);
				return NULL;
			}
			out = no;
		}
		memcpy(out + len, item, (size_t)k + 1);
		len += (size_t)k;
	}
	return out;
}

int col_step_filter_resolve(struct step_filter *f, int n, uint64_t lo, uint64_t hi,
			    uint64_t off, const char *path, int is_exe, uint64_t (*r)[2],
			    int max, int *nr, char *why, size_t whylen)
{
	int added = 0;

	for (int i = 0; i < n; i++) {
		uint64_t s, e;
		int err;

		if (f[i].resolved || !module_matches(&f[i], path, is_exe))
			continue;
		if ((err = elf_lookup(path, &f[i], &s, &e, why, whylen)) < 0)
			return err;
		if (s < off || s >= off + (hi - lo))
			continue;	/* in another mapping of the module */
		if (*nr >= max) {
			snprintf(why, whylen, "too many filter ranges");
			return -E2BIG;
		}
		r[*nr][0] = lo + (s - off);
		r[*nr][1] = lo + (e - off);
		(*nr)++;
		f[i].resolved = 1;
		added++;
	}
	return added;
}
