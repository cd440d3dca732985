/* The tool's streams into step-collector events (dbt_conv.h). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/dbt/dbt_conv.h"
#include "record/dbt/dbt_foreign.h"
#include "record/dbt/tool/xd_stream.h"
#include "record/step/col_step_out.h"
#include "util/xp_err.h"
#include "util/xp_grow.h"

#define SRC_BUF (1 << 20)

/* One process's file, read in pieces. */
struct src {
	FILE *f;
	char *path;
	uint8_t *buf;
	size_t pos, len;
	int eof;
	int bad;		/* a record ran past the end or had an unknown tag */
	uint64_t time;		/* of the last callback record: the time of what follows */
	uint64_t next;		/* time of the next callback record (valid when have_next) */
	int have_next;
	struct thr *cur;
};

struct thr {
	pid_t pid, tid;
	void *user;		/* the step collector's slot */
	int enabled;
	int gone;
	pid_t fork_of;		/* a forked process not announced yet: the forking thread */
};

struct conv {
	struct step_col *c;
	struct dbt_stats *st;
	struct thr **th;
	size_t nth, capth;
	pid_t *procs;		/* pids that started */
	size_t nprocs, capprocs;
	struct dbt_foreign foreign;
};

static int fill(struct src *s)
{
	size_t n;

	if (s->pos < s->len)
		memmove(s->buf, s->buf + s->pos, s->len - s->pos);
	s->len -= s->pos;
	s->pos = 0;
	n = fread(s->buf + s->len, 1, SRC_BUF - s->len, s->f);
	s->len += n;
	if (n == 0)
		s->eof = 1;
	return 0;
}

/* n bytes at the read position (NULL at the end of the file). */
static const uint8_t *take(struct src *s, size_t n)
{
	const uint8_t *p;

	if (s->len - s->pos < n && !s->eof)
		fill(s);
	if (s->len - s->pos < n)
		return NULL;
	p = s->buf + s->pos;
	s->pos += n;
	return p;
}

static int peek(struct src *s)
{
	if (s->pos >= s->len && !s->eof)
		fill(s);
	return s->pos < s->len ? s->buf[s->pos] : -1;
}

static uint64_t u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static size_t thr_find(struct conv *v, pid_t tid)
{
	for (size_t i = v->nth; i-- > 0;)
		if (v->th[i]->tid == tid && !v->th[i]->gone)
			return i;
	return (size_t)-1;
}

static struct thr *thr_get(struct conv *v, pid_t pid, pid_t tid)
{
	size_t i = thr_find(v, tid);

	struct thr *t;

	if (i != (size_t)-1)
		return v->th[i];
	if (XP_GROW(v->th, v->capth, v->nth + 1) < 0 || !(t = calloc(1, sizeof(*t))))
		return NULL;
	t->pid = pid;
	t->tid = tid;
	v->th[v->nth++] = t;
	return t;
}

static int emit(struct conv *v, struct thr *t, struct stp_event *ev)
{
	ev->pid = t->pid;
	ev->tid = t->tid;
	ev->user = &t->user;
	return col_step_event(v->c, ev);
}

static int thr_exit(struct conv *v, struct thr *t, uint64_t time)
{
	struct stp_event ev = { .kind = STP_EXIT, .time = time };
	int e = t->user ? emit(v, t, &ev) : 0;

	t->gone = 1;
	t->user = NULL;
	return e;
}

static int proc_seen(struct conv *v, pid_t pid)
{
	for (size_t i = 0; i < v->nprocs; i++)
		if (v->procs[i] == pid)
			return 1;
	if (XP_GROW(v->procs, v->capprocs, v->nprocs + 1) < 0)
		return -ENOMEM;
	v->procs[v->nprocs++] = pid;
	return 0;
}

/* XD_START: a process (root or forked) or an exec in one. */
static int on_start(struct conv *v, struct src *s, uint64_t time)
{
	const uint8_t *p = take(s, 24), *q;
	uint64_t n, m;
	pid_t pid, parent;
	char exe[4096], comm[17];
	const char *base;
	struct thr *t;
	int seen, e;

	if (!p)
		return -EINVAL;
	pid = (pid_t)u64(p);
	parent = (pid_t)u64(p + 8);
	n = u64(p + 16);
	if (n >= sizeof(exe) || !(q = take(s, n)))
		return -EINVAL;
	memcpy(exe, q, n);
	exe[n] = 0;
	if (!(p = take(s, 8)) || (m = u64(p)) > 4000 || !(q = take(s, m)))
		return -EINVAL;
	if (!v->st->caps[0] && m < sizeof(v->st->caps)) {
		memcpy(v->st->caps, q, m);
		v->st->caps[m] = 0;
	}
	base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	n = strnlen(base, sizeof(comm) - 1);
	memcpy(comm, base, n);
	comm[n] = 0;
	if ((seen = proc_seen(v, pid)) < 0)
		return seen;
	if (seen) {
		/* an exec: the other threads are gone, the one that exec'd is now pid */
		for (size_t i = 0; i < v->nth; i++)
			if (v->th[i]->pid == pid && v->th[i]->tid != pid && !v->th[i]->gone &&
			    (e = thr_exit(v, v->th[i], time)) < 0)
				return e;
		if (!(t = thr_get(v, pid, pid)))
			return -ENOMEM;
		t->enabled = 0;
		struct stp_event ev = { .kind = STP_EXEC, .time = time, .comm = comm };
		s->cur = t;
		return emit(v, t, &ev);
	}
	v->st->processes++;
	if (!(t = thr_get(v, pid, pid)))
		return -ENOMEM;
	s->cur = t;
	if (!parent) {
		struct stp_event ev = { .kind = STP_THREAD, .time = time };
		struct stp_event ex = { .kind = STP_EXEC, .time = time, .comm = comm };

		if ((e = emit(v, t, &ev)) < 0)
			return e;
		return emit(v, t, &ex);
	}
	/* announced where it starts running (its first XD_ENABLE), as a new thread */
	t->fork_of = parent;
	return 0;
}

