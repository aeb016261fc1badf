/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the call tree (profile/tree.c): totals, self values, name
 * order, reversed trees, diff bases, inline frames and kinds, the batched
 * build against one sample at a time, grouped and inverted trees, levels
 * made on demand against the whole tree; a selection's trees, levels and
 * top tables made from weights over the whole profile against those of
 * its filtered copy. */
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
#include "profile/top.h"
#include "profile/tree.h"
#include "util/diag.h"

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

/* A deterministic pseudo-random number below n (xorshift). */
static uint32_t rnd(uint64_t *x, uint32_t n)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return (uint32_t)(*x % n);
}

/*
 * A tree built one sample after another with kiln_tree_child(), totals
 * added along each path: what kiln_tree_build() must give, node for node
 * and in the same node order (its batched lookups and totals summed at the
 * end must not change an answer).
 */
static void build_one_by_one(struct kiln_tree *t, struct kiln_prof *p,
			     bool reverse)
{
	struct kiln_frame *fr = NULL;
	size_t cap = 0, i;

	assert_int_equal(kiln_tree_start(t, p, reverse), 0);
	for (i = 0; i < p->nsamples; i++) {
		int64_t v = kiln_prof_value(p, i, 0);
		long nf, k;
		uint32_t cur = 0;

		if (v <= 0)
			continue;
		nf = kiln_prof_frames(p, &p->samples[i], &fr, &cap);
		assert_true(nf >= 0);
		t->nodes[0].total += v;
		for (k = 0; k < nf; k++) {
			cur = kiln_tree_child(t, cur, &fr[reverse ? k : nf - 1 - k]);
			assert_int_not_equal(cur, 0);
			t->nodes[cur].total += v;
		}
		t->nodes[cur].self += v;
	}
	assert_int_equal(kiln_tree_sort(t), 0);
	free(fr);
}

/* 3000 pseudo-random stacks over 40 functions: locations of one
 * function at several lines, inline chains, unnamed addresses, four
 * threads, values of 0 and below, empty stacks. */
static struct kiln_prof *random_prof(void)
{
	struct kiln_prof *p = new_prof();
	struct kiln_mapping lib = { 0x7f0000000000, 0x7f0000100000, 0, 0, 0,
				    true, false, false, false };
	uint32_t locs[200], fn[40], ls[4], ml, i, j;
	uint64_t x = 88172645463325252ull;

	lib.file = kiln_prof_interns(p, "/usr/lib/libz.so.1");
	ml = kiln_prof_mapping(p, &lib);
	for (i = 0; i < 40; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fn%u", i);
		fn[i] = kiln_prof_function(p, kiln_prof_interns(p, name), 0, 0, 0);
	}
	/* Locations of one function at several lines (the node keeps the
	 * first seen), inline chains, and addresses without a name. */
	for (i = 0; i < 200; i++) {
		struct kiln_line l[2] = { { fn[rnd(&x, 40)], 1 + i },
					  { fn[rnd(&x, 40)], 100 + i } };

		locs[i] = i % 23 == 0 ? kiln_prof_location(p, ml, 0x7f0000001000 + i, NULL, 0) :
			  kiln_prof_location(p, 0, 0x1000 + i, l, 1 + (i % 5 == 0));
	}
	for (i = 0; i < 4; i++) {
		struct kiln_label l = { kiln_prof_interns(p, "thread"), 0, i + 1, 0 };

		ls[i] = kiln_prof_labelset(p, &l, 1);
	}
	/* 3000 stacks drawn from a few roots, so that they share prefixes
	 * (and suffixes), some empty, some of value 0 or below. */
	for (i = 0; i < 3000; i++) {
		uint32_t st[24], d = rnd(&x, 24);
		int64_t v[2];

		for (j = 0; j < d; j++)
			st[j] = locs[j + 1 == d ? rnd(&x, 3) : rnd(&x, 200) / (1 + d - j)];
		v[0] = (int64_t)rnd(&x, 9) - 1;
		v[1] = v[0] * 1000;
		assert_true(kiln_prof_add_sample(p, st, d, v, ls[rnd(&x, 4)]) >= 0);
	}
	return p;
}

