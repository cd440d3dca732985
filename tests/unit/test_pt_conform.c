/* PT decode conformance: traces made by libipt's encoder over hand-assembled code,
 * decoded by `xptrace decode --pt --raw` in this process, against the stream libipt's
 * reference semantics give (written by hand from the packets, as a .ptt file's
 * expected ptxed output): the end of the trace, asynchronous disables, power events,
 * transactions (and the BDM64 erratum of --cpu 6/61), and a TIP.PGD without an IP at
 * a ret in libipt's instruction decoder.  Both libipt decoders give each stream. */
#include "xp_test.h"

#include "decoders/pt/dpt.h"
#include "pt_enc.h"

#define B 0x100000ull

/* B+0x0: nop ; 0x1: nop ; 0x2: jz 0x6 ; 0x4: nop ; 0x5: nop ; 0x6: call 0x10 ;
 * 0xb: nop ; 0xc: nop ; 0xd: ret ; 0xe: hlt ; 0xf: hlt ; 0x10: nop ; 0x11: nop ;
 * 0x12: ret ; 0x13: hlt ; 0x14..0x1f: nop ; 0x20: jmp *%rax ; 0x22: hlt ;
 * 0x23: vmlaunch ; 0x26: hlt ; 0x27: nop ; 0x28: vmresume ; 0x2b: hlt ;
 * 0x2c: call 0x32 ; 0x31: hlt ; 0x32: syscall ; 0x34: ret */
static const uint8_t code[] = {
	0x90, 0x90, 0x74, 0x02, 0x90, 0x90, 0xe8, 0x05, 0x00, 0x00, 0x00, 0x90, 0x90, 0xc3,
	0xf4, 0xf4, 0x90, 0x90, 0xc3, 0xf4, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
	0x90, 0x90, 0x90, 0x90, 0xff, 0xe0, 0xf4, 0x0f, 0x01, 0xc2, 0xf4, 0x90, 0x0f, 0x01, 0xc3,
	0xf4, 0xe8, 0x01, 0x00, 0x00, 0x00, 0xf4, 0x0f, 0x05, 0xc3,
};

static char codef[1024], rawarg[1100], ptf[1024];

static int setup(void **state)
{
	if (xp_test_tmp_setup(state) || xp_test_path(codef, sizeof(codef), "code.bin") ||
	    xp_test_path(ptf, sizeof(ptf), "t.pt"))
		return -1;
	snprintf(rawarg, sizeof(rawarg), "%s:%#llx", codef, B);
	FILE *f = fopen(codef, "wb");
	int ok = f && fwrite(code, 1, sizeof(code), f) == sizeof(code);
	return (f ? fclose(f) : 0) == 0 && ok ? 0 : -1;
}

/* ---- packets ---- */

static void ip_pkt(struct pte *e, enum pt_packet_type t, uint64_t off)
{
	pte_ip(e, t, pt_ipc_sext_48, B + off);
}

static void fup(struct pte *e, uint64_t off) { ip_pkt(e, ppt_fup, off); }
static void tip(struct pte *e, uint64_t off) { ip_pkt(e, ppt_tip, off); }
static void pge(struct pte *e, uint64_t off) { ip_pkt(e, ppt_tip_pge, off); }
static void pgd(struct pte *e, uint64_t off) { ip_pkt(e, ppt_tip_pgd, off); }
static void pgd_noip(struct pte *e) { pte_ip(e, ppt_tip_pgd, pt_ipc_suppressed, 0); }

/* PSB+ with the IP where tracing is (fup_off), or tracing off (fup_off < 0) */
static void psb(struct pte *e, long fup_off)
{
	pte_simple(e, ppt_psb);
	pte_mode64(e);
	if (fup_off >= 0)
		fup(e, (uint64_t)fup_off);
	pte_simple(e, ppt_psbend);
}

