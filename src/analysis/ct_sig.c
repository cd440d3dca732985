/* Signal handlers in a thread's exact event stream (ct_sig.h). */
#include <string.h>

#include "analysis/ct_sig.h"

/* x86's longest instruction: a syscall, sysenter or int that stopped tracing lies
 * before the address its thread resumes at, by its length; a restarted syscall
 * resumes at the instruction itself */
#define CT_SIG_INSN_MAX 15

static enum ct_sig_what enter(struct ct_sig *s, uint64_t lo, uint64_t hi, uint64_t *id)
{
	if (s->n == CT_SIG_DEPTH) {
		memmove(&s->st[0], &s->st[1], (CT_SIG_DEPTH - 1) * sizeof(s->st[0]));
		s->n--;
	}
	*id = ++s->next_id;
	s->st[s->n].lo = lo;
	s->st[s->n].hi = hi;
	s->st[s->n].id = *id;
	s->n++;
	return CT_SIG_ENTER;
}

/* Execution lands at ip: back where a signal still open interrupted it? */
static enum ct_sig_what land(struct ct_sig *s, uint64_t ip, uint64_t *id)
{
	for (uint32_t i = s->n; i-- > 0;)
		if (s->st[i].lo <= ip && ip <= s->st[i].hi) {
			*id = s->st[i].id;
			s->n = i;
			return CT_SIG_BACK;
		}
	return CT_SIG_NONE;
}

enum ct_sig_what ct_sig_event(struct ct_sig *s, const struct xev *ev, uint64_t *at, uint64_t *id)
{
	uint64_t lo = s->lo, hi = s->hi;

	switch (ev->kind) {
	case XEV_BLOCK:
		s->end = ev->end;
		s->aborted = false;
		return CT_SIG_NONE;
	case XEV_TSX:
		s->aborted = ev->sub == XEV_TSX_ABORT;
		return CT_SIG_NONE;
	case XEV_DISABLE:
		s->stop_time = ev->time;
		/* an interrupt (PT FUP + TIP.PGD) resumes where it hit; a syscall into
		 * an untraced kernel after itself; any other disable (a return or jump
		 * out of an address filter) tells nothing */
		if (ev->ip)
			s->lo = s->hi = ev->ip;
		else if ((ev->flags & XEV_F_SYSCALL) && s->end)
			s->lo = s->end, s->hi = s->end + CT_SIG_INSN_MAX;
		else
			s->lo = s->hi = 0;
		return CT_SIG_NONE;
	case XEV_ENABLE:
		s->lo = s->hi = 0;
		/* where it stopped first: a handler's own syscall may lie right next to
		 * the one its signal interrupted (raise called in a handler) */
		if (lo && lo <= ev->ip && ev->ip <= hi)
			return CT_SIG_NONE;
		if (land(s, ev->ip, id) == CT_SIG_BACK)
			return CT_SIG_BACK;
		if (!lo)
			return CT_SIG_NONE;
		*at = ev->ip;
		return enter(s, lo, hi, id);
	case XEV_INTERRUPT:
		if (!ev->addr || s->aborted)
			return CT_SIG_NONE;
		*at = ev->addr;
		return enter(s, ev->ip, ev->ip, id);
	case XEV_BRANCH:
		/* the far return (iret) of a trace that has the kernel */
		return ev->flags & XEV_F_SYSCALL ? land(s, ev->addr, id) : CT_SIG_NONE;
	case XEV_GAP: {
		uint64_t next = s->next_id;	/* ids stay unique in the thread */
		memset(s, 0, sizeof(*s));
		s->next_id = next;
		return CT_SIG_NONE;
	}
	default:
		return CT_SIG_NONE;
	}
}

void ct_sig_exec(struct ct_sig *s)
{
	s->lo = s->hi = 0;
	s->n = 0;
}

void ct_sig_chain(struct ct_sig *s, uint64_t old, uint64_t id)
{
	uint32_t i = 0, j = 0;

	while (i < s->n && s->st[i].id != old)
		i++;
	while (j < s->n && s->st[j].id != id)
		j++;
	if (i >= s->n || j >= s->n)
		return;
	s->st[j].lo = s->st[i].lo;
	s->st[j].hi = s->st[i].hi;
	memmove(&s->st[i], &s->st[i + 1], (s->n - i - 1) * sizeof(s->st[0]));
	s->n--;
}