static void test_same_as_one_by_one(void **state)
{
	struct kiln_prof *p = random_prof();
	uint32_t i;
	int rev;

	for (rev = 0; rev < 2; rev++) {
		struct kiln_tree a = KILN_TREE_INIT, b = KILN_TREE_INIT;

		assert_int_equal(kiln_tree_build(&a, p, 0, rev), 0);
		build_one_by_one(&b, p, rev);
		assert_true(a.n > 1000);
		assert_int_equal(a.n, b.n);
		assert_int_equal(a.max_depth, b.max_depth);
		for (i = 0; i < a.n; i++) {
			const struct kiln_tree_node *u = &a.nodes[i], *w = &b.nodes[i];

			assert_int_equal(u->name, w->name);
			assert_int_equal(u->parent, w->parent);
			assert_int_equal(u->child, w->child);
			assert_int_equal(u->next, w->next);
			assert_int_equal(u->depth, w->depth);
			assert_int_equal(u->kind, w->kind);
			assert_int_equal(u->total, w->total);
			assert_int_equal(u->self, w->self);
			assert_int_equal(u->location, w->location);
			assert_int_equal(u->function, w->function);
			assert_int_equal(u->line, w->line);
		}
		kiln_tree_release(&a);
		kiln_tree_release(&b);
	}
	kiln_prof_free(p);
}

/* Grouped by a label, then inverted: the label's frame is the outermost
 * caller, so each leaf's callers end in "thread=N" with that thread's
 * part of the leaf. */
static void test_grouped_inverted(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree t = KILN_TREE_INIT;
	static const char *const st[][3] = {
		{ "main", "run", "burn" }, { "main", "burn", NULL },
		{ "main", "run", "nap" },
	};
	static const int64_t val[][2] = { { 7, 3 }, { 5, 0 }, { 2, 4 } };
	uint32_t ls[2], i, j, n;

	for (i = 0; i < 2; i++) {
		struct kiln_label l = { kiln_prof_interns(p, "thread"), 0, i + 1, 0 };

		ls[i] = kiln_prof_labelset(p, &l, 1);
	}
	for (i = 0; i < 3; i++) {
		for (j = 0; j < 2; j++) {
			uint32_t locs[3], d = st[i][2] ? 3 : 2, k;
			int64_t v[2] = { val[i][j], val[i][j] * 1000 };

			for (k = 0; k < d; k++)
				locs[k] = loc_at(p, st[i][d - 1 - k], 0, 0);
			if (v[0])
				assert_true(kiln_prof_add_sample(p, locs, d, v, ls[j]) >= 0);
		}
	}
	assert_int_equal(kiln_prof_group_by_label(p, "thread"), 0);
	assert_int_equal(kiln_tree_build(&t, p, 0, true), 0);
	assert_int_equal(t.nodes[0].total, 21);
	n = path(&t, "burn");
	assert_int_equal(t.nodes[n].total, 15);
	assert_int_equal(t.nodes[n].self, 0);
	assert_int_equal(t.nodes[path(&t, "burn;run;main;thread=1")].total, 7);
	assert_int_equal(t.nodes[path(&t, "burn;run;main;thread=2")].total, 3);
	assert_int_equal(t.nodes[path(&t, "burn;main;thread=1")].total, 5);
	assert_int_equal(path(&t, "burn;main;thread=2"), 0);
	assert_int_equal(t.nodes[path(&t, "nap;run;main;thread=2")].total, 4);
	assert_int_equal(t.nodes[path(&t, "nap;run;main;thread=2")].self, 4);
	assert_int_equal(t.nodes[path(&t, "nap;run")].total, 6);
	/* Top-down: the thread is the root's child. */
	assert_int_equal(kiln_tree_build(&t, p, 0, false), 0);
	assert_int_equal(t.nodes[path(&t, "thread=1")].total, 14);
	assert_int_equal(t.nodes[path(&t, "thread=2;main;run")].total, 7);
	assert_int_equal(t.nodes[path(&t, "thread=1;main;burn")].self, 5);
	kiln_tree_release(&t);
	kiln_prof_free(p);
}

static uint32_t nkids(const struct kiln_tree *t, uint32_t n)
{
	uint32_t k = 0, c;

	for (c = t->nodes[n].child; c; c = t->nodes[c].next)
		k++;
	return k;
}

/* Levels made on demand from the stacks' names (kiln_tree_paths_*,
 * kiln_tree_expand()) equal those of the whole tree, node for node. */