static void mode_tsx(struct pte *e, int intx, int abrt)
{
	struct pt_packet p = { .type = ppt_mode };
	p.payload.mode.leaf = pt_mol_tsx;
	p.payload.mode.bits.tsx.intx = (uint32_t)intx;
	p.payload.mode.bits.tsx.abrt = (uint32_t)abrt;
	pte_pkt(e, &p);
}

static void mwait(struct pte *e, uint32_t hints, uint32_t ext)
{
	struct pt_packet p = { .type = ppt_mwait };
	p.payload.mwait.hints = hints;
	p.payload.mwait.ext = ext;
	pte_pkt(e, &p);
}

static void pwre(struct pte *e, uint8_t state, uint8_t sub)
{
	struct pt_packet p = { .type = ppt_pwre };
	p.payload.pwre.state = state;
	p.payload.pwre.sub_state = sub;
	pte_pkt(e, &p);
}

static void exstop(struct pte *e)
{
	struct pt_packet p = { .type = ppt_exstop };
	p.payload.exstop.ip = 1;
	pte_pkt(e, &p);
}

static void pwrx_int(struct pte *e, uint8_t last, uint8_t deepest)
{
	struct pt_packet p = { .type = ppt_pwrx };
	p.payload.pwrx.last = last;
	p.payload.pwrx.deepest = deepest;
	p.payload.pwrx.interrupt = 1;
	pte_pkt(e, &p);
}

static void write_trace(void (*packets)(struct pte *))
{
	struct pte e;
	pte_init(&e, 4096);
	packets(&e);
	assert_false(e.failed);
	FILE *f = fopen(ptf, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(e.buf, 1, pte_len(&e), f), pte_len(&e));
	fclose(f);
	pte_free(&e);
}

/* ---- decoding ---- */

/* The text `--insn` of the trace in ptf, in ptxed's terms: an instruction as "OFF
 * MNEMONIC" (OFF from B, in hex; "? " first when speculative), a marker line
 * ("--- - -1 WHAT") as "[WHAT]", a message as "! WHAT" (after the file name). */
static const char *stream(int insn_decoder, const char *cpu)
{
	static char res[8192];
	const char *out;
	int rc;
	/* each decoder goes on after an error, as ptxed's --resync-on-error */
	if (cpu && insn_decoder)
		rc = xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "cpu", cpu,
				    "resync-on-error", "", "insn-decoder", "", NULL);
	else if (cpu)
		rc = xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "cpu", cpu,
				    "resync-on-error", "", NULL);
	else if (insn_decoder)
		rc = xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "resync-on-error", "",
				    "insn-decoder", "", NULL);
	else
		rc = xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "resync-on-error", "", NULL);
	assert_int_equal(rc, 0);
	size_t n = 0;
	res[0] = 0;
	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char line[256];
		assert_true(len < sizeof(line));
		memcpy(line, l, len);
		line[len] = 0;
		int w;
		const char *msg = strstr(line, "t.pt: ");
		if (!strncmp(line, "--- - -1 ", 9)) {
			w = snprintf(res + n, sizeof(res) - n, "[%s]\n", line + 9);
		} else if (!strncmp(line, "xptrace: ", 9) && msg) {
			w = snprintf(res + n, sizeof(res) - n, "! %s\n", msg + 6);
		} else {
			/* "- -1 " + the 16-wide address + "  " + symbol (32) + " " + bytes (30) + " " */
			if (len <= 87 || strncmp(line, "- -1 ", 5))
				fail_msg("not an instruction line: %s", line);
			bool spec = line[5] == '?';
			unsigned long long ip = strtoull(line + 5 + spec, NULL, 16);
			w = snprintf(res + n, sizeof(res) - n, "%s%llx %s\n", spec ? "? " : "", ip - B, line + 87);
		}
		assert_true(w > 0 && (size_t)w < sizeof(res) - n);
		n += (size_t)w;
		l += len + (nl != NULL);
	}
	return res;
}

