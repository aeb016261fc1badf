/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Memory over time as SVG (render stage): stacked areas, one per site,
 * the rest in grey, a dashed line for the largest size within each
 * interval, the peak marked, axes with round ticks and a legend.
 * Numbers are printed with fixed precision so the bytes are the same for
 * the same input.
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/timeline.h"
#include "util/buf.h"

#define LEFT 90
#define RIGHT 330
#define TOP 70
#define BOTTOM 50

/* Band colours, bottom up; "other" is grey. */
static const char *const palette[] = {
	"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
	"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#86bcb6",
	"#d37295", "#a0cbe8",
};
#define NPALETTE (sizeof(palette) / sizeof(palette[0]))

void kiln_bytes_str(double v, char *buf, size_t n)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB" };
	int u = -1;

	if (v < 0)
		v = 0;
	if (v < 1024) {
		snprintf(buf, n, "%.0f B", v);
		return;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, v >= 100 ? "%.0f %s" : v >= 10 ? "%.1f %s" : "%.2f %s",
		 v, units[u]);
}

/* A round step giving about `want` ticks over [0, max]. */
static double nice_step(double max, int want, bool bytes)
{
	double raw = max / want, mag, f;

	if (raw <= 0)
		return 1;
	if (bytes && raw >= 1024) {
		/* powers of two times 1, 2, 5 of a binary unit */
		double unit = 1024;

		while (raw / unit >= 1024)
			unit *= 1024;
		return nice_step(raw * want / unit, want, false) * unit;
	}
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

/* A moment, to about 3 significant digits: "295 us", "12.3 ms", "1.25 s". */
static void moment_str(double s, char *buf, size_t n)
{
	if (s < 1e-3)
		snprintf(buf, n, "%.0f us", s * 1e6);
	else if (s < 1)
		snprintf(buf, n, s < 0.01 ? "%.2f ms" : s < 0.1 ? "%.1f ms" : "%.0f ms",
			 s * 1e3);
	else
		snprintf(buf, n, s < 10 ? "%.2f s" : s < 100 ? "%.1f s" : "%.0f s", s);
}

static void secs_str(double s, double step, char *buf, size_t n)
{
	int prec = step >= 1 ? 0 : step >= 0.1 ? 1 : step >= 0.01 ? 2 : 3;

	if (step < 0.001)
		snprintf(buf, n, "%.0f us", s * 1e6);
	else
		snprintf(buf, n, "%.*f s", prec, s);
}

struct geo {
	double x0, y0, w, h;	/* plot area: left, bottom, width, height */
	double xmax, ymax;
	double dx;		/* seconds per interval */
};

static double px(const struct geo *g, double s)
{
	return g->x0 + g->w * s / g->xmax;
}

static double py(const struct geo *g, double v)
{
	return g->y0 - g->h * v / g->ymax;
}

/* A closed area between lower and upper (n values each). */
static int area(struct kiln_buf *o, const struct geo *g, const double *lo,
		const double *hi, size_t n)
{
	size_t i;
	int e = 0;

	e |= kiln_buf_addf(o, "M%.1f,%.1f", px(g, 0), py(g, 0));
	for (i = 0; i < n; i++)
		e |= kiln_buf_addf(o, " L%.1f,%.1f", px(g, (double)(i + 1) * g->dx),
			      py(g, hi[i]));
	for (i = n; i-- > 0;)
		e |= kiln_buf_addf(o, " L%.1f,%.1f", px(g, (double)(i + 1) * g->dx),
			      py(g, lo[i]));
	e |= kiln_buf_adds(o, " Z");
	return e;
}

static int label(struct kiln_buf *o, const char *s, size_t max)
{
	size_t n = strlen(s);
	int e = 0;

	if (n <= max)
		return kiln_buf_add_xml(o, s, n);
	/* cut at a character boundary, not inside a UTF-8 sequence */
	n = max - 3;
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	e |= kiln_buf_add_xml(o, s, n);
	e |= kiln_buf_adds(o, "...");
	return e;
}

/* The document's head: size, style, background, title and subtitle. */
static int put_head(struct kiln_buf *o, const struct kiln_timeline *tl,
		    int W, int H)
{
	int e = 0;

	e |= kiln_buf_addf(o, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		      "<svg version=\"1.1\" width=\"%d\" height=\"%d\" "
		      "viewBox=\"0 0 %d %d\" xmlns=\"http://www.w3.org/2000/svg\">\n",
		      W, H, W, H);
	e |= kiln_buf_adds(o, "<style>\n"
		      "text { font-family: Verdana, 'DejaVu Sans', sans-serif; "
		      "font-size: 12px; fill: rgb(0,0,0); }\n"
		      "#title { text-anchor: middle; font-size: 17px; }\n"
		      "#subtitle { text-anchor: middle; fill: rgb(90,90,90); }\n"
		      ".tick { text-anchor: end; }\n"
		      ".xtick { text-anchor: middle; }\n"
		      ".band:hover { opacity: 0.75; }\n"
		      ".grid { stroke: rgb(225,225,225); stroke-width: 1; }\n"
		      "</style>\n");
	e |= kiln_buf_addf(o, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" "
		      "fill=\"rgb(250,250,250)\"/>\n", W, H);
	e |= kiln_buf_addf(o, "<text id=\"title\" x=\"%.1f\" y=\"24\">", W / 2.0);
	e |= label(o, tl->title ? tl->title : "Heap memory over time", 120);
	e |= kiln_buf_adds(o, "</text>\n");
	if (tl->subtitle) {
		e |= kiln_buf_addf(o, "<text id=\"subtitle\" x=\"%.1f\" y=\"44\">",
			      W / 2.0);
		e |= label(o, tl->subtitle, 150);
		e |= kiln_buf_adds(o, "</text>\n");
	}
	return e;
}

/* The grid, both axes' ticks (step apart on the y axis) and "time". */
static int put_axes(struct kiln_buf *o, const struct geo *g, int H,
		    double step)
{
	double v;
	char a[64];
	int e = 0;

	for (v = 0; v <= g->ymax + step / 2; v += step) {
		kiln_bytes_str(v, a, sizeof(a));
		e |= kiln_buf_addf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
			      "x2=\"%.1f\" y2=\"%.1f\"/>\n<text class=\"tick\" "
			      "x=\"%.1f\" y=\"%.1f\">%s</text>\n", g->x0, py(g, v),
			      g->x0 + g->w, py(g, v), g->x0 - 6, py(g, v) + 4, a);
	}
	step = nice_step(g->xmax, 8, false);
	for (v = 0; v <= g->xmax + step / 1000; v += step) {
		secs_str(v, step, a, sizeof(a));
		e |= kiln_buf_addf(o, "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" "
			      "x2=\"%.1f\" y2=\"%.1f\"/>\n<text class=\"xtick\" "
			      "x=\"%.1f\" y=\"%.1f\">%s</text>\n", px(g, v), g->y0,
			      px(g, v), g->y0 - g->h, px(g, v), g->y0 + 18, a);
	}
	e |= kiln_buf_addf(o, "<text class=\"xtick\" x=\"%.1f\" y=\"%d\">time</text>\n",
		      g->x0 + g->w / 2, H - 10);
	return e;
}

