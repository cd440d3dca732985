/* xptdbt: the valgrind tool behind `xptrace record --mode dbt` (docs/mode-dbt.md).
 *
 * It runs inside valgrind (no libc: only VG_(...) functions) and writes, per process, a
 * byte stream of what a user-only Intel PT tracer sees (xd_stream.h): the outcome of
 * every guest conditional branch and the target of every indirect jump, call and return
 * are stored by IR added to each superblock, inline (a store and a pointer bump; a
 * helper call only when the buffer fills); threads, syscalls, signals and mappings,
 * which are rare, by the core's callbacks.  xptrace turns the stream into Intel PT.
 *
 * Superblock chasing is off (--vex-guest-chase=no): every superblock then ends at its
 * first control transfer, so a guest conditional branch is the last instruction of its
 * block (or of one copy of a small loop VEX unrolled) and its Ist_Exit of kind
 * Ijk_Boring follows its IMark.  The instruction's bytes say whether it is one
 * (rep-prefixed string instructions also exit, to themselves and past themselves: no
 * branch, as in PT). */
#include <pub_tool_basics.h>
#include <pub_tool_tooliface.h>
#include <pub_tool_libcassert.h>
#include <pub_tool_libcbase.h>
#include <pub_tool_libcfile.h>
#include <pub_tool_libcprint.h>
#include <pub_tool_libcproc.h>
#include <pub_tool_machine.h>
#include <pub_tool_aspacemgr.h>
#include <pub_tool_clientstate.h>
#include <pub_tool_options.h>
#include <pub_tool_threadstate.h>
#include <pub_tool_vki.h>
#include <pub_tool_vkiscnums.h>

#include "record/dbt/tool/xd_stream.h"

#define XD_BUF (1 << 20)
#define XD_SLACK 64		/* an inline record past the limit still fits */
#define XD_MAXT 4096		/* valgrind thread ids */

/* Inline IR reads and bumps xd_ptr; the buffer's address is a constant in the code. */
static UChar xd_buf[XD_BUF + XD_SLACK];
static UChar *xd_ptr = xd_buf;

static const HChar *xd_out;	/* --xpt-out=PREFIX: the stream goes to PREFIX.<pid> */
static Int xd_fd = -1;
static Int xd_cur = -1;		/* kernel tid the records now belong to */

struct xd_thread {
	Int ktid;		/* 0: not started yet */
	Int ptid;		/* creating thread's kernel tid, until started */
	Bool in_syscall;
};
static struct xd_thread xd_th[XD_MAXT];
static Addr xd_handler[65];	/* the client's signal handlers (rt_sigaction) */

static ULong xd_now(void)
{
	struct vki_timespec ts;

	VG_(clock_gettime)(&ts, VKI_CLOCK_MONOTONIC);
	return (ULong)ts.tv_sec * 1000000000ULL + (ULong)ts.tv_nsec;
}

static void xd_flush(void)
{
	UChar *p = xd_buf;

	while (p < xd_ptr) {
		Int n = VG_(write)(xd_fd, p, (Int)(xd_ptr - p));

		if (n <= 0) {
			VG_(fmsg)("xptdbt: cannot write the trace to %s.%d\n", xd_out, VG_(getpid)());
			VG_(exit)(125);
		}
		p += n;
	}
	xd_ptr = xd_buf;
}

static void xd_u8(UChar v)
{
	*xd_ptr++ = v;
}

static void xd_u64(ULong v)
{
	VG_(memcpy)(xd_ptr, &v, 8);
	xd_ptr += 8;
}

/* A record of the callbacks: tag, time, then its words.  Records belong to the thread
 * named by the last XD_SWITCH. */
static void xd_rec(UChar tag, Int nwords, ULong a, ULong b, ULong c)
{
	ULong w[3] = { a, b, c };

	if (xd_ptr > xd_buf + XD_BUF - 64)
		xd_flush();
	xd_u8(tag);
	xd_u64(xd_now());
	for (Int i = 0; i < nwords; i++)
		xd_u64(w[i]);
}

/* Records from here on are the calling kernel thread's. */
static void xd_self(void)
{
	Int k = VG_(gettid)();

	if (k != xd_cur) {
		xd_cur = k;
		xd_rec(XD_SWITCH, 2, (ULong)k, (ULong)VG_(getpid)(), 0);
	}
}

