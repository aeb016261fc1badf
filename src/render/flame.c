/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flame graph rendering (render stage): one self-contained interactive SVG
 * per profile, drawn from the call tree of profile/tree.h.
 *
 * The graph is laid out like Brendan Gregg's FlameGraph: one box per call
 * tree node, as wide as its total, children left to right in name order
 * on top of their parent (below it when reversed).  Every box is a
 * <g class="f"> carrying its position in value units (data-o: offset from
 * the left edge, data-v: width, data-d: depth), a <title> with the full
 * name, value and percentage (the tooltip; the script shows the same text
 * in the details line), a <rect> and a <text> label cut with ".." to fit.
 * The inline script (no external resources) zooms, resets, searches with a
 * regular expression and sums the matched share from those data-*
 * attributes, so its numbers are exact, not measured in pixels.
 *
 * Runs of sibling boxes narrower than min_width pixels are merged into one
 * "[N small frames]" box (its subtrees left out), or dropped when the run
 * is narrower too: each row then holds at most width/min_width boxes, so
 * the file stays small however many stacks the profile has.
 *
 * Output is a pure function of the input: no time, no randomness, colours
 * from a hash of the name, children ordered by name bytes.
 *
 * This file draws (output helpers, colours, the boxes, the document); the
 * layout is flamelayout.c's, flameint.h what the two share.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "render/flame.h"
#include "render/flameint.h"
#include "util/buf.h"

/* ---- output helpers ---- */

static void put(struct flame *f, const char *s)
{
	if (!f->err && kiln_buf_adds(f->out, s))
		f->err = -ENOMEM;
}

