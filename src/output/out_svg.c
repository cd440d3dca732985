/* Call trees as a self-contained interactive flame graph (out.h): one SVG file with
 * its script, no network.  Frames are written as the tree is walked, one element
 * each (frames under 0.1 px are left out, as flamegraph.pl does, so the file stays
 * bounded by the picture, not by the tree). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/out.h"
#include "util/xp_grow.h"

#define SVG_W 1200
#define SVG_PAD 10
#define SVG_FRAME 16
#define SVG_TOP 60	/* title, search box, details line */
#define SVG_BOTTOM 24
#define SVG_MIN_PX 0.1
#define SVG_CHAR_PX 7	/* a character of the 12 px monospace font, about */

struct svg {
	FILE *f;
	const struct out_names *n;
	unsigned metric;
	bool ns;		/* costs are ns */
	const char *count;	/* what a node's count counts: "Calls", "Samples" */
	uint64_t total;
	uint32_t depth;		/* deepest level drawn */
	double *cursor;		/* per level: where its next frame begins (metric units) */
	uint32_t capcursor;
	int height;
};

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++)
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		default:
			if ((unsigned char)*s >= 0x20 || *s == '\t')
				putc(*s, f);
		}
}

/* A colour per module (warm hues, as flame graphs have), the same in every file. */
static void module_colour(const char *m, int *h, int *s, int *l)
{
	uint32_t x = 2166136261u;
	for (; m && *m; m++)
		x = (x ^ (unsigned char)*m) * 16777619u;
	*h = (int)(x % 60);		/* red .. yellow */
	*s = 60 + (int)(x / 60 % 30);
	*l = 50 + (int)(x / 1800 % 15);
}

static double px(const struct svg *s, double units)
{
	return s->total ? units * (SVG_W - 2 * SVG_PAD) / (double)s->total : 0;
}

/* A cost as the hover says it: a count, or a time in the unit that reads best. */
static void cost(const struct svg *s, uint64_t x)
{
	static const struct { uint64_t div; const char *unit; } units[] = {
		{ 1, "ns" }, { 1000, "us" }, { 1000000, "ms" }, { 1000000000, "s" },
	};
	unsigned u = 0;

	if (!s->ns) {
		fprintf(s->f, "%" PRIu64, x);
		return;
	}
	while (u < 3 && x >= units[u + 1].div)
		u++;
	if (u == 0)
		fprintf(s->f, "%" PRIu64 " ns", x);
	else
		fprintf(s->f, "%.3f %s", (double)x / (double)units[u].div, units[u].unit);
}

static void frame(struct svg *s, uint32_t lvl, double at, uint64_t cum, uint64_t base, const struct ct_node *nd,
		  uint32_t fn)
{
	const char *name = nd ? s->n->name(s->n->ctx, fn) : "all";
	const char *mod = nd && s->n->module ? s->n->module(s->n->ctx, fn) : NULL;
	bool sampled = nd && nd->sampled;
	double x = SVG_PAD + px(s, at), w = px(s, (double)cum);
	int y = s->height - SVG_BOTTOM - (int)(lvl + 1) * SVG_FRAME, h = 0, sat = 0, l = 0;
	double pct = s->total ? 100.0 * (double)cum / (double)s->total : 0;

	module_colour(mod ? mod : "", &h, &sat, &l);
	fprintf(s->f, "<g class=\"fr%s\" data-a=\"%.0f\" data-c=\"%" PRIu64 "\" data-l=\"%u\"><title>%s",
		sampled ? " sampled" : "", at, cum, lvl, sampled ? "+" : "");
	xml_str(s->f, name);
	if (mod) {
		fputs(" (", s->f);
		xml_str(s->f, mod);
		putc(')', s->f);
	}
	fputs("\nBase: ", s->f);
	cost(s, base);
	fputs("  Cum: ", s->f);
	cost(s, cum);
	fprintf(s->f, " (%.2f%%)  %s: ", pct, s->count);
	if (!nd)
		fputs("-", s->f);
	else if (sampled)
		fputs("- (sampled: calls unknown)", s->f);
	else
		fprintf(s->f, "%" PRIu64, nd->calls);
	fprintf(s->f, "</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"hsl(%d,%d%%,%d%%)\"",
		x, y, w, SVG_FRAME - 1, h, sat, l);
	if (sampled)
		fputs(" fill-opacity=\"0.55\" stroke=\"#333\" stroke-dasharray=\"3,2\"", s->f);
	fprintf(s->f, " rx=\"2\"/><text x=\"%.2f\" y=\"%d\">", x + 3, y + SVG_FRAME - 5);
	/* the name as it fits (the script refits it after a zoom) */
	size_t fit = w > 6 ? (size_t)((w - 6) / SVG_CHAR_PX) : 0, len = strlen(name) + sampled;
	if (fit >= len) {
		fputs(sampled ? "+" : "", s->f);
		xml_str(s->f, name);
	} else if (fit >= 3) {
		char buf[256];
		snprintf(buf, sizeof(buf), "%s%.*s..", sampled ? "+" : "", (int)(fit - 2 - sampled), name);
		xml_str(s->f, buf);
	}
	fputs("</text></g>\n", s->f);
}