/* One callback record (tag already read). */
static int on_record(struct conv *v, struct src *s, int tag)
{
	const uint8_t *p = take(s, 8);
	uint64_t time, w[3];
	struct thr *t;
	int nw;

	if (!p)
		return -EINVAL;
	time = u64(p);
	if (time > s->time)
		s->time = time;
	time = s->time;
	switch (tag) {
	case XD_START:
		return on_start(v, s, time);
	case XD_SWITCH: case XD_THREAD: case XD_DISABLE: case XD_ENABLE:
		nw = tag == XD_DISABLE || tag == XD_ENABLE ? 1 : 2;
		break;
	case XD_SIGNAL: case XD_MMAP:
		nw = 3;
		break;
	case XD_EXIT:
		nw = 0;
		break;
	default:
		return -EINVAL;
	}
	if (nw && !(p = take(s, 8 * (size_t)nw)))
		return -EINVAL;
	for (int i = 0; i < nw; i++)
		w[i] = u64(p + 8 * i);
	if (tag == XD_SWITCH) {
		if (!(s->cur = thr_get(v, (pid_t)w[1], (pid_t)w[0])))
			return -ENOMEM;
		return 0;
	}
	t = s->cur;
	if (!t)
		return -EINVAL;
	if (t->fork_of && (tag == XD_THREAD || tag == XD_ENABLE)) {
		size_t pi = thr_find(v, t->fork_of);
		struct stp_event ev = { .kind = STP_THREAD, .time = time, .ptid = t->fork_of,
					.fork = 1, .ip = tag == XD_THREAD ? w[1] : w[0],
					.ppid = pi != (size_t)-1 ? v->th[pi]->pid : t->fork_of };

		t->fork_of = 0;
		t->enabled = 1;
		return emit(v, t, &ev);
	}
	switch (tag) {
	case XD_THREAD:
		if (!t->user) {
			struct stp_event ev = { .kind = STP_THREAD, .time = time, .ppid = t->pid,
						.ptid = (pid_t)w[0], .ip = w[1] };

			if (!ev.ptid)
				ev.ptid = t->pid;
			v->st->threads++;
			t->enabled = 1;
			return emit(v, t, &ev);
		}
		/* the process's first thread, created at XD_START: it starts at ip */
		__attribute__((fallthrough));
	case XD_ENABLE:
		if (t->enabled)
			return 0;
		t->enabled = 1;
		{
			struct stp_event ev = { .kind = STP_ENABLE, .time = time,
						.to = tag == XD_THREAD ? w[1] : w[0] };
			return emit(v, t, &ev);
		}
	case XD_DISABLE:
		v->st->syscalls++;
		if (!t->enabled)
			return 0;
		t->enabled = 0;
		{
			struct stp_event ev = { .kind = STP_DISABLE, .time = time, .ip = w[0] };
			return emit(v, t, &ev);
		}
	case XD_SIGNAL: {
		struct stp_event ev = { .kind = t->enabled ? STP_ASYNC : STP_ENABLE, .time = time,
					.ip = w[0], .to = w[1] };

		v->st->signals++;
		if (!w[1]) {
			v->st->lost_signals++;
			return 0;
		}
		t->enabled = 1;
		return emit(v, t, &ev);
	}
	case XD_MMAP: {
		const uint8_t *q;
		char name[4096];
		uint64_t n;

		if (!(q = take(s, 8)) || (n = u64(q)) >= sizeof(name) || !(q = take(s, n)))
			return -EINVAL;
		memcpy(name, q, n);
		name[n] = 0;
		v->st->maps++;
		dbt_foreign_check(&v->foreign, name, w[2], w[1]);
		struct stp_event ev = { .kind = STP_MMAP, .time = time, .ip = w[0],
					.to = w[0] + w[1], .pgoff = w[2], .comm = name };
		return emit(v, t, &ev);
	}
	case XD_EXIT:
		s->cur = NULL;
		return thr_exit(v, t, time);
	}
	return -EINVAL;
}