/* Both decoders give `want`. */
static void check(void (*packets)(struct pte *), const char *cpu, const char *want)
{
	write_trace(packets);
	assert_string_equal(stream(0, cpu), want);
	assert_string_equal(stream(1, cpu), want);
}

/* ---- 1. the end of the trace: nothing past what the trace proves ---- */

/* the last TNT bit (the jz taken) ends the trace: the code after the jz is not
 * known to have run */
static void eos_tnt(struct pte *e)
{
	psb(e, 0);
	pte_tnt(e, "T");
}

/* the last TIP (the ret's target): its target's code is not shown */
static void eos_tip(struct pte *e)
{
	psb(e, 0x10);
	tip(e, 0xb);
}

/* an interrupt (FUP + TIP) last: fup-tip-eos.ptt */
static void eos_fup_tip(struct pte *e)
{
	psb(e, 0);
	fup(e, 1);
	tip(e, 0x14);
}

/* a PSB+ with tracing on and nothing after: not even its first instruction is
 * known (psb-fup-psbend.ptt) */
static void eos_psb(struct pte *e)
{
	psb(e, 0x14);
}

/* the last TNT bit: the jz not taken.  The code after it needs no trace up to the
 * ret, but the trace is over with that bit (libipt's pts_eos, where ptxed stops) */
static void eos_cond(struct pte *e)
{
	psb(e, 0);
	pte_tnt(e, "N");
}

static void test_end_of_trace(void **state)
{
	(void)state;
	check(eos_tnt, NULL,
	      "0 nop\n1 nop\n2 je 0x100006\n[end of trace]\n");
	check(eos_tip, NULL,
	      "10 nop\n11 nop\n12 retq\n[end of trace]\n");
	check(eos_fup_tip, NULL,
	      "0 nop\n[interrupt 0x100001 -> 0x100014]\n[end of trace]\n");
	check(eos_psb, NULL, "[end of trace]\n");
	check(eos_cond, NULL, "0 nop\n1 nop\n2 je 0x100006\n[end of trace]\n");
}

/* ---- 2. asynchronous disables, power events ---- */

/* FUP + TIP.PGD in straight-line code: fup-tip_pgd.ptt */
static void async_disable(struct pte *e)
{
	psb(e, 0x14);
	fup(e, 0x17);
	pgd(e, 0x18);
}

/* at the first instruction: psb-fup-tip_pgd.ptt */
static void async_disable_first(struct pte *e)
{
	psb(e, 0x14);
	fup(e, 0x14);
	pgd(e, 0x15);
}

/* without an IP in the TIP.PGD, after a call and a return */
static void async_disable_noip(struct pte *e)
{
	psb(e, 0);
	pte_tnt(e, "N");
	tip(e, 0xb);
	fup(e, 0xc);
	pgd_noip(e);
}

/* a power session inside traced code, tracing disabled where it stood
 * (exstop_ip-tip_pgd.ptt, mwait-pwre-exstop_ip-pwrx.ptt): MWAIT and EXSTOP bind to
 * the FUP, PWRE and PWRX stand alone (PWRE is told at once, before the code) */
static void power(struct pte *e)
{
	psb(e, 0x14);
	mwait(e, 7, 1);
	pwre(e, 1, 0);
	exstop(e);
	fup(e, 0x16);
	pwrx_int(e, 1, 0);
	fup(e, 0x16);
	pgd(e, 0x17);
}

/* the same with tracing off: the events alone */
static void power_off(struct pte *e)
{
	psb(e, -1);
	mwait(e, 7, 1);
	pwre(e, 1, 0);
	exstop(e);
	fup(e, 0x14);
	pwrx_int(e, 1, 0);
}

/* TraceStop after the disable: fup-tip_pgd-stop.ptt */
static void disable_stop(struct pte *e)
{
	psb(e, 0x14);
	fup(e, 0x15);
	pgd(e, 0x16);
	pte_simple(e, ppt_stop);
}

