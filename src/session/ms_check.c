/* Whether a stored snapshot can stand for its module: a file cut short or emptied
 * (a copy interrupted, a disk full, a hand edit) still opens as ELF often enough, and
 * would then give no symbols and no code without a word. */
#include "session/ms_store.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The bytes the ELF header says the file holds: the header, both header tables, every
 * loaded segment and every section with content.  0: a table cannot be read. */
static uint64_t elf_extent(Elf *e)
{
	GElf_Ehdr eh;
	size_t nph = 0, nsh = 0;
	uint64_t end;

	if (!gelf_getehdr(e, &eh))
		return 0;
	end = eh.e_ehsize;
	if (elf_getphdrnum(e, &nph) < 0)
		return 0;
	/* the header's own count: libelf drops a table that lies past the end of the file
	 * (0 only when the count is in the first section header, too many for e_shnum) */
	nsh = eh.e_shnum;
	if (!nsh && eh.e_shoff && elf_getshdrnum(e, &nsh) < 0)
		return 0;
	if (nph && eh.e_phoff + (uint64_t)nph * eh.e_phentsize > end)
		end = eh.e_phoff + (uint64_t)nph * eh.e_phentsize;
	if (nsh && eh.e_shoff + (uint64_t)nsh * eh.e_shentsize > end)
		end = eh.e_shoff + (uint64_t)nsh * eh.e_shentsize;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end)
			end = ph.p_offset + ph.p_filesz;
	}
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(e, scn));) {
		GElf_Shdr sh;
		if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS && sh.sh_offset + sh.sh_size > end)
			end = sh.sh_offset + sh.sh_size;
	}
	return end;
}

int ms_check_file(const char *path, const uint8_t *bid, size_t bid_size, char *why, size_t whylen)
{
	unsigned char ident[EI_NIDENT];
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		int e = errno;
		snprintf(why, whylen, "cannot be read: %s", strerror(e));
		if (fd >= 0)
			close(fd);
		return -e;
	}
	if (st.st_size == 0) {
		close(fd);
		snprintf(why, whylen, "empty (0 bytes)");
		return -ENODATA;
	}
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		close(fd);
		snprintf(why, whylen, "not an ELF file");
		return -ENOEXEC;
	}
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	uint64_t need = e ? elf_extent(e) : 0;
	if (e)
		elf_end(e);
	close(fd);
	if (!need || need > (uint64_t)st.st_size) {
		if (need)
			snprintf(why, whylen, "truncated (%" PRIu64 " bytes, its ELF headers describe %" PRIu64 ")",
				 (uint64_t)st.st_size, need);
		else
			snprintf(why, whylen, "truncated (%" PRIu64 " bytes: its ELF headers cannot be read)",
				 (uint64_t)st.st_size);
		return -EBADMSG;
	}
	if (!bid || !bid_size)
		return 0;
	uint8_t have[MS_BUILD_ID_MAX];
	size_t nhave = 0;
	char want_hex[2 * MS_BUILD_ID_MAX + 1], have_hex[2 * MS_BUILD_ID_MAX + 1];
	if (ms_build_id_file(path, have, &nhave) < 0)
		nhave = 0;
	if (nhave == bid_size && memcmp(have, bid, bid_size) == 0)
		return 0;
	ms_hex(want_hex, bid, bid_size);
	ms_hex(have_hex, have, nhave);
	snprintf(why, whylen, "build-id mismatch (the trace has %s, the snapshot %s)", want_hex,
		 nhave ? have_hex : "none");
	return -ESTALE;
}