static void test_levels_on_demand(void **state)
{
	struct kiln_prof *p = random_prof();
	uint32_t *sel = malloc(p->nsamples * sizeof(*sel)), i, k;
	int rev, checked = 0;

	assert_non_null(sel);
	for (rev = 0; rev < 2; rev++) {
		struct kiln_tree a = KILN_TREE_INIT, m = KILN_TREE_INIT;
		struct kiln_tree_paths ps = { 0 };

		assert_int_equal(kiln_tree_build(&a, p, 0, rev), 0);
		assert_int_equal(kiln_tree_paths_build(&ps, p, 0, rev), 0);
		assert_int_equal(ps.total, a.nodes[0].total);
		for (i = 0; i < a.n; i += 1 + i % 5) {
			uint32_t chain[64], nc = 0, x, cur = 0, u, w;
			size_t n = ps.n;

			if (!a.nodes[i].child)
				continue;
			for (x = i; x; x = a.nodes[x].parent)
				chain[nc++] = x;
			for (k = 0; k < ps.n; k++)
				sel[k] = k;
			assert_int_equal(kiln_tree_start(&m, p, rev), 0);
			for (k = 0; k < nc; k++) {
				struct kiln_frame f = { a.nodes[chain[nc - 1 - k]].name, 0, 0, 0 };

				n = kiln_tree_paths_narrow(&ps, sel, n, k, f.name);
				cur = kiln_tree_child(&m, cur, &f);
			}
			assert_true(n > 0);
			assert_int_equal(kiln_tree_expand(&m, p, &ps, cur, sel, n), 0);
			for (u = a.nodes[i].child, w = m.nodes[cur].child; u;
			     u = a.nodes[u].next, w = m.nodes[w].next) {
				const struct kiln_tree_node *y = &a.nodes[u], *z = &m.nodes[w];

				assert_int_not_equal(w, 0);
				assert_int_equal(y->name, z->name);
				assert_int_equal(y->total, z->total);
				assert_int_equal(y->self, z->self);
				assert_int_equal(y->depth, z->depth);
				assert_int_equal(y->kind, z->kind);
				assert_int_equal(y->location, z->location);
				assert_int_equal(y->function, z->function);
				assert_int_equal(y->line, z->line);
				assert_int_equal(nkids(&a, u), nkids(&m, w));
				checked++;
			}
			assert_int_equal(w, 0);
		}
		kiln_tree_release(&a);
		kiln_tree_release(&m);
		kiln_tree_paths_release(&ps);
	}
	assert_true(checked > 1000);
	free(sel);
	kiln_prof_free(p);
}

/* String id a of p and b of q are the same bytes. */
static void same_str(const struct kiln_prof *p, uint32_t a,
		     const struct kiln_prof *q, uint32_t b)
{
	assert_string_equal(kiln_prof_str(p, a), kiln_prof_str(q, b));
}

/* Location a of p and b of q: both none, or at one address. */
static void same_loc(const struct kiln_prof *p, uint32_t a,
		     const struct kiln_prof *q, uint32_t b)
{
	assert_int_equal(!a, !b);
	if (a)
		assert_int_equal(p->locations[a].address, q->locations[b].address);
}

/* The trees of a copy (u over q) and of weights (w over p), node by node. */
static void same_tree(const struct kiln_tree *u, const struct kiln_tree *w)
{
	uint32_t i;

	assert_int_equal(u->n, w->n);
	assert_int_equal(u->max_depth, w->max_depth);
	for (i = 0; i < u->n; i++) {
		const struct kiln_tree_node *a = &u->nodes[i], *b = &w->nodes[i];

		same_str(u->prof, a->name, w->prof, b->name);
		assert_int_equal(a->parent, b->parent);
		assert_int_equal(a->child, b->child);
		assert_int_equal(a->next, b->next);
		assert_int_equal(a->kind, b->kind);
		assert_int_equal(a->total, b->total);
		assert_int_equal(a->self, b->self);
		assert_int_equal(a->line, b->line);
		same_loc(u->prof, a->location, w->prof, b->location);
	}
}

/*
 * What kiln serve's views of focus, ignore and a time range build from
 * weights over the shared input (kiln_prof_weights() and the _w
 * builders) equals what they build from the selection's copy (filter
 * mask, kiln_prof_merge_some(), kiln_prof_keep_time()): trees both ways,
 * call tree levels, top tables by function and by line, each type.
 */