static int visit(void *arg, const struct ct_tree *t, uint32_t node)
{
	struct svg *s = arg;
	const struct ct_node *nd = ct_node(t, node);
	uint64_t cum = ct_cum(t, node, s->metric);

	if (px(s, (double)cum) < SVG_MIN_PX)
		return CT_SKIP;
	if (XP_GROW(s->cursor, s->capcursor, nd->lvl + 2) < 0)
		return -ENOMEM;
	double at = s->cursor[nd->lvl];
	s->cursor[nd->lvl] += (double)cum;
	s->cursor[nd->lvl + 1] = at;	/* its children start where it does */
	frame(s, nd->lvl, at, cum, ct_base(t, node, s->metric), nd, nd->fn);
	return 0;
}

static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"const W = %d, PAD = %d, CH = %d, TOTAL = %s;\n"
	"const frames = Array.from(document.querySelectorAll('g.fr'));\n"
	"const details = document.getElementById('details');\n"
	"let za = 0, zc = TOTAL, zl = 0;\n"
	"function fit(g, w) {\n"
	"  const t = g.querySelector('text'), n = g.querySelector('title').textContent.split('\\n')[0]\n"
	"    .replace(/ \\([^()]*\\)$/, '');\n"
	"  const k = Math.floor((w - 6) / CH);\n"
	"  t.textContent = k >= n.length ? n : k >= 3 ? n.slice(0, k - 2) + '..' : '';\n"
	"}\n"
	"function layout() {\n"
	"  for (const g of frames) {\n"
	"    const a = +g.dataset.a, c = +g.dataset.c, l = +g.dataset.l, r = g.querySelector('rect');\n"
	"    let x, w;\n"
	"    if (l < zl && a <= za && a + c >= za + zc) { x = 0; w = W - 2 * PAD; g.classList.add('parent'); }\n"
	"    else { x = (a - za) * (W - 2 * PAD) / zc; w = c * (W - 2 * PAD) / zc; g.classList.remove('parent'); }\n"
	"    const out = a + c <= za || a >= za + zc || (l < zl && !g.classList.contains('parent'));\n"
	"    g.style.display = out ? 'none' : '';\n"
	"    if (out) continue;\n"
	"    r.setAttribute('x', (PAD + x).toFixed(2));\n"
	"    r.setAttribute('width', w.toFixed(2));\n"
	"    g.querySelector('text').setAttribute('x', (PAD + x + 3).toFixed(2));\n"
	"    fit(g, w);\n"
	"  }\n"
	"}\n"
	"function zoom(g) {\n"
	"  za = +g.dataset.a; zc = +g.dataset.c; zl = +g.dataset.l;\n"
	"  if (zc <= 0) { za = 0; zc = TOTAL; zl = 0; }\n"
	"  document.getElementById('unzoom').style.opacity = zl ? 1 : 0;\n"
	"  layout();\n"
	"}\n"
	"for (const g of frames) {\n"
	"  g.addEventListener('click', () => zoom(g));\n"
	"  g.addEventListener('mouseover', () => { details.textContent = g.querySelector('title').textContent.replace('\\n', ': '); });\n"
	"  g.addEventListener('mouseout', () => { details.textContent = ' '; });\n"
	"}\n"
	"document.getElementById('unzoom').addEventListener('click', () => zoom(frames[0]));\n"
	"function search(re) {\n"
	"  let spans = [];\n"
	"  for (const g of frames) {\n"
	"    const n = g.querySelector('title').textContent.split('\\n')[0].replace(/ \\([^()]*\\)$/, '');\n"
	"    const hit = re !== null && re.test(n);\n"
	"    g.classList.toggle('match', hit);\n"
	"    if (hit) spans.push([+g.dataset.a, +g.dataset.a + +g.dataset.c]);\n"
	"  }\n"
	"  spans.sort((x, y) => x[0] - y[0]);\n"
	"  let sum = 0, end = -1;\n"
	"  for (const [a, b] of spans) { if (a >= end) { sum += b - a; end = b; } else if (b > end) { sum += b - end; end = b; } }\n"
	"  document.getElementById('matched').textContent = re === null ? ' ' :\n"
	"    'Matched: ' + (TOTAL ? (100 * sum / TOTAL).toFixed(2) : '0') + '%%';\n"
	"}\n"
	"document.getElementById('search').addEventListener('input', (e) => {\n"
	"  let re = null;\n"
	"  try { re = e.target.value ? new RegExp(e.target.value) : null; } catch (x) { re = null; }\n"
	"  search(re);\n"
	"});\n"
	"]]></script>\n";