static void xd_open(ULong parent)
{
	HChar path[4200];
	const HChar *exe = VG_(args_the_exename);
	SysRes r;
	SizeT n, m;
	VexArch arch;
	VexArchInfo ai;
	const HChar *caps;

	VG_(snprintf)(path, sizeof(path), "%s.%d", xd_out, VG_(getpid)());
	/* an exec keeps the pid: the new program's records follow the old one's */
	r = VG_(open)(path, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_APPEND, 0600);
	if (sr_isError(r)) {
		VG_(fmsg)("xptdbt: cannot create %s\n", path);
		VG_(exit)(125);
	}
	xd_fd = (Int)sr_Res(r);
	xd_ptr = xd_buf;
	xd_cur = -1;
	n = exe ? VG_(strlen)(exe) : 0;
	if (n > 4000)
		n = 4000;
	VG_(machine_get_VexArchInfo)(&arch, &ai);
	/* what the program sees of the CPU: VEX's CPUID follows these capabilities */
	caps = LibVEX_ppVexHwCaps(arch, ai.hwcaps);
	m = caps ? VG_(strlen)(caps) : 0;
	if (m > 500)
		m = 500;
	xd_rec(XD_START, 3, (ULong)VG_(getpid)(), parent, n);
	VG_(memcpy)(xd_ptr, exe, n);
	xd_ptr += n;
	xd_u64(m);
	VG_(memcpy)(xd_ptr, caps, m);
	xd_ptr += m;
}

static void xd_mapping(Addr a, SizeT len)
{
	NSegment const *s = VG_(am_find_nsegment)(a);

	if (s && s->kind != SkFileC && s->kind != SkAnonC && s->kind != SkShmC)
		return;	/* valgrind's own */
	const HChar *name = s ? VG_(am_get_filename)(s) : NULL;
	SizeT n = name ? VG_(strlen)(name) : 0;
	ULong off = s && name ? (ULong)s->offset + (a - s->start) : 0;

	if (n > 4000)
		n = 4000;
	xd_self();
	xd_rec(XD_MMAP, 3, a, len, off);
	if (xd_ptr + 8 + n > xd_buf + XD_BUF)
		xd_flush();
	xd_u64(n);
	VG_(memcpy)(xd_ptr, name, n);
	xd_ptr += n;
}

static void xd_new_mem(Addr a, SizeT len, Bool rr, Bool ww, Bool xx, ULong di)
{
	(void)rr; (void)ww; (void)di;
	if (xx)
		xd_mapping(a, len);
}

static void xd_mprotect(Addr a, SizeT len, Bool rr, Bool ww, Bool xx)
{
	(void)rr; (void)ww;
	if (xx)
		xd_mapping(a, len);
}

static void xd_start_code(ThreadId tid, ULong blocks)
{
	struct xd_thread *t = &xd_th[tid];

	(void)blocks;
	xd_self();
	if (t->ktid == 0) {
		t->ktid = xd_cur;
		xd_rec(XD_THREAD, 2, (ULong)t->ptid, VG_(get_IP)(tid), 0);
	}
}

static void xd_thread_create(ThreadId parent, ThreadId child)
{
	tl_assert(child < XD_MAXT);
	xd_th[child].ktid = 0;
	xd_th[child].ptid = xd_th[parent].ktid;
	xd_th[child].in_syscall = False;
}

static void xd_thread_exit(ThreadId tid)
{
	xd_self();
	xd_rec(XD_EXIT, 0, 0, 0, 0);
	xd_th[tid].ktid = 0;
}

static void xd_pre_syscall(ThreadId tid, UInt no, UWord *args, UInt nargs)
{
	(void)nargs;
	xd_self();
	if (no == __NR_rt_sigaction && args[0] < 65 && args[1])
		xd_handler[args[0]] = *(Addr *)args[1];
	/* the syscall instruction is 2 bytes and the guest IP is past it */
	xd_rec(XD_DISABLE, 1, VG_(get_IP)(tid) - 2, 0, 0);
	xd_th[tid].in_syscall = True;
	if (no == __NR_execve || no == __NR_execveat || no == __NR_exit_group)
		xd_flush();
}

static void xd_post_syscall(ThreadId tid, UInt no, UWord *args, UInt nargs, SysRes res)
{
	(void)no; (void)args; (void)nargs; (void)res;
	xd_self();
	if (xd_th[tid].in_syscall) {
		xd_th[tid].in_syscall = False;
		xd_rec(XD_ENABLE, 1, VG_(get_IP)(tid), 0, 0);
	}
}

