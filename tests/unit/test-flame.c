/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the flame graph renderer (render/flame.c): content,
 * determinism, escaping, reversed and differential graphs, colours by
 * kind, merging of tiny frames, empty profiles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "render/flame.h"
#include "util/buf.h"

static uint32_t loc_at(struct kiln_prof *p, const char *name, uint32_t m,
		       uint64_t addr)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name),
						  0, 0, 0), 0 };

	return kiln_prof_location(p, m, addr, &l, 1);
}

/* Adds "root;...;leaf" with value v (and v * 1e6 as the second type). */
static void add_in(struct kiln_prof *p, const char *stack, int64_t v,
		   uint32_t m, uint64_t addr)
{
	uint32_t locs[64], n = 0, i;
	char buf[8192], *save, *tok;
	int64_t vals[2] = { v, v * 1000000 };

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc_at(p, tok, m, addr);
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, vals, 0) >= 0);
}

static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	add_in(p, stack, v, 0, 0);
}

static struct kiln_prof *new_prof(void)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	return p;
}

/* 60/30/10 like tests/workloads/shares.c. */
static struct kiln_prof *shares(void)
{
	struct kiln_prof *p = new_prof();

	add(p, "main;run;stage_a;burn_a", 600);
	add(p, "main;run;stage_b;burn_b", 300);
	add(p, "main;run;stage_c;burn_c", 100);
	return p;
}