static void test_weights_as_copy(void **state)
{
	static const struct {
		const char *focus, *ignore;
		int64_t t0, t1;		/* t1 0: no range */
	} sel[] = {
		{ "^fn1$", NULL, 0, 0 },
		{ NULL, "fn2|fn3", 0, 0 },
		{ "fn[0-9]$", "^fn7$", 200000000, 700000000 },
		{ NULL, NULL, 0, 500000000 },
		{ "^fn11$", NULL, 990000000, 2000000000 },
		{ "nothing matches", NULL, 0, 0 },
	};
	struct kiln_prof *p = random_prof();
	struct kiln_tree_all all[2];
	/* Kept across the selections, as kiln serve keeps them. */
	struct kiln_tree_sel scr[2] = { { 0 }, { 0 } };
	struct kiln_loc_samples ls;
	uint64_t x = 7;
	struct kiln_diag d;
	size_t i, k;
	int64_t *w, *w2;

	/* Each sample's values over two or three moments of its run. */
	for (i = 0; i < p->nsamples; i++) {
		int64_t v0 = kiln_prof_value(p, i, 0), v1 = kiln_prof_value(p, i, 1);
		int64_t a[2] = { v0 / 2, v1 / 2 }, b[2] = { v0 - a[0], v1 - a[1] };

		kiln_prof_add_event(p, i, (int64_t)rnd(&x, 1000) * 1000000, a);
		kiln_prof_add_event(p, i, (int64_t)rnd(&x, 1000) * 1000000, b);
	}
	assert_int_equal(kiln_prof_events_tidy(p), 0);
	assert_int_equal(kiln_prof_name_all(p), 0);
	assert_int_equal(kiln_tree_all_build(&all[0], p, false), 0);
	assert_int_equal(kiln_tree_all_build(&all[1], p, true), 0);
	assert_int_equal(kiln_loc_samples_build(&ls, p), 0);
	w = malloc(p->nsamples * sizeof(*w));
	w2 = malloc(p->nsamples * sizeof(*w2));
	assert_non_null(w2);
	assert_non_null(w);
	for (k = 0; k < sizeof(sel) / sizeof(sel[0]); k++) {
		const int64_t range[2] = { sel[k].t0, sel[k].t1 };
		struct kiln_prof *q = kiln_prof_new();
		uint8_t *keep = malloc(p->nsamples + 1);
		int type, rev;

		assert_non_null(keep);
		assert_int_equal(kiln_prof_filter_mask(p, sel[k].focus, sel[k].ignore,
						       keep, NULL, NULL, &d), 0);
		assert_int_equal(kiln_prof_merge_some(q, p, keep, NULL, NULL, &d), 0);
		if (sel[k].t1)
			assert_int_equal(kiln_prof_keep_time(q, range[0], range[1]), 0);
		for (type = 0; type < 2; type++) {
			assert_int_equal(kiln_prof_weights(p, NULL, sel[k].focus, sel[k].ignore,
							   sel[k].t1 ? range : NULL,
							   type, w, NULL, NULL, &d), 0);
			/* By location, the same weights. */
			assert_int_equal(kiln_prof_weights(p, &ls, sel[k].focus, sel[k].ignore,
							   sel[k].t1 ? range : NULL,
							   type, w2, NULL, NULL, &d), 0);
			assert_memory_equal(w, w2, p->nsamples * sizeof(*w));
			for (rev = 0; rev < 2; rev++) {
				struct kiln_tree a = KILN_TREE_INIT, b = KILN_TREE_INIT,
						 c = KILN_TREE_INIT;
				struct kiln_tree_paths pa = { 0 }, pb = { 0 };
				size_t j;

				assert_int_equal(kiln_tree_build(&a, q, type, rev), 0);
				assert_int_equal(kiln_tree_build_w(&b, p, type, rev, w), 0);
				same_tree(&a, &b);
				/* From the tree of every sample: the same. */
				assert_int_equal(kiln_tree_select(&c, &all[rev], p, w, &scr[rev]), 0);
				same_tree(&a, &c);
				kiln_tree_release(&c);
				assert_int_equal(kiln_tree_paths_build(&pa, q, type, rev), 0);
				assert_int_equal(kiln_tree_paths_build_w(&pb, p, type, rev, w), 0);
				assert_int_equal(pa.n, pb.n);
				assert_int_equal(pa.total, pb.total);
				for (j = 0; j < pa.n; j++) {
					uint32_t e;

					assert_int_equal(pa.value[j], pb.value[j]);
					assert_int_equal(pa.off[j + 1] - pa.off[j],
							 pb.off[j + 1] - pb.off[j]);
					for (e = pa.off[j]; e < pa.off[j + 1]; e++)
						same_str(q, pa.names[e], p, pb.names[e]);
				}
				kiln_tree_paths_release(&pa);
				kiln_tree_paths_release(&pb);
				kiln_tree_release(&a);
				kiln_tree_release(&b);
			}
			for (rev = 0; rev < 2; rev++) {
				enum kiln_top_by by = rev ? KILN_TOP_LINES : KILN_TOP_FUNCTIONS;
				struct kiln_top ta, tb;
				size_t j;

				assert_int_equal(kiln_top_build(&ta, q, type, by, false), 0);
				assert_int_equal(kiln_top_build_w(&tb, p, type, by, false, w), 0);
				assert_int_equal(ta.n, tb.n);
				assert_int_equal(ta.total, tb.total);
				for (j = 0; j < ta.n; j++) {
					same_str(q, ta.rows[j].name, p, tb.rows[j].name);
					same_str(q, ta.rows[j].file, p, tb.rows[j].file);
					assert_int_equal(ta.rows[j].line, tb.rows[j].line);
					assert_int_equal(ta.rows[j].flat, tb.rows[j].flat);
					assert_int_equal(ta.rows[j].cum, tb.rows[j].cum);
				}
				kiln_top_release(&ta);
				kiln_top_release(&tb);
			}
		}
		free(keep);
		kiln_prof_free(q);
	}
	free(w);
	free(w2);
	kiln_loc_samples_release(&ls);
	kiln_tree_all_release(&all[0]);
	kiln_tree_all_release(&all[1]);
	kiln_tree_sel_release(&scr[0]);
	kiln_tree_sel_release(&scr[1]);
	kiln_prof_free(p);
}