/* SKD022 (skd022.ptt): a VM entry that clears TraceEn sends a FUP before its TIP.PGD,
 * so the disable looks asynchronous, before the VMLAUNCH; with the erratum (--cpu
 * 6/78) the VMLAUNCH ran traced and disabled tracing */
static void vm_entry(struct pte *e)
{
	psb(e, 0x23);
	fup(e, 0x23);
	pgd(e, 0x26);
	pge(e, 0x27);
	fup(e, 0x28);
	pgd(e, 0x2b);
}

static void test_async_disable(void **state)
{
	(void)state;
	check(async_disable, NULL, "14 nop\n15 nop\n16 nop\n[disabled]\n");
	check(async_disable_first, NULL, "[disabled]\n");
	check(disable_stop, NULL, "14 nop\n[disabled]\n[stopped]\n");
	check(async_disable_noip, NULL,
	      "0 nop\n1 nop\n2 je 0x100006\n4 nop\n5 nop\n6 callq 0x100010\n10 nop\n11 nop\n12 retq\n"
	      "b nop\n[disabled]\n");
	check(power, NULL,
	      "[pwre c1.0]\n14 nop\n15 nop\n[mwait 0x7 0x1 at 0x100016]\n[exstop at 0x100016]\n"
	      "[pwrx interrupt: c1 (c0)]\n[disabled]\n");
	check(vm_entry, "6/78",
	      "23 vmlaunch\n[disabled]\n[enabled at 0x100027]\n27 nop\n28 vmresume\n[disabled]\n");
	check(vm_entry, NULL, "[disabled]\n[enabled at 0x100027]\n27 nop\n[disabled]\n");
	check(power_off, NULL,
	      "[pwre c1.0]\n[mwait 0x7 0x1 at 0x100014]\n[exstop at 0x100014]\n[pwrx interrupt: c1 (c0)]\n");
}

/* ---- 3. transactions ---- */

/* begins at 0x15, commits at 0x17 */
static void tsx_commit(struct pte *e)
{
	psb(e, 0x14);
	mode_tsx(e, 1, 0);
	fup(e, 0x15);
	mode_tsx(e, 0, 0);
	fup(e, 0x17);
	fup(e, 0x18);
	pgd(e, 0x19);
}

/* begins at 4 (after the jz falls through), calls 0x10, aborts at 0x12: the abort
 * handler at 0x14 runs */
static void tsx_abort(struct pte *e)
{
	psb(e, 0);
	pte_tnt(e, "N");
	mode_tsx(e, 1, 0);
	fup(e, 4);
	mode_tsx(e, 0, 1);
	fup(e, 0x12);
	tip(e, 0x14);
	fup(e, 0x16);
	pgd(e, 0x17);
}

/* the same with a timestamp: every event has a time */
static void tsx_abort_tsc(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_tsc(e, 1000);
	pte_mode64(e);
	fup(e, 0);
	pte_simple(e, ppt_psbend);
	pte_tnt(e, "N");
	mode_tsx(e, 1, 0);
	fup(e, 4);
	mode_tsx(e, 0, 1);
	fup(e, 0x12);
	tip(e, 0x14);
	fup(e, 0x16);
	pgd(e, 0x17);
}

/* BDM64 (bdm64-tnt-cond-xabort.ptt): in a transaction since the PSB+, the jz's TNT
 * bit is wrong (N); the abort at 0x13 cannot be reached from the fall-through
 * without more trace, so with the erratum (--cpu 6/61) the jz went there */
static void tsx_bdm64(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_mode64(e);
	mode_tsx(e, 1, 0);
	fup(e, 0);
	pte_simple(e, ppt_psbend);
	pte_tnt(e, "N");
	mode_tsx(e, 0, 1);
	fup(e, 0x13);
	tip(e, 0x14);
	fup(e, 0x15);
	pgd(e, 0x16);
}

/* SKD010 (skd010-mode_tsx-fup.ptt): no FUP after the OVF, tracing resumes with the
 * transaction's MODE.TSX + FUP (--cpu 6/78) */