static void xd_deliver(ThreadId tid, Int sig, Bool alt)
{
	Addr from = VG_(get_IP)(tid);

	(void)alt;
	xd_self();
	if (xd_th[tid].in_syscall) {
		/* interrupted in a syscall: tracing resumes in the handler */
		xd_th[tid].in_syscall = False;
		xd_rec(XD_ENABLE, 1, from, 0, 0);
	}
	xd_rec(XD_SIGNAL, 3, from, sig > 0 && sig < 65 ? xd_handler[sig] : 0, (ULong)sig);
}

static void xd_post_deliver(ThreadId tid, Int sig)
{
	(void)sig;
	xd_self();
	/* rt_sigreturn restored the interrupted state: tracing resumes there */
	if (xd_th[tid].in_syscall) {
		xd_th[tid].in_syscall = False;
		xd_rec(XD_ENABLE, 1, VG_(get_IP)(tid), 0, 0);
	}
}

static void xd_atfork_pre(ThreadId tid)
{
	(void)tid;
	xd_flush();
}

static void xd_atfork_child(ThreadId tid)
{
	Int parent = xd_th[tid].ktid ? xd_th[tid].ktid : 0;

	VG_(close)(xd_fd);
	/* the child has only the forking thread, now with the child's pid as tid */
	for (Int i = 0; i < XD_MAXT; i++)
		if ((ThreadId)i != tid)
			xd_th[i].ktid = 0;
	xd_open((ULong)parent);
	xd_th[tid].ktid = 0;
	xd_th[tid].ptid = parent;
}

enum { XD_OTHER, XD_COND, XD_INDIRECT };

/* What PT reports of the instruction, from its bytes (VEX's IR does not say: a direct
 * jump's target may still be an expression there).  Past legacy and REX prefixes:
 * Jcc rel8 (70-7f), LOOPcc/JrCXZ (e0-e3), Jcc rel32 (0f 80-8f) are conditional; RET
 * (c3, c2) and JMP/CALL through a register or memory (ff /2, ff /4) indirect. */
static int xd_kind(const UChar *p, UInt len)
{
	UInt i = 0;

	while (i < len && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0xf2 || p[i] == 0xf3 ||
			   p[i] == 0x2e || p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x36 ||
			   p[i] == 0x64 || p[i] == 0x65 || (p[i] & 0xf0) == 0x40))
		i++;
	if (i >= len)
		return XD_OTHER;
	if ((p[i] & 0xf0) == 0x70 || (p[i] >= 0xe0 && p[i] <= 0xe3))
		return XD_COND;
	if (p[i] == 0x0f && i + 1 < len && (p[i + 1] & 0xf0) == 0x80)
		return XD_COND;
	if (p[i] == 0xc3 || p[i] == 0xc2)
		return XD_INDIRECT;
	if (p[i] == 0xff && i + 1 < len && (((p[i + 1] >> 3) & 7) == 2 || ((p[i + 1] >> 3) & 7) == 4))
		return XD_INDIRECT;
	return XD_OTHER;
}

static IRTemp xd_tmp(IRSB *sb, IRType ty, IRExpr *e)
{
	IRTemp t = newIRTemp(sb->tyenv, ty);

	addStmtToIRSB(sb, IRStmt_WrTmp(t, e));
	return t;
}

/* *xd_ptr = tag (and the 8-byte `word`); xd_ptr advances; a full buffer is flushed. */
static void xd_emit(IRSB *sb, IRExpr *tag8, IRExpr *word)
{
	IRTemp p = xd_tmp(sb, Ity_I64, IRExpr_Load(Iend_LE, Ity_I64, mkIRExpr_HWord((HWord)&xd_ptr)));
	IRTemp q, full;
	IRDirty *d;

	addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(p), tag8));
	if (word) {
		IRTemp w = xd_tmp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(p),
							   IRExpr_Const(IRConst_U64(1))));
		addStmtToIRSB(sb, IRStmt_Store(Iend_LE, IRExpr_RdTmp(w), word));
	}
	q = xd_tmp(sb, Ity_I64, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(p),
					     IRExpr_Const(IRConst_U64(word ? 9 : 1))));
	addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)&xd_ptr), IRExpr_RdTmp(q)));
	full = xd_tmp(sb, Ity_I1, IRExpr_Binop(Iop_CmpLT64U,
					       IRExpr_Const(IRConst_U64((ULong)(HWord)(xd_buf + XD_BUF))),
					       IRExpr_RdTmp(q)));
	d = unsafeIRDirty_0_N(0, "xd_flush", VG_(fnptr_to_fnentry)(&xd_flush), mkIRExprVec_0());
	d->guard = IRExpr_RdTmp(full);
	addStmtToIRSB(sb, IRStmt_Dirty(d));
}

