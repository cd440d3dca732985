/* bench/decode-speed: the bare libipt loops, the physical limit of a libipt decoder:
 * sync, drain events, next; no output.  The image is built as xptrace builds it
 * (image section cache + file sections), and the block loop uses the same block
 * boundaries as `xptrace decode --blocks` (a block ends at every branch).
 * usage: decode-speed-bare insn|block TRACE.pt ELF:BASE */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "decoders/pt/dpt.h"

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	int insn = strcmp(argv[1], "insn") == 0;
	int fd = open(argv[2], O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return 1;
	uint8_t *buf = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	char *elf = strdup(argv[3]), *colon = strrchr(elf, ':');
	*colon = '\0';
	struct dpt_image *img = dpt_image_new("bare");
	if (buf == MAP_FAILED || dpt_image_add_elf(img, elf, 1, strtoull(colon + 1, NULL, 0), NULL, NULL) < 0)
		return 1;
	struct pt_config cfg;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + st.st_size;
	uint64_t n = 0;
	int status;
	if (insn) {
		struct pt_insn_decoder *d = pt_insn_alloc_decoder(&cfg);
		pt_insn_set_image(d, dpt_image_pt(img));
		while ((status = pt_insn_sync_forward(d)) >= 0) {
			for (;;) {
				struct pt_insn in;
				struct pt_event ev;
				while (status & pts_event_pending)
					if ((status = pt_insn_event(d, &ev, sizeof(ev))) < 0)
						break;
				if (status < 0)
					break;
				status = pt_insn_next(d, &in, sizeof(in));
				n += in.iclass != ptic_error;
				if (status < 0)
					break;
			}
			if (status == -pte_eos)
				break;
		}
		pt_insn_free_decoder(d);
	} else {
		cfg.flags.variant.block.end_on_call = 1;
		cfg.flags.variant.block.end_on_jump = 1;
		struct pt_block_decoder *d = pt_blk_alloc_decoder(&cfg);
		pt_blk_set_image(d, dpt_image_pt(img));
		while ((status = pt_blk_sync_forward(d)) >= 0) {
			for (;;) {
				struct pt_block b;
				struct pt_event ev;
				while (status & pts_event_pending)
					if ((status = pt_blk_event(d, &ev, sizeof(ev))) < 0)
						break;
				if (status < 0)
					break;
				status = pt_blk_next(d, &b, sizeof(b));
				n += b.ninsn;
				if (status < 0)
					break;
			}
			if (status == -pte_eos)
				break;
		}
		pt_blk_free_decoder(d);
	}
	printf("%lu instructions\n", (unsigned long)n);
	dpt_image_free(img);
	free(elf);
	return 0;
}