static char *render(struct kiln_prof *p, int type,
		    const struct kiln_flame_opts *o, size_t *len)
{
	struct kiln_buf b = KILN_BUF_INIT;

	assert_int_equal(kiln_flame_svg(p, type, o, &b), 0);
	assert_non_null(b.data);
	return kiln_buf_detach(&b, len);
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

/*
 * The <g class="f"> element whose title starts with "NAME (": a copy of
 * it (free it), or NULL.
 */
static char *frame_el(const char *svg, const char *name)
{
	char needle[4096];
	const char *t, *g, *end;

	snprintf(needle, sizeof(needle), "<title>%s (", name);
	t = strstr(svg, needle);
	if (!t)
		return NULL;
	for (g = t; g > svg && strncmp(g, "<g class=\"f\"", 12); g--)
		;
	end = strstr(t, "</g>");
	assert_non_null(end);
	return strndup(g, (size_t)(end - g) + 4);
}

/* The numeric value of attribute attr of the rect (or g) in el. */
static double attr(const char *el, const char *a)
{
	char needle[64];
	const char *s;

	snprintf(needle, sizeof(needle), " %s=\"", a);
	s = strstr(el, needle);
	assert_non_null(s);
	return strtod(s + strlen(needle), NULL);
}

static void fill_rgb(const char *el, int rgb[3])
{
	const char *s = strstr(el, "fill=\"rgb(");

	assert_non_null(s);
	assert_int_equal(sscanf(s, "fill=\"rgb(%d,%d,%d)", &rgb[0], &rgb[1],
				&rgb[2]), 3);
}

static void test_content(void **state)
{
	struct kiln_prof *p = shares();
	size_t len;
	char *svg = render(p, 0, NULL, &len), *el;

	assert_int_equal(strlen(svg), len);
	assert_true(!strncmp(svg, "<?xml version=\"1.0\"", 19));
	assert_non_null(strstr(svg, "<svg version=\"1.1\" width=\"1200\""));
	assert_non_null(strstr(svg, "<title>burn_a (600 samples, 60.00%)</title>"));
	assert_non_null(strstr(svg, "<title>burn_b (300 samples, 30.00%)</title>"));
	assert_non_null(strstr(svg, "<title>main (1,000 samples, 100.00%)</title>"));
	assert_non_null(strstr(svg, "<title>all (1,000 samples, 100.00%)</title>"));
	assert_non_null(strstr(svg, ">Flame Graph</text>"));
	assert_non_null(strstr(svg, ">samples/count, total 1,000 samples</text>"));
	/* Interactive parts, all inline. */
	assert_non_null(strstr(svg, "<script type=\"text/ecmascript\"><![CDATA["));
	assert_non_null(strstr(svg, "<style type=\"text/css\">"));
	assert_non_null(strstr(svg, ">Reset Zoom</text>"));
	assert_non_null(strstr(svg, ">Search</text>"));
	assert_non_null(strstr(svg, "id=\"details\""));
	assert_non_null(strstr(svg, "\"Matched: \""));
	assert_int_equal(count(svg, "]]>"), 1);
	assert_null(strstr(svg, "href"));
	assert_null(strstr(svg, "@import"));
	assert_int_equal(count(svg, "http"), 1);	/* the xmlns */
	/* 4 levels + all = 5 rows; 1 + 1 + 1 + 3 + 3 boxes. */
	assert_int_equal(count(svg, "<g class=\"f\""), 9);

	/* Geometry: burn_a starts at the left edge, 60% of 1180 px wide;
	 * burn_b follows it; the rows stack upwards from "all". */
	el = frame_el(svg, "burn_a");
	assert_non_null(el);
	assert_true(attr(el, "x") == 10.0);
	assert_true(attr(el, "width") == 708.0);
	assert_true(attr(el, "data-o") == 0 && attr(el, "data-v") == 600 &&
		    attr(el, "data-d") == 4);
	assert_non_null(strstr(el, ">burn_a</text>"));
	/* No mappings at all (collapsed stacks): the warm palette. */
	{
		int rgb[3];

		fill_rgb(el, rgb);
		assert_true(rgb[0] >= 205 && rgb[2] <= 55);
	}
	free(el);
	el = frame_el(svg, "burn_b");
	assert_true(attr(el, "x") == 718.0);
	assert_true(attr(el, "data-o") == 600);
	free(el);
	el = frame_el(svg, "all");
	assert_true(attr(el, "width") == 1180.0);
	assert_true(attr(el, "y") > attr(strstr(svg, "<title>burn_a"), "y"));
	free(el);
	free(svg);

	/* Nanoseconds show as milliseconds; a title and width of our own. */
	{
		struct kiln_flame_opts o = { .title = "cpu <time>", .width = 800,
					     .subtitle = "sub & title" };

		svg = render(p, 1, &o, &len);
		assert_non_null(strstr(svg, "<title>burn_c (100.00 ms, 10.00%)</title>"));
		assert_non_null(strstr(svg, "<title>all (1,000.00 ms, 100.00%)</title>"));
		assert_non_null(strstr(svg, ">cpu &lt;time&gt;</text>"));
		assert_non_null(strstr(svg, ">sub &amp; title</text>"));
		assert_non_null(strstr(svg, "width=\"800\""));
		el = frame_el(svg, "burn_a");
		assert_true(attr(el, "width") == 468.0);
		free(el);
		free(svg);
	}
	kiln_prof_free(p);
}

static void test_units(void **state)
{
	static const char *const types[] = { "alloc_space/bytes",
					     "alloc_objects/count" };
	struct kiln_prof *p = kiln_prof_new();
	uint32_t l = loc_at(p, "alloc", 0, 0);
	int64_t v[2] = { 3 * 1024 * 1024 / 2, 7 };
	size_t len;
	char *svg;

	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	assert_true(kiln_prof_add_sample(p, &l, 1, v, 0) >= 0);
	svg = render(p, 0, NULL, &len);
	assert_non_null(strstr(svg, "<title>alloc (1.50 MiB, 100.00%)</title>"));
	free(svg);
	svg = render(p, 1, NULL, &len);
	assert_non_null(strstr(svg, "<title>alloc (7 objects, 100.00%)</title>"));
	free(svg);
	kiln_prof_free(p);
}

static void test_deterministic(void **state)
{
	struct kiln_prof *p = shares(), *q = new_prof();
	size_t l1, l2, l3;
	char *a, *b, *c;

	/* The same stacks added in another order, with other string ids. */
	add(q, "unused;x", 0);
	add(q, "main;run;stage_c;burn_c", 100);
	add(q, "main;run;stage_b;burn_b", 150);
	add(q, "main;run;stage_a;burn_a", 600);
	add(q, "main;run;stage_b;burn_b", 150);
	a = render(p, 0, NULL, &l1);
	b = render(p, 0, NULL, &l2);
	c = render(q, 0, NULL, &l3);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	assert_int_equal(l1, l3);
	assert_memory_equal(a, c, l1);
	free(a);
	free(b);
	free(c);
	kiln_prof_free(p);
	kiln_prof_free(q);
}

static void test_escaping(void **state)
{
	struct kiln_prof *p = new_prof();
	size_t len;
	char *svg, *s;

	add(p, "main;operator<<(std::ostream&, \"q\" 'x');bad\xff\xfe;ctl\x01x", 10);
	svg = render(p, 0, NULL, &len);
	assert_non_null(strstr(svg, "<title>operator&lt;&lt;(std::ostream&amp;, "
				    "&quot;q&quot; &#39;x&#39;) (10 samples"));
	/* Invalid UTF-8 becomes U+FFFD, control bytes '?'. */
	assert_non_null(strstr(svg, "<title>bad\xef\xbf\xbd\xef\xbf\xbd (10 samples"));
	assert_non_null(strstr(svg, "<title>ctl?x (10"));
	assert_null(strstr(svg, "\xff"));
	/* No raw markup characters outside tags: every '<' opens a tag of
	 * ours and every '&' an entity, in the frames section. */
	s = strstr(svg, "<g id=\"frames\"");
	assert_non_null(s);
	assert_null(strstr(s, "<<"));
	assert_null(strstr(s, "& "));
	assert_null(strstr(s, "&,"));
	free(svg);
	kiln_prof_free(p);
}

static void test_long_names_truncated(void **state)
{
	struct kiln_prof *p = new_prof();
	char name[6000], stack[6100];
	size_t len, i;
	char *svg, *el, *txt;

	for (i = 0; i < 5000; i++)
		name[i] = "std::vector<int>"[i % 16];
	name[5000] = '\0';
	snprintf(stack, sizeof(stack), "main;%s", name);
	add(p, stack, 1);
	add(p, "main;short", 1);
	svg = render(p, 0, NULL, &len);
	/* The full name, escaped, in the tooltip. */
	assert_non_null(strstr(svg, "std::vector&lt;int&gt;std::vector"));
	el = frame_el(svg, "short");
	assert_non_null(strstr(el, ">short</text>"));
	free(el);
	/* The label fits its box: (590 - 6) / 7.08 = 82 characters. */
	txt = strstr(svg, "<title>std::vector");
	txt = strstr(txt, "<text");
	txt = strchr(txt, '>') + 1;
	el = strndup(txt, (size_t)(strstr(txt, "</text>") - txt));
	assert_true(strlen(el) > 20);
	assert_true(strlen(el) < 200);
	assert_int_equal(strcmp(el + strlen(el) - 2, ".."), 0);
	assert_true(!strncmp(el, "std::vector&lt;int&gt;", 22));
	free(el);
	free(svg);
	kiln_prof_free(p);

	/* Multi-byte characters are counted as characters and never cut
	 * in the middle: 82 - 2 of them, then "..". */
	p = new_prof();
	strcpy(stack, "main;");
	for (i = 0; i < 300; i++)
		strcat(stack, "\xc3\xa9");
	add(p, stack, 1);
	add(p, "main;short", 1);
	svg = render(p, 0, NULL, &len);
	txt = strstr(svg, "<title>\xc3\xa9");
	assert_non_null(txt);
	txt = strchr(strstr(txt, "<text"), '>') + 1;
	el = strndup(txt, (size_t)(strstr(txt, "</text>") - txt));
	assert_int_equal(strlen(el), 80 * 2 + 2);
	assert_int_equal(strcmp(el + 160, ".."), 0);
	assert_int_equal(memcmp(el + 158, "\xc3\xa9", 2), 0);
	free(el);
	free(svg);
	kiln_prof_free(p);
}

static void test_reverse(void **state)
{
	struct kiln_prof *p = shares();
	struct kiln_flame_opts o = { .reverse = true };
	size_t len;
	char *svg, *all, *leaf, *main_;

	add(p, "main;other;burn_a", 200);
	svg = render(p, 0, &o, &len);
	assert_non_null(strstr(svg, ">Icicle Graph</text>"));
	assert_non_null(strstr(svg, "reversed"));
	all = frame_el(svg, "all");
	leaf = frame_el(svg, "burn_a");
	/* The leaf is the root's child, drawn below "all" (top-down). */
	assert_true(attr(leaf, "data-d") == 1);
	assert_true(attr(leaf, "data-v") == 800);
	assert_true(attr(leaf, "y") > attr(all, "y"));
	assert_true(attr(all, "y") == 64);
	/* burn_a is reached from two callers. */
	assert_non_null(strstr(svg, "<title>other (200 samples, 16.67%)"));
	assert_non_null(strstr(svg, "<title>stage_a (600 samples, 50.00%)"));
	/* main appears under each leaf chain: 4 times (a via stage_a, a via
	 * other, b, c). */
	main_ = svg;
	assert_int_equal(count(main_, "<title>main ("), 4);
	free(all);
	free(leaf);
	free(svg);
	kiln_prof_free(p);
}

static void test_diff(void **state)
{
	struct kiln_prof *p = shares(), *base = new_prof();
	struct kiln_flame_opts o = { 0 };
	int rgb[3];
	size_t len;
	char *svg, *el;

	/* Base: a 30%, b 60%, c 10% (twice the samples). */
	add(base, "main;run;stage_a;burn_a", 600);
	add(base, "main;run;stage_b;burn_b", 1200);
	add(base, "main;run;stage_c;burn_c", 200);
	o.base = base;
	o.base_type = 0;
	svg = render(p, 0, &o, &len);
	assert_non_null(strstr(svg, ">Differential Flame Graph</text>"));
	assert_non_null(strstr(svg, "base total 2,000 samples"));
	/* Widths from the new profile, values of both, share change. */
	el = frame_el(svg, "burn_a");
	assert_true(attr(el, "width") == 708.0);
	assert_non_null(strstr(el, "<title>burn_a (600 samples, 60.00%; base "
				   "600 samples, 30.00%; +30.00%)</title>"));
	fill_rgb(el, rgb);
	assert_true(rgb[0] > 200 && rgb[1] < 100 && rgb[2] < 100);	/* red */
	free(el);
	el = frame_el(svg, "burn_b");
	assert_non_null(strstr(el, "; -30.00%)</title>"));
	fill_rgb(el, rgb);
	assert_true(rgb[2] > 200 && rgb[0] < 100);			/* blue */
	free(el);
	el = frame_el(svg, "burn_c");
	fill_rgb(el, rgb);
	assert_true(rgb[0] == rgb[1] && rgb[1] == rgb[2]);		/* neutral */
	free(el);
	free(svg);

	/* Intensity follows the size of the change: +10 points is full red,
	 * -2 points a pale blue.  A path only the base has (stage_d) counts
	 * in its shared ancestors only. */
	kiln_prof_free(base);
	base = new_prof();
	add(base, "main;run;stage_a;burn_a", 500);
	add(base, "main;run;stage_b;burn_b", 300);
	add(base, "main;run;stage_c;burn_c", 120);
	add(base, "main;run;stage_d;burn_d", 80);
	o.base = base;
	svg = render(p, 0, &o, &len);
	{
		int a[3], c[3], da, dc;

		el = frame_el(svg, "burn_a");
		fill_rgb(el, a);
		free(el);
		el = frame_el(svg, "burn_c");
		fill_rgb(el, c);
		free(el);
		assert_true(a[0] > a[1] && a[0] > a[2]);
		assert_true(c[2] > c[0] && c[2] > c[1]);
		da = abs(a[0] - 235) + abs(a[1] - 235) + abs(a[2] - 235);
		dc = abs(c[0] - 235) + abs(c[1] - 235) + abs(c[2] - 235);
		assert_true(da > 3 * dc);
		el = frame_el(svg, "burn_b");	/* equal share */
		fill_rgb(el, rgb);
		assert_true(rgb[0] == rgb[1] && rgb[1] == rgb[2]);
		free(el);
		el = frame_el(svg, "main");	/* 100% in both */
		fill_rgb(el, rgb);
		assert_true(rgb[0] == rgb[1] && rgb[1] == rgb[2]);
		free(el);
		assert_null(strstr(svg, "stage_d"));
	}
	free(svg);
	kiln_prof_free(base);
	kiln_prof_free(p);
}

static void test_kind_colours(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_mapping exe = { 0x400000, 0x500000, 0, 0, 0, true, false,
				    false, false };
	struct kiln_mapping lib = { 0x7f0000000000, 0x7f0000100000, 0, 0, 0,
				    true, false, false, false };
	uint32_t me, ml;
	int rgb[3];
	size_t len;
	char *svg, *el;
	const char *names[] = { "user_fn", "lib_fn", "kern_fn", "jit_fn" };

	exe.file = kiln_prof_interns(p, "/usr/bin/app");
	lib.file = kiln_prof_interns(p, "/usr/lib/libfoo.so.1");
	me = kiln_prof_mapping(p, &exe);
	ml = kiln_prof_mapping(p, &lib);
	add_in(p, "user_fn", 10, me, 0x401000);
	add_in(p, "lib_fn", 10, ml, 0x7f0000001000);
	add_in(p, "kern_fn", 10, 0, 0xffffffff81000000ull);
	add_in(p, "jit_fn", 10, 0, 0x1234);
	svg = render(p, 0, NULL, &len);
	el = frame_el(svg, names[0]);
	fill_rgb(el, rgb);
	assert_true(rgb[0] >= 205 && rgb[2] <= 55);	/* warm */
	free(el);
	el = frame_el(svg, names[1]);
	fill_rgb(el, rgb);
	assert_true(rgb[1] >= 165 && rgb[0] < 120);	/* green/teal */
	free(el);
	el = frame_el(svg, names[2]);
	fill_rgb(el, rgb);
	assert_true(rgb[2] >= 215 && rgb[0] < 180);	/* blue */
	free(el);
	el = frame_el(svg, names[3]);
	fill_rgb(el, rgb);
	assert_true(rgb[0] == rgb[1] && rgb[1] == rgb[2]);	/* grey */
	free(el);
	free(svg);
	kiln_prof_free(p);
}

static void test_tiny_frames_merged(void **state)
{
	struct kiln_prof *p = new_prof();
	char s[64], *svg, *el;
	size_t len;
	int i;

	/* 100k distinct stacks of one sample each, and one big one. */
	add(p, "main;big;work", 100000);
	for (i = 0; i < 100000; i++) {
		snprintf(s, sizeof(s), "main;tiny%06d;leaf%d", i, i);
		add(p, s, 1);
	}
	svg = render(p, 0, NULL, &len);
	assert_true(len < 20000);
	assert_non_null(strstr(svg, "<title>big (100,000 samples, 50.00%)"));
	/* The run of tiny siblings is one box, 50% wide; their children
	 * are left out. */
	el = frame_el(svg, "[100000 small frames]");
	assert_non_null(el);
	assert_true(attr(el, "width") == 590.0);
	assert_true(attr(el, "data-o") == 100000);
	free(el);
	assert_null(strstr(svg, "tiny0"));
	assert_null(strstr(svg, "leaf"));
	free(svg);
	kiln_prof_free(p);

	/* Every stack tiny and distinct, 100k of them at several depths:
	 * the size stays bounded. */
	p = new_prof();
	for (i = 0; i < 100000; i++) {
		snprintf(s, sizeof(s), "m%d;n%d;o%d;p%d", i % 1000, i, i, i);
		add(p, s, 1);
	}
	svg = render(p, 0, NULL, &len);
	/* 1000 boxes of 1.18 px in row 1, each with its merged run of
	 * children in row 2; nothing deeper: about 2000 boxes, where
	 * drawing every frame would take 400,000. */
	assert_true(count(svg, "<g class=\"f\"") <= 2 * 1180 + 2);
	assert_true(len < 800000);
	assert_null(strstr(svg, "<title>o"));
	free(svg);
	kiln_prof_free(p);

	/* A lone tiny frame between wide ones is left out, its share
	 * staying with the parent. */
	p = new_prof();
	add(p, "main;a", 100000);
	add(p, "main;b", 1);
	add(p, "main;c", 100000);
	svg = render(p, 0, NULL, &len);
	el = frame_el(svg, "a");
	assert_non_null(el);
	free(el);
	assert_null(strstr(svg, "<title>b ("));
	assert_null(strstr(svg, "small frames"));
	el = frame_el(svg, "c");
	assert_true(attr(el, "data-o") == 100001);
	free(el);
	free(svg);
	/* A smaller minimum width keeps it. */
	{
		struct kiln_flame_opts o = { .min_width = 0.001 };

		svg = render(p, 0, &o, &len);
		assert_non_null(strstr(svg, "<title>b (1 sample,"));
		free(svg);
	}
	kiln_prof_free(p);
}

/* kiln_flame_walk() visits: "name@depth:x+v" or "[N]@depth:x+v" runs. */
struct walked {
	const struct kiln_tree *t;
	char out[1024];
};

static int note_box(void *ctx, const struct kiln_flame_box *b)
{
	struct walked *w = ctx;
	size_t n = strlen(w->out);
	const struct kiln_tree_node *nd = &w->t->nodes[b->node];

	if (b->nmerged)
		snprintf(w->out + n, sizeof(w->out) - n, " [%u]@%u:%lld+%lld",
			 b->nmerged, b->depth, (long long)b->x, (long long)b->v);
	else
		snprintf(w->out + n, sizeof(w->out) - n, " %s@%u:%lld+%lld",
			 b->node ? kiln_prof_str(w->t->prof, nd->name) : "all",
			 b->depth, (long long)b->x, (long long)b->v);
	return 0;
}

/* The one layout (kiln flame's SVG and kiln serve's page): name or
 * heaviest-first order, narrow runs merged or left out, a window, a
 * root other than the tree's. */
static void test_walk(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	struct walked w = { &t, "" };
	struct kiln_flame_walk lay = { .t = &t, .scale = 1.0, .min_width = 5 };

	(void)state;
	add(p, "main;a;x", 10);
	add(p, "main;b", 1);
	add(p, "main;c", 2);
	add(p, "main;d", 30);
	add(p, "main;e", 20);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(kiln_flame_walk(&lay, note_box, &w), 0);
	assert_string_equal(w.out, " all@0:0+63 main@1:0+63 a@2:0+10 x@3:0+10 "
			    "d@2:13+30 e@2:43+20");
	assert_int_equal(lay.dropped, 2);
	/* The SVG: b and c are one run, 3 wide: still narrower than 5. */
	w.out[0] = 0;
	lay.merge = true;
	lay.min_width = 3;
	assert_int_equal(kiln_flame_walk(&lay, note_box, &w), 0);
	assert_string_equal(w.out, " all@0:0+63 main@1:0+63 [2]@2:10+3 a@2:0+10 "
			    "x@3:0+10 d@2:13+30 e@2:43+20");
	assert_int_equal(lay.dropped, 0);
	/* Left-heavy, from main, a window over d alone. */
	w.out[0] = 0;
	lay = (struct kiln_flame_walk){ .t = &t, .from = t.nodes[0].child,
		.scale = 1.0, .min_width = 5, .heavy = true, .lo = 5, .hi = 20 };
	assert_int_equal(kiln_flame_walk(&lay, note_box, &w), 0);
	assert_string_equal(w.out, " main@0:0+63 d@1:0+30");
	assert_int_equal(lay.dropped, 4);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_empty_and_errors(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_buf b = KILN_BUF_INIT;
	size_t len;
	char *svg;

	svg = render(p, 0, NULL, &len);
	assert_non_null(strstr(svg, ">no samples</text>"));
	assert_int_equal(count(svg, "<g class=\"f\""), 0);
	assert_non_null(strstr(svg, "</svg>"));
	free(svg);
	/* Only zero values: empty too. */
	add(p, "main;a", 0);
	svg = render(p, 0, NULL, &len);
	assert_non_null(strstr(svg, ">no samples</text>"));
	free(svg);

	kiln_buf_adds(&b, "keep");
	assert_int_equal(kiln_flame_svg(p, 2, NULL, &b), -EINVAL);
	assert_int_equal(kiln_flame_svg(p, -1, NULL, &b), -EINVAL);
	assert_string_equal(b.data, "keep");
	kiln_buf_release(&b);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_content),
		cmocka_unit_test(test_units),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_escaping),
		cmocka_unit_test(test_long_names_truncated),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_diff),
		cmocka_unit_test(test_kind_colours),
		cmocka_unit_test(test_tiny_frames_merged),
		cmocka_unit_test(test_walk),
		cmocka_unit_test(test_empty_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
