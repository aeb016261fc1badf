/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the stack transforms (profile/transform.c) on small
 * hand-made profiles: the text form, each transform's result as
 * collapsed stacks, their order, inline frames and addresses kept. */
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
#include "profile/transform.h"
#include "util/diag.h"

#include "prof-same.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"

static struct kiln_prof *new_prof(void)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	return p;
}

/* A location of `name`; "libc:NAME" puts it in libc's mapping, at an
 * address of its own. */
static uint32_t loc_of(struct kiln_prof *p, const char *name)
{
	struct kiln_mapping m = { 0x7f0000000000, 0x7f0000100000, 0 };
	struct kiln_line l = { 0, 0 };
	uint32_t map = 0;
	uint64_t addr = 0;

	if (!strncmp(name, "libc:", 5)) {
		name += 5;
		m.file = kiln_prof_interns(p, LIBC);
		map = kiln_prof_mapping(p, &m);
		addr = 0x7f0000000100 + strlen(name);
	}
	l.function = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0, 0);
	return kiln_prof_location(p, map, addr, &l, 1);
}

/* Adds "root;...;leaf" with value v. */
static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	uint32_t locs[64], n = 0, i;
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc_of(p, tok);
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, &v, 0) >= 0);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The profile as collapsed stacks "root;...;leaf v", sorted, one per
 * line (samples of one stack added up), in buf. */
static const char *collapsed(struct kiln_prof *p, char *buf, size_t len)
{
	char *lines[64];
	size_t n = 0, i, used = 0;
	struct kiln_frame *f = NULL;
	size_t cap = 0;

	for (i = 0; i < p->nsamples; i++) {
		long nf = kiln_prof_frames(p, &p->samples[i], &f, &cap), j;
		char line[512];
		size_t w = 0;

		assert_true(nf >= 0);
		if (!kiln_prof_value(p, i, 0))
			continue;
		for (j = nf - 1; j >= 0; j--)
			w += snprintf(line + w, sizeof(line) - w, "%s%s",
				      j == nf - 1 ? "" : ";",
				      kiln_prof_str(p, f[j].name));
		snprintf(line + w, sizeof(line) - w, " %lld",
			 (long long)kiln_prof_value(p, i, 0));
		assert_true(n < 64);
		lines[n++] = strdup(line);
	}
	free(f);
	qsort(lines, n, sizeof(*lines), cmp_str);
	buf[0] = '\0';
	for (i = 0; i < n; i++) {
		used += snprintf(buf + used, len - used, "%s%s", i ? "\n" : "", lines[i]);
		free(lines[i]);
	}
	return buf;
}

/* Applies text to the profile of stacks (each "stack=value", '|'
 * between) and checks the result against want ("\n" between lines). */
static void check(const char *stacks, const char *text, const char *want)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tf_list l = KILN_TF_LIST_INIT;
	struct kiln_diag d = { 0 };
	char buf[512], out[2048], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", stacks);
	for (tok = strtok_r(buf, "|", &save); tok; tok = strtok_r(NULL, "|", &save)) {
		char *eq = strrchr(tok, '=');

		*eq = '\0';
		add(p, tok, atoll(eq + 1));
	}
	assert_int_equal(kiln_tf_parse(&l, text, &d), 0);
	assert_int_equal(kiln_prof_transform(p, &l), 0);
	assert_string_equal(collapsed(p, out, sizeof(out)), want);
	kiln_tf_release(&l);
	kiln_prof_free(p);
}

static void test_parse(void **state)
{
	struct kiln_tf_list l = KILN_TF_LIST_INIT;
	struct kiln_diag d = { 0 };

	assert_int_equal(kiln_tf_parse(&l, "mf:a\\;b;f:main/x\\/y/z;;cl:libc.so.6", &d), 0);
	assert_int_equal(l.n, 3);
	assert_int_equal(l.items[0].kind, KILN_TF_MERGE_FUNCTION);
	assert_int_equal(l.items[0].n, 1);
	assert_string_equal(l.items[0].names[0], "a;b");
	assert_int_equal(l.items[1].kind, KILN_TF_FOCUS_SUBTREE);
	assert_int_equal(l.items[1].n, 3);
	assert_string_equal(l.items[1].names[1], "x/y");
	assert_string_equal(l.items[1].names[2], "z");
	assert_string_equal(l.items[2].names[0], "libc.so.6");
	/* A name may hold '/' and "::" where it is not a path. */
	assert_int_equal(kiln_tf_parse(&l, "ff:ns::operator/", &d), 0);
	assert_string_equal(l.items[0].names[0], "ns::operator/");
	assert_int_equal(kiln_tf_parse(&l, "", &d), 0);
	assert_int_equal(l.n, 0);
	assert_int_equal(kiln_tf_parse(&l, NULL, &d), 0);
	assert_int_equal(kiln_tf_parse(&l, "zz:main", &d), -EINVAL);
	assert_non_null(strstr(d.msg, "zz:main"));
	assert_int_equal(kiln_tf_parse(&l, "mf", &d), -EINVAL);
	assert_int_equal(kiln_tf_parse(&l, "mf:", &d), -EINVAL);
	assert_string_equal(kiln_tf_code(KILN_TF_COLLAPSE_DIRECT_RECURSION), "drec");
	assert_string_equal(kiln_tf_words(KILN_TF_MERGE_CALL_NODE), "merge call node");
	kiln_tf_release(&l);
}