static void tsx_skd010(struct pte *e)
{
	psb(e, -1);
	pte_simple(e, ppt_ovf);
	mode_tsx(e, 1, 0);
	fup(e, 0x14);
	fup(e, 0x15);
	pgd(e, 0x16);
}

/* in a transaction since the PSB+, it aborts before its first instruction completes;
 * tracing is disabled at the abort handler (psb-tsx_abort-tip-fup-tip_pgd.ptt) */
static void tsx_abort_first(struct pte *e)
{
	pte_simple(e, ppt_psb);
	fup(e, 0x22);
	pte_mode64(e);
	mode_tsx(e, 1, 0);
	pte_simple(e, ppt_psbend);
	mode_tsx(e, 0, 1);
	fup(e, 0x22);
	tip(e, 0x26);
	fup(e, 0x26);
	pgd(e, 0x26);
}

/* BDM64, indirect branch (bdm64-tip-xabort.ptt): the jmp's TIP names a destination
 * where the transaction aborts at once; the transfer is dropped with the abort */
static void tsx_bdm64_tip(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_mode64(e);
	mode_tsx(e, 1, 0);
	fup(e, 0x20);
	pte_simple(e, ppt_psbend);
	tip(e, 0x22);
	mode_tsx(e, 0, 1);
	fup(e, 0x22);
	tip(e, 0x14);
	fup(e, 0x15);
	pgd(e, 0x16);
}

static void test_tsx_stream(void **state)
{
	(void)state;
	check(tsx_commit, NULL,
	      "14 nop\n[begin transaction at 0x100015]\n? 15 nop\n? 16 nop\n[committed at 0x100017]\n"
	      "17 nop\n[disabled]\n");
	check(tsx_abort, NULL,
	      "0 nop\n1 nop\n2 je 0x100006\n[begin transaction at 0x100004]\n? 4 nop\n? 5 nop\n"
	      "? 6 callq 0x100010\n? 10 nop\n? 11 nop\n[aborted at 0x100012]\n"
	      "[interrupt 0x100012 -> 0x100014]\n14 nop\n15 nop\n[disabled]\n");
	check(tsx_bdm64, "6/61",
	      "? 0 nop\n? 1 nop\n? 2 je 0x100006\n[aborted at 0x100013]\n[interrupt 0x100013 -> 0x100014]\n"
	      "14 nop\n[disabled]\n");
	check(tsx_abort_first, NULL,
	      "[aborted at 0x100022]\n[interrupt 0x100022 -> 0x100026]\n[disabled]\n");
	check(tsx_bdm64_tip, "6/61",
	      "? 20 jmpq *%rax\n[aborted at 0x100022]\n[interrupt 0x100022 -> 0x100014]\n14 nop\n[disabled]\n");
	/* without the erratum the wrong bit leads to the ret, whose query fails */
	check(tsx_bdm64, NULL,
	      "? 0 nop\n? 1 nop\n? 2 je 0x100006\n? 4 nop\n? 5 nop\n? 6 callq 0x100010\n? 10 nop\n? 11 nop\n"
	      "? 12 retq\n[gap: trace stream does not match query (offset 39, 21 bytes lost)]\n"
	      "! 1 gaps, 21 trace bytes skipped\n");
	/* without it the FUP after the OVF is not where tracing resumed: an error (each
	 * libipt decoder names it its way) */
	write_trace(tsx_skd010);
	for (int insn = 0; insn < 2; insn++) {
		const char *s = stream(insn, NULL);
		assert_non_null(strstr(s, "[gap: overflow (offset 0, 0 bytes lost)]\n[begin transaction]\n[gap: "));
		assert_null(strstr(s, "14 nop"));
	}
	check(tsx_skd010, "6/78",
	      "[gap: overflow (offset 0, 0 bytes lost)]\n[begin transaction at 0x100014]\n? 14 nop\n[disabled]\n"
	      "! 1 gaps, 0 trace bytes skipped\n");
}

