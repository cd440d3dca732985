/* Chrome Trace Event JSON (out.h): {"traceEvents":[ ... ]} written as it goes, one event
 * a line, through a buffer flushed every 64 KiB, so memory stays flat whatever the
 * number of events. */
#include <errno.h>
#include <inttypes.h>

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

/* A time in the format's microseconds: ns with three decimals, instructions as is. */
static void put_time(struct out_chrome *w, const char *key, uint64_t t)
{
	out_json_key(&w->b, key);
	out_buf_u64(&w->b, w->insns ? t : t / 1000);
	if (!w->insns && t % 1000) {
		char frac[5] = { '.', (char)('0' + t % 1000 / 100), (char)('0' + t % 100 / 10),
				 (char)('0' + t % 10), 0 };
		out_buf_put(&w->b, frac, 4);
	}
}

static void put_ids(struct out_chrome *w, int32_t pid, int32_t tid)
{
	out_json_u64(&w->b, "pid", (uint64_t)(uint32_t)pid);
	out_json_u64(&w->b, "tid", (uint64_t)(uint32_t)tid);
}

int out_chrome_begin(struct out_chrome *w, FILE *f, bool insns)
{
	*w = (struct out_chrome){ .f = f, .insns = insns };
	out_buf_init(&w->b, NULL, 0);
	out_buf_printf(&w->b, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"clock\":\"%s\"},\"traceEvents\":[",
		       insns ? "instructions (1 us = 1 instruction: the trace has no timestamps)" :
		       "perf clock (CLOCK_MONOTONIC)");
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
			 const char *cat, uint64_t ts, uint64_t dur, bool sampled)
{
	event_begin(w);
	out_json_string(&w->b, "name", name);
	if (cat)
		out_json_string(&w->b, "cat", cat);
	out_json_string(&w->b, "ph", "X");
	put_time(w, "ts", ts);
	put_time(w, "dur", dur);
	put_ids(w, pid, tid);
	if (sampled) {
		out_json_key(&w->b, "args");
		out_buf_put(&w->b, "{\"sampled\":true}", 16);
	}
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
	put_time(w, "ts", ts);
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
