/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of heap site names (profile/heapsite.c): the usual label,
 * labels made distinct when ten sites share their four innermost
 * frames (the .heap.svg legend once showed ten identical ones), by a
 * caller, by file:line, by address, and the top sites' ranking; the
 * .heap.svg legend, which shortens labels, keeps them distinct. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/heapsite.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "render/timeline.h"
#include "util/buf.h"

/* A location of `name` in file.c at line, at addr. */
static uint32_t loc_at(struct kiln_prof *p, const char *name, int64_t line,
		       uint64_t addr)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name), 0,
						  kiln_prof_interns(p, "/src/file.c"),
						  0), line };

	return kiln_prof_location(p, 0, addr, &l, 1);
}

/* Adds "leaf:line;caller:line;..." (leaf first); its sample index. */
static long add(struct kiln_prof *p, const char *stack, uint64_t addr)
{
	uint32_t locs[64], n = 0;
	char buf[512], *save, *tok;
	int64_t v = 1;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
		char *colon = strchr(tok, ':');
		int64_t line = colon ? atoi(colon + 1) : 0;

		if (colon)
			*colon = '\0';
		locs[n] = loc_at(p, tok, line, addr + n * 0x100);
		n++;
	}
	return kiln_prof_add_sample(p, locs, n, &v, 0);
}