/* The views over an aborted transaction: jsonl marks, the tallies and the call tree
 * keep its code apart (0x4-0x6 and 0x10-0x11: 5 instructions, the call to 0x10 makes
 * no frame), callgrind leaves it out. */
static void test_tsx_views(void **state)
{
	(void)state;
	const char *out;
	write_trace(tsx_abort);
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "format", "jsonl", NULL), 0);
	assert_string_equal(out,
		"{\"ip\":\"0x100000\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100001\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100002\",\"sym\":null,\"bytes\":\"74 02\",\"insn\":\"je 0x100006\"}\n"
		"{\"event\":\"tsx_begin\",\"ip\":\"0x100004\"}\n"
		"{\"ip\":\"0x100004\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\",\"speculative\":true}\n"
		"{\"ip\":\"0x100005\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\",\"speculative\":true}\n"
		"{\"ip\":\"0x100006\",\"sym\":null,\"bytes\":\"e8 05 00 00 00\",\"insn\":\"callq 0x100010\",\"speculative\":true}\n"
		"{\"ip\":\"0x100010\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\",\"speculative\":true}\n"
		"{\"ip\":\"0x100011\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\",\"speculative\":true}\n"
		"{\"event\":\"tsx_abort\",\"ip\":\"0x100012\"}\n"
		"{\"event\":\"interrupt\",\"from\":\"0x100012\",\"to\":\"0x100014\"}\n"
		"{\"ip\":\"0x100014\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100015\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"event\":\"disabled\",\"addr\":\"0x100017\"}\n");
	/* with a time in front */
	write_trace(tsx_abort_tsc);
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "format", "jsonl", NULL), 0);
	assert_non_null(strstr(out,
		"{\"time\":1000,\"ip\":\"0x100002\",\"sym\":null,\"bytes\":\"74 02\",\"insn\":\"je 0x100006\"}\n"
		"{\"time\":1000,\"event\":\"tsx_begin\",\"ip\":\"0x100004\"}\n"
		"{\"time\":1000,\"ip\":\"0x100004\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\",\"speculative\":true}\n"));
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, NULL), 0);
	assert_non_null(strstr(out, "1000 -1 ?         100005  [unknown]"));
	/* the text line of a speculative instruction */
	write_trace(tsx_abort);
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, NULL), 0);
	assert_non_null(strstr(out, "--- - -1 begin transaction at 0x100004\n"
		"- -1 ?         100004  [unknown]                        90                             nop\n"));
	assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", ptf, "raw", rawarg, "format", "jsonl", NULL), 0);
	assert_string_equal(out,
		"{\"start\":\"0x100000\",\"end\":\"0x100002\",\"sym\":null,\"count\":1,\"insns\":3,\"cycles\":null,"
		"\"ipc\":null,\"taken\":0,\"not_taken\":1,\"mainline\":\"not_taken\",\"aborted\":0}\n"
		"{\"start\":\"0x100014\",\"end\":\"0x100015\",\"sym\":null,\"count\":1,\"insns\":2,\"cycles\":null,"
		"\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null,\"aborted\":0}\n"
		"{\"start\":\"0x100004\",\"end\":\"0x100006\",\"sym\":null,\"count\":0,\"insns\":3,\"cycles\":null,"
		"\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null,\"aborted\":1}\n"
		"{\"start\":\"0x100010\",\"end\":\"0x100011\",\"sym\":null,\"count\":0,\"insns\":2,\"cycles\":null,"
		"\"ipc\":null,\"taken\":null,\"not_taken\":null,\"mainline\":null,\"aborted\":1}\n");
	assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", ptf, "raw", rawarg, NULL), 0);
	assert_non_null(strstr(out, "# 4 blocks, 5 instructions, 0 gaps, 5 instructions in aborted transactions; "
				    "sorted by count\n"));
	assert_non_null(strstr(out, " not_taken    aborted\n"));
	assert_int_equal(xp_test_engine(&out, NULL, "calltree", "pt", ptf, "raw", rawarg, NULL), 0);
	assert_string_equal(out,
		"# call tree: insns, total 5\n"
		"# Calls: exact calls; Base: self insns; Cum: with callees\n"
		"# 5 instructions ran in transactions that aborted: not in the tree\n"
		"Lvl   RL      Calls          Base           Cum  Module                Name\n"
		"  1    1          0             5             5  code.bin              0x0000000000000000\n");
	assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", ptf, "raw", rawarg, "format", "callgrind", NULL), 0);
	assert_non_null(strstr(out, "\n0x100014 "));
	assert_null(strstr(out, "0x100004"));
	assert_null(strstr(out, "0x100010"));
	assert_non_null(strstr(out, "\ntotals: 5\n"));
	/* a committed transaction counts like any code (its begin and end cut blocks) */
	write_trace(tsx_commit);
	assert_int_equal(xp_test_engine(&out, NULL, "blocks", "pt", ptf, "raw", rawarg, NULL), 0);
	assert_non_null(strstr(out, "# 3 blocks, 4 instructions, 0 gaps; sorted by count\n"));
	assert_null(strstr(out, "aborted"));
}