static void test_merge_function(void **state)
{
	check("main;a;b=1|main;b=2|main;c=4", "mf:b",
	      "main 2\nmain;a 1\nmain;c 4");
	/* A name no frame has changes nothing. */
	check("main;a=1", "mf:nosuch", "main;a 1");
}

static void test_merge_call_node(void **state)
{
	check("main;a;b=1|main;c;a;b=2|main;a=4", "mcn:main/a",
	      "main 4\nmain;b 1\nmain;c;a;b 2");
}

static void test_focus_subtree(void **state)
{
	check("main;a;b=1|main;c=2|main;a=3|other;a=5", "f:main/a",
	      "a 3\na;b 1");
}

static void test_focus_function(void **state)
{
	/* The outermost b is the root; the sample without b goes. */
	check("main;a;b;x=1|main;b=2|main;c=3|main;b;y;b=4", "ff:b",
	      "b 2\nb;x 1\nb;y;b 4");
}

static void test_drop_function(void **state)
{
	check("main;a;c=1|main;b=2|c=4", "df:c", "main;b 2");
}

static void test_collapse_library(void **state)
{
	check("_start;libc:__libc_start_main;libc:__libc_start_call_main;main;work;libc:memcpy;libc:__memmove_avx=3|"
	      "_start;libc:__libc_start_main;libc:__libc_start_call_main;main=1",
	      "cl:libc.so.6",
	      "_start;libc.so.6;main 1\n_start;libc.so.6;main;work;libc.so.6 3");
	/* A later transform of the list sees the collapsed frame. */
	check("main;libc:memcpy=2|main;work=1", "cl:libc.so.6;mf:libc.so.6",
	      "main 2\nmain;work 1");
	/* The full path names it too. */
	check("main;libc:memcpy=2", "cl:" LIBC, "main;libc.so.6 2");
}

static void test_collapse_recursion(void **state)
{
	check("main;fib;fib;helper;fib;leaf=2|main;fib=1|main;other=4", "rec:fib",
	      "main;fib 1\nmain;fib;leaf 2\nmain;other 4");
	check("main;fib;fib;fib;g;fib;fib=3|main;fib;fib=1", "drec:fib",
	      "main;fib 1\nmain;fib;g;fib 3");
}

/* The list applies in order: focusing on b then merging it differs from
 * merging b then focusing on it (nothing left). */
static void test_order(void **state)
{
	check("main;a;b;x=1|main;c=2", "ff:b;mf:b", "x 1");
	check("main;a;b;x=1|main;c=2", "mf:b;ff:b", "");
	check("main;a;b;x=1|main;c=2", "ff:a;df:x", "");
}

/* An inline chain: merging the inlined frame keeps the location's
 * mapping and address, with the frame left. */
static void test_inline(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tf_list l = KILN_TF_LIST_INIT;
	struct kiln_mapping m = { 0x400000, 0x500000, 0 };
	struct kiln_line lines[2];
	uint32_t stack[2], map;
	int64_t v = 7;
	char out[256];
	const struct kiln_location *loc;

	m.file = kiln_prof_interns(p, "/bin/prog");
	map = kiln_prof_mapping(p, &m);
	lines[0].function = kiln_prof_function(p, kiln_prof_interns(p, "inner"), 0, 0, 0);
	lines[0].line = 10;
	lines[1].function = kiln_prof_function(p, kiln_prof_interns(p, "outer"), 0, 0, 0);
	lines[1].line = 20;
	stack[0] = kiln_prof_location(p, map, 0x401234, lines, 2);
	lines[0].function = kiln_prof_function(p, kiln_prof_interns(p, "main"), 0, 0, 0);
	stack[1] = kiln_prof_location(p, map, 0x400100, lines, 1);
	assert_true(kiln_prof_add_sample(p, stack, 2, &v, 0) >= 0);
	assert_int_equal(kiln_tf_parse(&l, "mf:inner", NULL), 0);
	assert_int_equal(kiln_prof_transform(p, &l), 0);
	assert_string_equal(collapsed(p, out, sizeof(out)), "main;outer 7");
	assert_int_equal(p->samples[0].depth, 2);
	loc = &p->locations[p->stacks[p->samples[0].stack]];
	assert_int_equal(loc->address, 0x401234);
	assert_int_equal(loc->mapping, map);
	assert_int_equal(loc->nlines, 1);
	assert_int_equal(p->lines[loc->line0].line, 20);
	/* The outer location is the same one. */
	assert_int_equal(p->stacks[p->samples[0].stack + 1], stack[1]);
	kiln_tf_release(&l);
	kiln_prof_free(p);
}