int out_svg(FILE *f, const struct ct_tree *t, unsigned metric, const char *title, const char *metric_name,
	    bool ns, const char *count, const struct out_names *n)
{
	struct svg s = { .f = f, .n = n, .metric = metric, .total = ct_total(t, metric), .ns = ns,
			 .count = count };
	int rc;

	for (uint32_t i = 1; i < ct_nnodes(t); i++) {
		const struct ct_node *nd = ct_node(t, i);
		if (nd->lvl > s.depth && px(&s, (double)ct_cum(t, i, metric)) >= SVG_MIN_PX)
			s.depth = nd->lvl;
	}
	s.height = SVG_TOP + (int)(s.depth + 1) * SVG_FRAME + SVG_BOTTOM;
	fprintf(f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		"<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"xmlns=\"http://www.w3.org/2000/svg\">\n"
		"<style>\n"
		"text { font-family: monospace; font-size: 12px; fill: #000; }\n"
		"g.fr { cursor: pointer; }\n"
		"g.fr text { pointer-events: none; }\n"
		"g.fr:hover rect { stroke: #000; stroke-width: 0.8; }\n"
		"g.match rect { fill: rgb(230,0,230); }\n"
		"g.parent rect { fill-opacity: 0.5; }\n"
		"#title { font-size: 17px; text-anchor: middle; }\n"
		"#unzoom { cursor: pointer; opacity: 0; }\n"
		"</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#f8f8f0\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\">",
		SVG_W, s.height, SVG_W, s.height, SVG_W / 2);
	xml_str(f, title);
	fprintf(f, "</text>\n<text x=\"%d\" y=\"24\">", SVG_PAD);
	xml_str(f, metric_name);
	fputs(", total ", f);
	cost(&s, s.total);
	fprintf(f, "</text>\n"
		"<text id=\"unzoom\" x=\"%d\" y=\"44\">Reset zoom</text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"44\"> </text>\n"
		"<foreignObject x=\"%d\" y=\"8\" width=\"230\" height=\"26\">"
		"<input xmlns=\"http://www.w3.org/1999/xhtml\" id=\"search\" type=\"search\" "
		"placeholder=\"search (regex)\" style=\"width:220px\"/></foreignObject>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n",
		SVG_PAD, SVG_W - 240, SVG_W - 240, SVG_PAD, s.height - 6);
	frame(&s, 0, 0, s.total, ct_base(t, CT_ROOT, metric), NULL, CT_FN_ROOT);
	rc = ct_walk(t, metric, visit, &s);
	free(s.cursor);
	if (rc < 0)
		return rc;
	char total[24];
	snprintf(total, sizeof(total), "%" PRIu64, s.total);
	fprintf(f, svg_script, SVG_W, SVG_PAD, SVG_CHAR_PX, total);
	fputs("</svg>\n", f);
	return ferror(f) ? -EIO : 0;
}