/* The decoder holds a transaction's events until its outcome: a dpt_run that pauses
 * inside it (at a timestamp past its limit) and resumes gives the same events, the
 * aborted ones marked, as one run. */
struct evrec {
	char text[4096];
	size_t len;
};

static int evrec_fn(void *ctx, const struct xev *ev)
{
	struct evrec *r = ctx;
	int n = snprintf(r->text + r->len, sizeof(r->text) - r->len, "%d %lx-%lx %lx%s%s\n", ev->kind,
			 (unsigned long)ev->ip, (unsigned long)ev->end, (unsigned long)ev->addr,
			 ev->flags & XEV_F_SPECULATIVE ? " spec" : "", ev->flags & XEV_F_ABORTED ? " aborted" : "");
	assert_true(n > 0 && (size_t)n < sizeof(r->text) - r->len);
	r->len += (size_t)n;
	return 0;
}

static void tsx_abort_paused(struct pte *e)
{
	pte_simple(e, ppt_psb);
	pte_tsc(e, 1000);
	pte_mode64(e);
	fup(e, 0);
	pte_simple(e, ppt_psbend);
	pte_tnt(e, "N");
	mode_tsx(e, 1, 0);
	fup(e, 4);
	pte_tsc(e, 2000);	/* in the transaction: the stepped run pauses here */
	mode_tsx(e, 0, 1);
	fup(e, 0x12);
	tip(e, 0x14);
	fup(e, 0x16);
	pgd(e, 0x17);
}

static void test_tsx_paused(void **state)
{
	(void)state;
	struct pte e;
	struct evrec one = { .len = 0 }, stepped = { .len = 0 };
	struct xev_sink s1 = { evrec_fn, &one, NULL }, s2 = { evrec_fn, &stepped, NULL };
	struct dpt_options opt;
	struct dpt_dec *d;

	pte_init(&e, 4096);
	tsx_abort_paused(&e);
	struct dpt_image *img = dpt_image_new("conform");
	assert_non_null(img);
	assert_int_equal(dpt_image_add_file(img, codef, 0, sizeof(code), B), 0);
	dpt_options_init(&opt);
	assert_int_equal(dpt_decode(e.buf, pte_len(&e), img, &opt, &s1, NULL), 0);
	assert_int_equal(dpt_open(&d, e.buf, pte_len(&e), img, &opt), 0);
	assert_int_equal(dpt_run(d, &s2, 1500), 0);
	assert_int_equal(dpt_time(d), 2000);
	assert_int_equal(dpt_run(d, &s2, UINT64_MAX), 0);
	dpt_close(d);
	assert_string_equal(stepped.text, one.text);
	/* blocks 4-6 and 0x10-0x11 and the call between them: aborted */
	assert_non_null(strstr(one.text, "0 100004-100006 0 spec aborted\n"
				  "2 100006-0 100010 spec aborted\n"
				  "0 100010-100011 0 spec aborted\n"));
	dpt_image_free(img);
	pte_free(&e);
}

