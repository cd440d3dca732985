/* Chrome Trace Event JSON (out.h): {"traceEvents":[ ... ]} written as it goes, one event
 * a line, through a buffer flushed every 64 KiB, so memory stays flat whatever the
 * number of events. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "output/out.h"

#define CHROME_FLUSH (64u << 10)

static int flush(struct out_chrome *w)
{
	int rc = out_buf_write(&w->b, w->f);

	w->b.len = 0;
	return rc;
}

/* Every event begins with the separator from the one before. */
static void event_begin(struct out_chrome *w)
{
	bool first = w->events++ == 0;

	out_buf_put(&w->b, first ? "\n" : ",\n", first ? 1 : 2);
	out_json_begin(&w->b);
}

static void event_end(struct out_chrome *w)
{
	out_buf_put(&w->b, "}", 1);
	if (w->b.len >= CHROME_FLUSH && !w->b.oom)
		flush(w);
}

/* A time in the format's microseconds: instructions as they are; ns in steps of
 * 1/1024 us, which binary floating point holds exactly, so that a viewer adding ts and
 * dur (speedscope, in doubles) finds a span ending exactly where the next begins (in
 * decimal, 0.001 steps, the sum may land either side of it and break the nesting). */
static uint64_t ticks(const struct out_chrome *w, uint64_t t)
{
	return w->insns ? t : (uint64_t)(((unsigned __int128)t * 1024 + 500) / 1000);
}

static void put_ticks(struct out_chrome *w, const char *key, uint64_t k)
{
	out_json_key(&w->b, key);
	if (w->insns) {
		out_buf_u64(&w->b, k);
		return;
	}
	out_buf_u64(&w->b, k >> 10);
	uint64_t frac = (k & 1023) * 9765625;	/* 1/1024 = 0.0009765625 */
	if (!frac)
		return;
	char d[12];
	int n = 10;
	d[0] = '.';
	for (int i = 10; i >= 1; i--, frac /= 10)
		d[i] = (char)('0' + frac % 10);
	while (d[n] == '0')
		n--;
	out_buf_put(&w->b, d, (size_t)n + 1);
}

static void put_ids(struct out_chrome *w, int32_t pid, int32_t tid)
{
	out_json_u64(&w->b, "pid", (uint64_t)(uint32_t)pid);
	out_json_u64(&w->b, "tid", (uint64_t)(uint32_t)tid);
}

int out_chrome_begin(struct out_chrome *w, FILE *f, bool insns, const char *clock)
{
	*w = (struct out_chrome){ .f = f, .insns = insns };
	out_buf_init(&w->b, NULL, 0);
	out_buf_printf(&w->b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{");
	out_json_string(&w->b, "clock", clock);
	out_buf_printf(&w->b, "},\"traceEvents\":[");
	return 0;
}

static void metadata(struct out_chrome *w, const char *what, int32_t pid, int32_t tid, const char *name)
{
	event_begin(w);
	out_json_string(&w->b, "name", what);
	out_json_string(&w->b, "ph", "M");
	put_ids(w, pid, tid);
	out_json_key(&w->b, "args");
	out_json_begin(&w->b);
	out_json_string(&w->b, "name", name);
	out_buf_put(&w->b, "}", 1);
	event_end(w);
}

void out_chrome_process(struct out_chrome *w, int32_t pid, const char *name)
{
	metadata(w, "process_name", pid, pid, name);
}

void out_chrome_thread(struct out_chrome *w, int32_t pid, int32_t tid, const char *name)
{
	metadata(w, "thread_name", pid, tid, name);
}

void out_chrome_complete(struct out_chrome *w, int32_t pid, int32_t tid, const char *name,
			 const char *cat, uint64_t ts, uint64_t dur, bool sampled, bool inlined)
{
	event_begin(w);
	out_json_string(&w->b, "name", name);
	/* the module; sampled spans say so in theirs (an arg would join the name in
	 * speedscope) */
	if (cat || sampled) {
		char c[256];
		snprintf(c, sizeof(c), "%s%s%s", sampled ? "sampled" : "", cat && sampled ? "," : "", cat ? cat : "");
		out_json_string(&w->b, "cat", c);
	}
	out_json_string(&w->b, "ph", "X");
	uint64_t k0 = ticks(w, ts), k1 = ticks(w, ts + dur);
	put_ticks(w, "ts", k0);
	put_ticks(w, "dur", k1 - k0);
	put_ids(w, pid, tid);
	if (inlined)
		out_buf_printf(&w->b, ",\"args\":{\"inlined\":true}");
	event_end(w);
}

void out_chrome_instant(struct out_chrome *w, int32_t pid, int32_t tid, const char *name,
			const char *stack, uint64_t ts)
{
	event_begin(w);
	out_json_string(&w->b, "name", name);
	out_json_string(&w->b, "cat", "sample");
	out_json_string(&w->b, "ph", "i");
	out_json_string(&w->b, "s", "t");
	put_ticks(w, "ts", ticks(w, ts));
	put_ids(w, pid, tid);
	if (stack) {
		out_json_key(&w->b, "args");
		out_json_begin(&w->b);
		out_json_string(&w->b, "stack", stack);
		out_buf_put(&w->b, "}", 1);
	}
	event_end(w);
}

int out_chrome_end(struct out_chrome *w)
{
	out_buf_put(&w->b, "\n]}\n", 4);
	int rc = w->b.oom ? -ENOMEM : flush(w);
	out_buf_free(&w->b);
	return rc ? rc : ferror(w->f) ? -EIO : 0;
}
