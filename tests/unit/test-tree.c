/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the call tree (profile/tree.c): totals, self values, name
 * order, reversed trees, diff bases, inline frames and kinds. */
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

/* A location of function `name` in mapping m (0: none) at addr. */
static uint32_t loc_at(struct kiln_prof *p, const char *name, uint32_t m,
		       uint64_t addr)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name),
						  0, 0, 0), 0 };

	return kiln_prof_location(p, m, addr, &l, 1);
}

/* Adds "root;...;leaf" (root first, as collapsed stacks are written). */
static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	uint32_t locs[64], n = 0, i;
	char buf[512], *save, *tok;
	int64_t vals[2] = { v, v * 1000 };

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc_at(p, tok, 0, 0);
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, vals, 0) >= 0);
}

static struct kiln_prof *new_prof(void)
{
	static const char *const types[] = { "samples/count", "cpu/nanoseconds" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 2), 0);
	return p;
}

/* The node at a path of names "a;b;c" from the root, 0 if absent. */
static uint32_t path(const struct kiln_tree *t, const char *names)
{
	char buf[512], *save, *tok;
	uint32_t cur = 0;

	snprintf(buf, sizeof(buf), "%s", names);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save)) {
		cur = kiln_tree_find(t, cur, tok);
		if (!cur)
			return 0;
	}
	return cur;
}

static const char *name_of(const struct kiln_tree *t, uint32_t i)
{
	return kiln_prof_str(t->prof, t->nodes[i].name);
}