/* A tree made by kiln_tree_select() has no index: its children are
 * found by name all the same, and a node added to it is indexed with
 * the others (no second node of one name). */
static void test_select_unindexed(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_tree_all all;
	struct kiln_tree t = KILN_TREE_INIT;
	struct kiln_frame f = { 0 };
	int64_t w[4] = { 1, 0, 5, 2 };
	uint32_t main_, run;

	add(p, "main;run;a", 1);
	add(p, "main;run;b", 1);
	add(p, "main;c", 1);
	add(p, "main;run;d", 1);
	assert_int_equal(kiln_tree_all_build(&all, p, false), 0);
	assert_int_equal(all.t.n, 7);
	assert_int_equal(kiln_tree_select(&t, &all, p, w, NULL), 0);
	assert_null(t.slots);
	assert_int_equal(t.n, 6);	/* main;run;b is not reached */
	assert_int_equal(t.nodes[0].total, 8);
	main_ = kiln_tree_find(&t, 0, "main");
	run = kiln_tree_find(&t, main_, "run");
	assert_int_not_equal(main_, 0);
	assert_int_not_equal(run, 0);
	assert_int_equal(t.nodes[run].total, 3);
	assert_int_equal(kiln_tree_find(&t, run, "b"), 0);
	assert_int_equal(t.nodes[kiln_tree_find(&t, main_, "c")].total, 5);
	/* Adding: the index is made of every node first. */
	f.name = kiln_prof_find_str(p, "a", 1);
	assert_int_equal(kiln_tree_child(&t, run, &f), kiln_tree_find(&t, run, "a"));
	assert_int_equal(t.n, 6);
	f.name = kiln_prof_find_str(p, "b", 1);
	assert_int_equal(kiln_tree_child(&t, run, &f), 6);
	assert_int_equal(kiln_tree_find(&t, run, "b"), 6);
	assert_int_equal(kiln_tree_find(&t, main_, "run"), run);
	kiln_tree_release(&t);
	kiln_tree_all_release(&all);
	kiln_prof_free(p);
}

/* Each location's samples, in order, a sample once however often its
 * stack holds the location. */
static void test_loc_samples(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_loc_samples ls;
	uint32_t rec;

	add(p, "main;rec;rec;rec", 1);
	add(p, "main;a", 1);
	add(p, "main;rec;a", 1);
	assert_int_equal(kiln_loc_samples_build(&ls, p), 0);
	assert_int_equal(ls.nlocations, 3);
	/* main 0 1 2, rec 0 2, a 1 2 */
	assert_int_equal(ls.n, 7);
	assert_int_equal(ls.off[1], 0);
	assert_int_equal(ls.off[2] - ls.off[1], 3);
	rec = 2;
	assert_int_equal(ls.off[rec + 1] - ls.off[rec], 2);
	assert_int_equal(ls.samples[ls.off[rec]], 0);
	assert_int_equal(ls.samples[ls.off[rec] + 1], 2);
	assert_int_equal(ls.off[4] - ls.off[3], 2);
	assert_int_equal(ls.samples[ls.off[3]], 1);
	assert_int_equal(ls.off[4], 7);
	kiln_loc_samples_release(&ls);
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
		cmocka_unit_test(test_same_as_one_by_one),
		cmocka_unit_test(test_grouped_inverted),
		cmocka_unit_test(test_levels_on_demand),
		cmocka_unit_test(test_weights_as_copy),
		cmocka_unit_test(test_select_unindexed),
		cmocka_unit_test(test_loc_samples),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