static struct kiln_prof *new_prof(void)
{
	static const char *const types[] = { "space/bytes" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	return p;
}

static void test_usual(void **state)
{
	struct kiln_prof *p = new_prof();
	long s[3];
	char **lab;

	s[0] = add(p, "operator new:1;make:12;build:20;main:30", 0x1000);
	s[1] = add(p, "a:1;b:2;c:3;d:4;e:5;f:6", 0x2000);
	s[2] = -1;
	assert_int_equal(kiln_heapsite_labels(p, s, 3, &lab), 0);
	assert_string_equal(lab[0], "make (file.c:12) <- build <- main");
	assert_string_equal(lab[1], "a (file.c:1) <- b <- c <- d <- ...");
	assert_string_equal(lab[2], "?");
	kiln_heapsite_labels_free(lab, 3);
	kiln_prof_free(p);
	(void)state;
}

static void test_distinct(void **state)
{
	struct kiln_prof *p = new_prof();
	long s[14];
	char **lab, stack[256];
	size_t i, j, n = 0;

	/* Ten sites sharing their four innermost frames, told apart by
	 * the fifth (their callers). */
	for (i = 0; i < 10; i++) {
		snprintf(stack, sizeof(stack), "alloc:5;node:6;tree:7;walk:8;"
			 "caller%zu:9;main:10", i);
		s[n++] = add(p, stack, 0x10000 * (i + 1));
	}
	/* Two that differ only in a caller's line. */
	s[n++] = add(p, "x:1;y:2;z:3", 0x200000);
	s[n++] = add(p, "x:1;y:4;z:3", 0x300000);
	/* Two that differ only in the leaf's address (no line known). */
	s[n++] = add(p, "u;v", 0x400000);
	s[n++] = add(p, "u;v", 0x500000);
	assert_int_equal(kiln_heapsite_labels(p, s, n, &lab), 0);
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (!strcmp(lab[i], lab[j]))
				fail_msg("labels %zu and %zu are both '%s'", i, j, lab[i]);
	assert_string_equal(lab[0], "alloc (file.c:5) <- node <- tree <- walk <- "
			    "caller0 <- ...");
	assert_string_equal(lab[10], "x (file.c:1) <- y (file.c:2) <- z (file.c:3)");
	assert_string_equal(lab[11], "x (file.c:1) <- y (file.c:4) <- z (file.c:3)");
	assert_string_equal(lab[12], "u <- v [0x400000]");
	kiln_heapsite_labels_free(lab, n);
	kiln_prof_free(p);
	(void)state;
}

/* Sites ranked by the most they held at any time. */
static void test_top(void **state)
{
	struct kiln_hprof *h = kiln_hprof_new(0);
	const uint64_t pcs[1] = { 0x1000 };
	struct kiln_hprof_ev ev = { .kind = KILN_HPROF_ALLOC, .tid = 1 };
	uint32_t ids[2];
	uint32_t i;
	double calls = 0, temp = 0;

	assert_non_null(h);
	for (i = 1; i <= 3; i++)
		assert_int_equal(kiln_hprof_add_stack(h, i, pcs, 1), 0);
	/* Stack 1: 100 then freed; stack 2: 300 held; stack 3: nothing. */
	ev.t = 1000; ev.ptr = 1; ev.size = 100; ev.stack = 1;
	assert_int_equal(kiln_hprof_event(h, &ev), 0);
	ev.t = 2000; ev.kind = KILN_HPROF_FREE; ev.ptr = 1;
	assert_int_equal(kiln_hprof_event(h, &ev), 0);
	ev.t = 3000; ev.kind = KILN_HPROF_ALLOC; ev.ptr = 2; ev.size = 300; ev.stack = 2;
	assert_int_equal(kiln_hprof_event(h, &ev), 0);
	kiln_hprof_finish(h);
	assert_int_equal(kiln_heapsite_top(h, 2, ids), 2);
	assert_int_equal(ids[0], 2);
	assert_int_equal(ids[1], 1);
	/* The per-bucket counts (stack 1's block was freed by the next
	 * event: temporary) and the size classes. */
	for (i = 0; i < h->nbuckets; i++) {
		calls += h->calls_n[i];
		temp += h->temp_n[i];
	}
	assert_int_equal((int)calls, 2);
	assert_int_equal((int)temp, 1);
	assert_int_equal((int)h->size_calls[kiln_hprof_size_class(100)], 1);
	assert_int_equal((int)h->size_bytes[kiln_hprof_size_class(300)], 300);
	assert_int_equal(kiln_hprof_size_class(0), 0);
	assert_int_equal(kiln_hprof_size_class(1), 1);
	assert_int_equal(kiln_hprof_size_class(255), 8);
	assert_int_equal(kiln_hprof_size_class(256), 9);
	kiln_hprof_free(h);
	(void)state;
}

/* Ten bands whose labels agree for their first 60 characters: the
 * legend's shortened texts still differ (they once all read "alloc
 * (file.c:5) <- node <- tree <- ..."). */
static void test_legend(void **state)
{
	struct kiln_timeline_band bands[10];
	char labels[10][128];
	const double v[2] = { 1, 2 }, total[2] = { 100, 100 };
	struct kiln_timeline tl = { 0 };
	struct kiln_buf svg = KILN_BUF_INIT;
	char texts[10][256];
	const char *p;
	size_t i, j, n = 0;

	for (i = 0; i < 10; i++) {
		snprintf(labels[i], sizeof(labels[i]), "alloc_node (file.c:5) <- "
			 "insert_node <- rebalance_tree <- caller%zu <- main", i);
		bands[i].label = labels[i];
		bands[i].values = v;
		bands[i].peak = 2;
	}
	tl.n = 2;
	tl.interval_s = 1;
	tl.total = total;
	tl.bands = bands;
	tl.nbands = 10;
	assert_int_equal(kiln_timeline_svg(&tl, &svg), 0);
	/* The legend's entries: "<text ...>2 B LABEL</text>" after a rect. */
	for (p = svg.data; (p = strstr(p, "height=\"12\" fill=")); p++) {
		const char *t = strstr(p, "\">2 B ");
		const char *e = t ? strstr(t, "</text>") : NULL;

		if (!e || n == 10)
			continue;
		snprintf(texts[n++], sizeof(texts[0]), "%.*s", (int)(e - t - 6), t + 6);
	}
	assert_int_equal(n, 10);
	for (i = 0; i < n; i++) {
		assert_true(strlen(texts[i]) < 60);
		for (j = i + 1; j < n; j++)
			if (!strcmp(texts[i], texts[j]))
				fail_msg("legend entries %zu and %zu both read '%s'", i, j,
					 texts[i]);
	}
	assert_non_null(strstr(texts[3], "caller3"));
	kiln_buf_release(&svg);
	(void)state;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_usual),
		cmocka_unit_test(test_distinct),
		cmocka_unit_test(test_top),
		cmocka_unit_test(test_legend),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