#define LEGEND_CHARS 36
#define LEGEND_BUF 96

/* n, moved back to the start of the UTF-8 character it is inside. */
static size_t char_start(const char *s, size_t n)
{
	while (n && ((unsigned char)s[n] & 0xc0) == 0x80)
		n--;
	return n;
}

/*
 * The legend's text of band k: its label, cut to LEGEND_CHARS; when
 * another band's label starts the same that far (ten sites called
 * through the same functions), its start, "...", and the part where it
 * differs from the others, so that no two entries read alike.
 */
static void short_label(const struct kiln_timeline *tl, size_t k, char *out)
{
	const char *s = tl->bands[k].label;
	size_t len = strlen(s), cp = 0, j, a, b;

	for (j = 0; j < tl->nbands; j++) {
		const char *t = tl->bands[j].label;
		size_t c = 0;

		while (j != k && s[c] && s[c] == t[c])
			c++;
		if (c > cp)
			cp = c;
	}
	if (len <= LEGEND_CHARS) {
		snprintf(out, LEGEND_BUF, "%s", s);
	} else if (cp < LEGEND_CHARS - 3) {
		snprintf(out, LEGEND_BUF, "%.*s...",
			 (int)char_start(s, LEGEND_CHARS - 3), s);
	} else {
		a = char_start(s, cp > 8 ? cp - 8 : 0);
		b = char_start(s, a + 20 < len ? a + 20 : len);
		snprintf(out, LEGEND_BUF, "%.*s...%.*s%s", (int)char_start(s, 14), s,
			 (int)(b - a), s + a, b < len ? "..." : "");
	}
}