/* Power events and the end of the trace in jsonl. */
static void test_events_jsonl(void **state)
{
	(void)state;
	const char *out;
	write_trace(power);
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "format", "jsonl", NULL), 0);
	assert_string_equal(out,
		"{\"event\":\"pwre\",\"state\":1,\"sub_state\":0,\"hw\":false}\n"
		"{\"ip\":\"0x100014\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100015\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"event\":\"mwait\",\"hints\":7,\"ext\":1,\"ip\":\"0x100016\"}\n"
		"{\"event\":\"exstop\",\"ip\":\"0x100016\"}\n"
		"{\"event\":\"pwrx\",\"last\":1,\"deepest\":0,\"wake\":\"interrupt\"}\n"
		"{\"event\":\"disabled\",\"addr\":\"0x100017\"}\n");
	write_trace(eos_tip);
	assert_int_equal(xp_test_engine(&out, NULL, "insn", "pt", ptf, "raw", rawarg, "format", "jsonl", NULL), 0);
	assert_string_equal(out,
		"{\"ip\":\"0x100010\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100011\",\"sym\":null,\"bytes\":\"90\",\"insn\":\"nop\"}\n"
		"{\"ip\":\"0x100012\",\"sym\":null,\"bytes\":\"c3\",\"insn\":\"retq\"}\n"
		"{\"event\":\"end\"}\n");
}

/* ---- 4. TIP.PGD without an IP at a ret, more trace after it ---- */

static void ret_pgd_noip(struct pte *e)
{
	psb(e, 0x10);
	pgd_noip(e);	/* binds to the ret at 0x12 */
	pge(e, 0xb);
	fup(e, 0xd);
	pgd(e, 0xe);
}

/* the same at a conditional branch and at an indirect jump */
static void cond_pgd_noip(struct pte *e)
{
	psb(e, 0);
	pgd_noip(e);	/* binds to the jz at 2 */
	pge(e, 0x14);
	fup(e, 0x15);
	pgd(e, 0x16);
}

static void jmp_pgd_noip(struct pte *e)
{
	psb(e, 0x1e);
	pgd_noip(e);	/* binds to the jmp *%rax at 0x20 */
	pge(e, 0x10);
	fup(e, 0x11);
	pgd(e, 0x12);
}

/* at a syscall, past a direct call that must not take it
 * (direct_call-tip_pgd_noip-syscall.ptt) */
static void syscall_pgd_noip(struct pte *e)
{
	psb(e, 0x2c);
	pgd_noip(e);
}

static void test_ret_pgd_noip(void **state)
{
	(void)state;
	check(ret_pgd_noip, NULL,
	      "10 nop\n11 nop\n12 retq\n[disabled]\n[enabled at 0x10000b]\nb nop\nc nop\n[disabled]\n");
	check(cond_pgd_noip, NULL, "0 nop\n1 nop\n2 je 0x100006\n[disabled]\n[enabled at 0x100014]\n14 nop\n[disabled]\n");
	check(syscall_pgd_noip, NULL, "2c callq 0x100032\n32 syscall\n[disabled]\n");
	check(jmp_pgd_noip, NULL, "1e nop\n1f nop\n20 jmpq *%rax\n[disabled]\n[enabled at 0x100010]\n10 nop\n[disabled]\n");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_end_of_trace),
		cmocka_unit_test(test_async_disable),
		cmocka_unit_test(test_tsx_stream),
		cmocka_unit_test(test_tsx_views),
		cmocka_unit_test(test_tsx_paused),
		cmocka_unit_test(test_events_jsonl),
		cmocka_unit_test(test_ret_pgd_noip),
	};
	return cmocka_run_group_tests(tests, setup, xp_test_tmp_teardown);
}
