/* Table rows as text, JSON lines (through out_json.c) and CSV. */
#include <errno.h>
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "output/out.h"

static const char *const fmt_names[OUT_NFORMATS] = { "text", "jsonl", "csv", "folded", "callgrind",
								"chrome", "pprof", "svg" };

int out_format_parse(const char *s, enum out_format *f)
{
	for (int i = 0; i < OUT_NFORMATS; i++)
		if (strcmp(s, fmt_names[i]) == 0) {
			*f = (enum out_format)i;
			return 0;
		}
	return -EINVAL;
}

const char *out_format_name(enum out_format f)
{
	return f < OUT_NFORMATS ? fmt_names[f] : "?";
}

struct out_unit out_time_unit(uint64_t max_ns)
{
	if (max_ns >= 10000000000ull)
		return (struct out_unit){ "s", 1e9 };
	if (max_ns >= 10000000)
		return (struct out_unit){ "ms", 1e6 };
	if (max_ns >= 10000)
		return (struct out_unit){ "us", 1e3 };
	return (struct out_unit){ "ns", 1 };
}

static void csv_str(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	putc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			putc('"', f);
		putc(*s, f);
	}
	putc('"', f);
}

/* Text alignment: strings left, numbers right, unless the column says otherwise. */
static bool left(const struct out_col *c)
{
	return c->flags & OUT_LEFT || (c->type == OUT_STR && !(c->flags & OUT_RIGHT));
}

static int decimals(const struct out_col *c, int dflt)
{
	return c->flags & OUT_DECIMALS ? (int)(c->flags >> 4 & 15) : dflt;
}

void out_table_begin(struct out_table *t, FILE *f, enum out_format fmt, const struct out_col *cols,
		     unsigned ncols)
{
	out_table_begin_style(t, f, fmt, cols, ncols, NULL);
}

void out_table_begin_style(struct out_table *t, FILE *f, enum out_format fmt,
			   const struct out_col *cols, unsigned ncols, const struct out_style *st)
{
	t->f = f;
	t->fmt = fmt;
	t->cols = cols;
	t->ncols = ncols;
	t->rows = 0;
	t->style = st ? *st : (struct out_style){ NULL, false };
	if (!t->style.sep)
		t->style.sep = "  ";
	if (fmt == OUT_TEXT) {
		for (unsigned i = 0; i < ncols; i++) {
			fputs(i ? t->style.sep : "", f);
			if (cols[i].flags & OUT_MARK)
				putc(' ', f);
			if (left(&cols[i]))
				fprintf(f, "%-*s", i + 1 < ncols ? cols[i].width : 0, cols[i].name);
			else
				fprintf(f, "%*s", cols[i].width, cols[i].name);
		}
		putc('\n', f);
	} else if (fmt == OUT_CSV) {
		for (unsigned i = 0; i < ncols; i++) {
			if (i)
				putc(',', f);
			for (const char *p = cols[i].name; *p; p++)
				putc(tolower((unsigned char)*p), f);
		}
		putc('\n', f);
	}
}

static void text_val(FILE *f, const struct out_col *c, const struct out_val *v, unsigned level, bool last)
{
	int w = c->width;

	if (v->null || v->omit) {
		fprintf(f, "%*s", w, "-");
		return;
	}
	switch (c->type) {
	case OUT_INT:
		if (v->approx) {
			char num[24];
			snprintf(num, sizeof(num), "~%" PRIu64, v->u);
			fprintf(f, "%*s", w, num);
		} else {
			fprintf(f, "%*" PRIu64, w, v->u);
		}
		break;
	case OUT_SINT:
		fprintf(f, v->i ? "%+*" PRId64 : "%*" PRId64, w, v->i);
		break;
	case OUT_SPAN: {
		char span[48];
		snprintf(span, sizeof(span), "%" PRIu64 "..%" PRIu64, v->span.from, v->span.to);
		fprintf(f, "%*s", w, span);
		break;
	}
	case OUT_HEX:
		if (left(c))
			fprintf(f, "%#-*" PRIx64, last ? 0 : w, v->u);
		else
			fprintf(f, "%*s0x%" PRIx64, w > 18 ? w - 18 : 0, "", v->u);
		break;
	case OUT_PCT:
		fprintf(f, "%*.*f%%", w ? w - 1 : 0, decimals(c, 2), v->d);
		break;
	case OUT_FLOAT:
		if (v->approx) {
			char num[40];
			snprintf(num, sizeof(num), "~%.*f", decimals(c, 2), v->d);
			fprintf(f, "%*s", w, num);
		} else {
			fprintf(f, "%*.*f", w, decimals(c, 2), v->d);
		}
		break;
	case OUT_BOOL:
		fprintf(f, "%*s", w, v->b ? "true" : "false");
		break;
	case OUT_STR:
		if (c->flags & OUT_TREE)
			fprintf(f, "%*s", (int)(level ? 2 * (level - 1) : 0), "");
		if (!left(c))
			fprintf(f, "%*s", w, v->s ? v->s : "");
		else if (last)
			fputs(v->s ? v->s : "", f);
		else
			fprintf(f, "%-*s", w, v->s ? v->s : "");
		break;
	}
}