/* Branch records up to the next callback record, whose time it leaves in s->next. */
static int run_branches(struct conv *v, struct src *s)
{
	struct thr *t = s->cur;
	struct stp_event ev = { .time = s->time };
	int tag, e;

	if (t && t->user && t->enabled) {
		ev.pid = t->pid;
		ev.tid = t->tid;
		ev.user = &t->user;
	}
	while ((tag = peek(s)) >= 0 && tag < XD_START) {
		if (tag <= 1) {
			/* a run of outcomes, in place in the buffer */
			size_t i = s->pos;

			while (i < s->len && s->buf[i] <= 1)
				i++;
			v->st->cond += i - s->pos;
			if (!ev.user)
				v->st->orphans += i - s->pos;
			else if ((e = col_step_tnt_run(v->c, t->user, s->buf + s->pos, i - s->pos,
						       s->time)) < 0)
				return e;
			s->pos = i;
			continue;
		}
		s->pos++;
		if (tag == XD_TIP) {
			const uint8_t *p = take(s, 8);

			if (!p)
				return -EINVAL;
			ev.kind = STP_TIP;
			ev.to = u64(p);
			v->st->tip++;
		} else {
			return -EINVAL;
		}
		if (!ev.user) {
			v->st->orphans++;
			continue;
		}
		if ((e = col_step_event(v->c, &ev)) < 0)
			return e;
	}
	s->have_next = 0;
	if (tag >= 0) {
		const uint8_t *p;

		/* the time of the next callback record, to merge the files */
		if (s->len - s->pos < 9 && !s->eof)
			fill(s);
		if (s->len - s->pos < 9)
			return -EINVAL;
		p = s->buf + s->pos + 1;
		s->next = u64(p);
		s->have_next = 1;
	}
	return 0;
}

static int open_sources(const char *dir, struct src **out, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct src *v = NULL;
	size_t cap = 0, k = 0;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[4096];

		if (strncmp(de->d_name, "p.", 2) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (XP_GROW(v, cap, k + 1) < 0)
			break;
		memset(&v[k], 0, sizeof(v[k]));
		v[k].path = strdup(path);
		v[k].buf = malloc(SRC_BUF);
		v[k].f = fopen(path, "re");
		if (!v[k].path || !v[k].buf || !v[k].f) {
			free(v[k].path);
			free(v[k].buf);
			if (v[k].f)
				fclose(v[k].f);
			continue;
		}
		k++;
	}
	closedir(d);
	*out = v;
	*n = k;
	return 0;
}

int dbt_convert(struct rec *r, const char *dir, struct dbt_stats *st)
{
	struct conv v = { .st = st };
	struct src *s = NULL;
	size_t ns = 0;
	int e;

	memset(st, 0, sizeof(*st));
	if ((e = open_sources(dir, &s, &ns)) < 0)
		return xp_err_code(e, "record --mode dbt", NULL, "cannot read the tool's output in %s: %s",
				   dir, strerror(-e));
	v.c = col_step_open(r, r->opts->psb_period, &e);
	if (!v.c) {
		xp_err("record", NULL, "cannot write perf.data: %s", strerror(-e));
		goto out;
	}
	for (size_t i = 0; i < ns; i++) {
		/* every file starts with a callback record (XD_START) */
		if ((e = run_branches(&v, &s[i])) < 0)
			break;
	}
	while (e == 0) {
		struct src *best = NULL;
		int tag;

		for (size_t i = 0; i < ns; i++)
			if (s[i].have_next && (!best || s[i].next < best->next))
				best = &s[i];
		if (!best)
			break;
		tag = best->buf[best->pos++];
		if ((e = on_record(&v, best, tag)) < 0 || (e = run_branches(&v, best)) < 0)
			if (e == -EINVAL)
				best->bad = 1;
	}
	for (size_t i = 0; i < v.nth; i++)
		if (!v.th[i]->gone && e >= 0)
			e = thr_exit(&v, v.th[i], r->last_time);
	{
		int ce = col_step_close(v.c);

		if (e == 0)
			e = ce;
	}
	for (size_t i = 0; i < ns; i++) {
		st->raw_bytes += (uint64_t)ftell(s[i].f);
		if (s[i].bad && e == -EINVAL)
			xp_err("record --mode dbt", "report it with the trace directory",
			       "the tool's stream %s is damaged at byte %ld", s[i].path, ftell(s[i].f));
	}
	if (e < 0 && e != -EINVAL)
		xp_err("record", NULL, "cannot write the trace: %s", strerror(-e));
out:
	for (size_t i = 0; i < ns; i++) {
		fclose(s[i].f);
		free(s[i].path);
		free(s[i].buf);
	}
	free(s);
	for (size_t i = 0; i < v.nth; i++)
		free(v.th[i]);
	free(v.th);
	free(v.procs);
	dbt_foreign_free(&v.foreign);
	return e;
}