static void putf(struct flame *f, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void putf(struct flame *f, const char *fmt, ...)
{
	va_list ap;

	if (f->err)
		return;
	va_start(ap, fmt);
	if (kiln_buf_vaddf(f->out, fmt, ap))
		f->err = -ENOMEM;
	va_end(ap);
}

/*
 * Length of the valid UTF-8 sequence at s (1 to 4 bytes), or 0 when it is
 * not valid UTF-8 or not an XML character (surrogates, U+FFFE, U+FFFF).
 */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t len, i;

	if (c < 0x80)
		return 1;
	if (c < 0xc2)
		return 0;
	if (c < 0xe0) {
		len = 2;
	} else if (c < 0xf0) {
		len = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c < 0xf5) {
		len = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else {
		return 0;
	}
	if (n < len || s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	if (len == 3 && c == 0xef && s[1] == 0xbf && s[2] >= 0xbe)
		return 0;
	return len;
}

/* Characters in s, an invalid byte counting as one. */
static size_t utf8_chars(const char *s, size_t len)
{
	size_t i = 0, n = 0, l;

	while (i < len) {
		l = utf8_len((const unsigned char *)s + i, len - i);
		i += l ? l : 1;
		n++;
	}
	return n;
}

/*
 * Appends s as XML text: markup characters escaped, control bytes as '?',
 * invalid UTF-8 as U+FFFD, so that any name gives a well-formed file.
 * With more than max characters, keeps max - 2 and appends "..".
 */
static void put_text(struct flame *f, const char *s, size_t len, size_t max)
{
	size_t i = 0, n = 0, keep = SIZE_MAX, l, run;

	if (max != SIZE_MAX && utf8_chars(s, len) > max)
		keep = max >= 2 ? max - 2 : 0;
	while (i < len && n < keep && !f->err) {
		const unsigned char c = (unsigned char)s[i];

		/* Plain characters go out in runs. */
		for (run = i; run < len && n < keep; run++, n++) {
			unsigned char d = (unsigned char)s[run];

			if (d >= 0x80 || d < 0x20 || d == '&' || d == '<' ||
			    d == '>' || d == '"' || d == '\'')
				break;
		}
		if (run > i) {
			if (kiln_buf_add(f->out, s + i, run - i))
				f->err = -ENOMEM;
			i = run;
			continue;
		}
		n++;
		if (c >= 0x80) {
			l = utf8_len((const unsigned char *)s + i, len - i);
			if (!l) {
				put(f, "\xef\xbf\xbd");
				i++;
			} else {
				if (kiln_buf_add(f->out, s + i, l))
					f->err = -ENOMEM;
				i += l;
			}
			continue;
		}
		switch (c) {
		case '&': put(f, "&amp;"); break;
		case '<': put(f, "&lt;"); break;
		case '>': put(f, "&gt;"); break;
		case '"': put(f, "&quot;"); break;
		case '\'': put(f, "&#39;"); break;
		case '\t': put(f, "\t"); break;
		default: put(f, "?"); break;
		}
		i++;
	}
	if (keep != SIZE_MAX)
		put(f, "..");
}

static void put_texts(struct flame *f, const char *s)
{
	put_text(f, s, strlen(s), SIZE_MAX);
}

/* Appends digits with thousands separators: "-1,234,567". */
static void put_grouped(struct flame *f, const char *digits)
{
	size_t n, i;

	if (*digits == '-') {
		put(f, "-");
		digits++;
	}
	n = strlen(digits);
	for (i = 0; i < n && !f->err; i++) {
		if (i && (n - i) % 3 == 0)
			put(f, ",");
		if (kiln_buf_addc(f->out, digits[i]))
			f->err = -ENOMEM;
	}
}

static void put_int(struct flame *f, int64_t v)
{
	char tmp[32];

	snprintf(tmp, sizeof(tmp), "%" PRId64, v);
	put_grouped(f, tmp);
}

/* A fixed-point number with two decimals and grouped integer digits. */
static void put_fixed(struct flame *f, double v)
{
	char tmp[64], *dot;

	snprintf(tmp, sizeof(tmp), "%.2f", v);
	dot = strchr(tmp, '.');
	if (dot)
		*dot = '\0';
	put_grouped(f, tmp);
	if (dot) {
		put(f, ".");
		put(f, dot + 1);
	}
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), sl = strlen(suffix);

	return l >= sl && !strcmp(s + l - sl, suffix);
}

/* A value with its unit: "1,234 samples", "12.50 ms", "1.50 MiB". */
static void put_value(struct flame *f, int64_t v)
{
	static const char *const bunits[] = { "KiB", "MiB", "GiB", "TiB",
					      "PiB", "EiB" };
	const char *u = f->unit;

	if (!strcmp(u, "nanoseconds")) {
		put_fixed(f, (double)v / 1e6);
		put(f, " ms");
	} else if (!strcmp(u, "microseconds")) {
		put_fixed(f, (double)v / 1e3);
		put(f, " ms");
	} else if (!strcmp(u, "milliseconds")) {
		put_int(f, v);
		put(f, " ms");
	} else if (!strcmp(u, "seconds")) {
		put_int(f, v);
		put(f, " s");
	} else if (!strcmp(u, "bytes")) {
		double d = (double)v;
		int i = -1;

		while (fabs(d) >= 1024 && i < 5) {
			d /= 1024;
			i++;
		}
		if (i < 0) {
			put_int(f, v);
			put(f, " B");
		} else {
			putf(f, "%.2f %s", d, bunits[i]);
		}
	} else if (!strcmp(u, "count") || !*u) {
		put_int(f, v);
		if (!strcmp(f->type, "samples") || !*f->type) {
			put(f, v == 1 ? " sample" : " samples");
		} else if (ends_with(f->type, "objects")) {
			put(f, " objects");
		} else {
			put(f, " ");
			put_texts(f, f->type);
		}
	} else {
		put_int(f, v);
		put(f, " ");
		put_texts(f, u);
	}
}

/* ---- colours ---- */

/* Three numbers in [0, 1] from the hash of a name: stable variation. */
static void name_hash3(const char *s, size_t len, double v[3])
{
	uint64_t h = kiln_hash(s, len);

	v[0] = (double)(h & 0xffff) / 65535.0;
	v[1] = (double)((h >> 16) & 0xffff) / 65535.0;
	v[2] = (double)((h >> 32) & 0xffff) / 65535.0;
}

/*
 * Warm red to yellow for the program's own code, teal and green for
 * shared libraries, blue and violet for the kernel, grey for the rest.
 */
uint32_t kiln_flame_rgb(const char *name, size_t len, enum kiln_kind kind)
{
	double v[3];
	int r, g, b;

	name_hash3(name, len, v);
	switch (kind) {
	case KILN_KIND_USER:
		r = 205 + (int)(50 * v[2]);
		g = (int)(200 * v[0]);	/* below red: no yellow-greens */
		b = (int)(55 * v[1]);
		break;
	case KILN_KIND_LIB:
		r = 40 + (int)(70 * v[0]);
		g = 165 + (int)(60 * v[1]);
		b = 120 + (int)(80 * v[2]);
		break;
	case KILN_KIND_KERNEL:
		r = 100 + (int)(70 * v[0]);
		g = 120 + (int)(60 * v[0]);
		b = 215 + (int)(40 * v[1]);
		break;
	default:
		r = g = b = 165 + (int)(45 * v[0]);
		break;
	}
	return (uint32_t)r << 16 | (uint32_t)g << 8 | (uint32_t)b;
}

uint32_t kiln_flame_node_rgb(const struct kiln_prof *p, const char *name,
			     size_t len, enum kiln_kind kind)
{
	/* A profile without any mapping (collapsed stacks) cannot tell code
	 * apart: the warm palette, as FlameGraph draws. */
	if (kind == KILN_KIND_OTHER && !p->nmappings)
		kind = KILN_KIND_USER;
	return kiln_flame_rgb(name, len, kind);
}

/*
 * Differential colour: neutral grey-white when the share did not change,
 * towards red when it grew, towards blue when it shrank, saturating at a
 * change of scale percentage points.
 */
uint32_t kiln_flame_diff_rgb(double delta, double scale)
{
	double a = scale > 0 ? fabs(delta) / scale : 1;
	int r, g, b;

	if (a > 1)
		a = 1;
	if (delta > 0) {
		r = 235 + (int)lround(20 * a);
		g = 235 - (int)lround(185 * a);
		b = 235 - (int)lround(185 * a);
	} else {
		r = 235 - (int)lround(195 * a);
		g = 235 - (int)lround(145 * a);
		b = 235 + (int)lround(20 * a);
	}
	return (uint32_t)r << 16 | (uint32_t)g << 8 | (uint32_t)b;
}

static void diff_colour(const struct flame *f, double delta, char out[48])
{
	uint32_t c = kiln_flame_diff_rgb(delta, f->diff_scale);

	snprintf(out, 48, "rgb(%u,%u,%u)", c >> 16, (c >> 8) & 0xff, c & 0xff);
}

/* ---- the boxes ---- */

/* Second pass: one <g class="f"> per box. */
static int draw(void *ctx, const struct kiln_flame_box *b)
{
	struct flame *f = ctx;
	const struct kiln_tree_node *nd = &f->t.nodes[b->node];
	int64_t total = f->t.nodes[0].total;
	double x = XPAD + (double)b->x * f->scale;
	double w = (double)b->v * f->scale;
	double y = kflame_box_y(f, b->depth);
	char merged[64], fill[48];
	const char *name;
	size_t len, chars;

	if (b->nmerged) {
		snprintf(merged, sizeof(merged), "[%" PRIu32 " small frames]",
			 b->nmerged);
		name = merged;
		len = strlen(merged);
	} else if (b->node == 0) {
		name = "all";
		len = 3;
	} else {
		name = kiln_prof_str(f->p, nd->name);
		len = kiln_prof_strlen(f->p, nd->name);
	}
	if (f->t.has_base) {
		diff_colour(f, box_change(f, b), fill);
	} else {
		uint32_t c = b->nmerged || !b->node ?
			kiln_flame_rgb(name, len, KILN_KIND_OTHER) :
			kiln_flame_node_rgb(f->p, name, len,
					    (enum kiln_kind)nd->kind);

		snprintf(fill, sizeof(fill), "rgb(%u,%u,%u)", c >> 16,
			 (c >> 8) & 0xff, c & 0xff);
	}

	putf(f, "<g class=\"f\" data-o=\"%" PRId64 "\" data-v=\"%" PRId64
	     "\" data-d=\"%" PRIu32 "\"><title>", b->x, b->v, b->depth);
	put_text(f, name, len, SIZE_MAX);
	put(f, " (");
	put_value(f, b->v);
	putf(f, ", %.2f%%", pct(b->v, total));
	if (f->t.has_base && f->by_value) {
		put(f, "; base ");
		put_value(f, b->base);
		put(f, b->v >= b->base ? "; +" : "; -");
		put_value(f, b->v >= b->base ? b->v - b->base : b->base - b->v);
	} else if (f->t.has_base) {
		double d = box_change(f, b);

		put(f, "; base ");
		put_value(f, b->base);
		putf(f, ", %.2f%%; %s%.2f%%", pct(b->base, f->t.base_total),
		     d >= 0 ? "+" : "-", fabs(d));
	}
	putf(f, ")</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" "
	     "height=\"%d\" fill=\"%s\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" "
	     "y=\"%.1f\">", x, y, w, FRAME_H - 1, fill, x + 3, y + 11.5);
	/* The same rule as label() in the script. */
	chars = w > 6 ? (size_t)floor((w - 6) / GLYPH_WIDTH) : 0;
	if (chars >= 3)
		put_text(f, name, len, chars);
	put(f, "</text></g>\n");
	return 0;
}

/* ---- the document ---- */

static const char flame_css[] =
	"text { font-family: Verdana, 'DejaVu Sans', sans-serif; "
	"font-size: 12px; fill: rgb(0,0,0); }\n"
	"#title { text-anchor: middle; font-size: 17px; }\n"
	"#subtitle { text-anchor: middle; fill: rgb(90,90,90); }\n"
	"#search, #matched { text-anchor: end; }\n"
	"#search, #unzoom { cursor: pointer; fill: rgb(60,60,160); }\n"
	"#search:hover, #unzoom:hover { text-decoration: underline; }\n"
	"#nosamples { text-anchor: middle; font-size: 15px; fill: rgb(90,90,90); }\n"
	"g.f { cursor: pointer; }\n"
	"g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
	"g.f text { pointer-events: none; }\n"
	".hide { display: none; }\n"
	".parent { opacity: 0.5; }\n";

/*
 * The script: no "]]" anywhere in it (it sits in a CDATA section).
 * Frames are read once from their data-* attributes; all arithmetic is
 * in value units, converted to pixels with the width of the drawing area.
 */
static const char flame_js[] =
	"\"use strict\";\n"
	"var F = [], byG = new Map(), W, XP, CW, TOTAL, details, unzoomBtn,\n"
	"    searchBtn, matchedTxt, searching = false;\n"
	"function init() {\n"
	"  var fr = document.getElementById(\"frames\");\n"
	"  W = +fr.getAttribute(\"data-width\");\n"
	"  XP = +fr.getAttribute(\"data-xpad\");\n"
	"  CW = +fr.getAttribute(\"data-charw\");\n"
	"  TOTAL = +fr.getAttribute(\"data-total\");\n"
	"  details = document.getElementById(\"details\").firstChild;\n"
	"  unzoomBtn = document.getElementById(\"unzoom\");\n"
	"  searchBtn = document.getElementById(\"search\");\n"
	"  matchedTxt = document.getElementById(\"matched\").firstChild;\n"
	"  var gs = fr.querySelectorAll(\"g.f\");\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], info = g.querySelector(\"title\").textContent;\n"
	"    var k = info.lastIndexOf(\" (\");\n"
	"    var f = { g: g, r: g.querySelector(\"rect\"), t: g.querySelector(\"text\"),\n"
	"      o: +g.getAttribute(\"data-o\"), v: +g.getAttribute(\"data-v\"),\n"
	"      d: +g.getAttribute(\"data-d\"), info: info,\n"
	"      name: k < 0 ? info : info.slice(0, k) };\n"
	"    F.push(f);\n"
	"    byG.set(g, f);\n"
	"  }\n"
	"  fr.addEventListener(\"mouseover\", function (e) {\n"
	"    var f = frameOf(e.target);\n"
	"    if (f) details.nodeValue = \"Function: \" + f.info;\n"
	"  });\n"
	"  fr.addEventListener(\"mouseout\", function (e) {\n"
	"    if (frameOf(e.target)) details.nodeValue = \" \";\n"
	"  });\n"
	"  fr.addEventListener(\"click\", function (e) {\n"
	"    var f = frameOf(e.target);\n"
	"    if (!f) return;\n"
	"    if (f.d === 0) unzoom(); else zoom(f);\n"
	"  });\n"
	"  unzoomBtn.addEventListener(\"click\", unzoom);\n"
	"  searchBtn.addEventListener(\"click\", function () {\n"
	"    if (searching) resetSearch(); else searchPrompt();\n"
	"  });\n"
	"  window.addEventListener(\"keydown\", function (e) {\n"
	"    if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
	"      e.preventDefault();\n"
	"      searchPrompt();\n"
	"    } else if (e.key === \"Escape\") {\n"
	"      resetSearch();\n"
	"    }\n"
	"  });\n"
	"  var s = new URLSearchParams(document.location.search).get(\"s\");\n"
	"  if (s) search(s);\n"
	"}\n"
	"function frameOf(el) {\n"
	"  var g = el && el.closest ? el.closest(\"g.f\") : null;\n"
	"  return g ? byG.get(g) : null;\n"
	"}\n"
	"function label(f, w) {\n"
	"  var n = w > 6 ? Math.floor((w - 6) / CW) : 0;\n"
	"  var s = f.name;\n"
	"  if (n < 3) s = \"\";\n"
	"  else if (s.length > n) s = s.slice(0, n - 2) + \"..\";\n"
	"  f.t.textContent = s;\n"
	"}\n"
	"function place(f, x, w) {\n"
	"  f.r.setAttribute(\"x\", x.toFixed(2));\n"
	"  f.r.setAttribute(\"width\", w.toFixed(2));\n"
	"  f.t.setAttribute(\"x\", (x + 3).toFixed(2));\n"
	"  label(f, w);\n"
	"}\n"
	"function zoom(z) {\n"
	"  var span = W - 2 * XP;\n"
	"  for (var i = 0; i < F.length; i++) {\n"
	"    var f = F[i], cl = f.g.classList;\n"
	"    if (f.d < z.d && f.o <= z.o && f.o + f.v >= z.o + z.v) {\n"
	"      cl.remove(\"hide\");\n"
	"      cl.add(\"parent\");\n"
	"      place(f, XP, span);\n"
	"    } else if (f.d >= z.d && f.o >= z.o && f.o + f.v <= z.o + z.v) {\n"
	"      cl.remove(\"hide\");\n"
	"      cl.remove(\"parent\");\n"
	"      place(f, XP + (f.o - z.o) / z.v * span, f.v / z.v * span);\n"
	"    } else {\n"
	"      cl.add(\"hide\");\n"
	"    }\n"
	"  }\n"
	"  unzoomBtn.classList.remove(\"hide\");\n"
	"}\n"
	"function unzoom() {\n"
	"  var span = W - 2 * XP;\n"
	"  for (var i = 0; i < F.length; i++) {\n"
	"    var f = F[i];\n"
	"    f.g.classList.remove(\"hide\");\n"
	"    f.g.classList.remove(\"parent\");\n"
	"    place(f, XP + f.o / TOTAL * span, f.v / TOTAL * span);\n"
	"  }\n"
	"  unzoomBtn.classList.add(\"hide\");\n"
	"}\n"
	"function searchPrompt() {\n"
	"  var term = prompt(\"Search for a regular expression \" +\n"
	"    \"(start with (?i) to ignore case)\", \"\");\n"
	"  if (term) search(term);\n"
	"}\n"
	"function resetSearch() {\n"
	"  for (var i = 0; i < F.length; i++) {\n"
	"    var r = F[i].r, old = r.getAttribute(\"data-fill\");\n"
	"    if (old) { r.setAttribute(\"fill\", old); r.removeAttribute(\"data-fill\"); }\n"
	"  }\n"
	"  searching = false;\n"
	"  searchBtn.firstChild.nodeValue = \"Search\";\n"
	"  matchedTxt.nodeValue = \" \";\n"
	"}\n"
	"function search(term) {\n"
	"  var flags = \"\", re;\n"
	"  if (term.indexOf(\"(?i)\") === 0) { flags = \"i\"; term = term.slice(4); }\n"
	"  try { re = new RegExp(term, flags); } catch (e) {\n"
	"    details.nodeValue = \"Bad regular expression: \" + e.message;\n"
	"    return;\n"
	"  }\n"
	"  resetSearch();\n"
	"  var m = [];\n"
	"  for (var i = 0; i < F.length; i++) {\n"
	"    var f = F[i];\n"
	"    if (f.d === 0 || !re.test(f.name)) continue;\n"
	"    f.r.setAttribute(\"data-fill\", f.r.getAttribute(\"fill\"));\n"
	"    f.r.setAttribute(\"fill\", \"" SEARCH_COLOUR "\");\n"
	"    m.push(f);\n"
	"  }\n"
	"  /* Boxes are nested or disjoint: count only the outermost, so each\n"
	"   * sample counts once however often it matches. */\n"
	"  m.sort(function (a, b) { return a.o - b.o || b.v - a.v; });\n"
	"  var sum = 0, end = -1;\n"
	"  for (var j = 0; j < m.length; j++) {\n"
	"    if (m[j].o >= end) { sum += m[j].v; end = m[j].o + m[j].v; }\n"
	"  }\n"
	"  searching = true;\n"
	"  searchBtn.firstChild.nodeValue = \"Reset Search\";\n"
	"  matchedTxt.nodeValue = \"Matched: \" +\n"
	"    (TOTAL > 0 ? 100 * sum / TOTAL : 0).toFixed(2) + \"%\";\n"
	"}\n"
	"window.addEventListener(\"load\", init);\n";

static void put_subtitle(struct flame *f, const struct kiln_flame_opts *o)
{
	if (o->subtitle) {
		put_texts(f, o->subtitle);
		return;
	}
	put_texts(f, f->type);
	put(f, "/");
	put_texts(f, f->unit);
	put(f, ", total ");
	put_value(f, f->t.nodes[0].total);
	if (f->t.has_base) {
		put(f, "; base total ");
		put_value(f, f->t.base_total);
		put(f, f->by_value ? "; red: grew, blue: shrank" :
			"; red: share grew, blue: share shrank");
	}
	if (f->t.reverse)
		put(f, "; reversed: leaf functions at the top, callers below");
}

int kiln_flame_svg(struct kiln_prof *p, int type,
		   const struct kiln_flame_opts *o, struct kiln_buf *out)
{
	static const struct kiln_flame_opts defaults = { 0 };
	struct flame f = { .p = p, .out = out };
	const char *title;
	int64_t total;
	size_t len0 = out->len;
	int err;

	if (!o)
		o = &defaults;
	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	kiln_tree_init(&f.t);
	err = kiln_tree_build(&f.t, p, type, o->reverse);
	if (!err && o->base)
		err = o->diff_by_function ?
			kiln_tree_add_base_by_function(&f.t, o->base, o->base_type) :
			kiln_tree_add_base(&f.t, o->base, o->base_type);
	f.by_value = o->diff_compare ? o->diff_compare > 0 : f.t.base_by_value;
	if (err)
		goto out;
	f.type = kiln_prof_str(p, p->types[type].type);
	f.unit = kiln_prof_str(p, p->types[type].unit);
	f.width = o->width > 0 ? o->width : DEFAULT_WIDTH;
	if (f.width < 2 * XPAD + 10)
		f.width = 2 * XPAD + 10;
	f.min_width = o->min_width > 0 ? o->min_width : 1.0;
	total = f.t.nodes[0].total;
	f.scale = total > 0 ? (double)(f.width - 2 * XPAD) / (double)total : 0;
	/* A change of one percentage point or less is not worth full red. */
	f.diff_scale = 1.0;
	if (total > 0)
		err = kflame_walk(&f, kflame_measure);
	if (err)
		goto out;
	f.height = YPAD_TOP + YPAD_BOTTOM +
		   (total > 0 ? (int)(f.max_depth + 1) * FRAME_H : 3 * FRAME_H);

	title = o->title ? o->title :
		o->base ? "Differential Flame Graph" :
		o->reverse ? "Icicle Graph" : "Flame Graph";
	putf(&f, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
	     "<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
	     "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
	     f.width, f.height, f.width, f.height);
	put(&f, "<!-- kiln flame graph: hover for details, click to zoom, "
		"Ctrl-F to search -->\n");
	put(&f, "<defs><linearGradient id=\"background\" y1=\"0\" y2=\"1\" "
		"x1=\"0\" x2=\"0\"><stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
		"<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient>"
		"</defs>\n");
	put(&f, "<style type=\"text/css\">\n");
	put(&f, flame_css);
	put(&f, "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n");
	put(&f, flame_js);
	put(&f, "]]></script>\n");
	putf(&f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
	     "fill=\"url(#background)\"/>\n", f.width, f.height);
	putf(&f, "<text id=\"title\" x=\"%.1f\" y=\"24\">", f.width / 2.0);
	put_texts(&f, title);
	putf(&f, "</text>\n<text id=\"subtitle\" x=\"%.1f\" y=\"44\">",
	     f.width / 2.0);
	put_subtitle(&f, o);
	putf(&f, "</text>\n<text id=\"unzoom\" class=\"hide\" x=\"%d\" "
	     "y=\"24\">Reset Zoom</text>\n", XPAD);
	putf(&f, "<text id=\"search\" x=\"%d\" y=\"24\">Search</text>\n",
	     f.width - XPAD);
	putf(&f, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD,
	     f.height - 14);
	putf(&f, "<text id=\"matched\" x=\"%d\" y=\"%d\"> </text>\n",
	     f.width - XPAD, f.height - 14);
	if (total <= 0)
		putf(&f, "<text id=\"nosamples\" x=\"%.1f\" y=\"%d\">"
		     "no samples</text>\n", f.width / 2.0,
		     YPAD_TOP + 2 * FRAME_H);
	putf(&f, "<g id=\"frames\" data-total=\"%" PRId64 "\" data-width=\"%d\" "
	     "data-xpad=\"%d\" data-charw=\"%.2f\">\n", total > 0 ? total : 0,
	     f.width, XPAD, GLYPH_WIDTH);
	if (total > 0)
		err = kflame_walk(&f, draw);
	put(&f, "</g>\n</svg>\n");
	if (!err)
		err = f.err;
out:
	kiln_tree_release(&f.t);
	if (err) {
		out->len = len0;
		if (out->cap)
			out->data[len0] = '\0';
	}
	return err;
}
