/* Test helper: builds raw Intel PT with libipt's own encoder (pt_enc_next), so decoder
 * tests check against packets made by an independent implementation. */
#ifndef PT_ENC_H
#define PT_ENC_H

#include <intel-pt.h>
#include <stdint.h>
#include <stdlib.h>

struct pte {
	uint8_t *buf;
	size_t cap;
	struct pt_encoder *enc;
	int failed;
};

static inline void pte_init(struct pte *e, size_t cap)
{
	struct pt_config cfg;
	e->buf = calloc(1, cap);
	e->cap = cap;
	pt_config_init(&cfg);
	cfg.begin = e->buf;
	cfg.end = e->buf + cap;
	e->enc = pt_alloc_encoder(&cfg);
	e->failed = !e->buf || !e->enc;
}

static inline void pte_free(struct pte *e)
{
	pt_free_encoder(e->enc);
	free(e->buf);
}

static inline size_t pte_len(const struct pte *e)
{
	uint64_t off = 0;
	pt_enc_get_offset(e->enc, &off);
	return (size_t)off;
}

static inline void pte_pkt(struct pte *e, const struct pt_packet *p)
{
	if (pt_enc_next(e->enc, p) < 0)
		e->failed = 1;
}

static inline void pte_simple(struct pte *e, enum pt_packet_type t)
{
	struct pt_packet p = { .type = t };
	pte_pkt(e, &p);
}

static inline void pte_ip(struct pte *e, enum pt_packet_type t, enum pt_ip_compression ipc,
			  uint64_t ip)
{
	struct pt_packet p = { .type = t };
	p.payload.ip.ipc = ipc;
	p.payload.ip.ip = ip;
	pte_pkt(e, &p);
}

static inline void pte_mode64(struct pte *e)
{
	struct pt_packet p = { .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	pte_pkt(e, &p);
}

/* `bits` as a string of 'T'/'N', oldest first. */
static inline void pte_tnt(struct pte *e, const char *bits)
{
	struct pt_packet p = { .type = ppt_tnt_8 };
	uint8_t n = 0;
	for (const char *b = bits; *b; b++, n++)
		p.payload.tnt.payload = p.payload.tnt.payload << 1 | (*b == 'T');
	p.payload.tnt.bit_size = n;
	if (n > 6)
		p.type = ppt_tnt_64;
	pte_pkt(e, &p);
}

static inline void pte_tsc(struct pte *e, uint64_t tsc)
{
	struct pt_packet p = { .type = ppt_tsc };
	p.payload.tsc.tsc = tsc;
	pte_pkt(e, &p);
}

#endif