/* Direct recursion through one call site: the same location twice in a
 * row stays two positions, not one location of two frames. */
static void test_same_location_twice(void **state)
{
	check("main;f;f;f=5", "mf:main", "f;f;f 5");
	check("main;f;f;f=5", "mcn:main/f/f", "main;f;f 5");
}

/* A profile of n samples over random stacks (seed), the same for the
 * same seed: named locations (some of two inline frames), nameless ones
 * in a library and in libc (named "[libx.so]", "[libc.so.6]"), named
 * ones in libc; a time column. */
static struct kiln_prof *random_prof(unsigned seed, unsigned n)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();
	struct kiln_mapping lib = { 0x7e0000000000, 0x7e0000100000, 0 };
	struct kiln_mapping libc = { 0x7f0000000000, 0x7f0000100000, 0 };
	uint32_t locs[80], mlib, mlibc, stack[16];
	uint64_t x = seed * 2654435761u + 1;
	unsigned i, k;

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	lib.file = kiln_prof_interns(p, "/usr/lib/libx.so");
	libc.file = kiln_prof_interns(p, LIBC);
	mlib = kiln_prof_mapping(p, &lib);
	mlibc = kiln_prof_mapping(p, &libc);
	for (k = 0; k < 80; k++) {
		struct kiln_line ln[2];
		char name[16];
		uint32_t map = k >= 60 ? (k & 1 ? mlib : mlibc) : k >= 50 ? mlibc : 0;

		snprintf(name, sizeof(name), "f%u", k % 25);
		ln[0].function = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0, 0);
		ln[0].line = k;
		snprintf(name, sizeof(name), "f%u", (k * 7) % 25);
		ln[1].function = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0, 0);
		ln[1].line = k + 100;
		locs[k] = kiln_prof_location(p, map, 0x1000 + k * 16, k >= 60 ? NULL : ln,
					     k >= 60 ? 0 : k % 5 == 0 ? 2 : 1);
	}
	for (i = 0; i < n; i++) {
		int64_t v[2] = { 1, 1000000 };
		unsigned depth;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		depth = (unsigned)(x >> 60);
		for (k = 0; k < depth; k++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			/* now and then the same location twice in a row */
			stack[k] = k && (x >> 40) % 9 == 0 ? stack[k - 1] :
				   locs[(x >> 33) % 80];
		}
		assert_true(kiln_prof_add_timed(p, stack, depth, v, 0,
						(int64_t)i * 700000) >= 0);
	}
	return p;
}

/* Stacks no transform looks at are passed as they were: the model (every
 * table, id for id: strings, locations made, samples, the time column)
 * is the one of expanding and rebuilding every stack, for each kind,
 * lists of several, names no frame has and fallback names. */
static void test_untouched_same(void **state)
{
	static const char *const lists[] = {
		"mf:f3", "df:f5", "ff:f7", "f:f1/f2", "mcn:f1/f2", "rec:f4",
		"drec:f4", "cl:" LIBC, "cl:libx.so", "mf:[libx.so]", "ff:[libc.so.6]",
		"cl:libc.so.6;mf:libc.so.6", "mf:f3;ff:f9", "mf:nothing",
		"ff:nothing", "f:nothing/f1", "drec:f1;cl:libx.so;mcn:f2/f3",
		"rec:f0;df:f24;f:f10",
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		struct kiln_tf_list l = KILN_TF_LIST_INIT;
		struct kiln_prof *a = random_prof((unsigned)i, 3000);
		struct kiln_prof *b = random_prof((unsigned)i, 3000);

		assert_int_equal(kiln_tf_parse(&l, lists[i], NULL), 0);
		assert_int_equal(kiln_prof_transform(a, &l), 0);
		kiln_tf_expand_every = true;
		assert_int_equal(kiln_prof_transform(b, &l), 0);
		kiln_tf_expand_every = false;
		prof_same(a, b);
		kiln_tf_release(&l);
		kiln_prof_free(a);
		kiln_prof_free(b);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_merge_function),
		cmocka_unit_test(test_merge_call_node),
		cmocka_unit_test(test_focus_subtree),
		cmocka_unit_test(test_focus_function),
		cmocka_unit_test(test_drop_function),
		cmocka_unit_test(test_collapse_library),
		cmocka_unit_test(test_collapse_recursion),
		cmocka_unit_test(test_order),
		cmocka_unit_test(test_inline),
		cmocka_unit_test(test_same_location_twice),
		cmocka_unit_test(test_untouched_same),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
