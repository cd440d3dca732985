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

/* The loop program of the raw-PT tests, at `base`:
 *   +0x0: mov ecx,1000 ; +0x5: dec ecx ; +0x7: jnz +0x5 ; +0x9: call +0x10 ;
 *   +0xe: ret ; +0xf: nop ; +0x10: ret */
static const uint8_t pte_loop_code[] = {
	0xb9, 0xe8, 0x03, 0x00, 0x00, 0xff, 0xc9, 0x75, 0xfc,
	0xe8, 0x02, 0x00, 0x00, 0x00, 0xc3, 0x90, 0xc3,
};

/* Its trace: enabled at base, the 1000 iterations in TNT packets of 40, the return
 * from +0x10 to +0xe, then disabled.  tsc_begin / tsc_end (0: none): TSC packets in
 * the PSB+ and before the TIP.PGD.  mtc_step (0: none): a TMA in the PSB+ and an MTC
 * `mtc_step` crystal clocks later after every TNT packet (MTCFreq 0). */
static inline size_t pte_loop_trace(struct pte *e, uint64_t base, uint64_t tsc_begin,
				    uint64_t tsc_end, unsigned mtc_step)
{
	unsigned ctc = 0x10;
	pte_simple(e, ppt_psb);
	if (tsc_begin)
		pte_tsc(e, tsc_begin);
	if (mtc_step) {
		struct pt_packet tma = { .type = ppt_tma };
		tma.payload.tma.ctc = (uint16_t)ctc;
		pte_pkt(e, &tma);
	}
	pte_simple(e, ppt_psbend);
	pte_mode64(e);
	pte_ip(e, ppt_tip_pge, pt_ipc_sext_48, base);
	char bits[48];
	for (int left = 1000; left > 0;) {
		int k = left > 40 ? 40 : left;
		for (int i = 0; i < k; i++)
			bits[i] = left - i == 1 ? 'N' : 'T';
		bits[k] = '\0';
		pte_tnt(e, bits);
		left -= k;
		if (mtc_step) {
			ctc += mtc_step;
			struct pt_packet mtc = { .type = ppt_mtc };
			mtc.payload.mtc.ctc = (uint8_t)ctc;
			pte_pkt(e, &mtc);
		}
	}
	pte_ip(e, ppt_tip, pt_ipc_sext_48, base + 0xe);
	if (tsc_end)
		pte_tsc(e, tsc_end);
	pte_ip(e, ppt_tip_pgd, pt_ipc_suppressed, 0);
	return pte_len(e);
}

#endif