static void test_totals_and_self(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	uint32_t n;

	add(p, "main;run;a", 6);
	add(p, "main;run;b", 3);
	add(p, "main;run;a", 4);
	add(p, "main;run", 2);
	add(p, "main;c", 1);
	add(p, "main;rec;rec;rec", 2);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(t.nodes[0].total, 18);
	assert_int_equal(t.nodes[0].self, 0);
	n = path(&t, "main");
	assert_int_equal(t.nodes[n].total, 18);
	assert_int_equal(t.nodes[n].self, 0);
	assert_int_equal(t.nodes[n].depth, 1);
	n = path(&t, "main;run");
	assert_int_equal(t.nodes[n].total, 15);
	assert_int_equal(t.nodes[n].self, 2);
	n = path(&t, "main;run;a");
	assert_int_equal(t.nodes[n].total, 10);
	assert_int_equal(t.nodes[n].self, 10);
	assert_int_equal(t.nodes[n].depth, 3);
	/* Recursion stays as repeated frames. */
	n = path(&t, "main;rec;rec;rec");
	assert_int_not_equal(n, 0);
	assert_int_equal(t.nodes[n].total, 2);
	assert_int_equal(t.nodes[n].depth, 4);
	assert_int_equal(t.max_depth, 4);
	assert_int_equal(path(&t, "main;a"), 0);
	/* 1 root + main, run, a, b, c, rec x3 */
	assert_int_equal(t.n, 9);

	/* The second sample type: the same shape, values x1000. */
	assert_int_equal(kiln_tree_build(&t, p, 1, false), 0);
	assert_int_equal(t.nodes[0].total, 18000);
	assert_int_equal(t.nodes[path(&t, "main;run;b")].total, 3000);

	assert_int_equal(kiln_tree_build(&t, p, 2, false), -EINVAL);
	assert_int_equal(kiln_tree_build(&t, p, -1, false), -EINVAL);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_children_in_name_order(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	const char *want[] = { "B", "a", "ab", "b", "\xc3\xa9" };
	uint32_t c, i = 0;

	/* Added in an order that is neither sorted nor reverse sorted. */
	add(p, "main;ab", 1);
	add(p, "main;\xc3\xa9", 1);
	add(p, "main;B", 1);
	add(p, "main;b", 1);
	add(p, "main;a", 1);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_true(t.sorted);
	for (c = t.nodes[path(&t, "main")].child; c; c = t.nodes[c].next) {
		assert_true(i < 5);
		assert_string_equal(name_of(&t, c), want[i]);
		assert_int_equal(t.nodes[c].parent, path(&t, "main"));
		i++;
	}
	assert_int_equal(i, 5);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_reverse(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	uint32_t n, c, i = 0;
	const char *leaves[] = { "a", "b", "rec" };

	add(p, "main;run;a", 6);
	add(p, "main;x;a", 4);
	add(p, "main;run;b", 3);
	add(p, "main;rec;rec", 2);
	assert_int_equal(kiln_tree_build(&t, p, 0, true), 0);
	assert_true(t.reverse);
	assert_int_equal(t.nodes[0].total, 15);
	for (c = t.nodes[0].child; c; c = t.nodes[c].next)
		assert_string_equal(name_of(&t, c), leaves[i++]);
	assert_int_equal(i, 3);
	n = path(&t, "a");
	assert_int_equal(t.nodes[n].total, 10);
	assert_int_equal(t.nodes[n].self, 0);
	assert_int_equal(t.nodes[path(&t, "a;run")].total, 6);
	assert_int_equal(t.nodes[path(&t, "a;x")].total, 4);
	n = path(&t, "a;run;main");
	assert_int_equal(t.nodes[n].total, 6);
	assert_int_equal(t.nodes[n].self, 6);
	assert_int_equal(t.nodes[path(&t, "rec;rec;main")].total, 2);
	assert_int_equal(path(&t, "main"), 0);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_diff_base(void **state)
{
	struct kiln_prof *p = new_prof(), *b = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	uint32_t a, bb;

	add(p, "main;run;a", 60);
	add(p, "main;run;b", 40);
	/* The base: twice the samples, a smaller share in a, and a path the
	 * new profile lacks (gone), names interned in another order. */
	add(b, "main;gone", 20);
	add(b, "main;run;b", 120);
	add(b, "main;run;a", 60);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(kiln_tree_add_base(&t, b, 0), 0);
	assert_true(t.has_base);
	assert_int_equal(t.base_total, 200);
	assert_int_equal(t.nodes[0].base, 200);
	assert_int_equal(t.nodes[path(&t, "main")].base, 200);
	assert_int_equal(t.nodes[path(&t, "main;run")].base, 180);
	a = path(&t, "main;run;a");
	bb = path(&t, "main;run;b");
	assert_int_equal(t.nodes[a].base, 60);
	assert_int_equal(t.nodes[bb].base, 120);
	/* Paths only the base has do not become nodes. */
	assert_int_equal(path(&t, "main;gone"), 0);
	assert_int_equal(t.n, 5);
	/* Normalised to the new total (100): a was 30, b was 60. */
	assert_true(kiln_tree_base_scaled(&t, a) > 29.999 &&
		    kiln_tree_base_scaled(&t, a) < 30.001);
	assert_true(kiln_tree_base_scaled(&t, bb) > 59.999 &&
		    kiln_tree_base_scaled(&t, bb) < 60.001);
	/* Only once. */
	assert_int_equal(kiln_tree_add_base(&t, b, 0), -EINVAL);
	kiln_tree_release(&t);
	/* Out of range type. */
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(kiln_tree_add_base(&t, b, 5), -EINVAL);
	kiln_tree_release(&t);
	kiln_prof_free(p);
	kiln_prof_free(b);
}

/* --diff-by function: a renamed caller does not make its callees new;
 * a function's base total is spread over its nodes by their totals, and
 * recursion counts a sample once on either side. */
static void test_diff_base_by_function(void **state)
{
	struct kiln_prof *p = new_prof(), *b = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	uint32_t w1, w2, rec;

	add(p, "main;run;work", 60);
	add(p, "main;other;work", 20);
	add(p, "main;rec;rec;leaf", 20);
	add(b, "main;grow;work", 100);
	add(b, "main;rec;leaf", 50);
	add(b, "main;rec;rec;rec;leaf", 50);
	add(b, "main;gone", 0);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(kiln_tree_add_base_by_function(&t, b, 0), 0);
	assert_int_equal(t.base_total, 200);
	assert_int_equal(t.nodes[0].base, 200);
	assert_int_equal(t.nodes[path(&t, "main")].base, 200);
	/* work: 100 in the base, 80 new: 60/80 and 20/80 of 100. */
	w1 = path(&t, "main;run;work");
	w2 = path(&t, "main;other;work");
	assert_int_equal(t.nodes[w1].base, 75);
	assert_int_equal(t.nodes[w2].base, 25);
	/* Callers only one side has: no base. */
	assert_int_equal(t.nodes[path(&t, "main;run")].base, 0);
	/* rec: 100 in the base (once per sample), 20 new, on its outer
	 * node; the inner rec node has the same total: the same share. */
	rec = path(&t, "main;rec");
	assert_int_equal(t.nodes[rec].base, 100);
	assert_int_equal(t.nodes[path(&t, "main;rec;rec")].base, 100);
	assert_int_equal(t.nodes[path(&t, "main;rec;rec;leaf")].base, 100);
	assert_int_equal(kiln_tree_add_base_by_function(&t, b, 0), -EINVAL);
	kiln_tree_release(&t);
	kiln_prof_free(p);
	kiln_prof_free(b);
}

static void test_inline_unknown_and_kinds(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	struct kiln_mapping exe = { 0x400000, 0x500000, 0, 0, 0, true, false,
				    false, false };
	struct kiln_mapping lib = { 0x7f0000000000, 0x7f0000100000, 0, 0, 0,
				    true, false, false, false };
	struct kiln_line inl[2];
	uint32_t me, ml, locs[4], n;
	int64_t v[2] = { 5, 5000 };

	exe.file = kiln_prof_interns(p, "/usr/bin/app");
	lib.file = kiln_prof_interns(p, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	me = kiln_prof_mapping(p, &exe);
	ml = kiln_prof_mapping(p, &lib);
	/* leaf first: a kernel frame, a libc frame, an inline chain
	 * (inner inlined into outer) in the program, an unknown address. */
	locs[0] = loc_at(p, "do_syscall_64", 0, 0xffffffff81000000ull);
	locs[1] = loc_at(p, "write", ml, 0x7f0000001000);
	inl[0].function = kiln_prof_function(p, kiln_prof_interns(p, "inner"),
					     0, 0, 0);
	inl[0].line = 10;
	inl[1].function = kiln_prof_function(p, kiln_prof_interns(p, "outer"),
					     0, 0, 0);
	inl[1].line = 20;
	locs[2] = kiln_prof_location(p, me, 0x401000, inl, 2);
	locs[3] = kiln_prof_location(p, me, 0x402345, NULL, 0);
	assert_true(kiln_prof_add_sample(p, locs, 4, v, 0) >= 0);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	n = path(&t, "[app];outer;inner;write;do_syscall_64");
	assert_int_not_equal(n, 0);
	assert_int_equal(t.nodes[n].total, 5);
	assert_int_equal(t.nodes[n].kind, KILN_KIND_KERNEL);
	assert_int_equal(t.nodes[t.nodes[n].parent].kind, KILN_KIND_LIB);
	assert_int_equal(t.nodes[path(&t, "[app];outer")].kind,
			 KILN_KIND_USER);
	assert_int_equal(t.nodes[path(&t, "[app];outer;inner")].kind,
			 KILN_KIND_USER);
	assert_int_equal(t.nodes[path(&t, "[app]")].kind, KILN_KIND_USER);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_nonpositive_values_left_out(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;

	add(p, "main;a", 5);
	add(p, "main;zero", 0);
	add(p, "main;neg", -7);
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(t.nodes[0].total, 5);
	assert_int_equal(path(&t, "main;zero"), 0);
	assert_int_equal(path(&t, "main;neg"), 0);
	kiln_tree_release(&t);

	/* An empty profile: just the root. */
	kiln_prof_free(p);
	p = new_prof();
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(t.n, 1);
	assert_int_equal(t.nodes[0].total, 0);
	assert_int_equal(t.nodes[0].child, 0);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static void test_many_nodes(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	char s[64];
	int i;

	for (i = 0; i < 20000; i++) {
		snprintf(s, sizeof(s), "main;f%05d;g%d", i, i % 7);
		add(p, s, 1 + i % 3);
	}
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(t.n, 1 + 1 + 20000 * 2);
	assert_int_equal(t.nodes[path(&t, "main;f12345;g4")].total, 1 + 12345 % 3);
	/* First and last children in name order. */
	assert_string_equal(name_of(&t, t.nodes[path(&t, "main")].child), "f00000");
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_totals_and_self),
		cmocka_unit_test(test_children_in_name_order),
		cmocka_unit_test(test_reverse),
		cmocka_unit_test(test_diff_base),
		cmocka_unit_test(test_diff_base_by_function),
		cmocka_unit_test(test_inline_unknown_and_kinds),
		cmocka_unit_test(test_nonpositive_values_left_out),
		cmocka_unit_test(test_many_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