static void text_row(struct out_table *t, const struct out_val *v, unsigned level, bool marked)
{
	FILE *f = t->f;
	bool red = marked && t->style.color;

	if (red)
		fputs("\033[31m", f);
	for (unsigned i = 0; i < t->ncols; i++) {
		if (i)
			fputs(t->style.sep, f);
		if (t->cols[i].flags & OUT_MARK)
			putc(marked ? '>' : ' ', f);
		text_val(f, &t->cols[i], &v[i], level, i + 1 == t->ncols);
	}
	fputs(red ? "\033[0m\n" : "\n", f);
}

static void csv_row(struct out_table *t, const struct out_val *v)
{
	FILE *f = t->f;

	for (unsigned i = 0; i < t->ncols; i++) {
		if (i)
			putc(',', f);
		if (v[i].null || v[i].omit)
			continue;
		switch (t->cols[i].type) {
		case OUT_INT: fprintf(f, "%" PRIu64, v[i].u); break;
		case OUT_SINT: fprintf(f, "%" PRId64, v[i].i); break;
		case OUT_HEX: fprintf(f, "0x%" PRIx64, v[i].u); break;
		case OUT_PCT:
		case OUT_FLOAT: fprintf(f, "%.*f", decimals(&t->cols[i], 4), v[i].d); break;
		case OUT_BOOL: fputs(v[i].b ? "true" : "false", f); break;
		case OUT_STR: csv_str(f, v[i].s ? v[i].s : ""); break;
		case OUT_SPAN: fprintf(f, "%" PRIu64 "..%" PRIu64, v[i].span.from, v[i].span.to); break;
		}
	}
	putc('\n', f);
}

static void json_row(struct out_table *t, const struct out_val *v, const char *const *path,
		     unsigned npath)
{
	char mem[512];
	struct out_buf b;

	out_buf_init(&b, mem, sizeof(mem));
	out_json_begin(&b);
	for (unsigned i = 0; i < t->ncols; i++) {
		const struct out_col *c = &t->cols[i];

		if (v[i].omit)
			continue;
		if (v[i].null) {
			out_json_null(&b, c->name);
			continue;
		}
		switch (c->type) {
		case OUT_INT: out_json_u64(&b, c->name, v[i].u); break;
		case OUT_SINT:
			out_json_key(&b, c->name);
			out_buf_printf(&b, "%" PRId64, v[i].i);
			break;
		case OUT_HEX: out_json_hex(&b, c->name, v[i].u); break;
		case OUT_PCT:
		case OUT_FLOAT: out_json_fixed(&b, c->name, decimals(c, 4), v[i].d); break;
		case OUT_BOOL: out_json_bool(&b, c->name, v[i].b); break;
		case OUT_STR: out_json_string(&b, c->name, v[i].s ? v[i].s : ""); break;
		case OUT_SPAN:
			out_json_key(&b, c->name);
			out_buf_put(&b, "[", 1);
			out_buf_u64(&b, v[i].span.from);
			out_buf_put(&b, ",", 1);
			out_buf_u64(&b, v[i].span.to);
			out_buf_put(&b, "]", 1);
			break;
		}
	}
	if (path) {
		out_json_key(&b, "path");
		out_buf_put(&b, "[", 1);
		for (unsigned i = 0; i < npath; i++) {
			if (i)
				out_buf_put(&b, ",", 1);
			out_json_str(&b, path[i]);
		}
		out_buf_put(&b, "]", 1);
	}
	out_json_end(&b);
	out_buf_write(&b, t->f);
	out_buf_free(&b);
}

static void row(struct out_table *t, const struct out_val *v, unsigned level, const char *const *path,
		unsigned npath, bool marked)
{
	t->rows++;
	switch (t->fmt) {
	case OUT_TEXT: text_row(t, v, level, marked); break;
	case OUT_CSV: csv_row(t, v); break;
	default: json_row(t, v, path, npath); break;	/* jsonl */
	}
}

void out_row(struct out_table *t, const struct out_val *v, unsigned level, const char *const *path,
	     unsigned npath)
{
	row(t, v, level, path, npath, false);
}

void out_row_marked(struct out_table *t, const struct out_val *v, bool marked)
{
	row(t, v, 0, NULL, 0, marked);
}