/* The legend's texts of every band; still alike (labels differing past
 * the window shown): numbered. */
static void legend_texts(const struct kiln_timeline *tl, char (*t)[LEGEND_BUF])
{
	size_t k, j;

	for (k = 0; k < tl->nbands; k++)
		short_label(tl, k, t[k]);
	for (k = 0; k < tl->nbands; k++)
		for (j = k + 1; j < tl->nbands; j++)
			if (!strcmp(t[k], t[j])) {
				size_t n = strlen(t[j]);

				snprintf(t[j] + (n < LEGEND_BUF - 24 ? n : LEGEND_BUF - 24),
					 24, " #%zu", j + 1);
			}
}

/* Band k's entry in the legend (k == nbands: the rest), at its peak. */
static int put_legend(struct kiln_buf *o, const struct geo *g,
		      const struct kiln_timeline *tl, size_t k,
		      const char *colour, double peak, const char *text)
{
	char a[64];
	int e = 0;

	e |= kiln_buf_addf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" "
		      "height=\"12\" fill=\"%s\"/>\n<text x=\"%.1f\" "
		      "y=\"%.1f\">", g->x0 + g->w + 16,
		      TOP + 20.0 * (double)(tl->nbands - k), colour,
		      g->x0 + g->w + 34, TOP + 20.0 * (double)(tl->nbands - k) + 11);
	if (k < tl->nbands) {
		kiln_bytes_str(peak, a, sizeof(a));
		e |= kiln_buf_addf(o, "%s ", a);
		e |= kiln_buf_add_xml(o, text, strlen(text));
	} else {
		e |= kiln_buf_adds(o, "other sites");
	}
	e |= kiln_buf_adds(o, "</text>\n");
	return e;
}

/* The bands stacked bottom up, then the rest; lo and hi: n values each,
 * hi zero on entry. */
static int put_bands(struct kiln_buf *o, const struct geo *g,
		     const struct kiln_timeline *tl, double *lo, double *hi,
		     char (*texts)[LEGEND_BUF])
{
	char a[64], b[64];
	size_t i, k;
	int e = 0;

	for (k = 0; k <= tl->nbands; k++) {
		const char *colour = k < tl->nbands ? palette[k % NPALETTE]
						    : "rgb(190,190,190)";
		double peak = 0;

		for (i = 0; i < tl->n; i++) {
			lo[i] = hi[i];
			if (k < tl->nbands)
				hi[i] = lo[i] + tl->bands[k].values[i];
			else
				hi[i] = tl->total[i] > lo[i] ? tl->total[i] : lo[i];
			if (hi[i] - lo[i] > peak)
				peak = hi[i] - lo[i];
		}
		if (k == tl->nbands && peak <= 0)
			break;
		e |= kiln_buf_addf(o, "<path class=\"band\" fill=\"%s\" d=\"", colour);
		e |= area(o, g, lo, hi, tl->n);
		e |= kiln_buf_adds(o, "\"><title>");
		if (k < tl->nbands) {
			e |= kiln_buf_add_xml(o, tl->bands[k].label,
					 strlen(tl->bands[k].label));
			kiln_bytes_str(tl->bands[k].peak, a, sizeof(a));
			kiln_bytes_str(peak, b, sizeof(b));
			e |= kiln_buf_addf(o, "\n%s at the peak, at most %s", a, b);
		} else {
			kiln_bytes_str(peak, b, sizeof(b));
			e |= kiln_buf_addf(o, "other sites: at most %s", b);
		}
		e |= kiln_buf_adds(o, "</title></path>\n");
		e |= put_legend(o, g, tl, k, colour, peak,
				k < tl->nbands ? texts[k] : NULL);
	}
	return e;
}