static IRSB *xd_instrument(VgCallbackClosure *closure, IRSB *in, const VexGuestLayout *layout,
			   const VexGuestExtents *vge, const VexArchInfo *ai, IRType gw, IRType hw)
{
	IRSB *out = deepCopyIRSBExceptStmts(in);
	Addr at = 0;
	UInt len = 0;
	int kind = XD_OTHER;

	(void)closure; (void)layout; (void)vge; (void)ai; (void)gw; (void)hw;
	for (Int i = 0; i < in->stmts_used; i++) {
		IRStmt *st = in->stmts[i];

		if (st->tag == Ist_IMark) {
			at = (Addr)st->Ist.IMark.addr;
			len = st->Ist.IMark.len;
			kind = xd_kind((const UChar *)at, len);
		} else if (kind == XD_COND && st->tag == Ist_Exit && st->Ist.Exit.jk == Ijk_Boring) {
			/* a conditional branch: the last instruction of the block, or one of
			 * the copies of a small loop VEX unrolled.  Its exit goes to the
			 * target, or (inverted) past the branch. */
			ULong dst = st->Ist.Exit.dst->Ico.U64;
			IRTemp b = xd_tmp(out, Ity_I8, IRExpr_Unop(Iop_1Uto8, st->Ist.Exit.guard));

			if (dst == (ULong)at + len)
				b = xd_tmp(out, Ity_I8, IRExpr_Binop(Iop_Xor8, IRExpr_RdTmp(b),
								     IRExpr_Const(IRConst_U8(1))));
			xd_emit(out, IRExpr_RdTmp(b), NULL);
			kind = XD_OTHER;
		}
		addStmtToIRSB(out, st);
	}
	/* the block ends at its first indirect branch (kind: its last instruction's) */
	if (kind == XD_INDIRECT &&
	    (in->jumpkind == Ijk_Boring || in->jumpkind == Ijk_Call || in->jumpkind == Ijk_Ret))
		xd_emit(out, IRExpr_Const(IRConst_U8(XD_TIP)), in->next);
	return out;
}

static Bool xd_option(const HChar *arg)
{
	if VG_STR_CLO(arg, "--xpt-out", xd_out) {}
	else
		return False;
	return True;
}

static void xd_usage(void)
{
	VG_(printf)("    --xpt-out=PREFIX   write the branch stream to PREFIX.<pid>\n");
}

static void xd_debug_usage(void)
{
}

static void xd_post_clo_init(void)
{
	if (!xd_out) {
		VG_(fmsg)("xptdbt: --xpt-out=PREFIX is required (xptrace record --mode dbt gives it)\n");
		VG_(exit)(125);
	}
	VG_(clo_vex_control).guest_chase = False;
	xd_open(0);
}

static void xd_fini(Int exitcode)
{
	(void)exitcode;
	xd_flush();
	VG_(close)(xd_fd);
}

static void xd_pre_clo_init(void)
{
	VG_(details_name)("xptdbt");
	VG_(details_version)(NULL);
	VG_(details_description)("xptrace's branch recorder (Intel PT from VEX)");
	VG_(details_copyright_author)("xptrace");
	VG_(details_bug_reports_to)("the xptrace project");
	VG_(basic_tool_funcs)(xd_post_clo_init, xd_instrument, xd_fini);
	VG_(needs_command_line_options)(xd_option, xd_usage, xd_debug_usage);
	VG_(needs_syscall_wrapper)(xd_pre_syscall, xd_post_syscall);
	VG_(track_new_mem_startup)(xd_new_mem);
	VG_(track_new_mem_mmap)(xd_new_mem);
	VG_(track_change_mem_mprotect)(xd_mprotect);
	VG_(track_start_client_code)(xd_start_code);
	VG_(track_pre_thread_ll_create)(xd_thread_create);
	VG_(track_pre_thread_ll_exit)(xd_thread_exit);
	VG_(track_pre_deliver_signal)(xd_deliver);
	VG_(track_post_deliver_signal)(xd_post_deliver);
	VG_(atfork)(xd_atfork_pre, NULL, xd_atfork_child);
}

VG_DETERMINE_INTERFACE_VERSION(xd_pre_clo_init)
