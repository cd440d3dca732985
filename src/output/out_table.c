/* Table rows as text, JSON lines and CSV. */
#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "output/out.h"

static const char *const fmt_names[OUT_NFORMATS] = { "text", "jsonl", "csv", "folded", "callgrind" };

int out_format_parse(const char *s, enum out_format *f)
{
	for (int i = 0; i < OUT_NFORMATS; i++)
		if (strcmp(s, fmt_names[i]) == 0) {
			*f = (enum out_format)i;
			return 0;
		}
	return -1;
}

const char *out_format_name(enum out_format f)
{
	return f < OUT_NFORMATS ? fmt_names[f] : "?";
}

void out_json_str(FILE *f, const char *s)
{
	putc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", f);
		else if (*p == '\t')
			fputs("\\t", f);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			putc(*p, f);
	}
	putc('"', f);
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

static void key(FILE *f, const char *name)
{
	putc('"', f);
	for (; *name; name++)
		putc(*name == ' ' ? '_' : tolower((unsigned char)*name), f);
	putc('"', f);
}

void out_table_begin(struct out_table *t, FILE *f, enum out_format fmt, const struct out_col *cols,
		     unsigned ncols)
{
	t->f = f;
	t->fmt = fmt;
	t->cols = cols;
	t->ncols = ncols;
	t->rows = 0;
	if (fmt == OUT_TEXT) {
		for (unsigned i = 0; i < ncols; i++) {
			if (cols[i].type == OUT_STR)
				fprintf(f, "%s%-*s", i ? "  " : "", i + 1 < ncols ? cols[i].width : 0, cols[i].name);
			else
				fprintf(f, "%s%*s", i ? "  " : "", cols[i].width, cols[i].name);
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

	if (v->null) {
		fprintf(f, "%*s", w, "-");
		return;
	}
	switch (c->type) {
	case OUT_INT:
		fprintf(f, "%*" PRIu64, w, v->u);
		break;
	case OUT_HEX:
		fprintf(f, "%*s0x%" PRIx64, w > 18 ? w - 18 : 0, "", v->u);
		break;
	case OUT_PCT:
		fprintf(f, "%*.2f%%", w ? w - 1 : 0, v->d);
		break;
	case OUT_FLOAT:
		fprintf(f, "%*.2f", w, v->d);
		break;
	case OUT_STR:
		if (c->tree)
			fprintf(f, "%*s", (int)(level ? 2 * (level - 1) : 0), "");
		if (last)
			fputs(v->s ? v->s : "", f);
		else
			fprintf(f, "%-*s", w, v->s ? v->s : "");
		break;
	}
}

void out_row(struct out_table *t, const struct out_val *v, unsigned level, const char *const *path,
	     unsigned npath)
{
	FILE *f = t->f;

	t->rows++;
	switch (t->fmt) {
	case OUT_TEXT:
		for (unsigned i = 0; i < t->ncols; i++) {
			if (i)
				fputs("  ", f);
			text_val(f, &t->cols[i], &v[i], level, i + 1 == t->ncols);
		}
		putc('\n', f);
		break;
	case OUT_CSV:
		for (unsigned i = 0; i < t->ncols; i++) {
			if (i)
				putc(',', f);
			if (v[i].null)
				continue;
			switch (t->cols[i].type) {
			case OUT_INT: fprintf(f, "%" PRIu64, v[i].u); break;
			case OUT_HEX: fprintf(f, "0x%" PRIx64, v[i].u); break;
			case OUT_PCT:
			case OUT_FLOAT: fprintf(f, "%.4f", v[i].d); break;
			case OUT_STR: csv_str(f, v[i].s ? v[i].s : ""); break;
			}
		}
		putc('\n', f);
		break;
	default:	/* jsonl */
		putc('{', f);
		for (unsigned i = 0; i < t->ncols; i++) {
			if (i)
				putc(',', f);
			key(f, t->cols[i].name);
			putc(':', f);
			if (v[i].null) {
				fputs("null", f);
				continue;
			}
			switch (t->cols[i].type) {
			case OUT_INT: fprintf(f, "%" PRIu64, v[i].u); break;
			case OUT_HEX: fprintf(f, "\"0x%" PRIx64 "\"", v[i].u); break;
			case OUT_PCT:
			case OUT_FLOAT: fprintf(f, "%.4f", v[i].d); break;
			case OUT_STR: out_json_str(f, v[i].s ? v[i].s : ""); break;
			}
		}
		if (path) {
			fputs(",\"path\":[", f);
			for (unsigned i = 0; i < npath; i++) {
				if (i)
					putc(',', f);
				out_json_str(f, path[i]);
			}
			putc(']', f);
		}
		fputs("}\n", f);
		break;
	}
}