/* The largest size within each interval, the peak and the axes' lines. */
static int put_marks(struct kiln_buf *o, const struct geo *g,
		     const struct kiln_timeline *tl)
{
	char a[64], b[64];
	size_t i;
	int e = 0;

	if (tl->max) {
		e |= kiln_buf_addf(o, "<path fill=\"none\" stroke=\"rgb(60,60,60)\" "
			      "stroke-width=\"1\" stroke-dasharray=\"4,3\" "
			      "d=\"M%.1f,%.1f", px(g, 0), py(g, 0));
		for (i = 0; i < tl->n; i++)
			e |= kiln_buf_addf(o, " L%.1f,%.1f L%.1f,%.1f",
				      px(g, (double)i * g->dx), py(g, tl->max[i]),
				      px(g, (double)(i + 1) * g->dx), py(g, tl->max[i]));
		e |= kiln_buf_adds(o, "\"><title>largest heap size within each "
			      "interval</title></path>\n");
	}
	if (tl->peak > 0) {
		double x = px(g, tl->peak_s), y = py(g, tl->peak);

		kiln_bytes_str(tl->peak, a, sizeof(a));
		moment_str(tl->peak_s, b, sizeof(b));
		e |= kiln_buf_addf(o, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" "
			      "fill=\"rgb(200,0,0)\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
			      "style=\"text-anchor: %s\">peak %s at %s</text>\n",
			      x, y, x + (x > g->x0 + g->w * 0.7 ? -8 : 8), y - 8,
			      x > g->x0 + g->w * 0.7 ? "end" : "start", a, b);
	}
	e |= kiln_buf_addf(o, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
		      "stroke=\"black\"/>\n<line x1=\"%.1f\" y1=\"%.1f\" "
		      "x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
		      g->x0, g->y0, g->x0 + g->w, g->y0, g->x0, g->y0, g->x0,
		      g->y0 - g->h);
	return e;
}

int kiln_timeline_svg(const struct kiln_timeline *tl, struct kiln_buf *out)
{
	int W = tl->width > 0 ? tl->width : 1200;
	int H = tl->height > 0 ? tl->height : 600;
	struct kiln_buf o = KILN_BUF_INIT;
	struct geo g;
	double *lo = NULL, *hi = NULL, top = 0, step;
	char (*texts)[LEGEND_BUF] = NULL;
	size_t i, k;
	int err, e = 0;

	if (!tl->n || (tl->nbands && !tl->bands))
		return -EINVAL;
	for (k = 0; k < tl->nbands; k++)
		if (!tl->bands[k].values)
			return -EINVAL;
	lo = calloc(tl->n, sizeof(*lo));
	hi = calloc(tl->n, sizeof(*hi));
	texts = calloc(tl->nbands + 1, sizeof(*texts));
	if (!lo || !hi || !texts) {
		err = -ENOMEM;
		goto out;
	}
	legend_texts(tl, texts);
	for (i = 0; i < tl->n; i++) {
		if (tl->total[i] > top)
			top = tl->total[i];
		if (tl->max && tl->max[i] > top)
			top = tl->max[i];
	}
	if (tl->peak > top)
		top = tl->peak;
	g.x0 = LEFT;
	g.y0 = H - BOTTOM;
	g.w = W - LEFT - RIGHT;
	g.h = H - TOP - BOTTOM;
	g.dx = tl->interval_s > 0 ? tl->interval_s : 1;
	g.xmax = g.dx * (double)tl->n;
	step = nice_step(top > 0 ? top : 1, 5, true);
	g.ymax = step * ceil((top > 0 ? top : 1) / step);

	e |= put_head(&o, tl, W, H);
	e |= put_axes(&o, &g, H, step);
	e |= put_bands(&o, &g, tl, lo, hi, texts);
	e |= put_marks(&o, &g, tl);
	e |= kiln_buf_adds(&o, "</svg>\n");
	err = e ? -ENOMEM : kiln_buf_add(out, o.data, o.len);
out:
	kiln_buf_release(&o);
	free(lo);
	free(hi);
	free(texts);
	return err;
}
