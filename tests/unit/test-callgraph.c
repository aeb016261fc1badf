/* SPDX-License-Identifier: Apache-2.0 */
/* Unit tests of the call graph (render/callgraph.c): totals and self
 * values, edges counted once per stack through recursion and cycles,
 * pruning by node and edge fraction and by count (pprof's entropy order),
 * residual edges over removed frames and the removal of redundant ones,
 * the diff base, the DOT text and the in-process layout. */
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
#include "render/callgraph.h"
#include "util/buf.h"

static uint32_t loc_of(struct kiln_prof *p, const char *name)
{
	struct kiln_line l = { kiln_prof_function(p, kiln_prof_interns(p, name),
						  0, 0, 0), 0 };

	return kiln_prof_location(p, 0, 0, &l, 1);
}

/* Adds "root;...;leaf" with value v. */
static void add(struct kiln_prof *p, const char *stack, int64_t v)
{
	uint32_t locs[64], n = 0, i;
	char buf[512], *save, *tok;

	snprintf(buf, sizeof(buf), "%s", stack);
	for (tok = strtok_r(buf, ";", &save); tok;
	     tok = strtok_r(NULL, ";", &save))
		locs[n++] = loc_of(p, tok);
	for (i = 0; i < n / 2; i++) {
		uint32_t t = locs[i];

		locs[i] = locs[n - 1 - i];
		locs[n - 1 - i] = t;
	}
	assert_true(kiln_prof_add_sample(p, locs, n, &v, 0) >= 0);
}

static struct kiln_prof *new_prof(void)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_prof *p = kiln_prof_new();

	assert_non_null(p);
	assert_int_equal(kiln_prof_set_types_str(p, types, 1), 0);
	return p;
}

/* Total 1000: recursion in fib, helper called from compute and render. */
static struct kiln_prof *known(void)
{
	struct kiln_prof *p = new_prof();

	add(p, "main;parse;lex", 100);
	add(p, "main;parse", 50);
	add(p, "main;compute;fib;fib;fib", 300);
	add(p, "main;compute;fib", 100);
	add(p, "main;compute;helper", 200);
	add(p, "main;render;helper", 150);
	add(p, "main;render", 100);
	return p;
}

static const struct kiln_callgraph_node *node(const struct kiln_callgraph *g,
					      const char *name)
{
	size_t i;

	for (i = 0; i < g->nnodes; i++)
		if (!strcmp(kiln_prof_str(g->prof, g->nodes[i].name), name))
			return &g->nodes[i];
	return NULL;
}

/* The edge a -> b, NULL if absent. */
static const struct kiln_callgraph_edge *edge(const struct kiln_callgraph *g,
					      const char *a, const char *b)
{
	size_t i;

	for (i = 0; i < g->nedges; i++) {
		const struct kiln_callgraph_edge *e = &g->edges[i];

		if (!strcmp(kiln_prof_str(g->prof, g->nodes[e->src].name), a) &&
		    !strcmp(kiln_prof_str(g->prof, g->nodes[e->dst].name), b))
			return e;
	}
	return NULL;
}

static void build(struct kiln_callgraph *g, struct kiln_prof *p, double nf,
		  double ef, int max)
{
	struct kiln_callgraph_opts o = KILN_CALLGRAPH_OPTS_INIT;

	o.node_fraction = nf;
	o.edge_fraction = ef;
	o.max_nodes = max;
	assert_int_equal(kiln_callgraph_build(g, p, 0, &o), 0);
}

static void test_known(void **state)
{
	struct kiln_prof *p = known();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
	const struct kiln_callgraph_edge *e;

	build(&g, p, 0, 0, 0);
	assert_int_equal(g.total, 1000);
	assert_int_equal(g.nnodes, 7);
	assert_int_equal(g.nedges, 7);
	assert_int_equal(node(&g, "main")->total, 1000);
	assert_int_equal(node(&g, "main")->self, 0);
	assert_int_equal(node(&g, "fib")->total, 400);	/* once per stack */
	assert_int_equal(node(&g, "fib")->self, 400);
	assert_int_equal(node(&g, "fib")->loop, 300);	/* fib -> fib once */
	assert_int_equal(node(&g, "helper")->total, 350);
	assert_int_equal(node(&g, "render")->self, 100);
	assert_int_equal(node(&g, "parse")->self, 50);
	assert_int_equal(node(&g, "main")->loop, 0);
	e = edge(&g, "compute", "helper");
	assert_non_null(e);
	assert_int_equal(e->weight, 200);
	assert_false(e->residual);
	assert_int_equal(edge(&g, "render", "helper")->weight, 150);
	assert_int_equal(edge(&g, "main", "compute")->weight, 600);
	assert_null(edge(&g, "fib", "fib"));		/* a loop, not an edge */
	/* Heaviest edge first. */
	assert_int_equal(g.edges[0].weight, 600);
	kiln_callgraph_release(&g);
	assert_null(g.nodes);
	kiln_prof_free(p);
}

static void test_node_fraction(void **state)
{
	struct kiln_prof *p = known();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;

	/* Cutoff 120: lex (100) goes, parse (150) stays. */
	build(&g, p, 0.12, 0, 0);
	assert_int_equal(g.node_cutoff, 120);
	assert_int_equal(g.nodes_all, 7);
	assert_int_equal(g.nodes_dropped, 1);
	assert_null(node(&g, "lex"));
	assert_int_equal(node(&g, "parse")->total, 150);
	/* Self values stay where they were: not moved to the caller. */
	assert_int_equal(node(&g, "parse")->self, 50);
	kiln_callgraph_release(&g);

	/* Cutoff 300: parse, render, lex go.  main reaches helper through
	 * render (residual, 150) but also through compute: the residual
	 * edge is redundant and removed. */
	build(&g, p, 0.3, 0, 0);
	assert_int_equal(g.nnodes, 4);
	assert_null(node(&g, "render"));
	assert_null(edge(&g, "main", "helper"));
	assert_int_equal(edge(&g, "compute", "helper")->weight, 200);
	assert_int_equal(node(&g, "helper")->total, 350);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

static void test_residual_by_count(void **state)
{
	struct kiln_prof *p = known();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
	const struct kiln_callgraph_edge *e;

	/* parse is the pass-through with the lowest entropy score. */
	build(&g, p, 0, 0, 6);
	assert_int_equal(g.nnodes, 6);
	assert_int_equal(g.nodes_before_top, 7);
	assert_null(node(&g, "parse"));
	e = edge(&g, "main", "lex");
	assert_non_null(e);
	assert_true(e->residual);
	assert_int_equal(e->weight, 100);
	assert_false(edge(&g, "main", "compute")->residual);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

static void test_entropy_chain(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;

	/* A chain of pass-through frames: the entry and the leaf score
	 * highest and are what two nodes keep, joined by a residual edge. */
	add(p, "main;x;y;z;leaf", 100);
	build(&g, p, 0, 0, 2);
	assert_int_equal(g.nnodes, 2);
	assert_string_equal(kiln_prof_str(p, g.nodes[0].name), "leaf");
	assert_string_equal(kiln_prof_str(p, g.nodes[1].name), "main");
	assert_int_equal(g.nedges, 1);
	assert_true(edge(&g, "main", "leaf")->residual);
	assert_int_equal(edge(&g, "main", "leaf")->weight, 100);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

static void test_cycle(void **state)
{
	struct kiln_prof *p = new_prof();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;

	/* Mutual recursion a -> b -> a -> b: edges both ways, each counted
	 * once per stack; totals once per stack. */
	add(p, "main;a;b;a;b", 10);
	add(p, "main;a;b;a", 5);
	build(&g, p, 0, 0, 0);
	assert_int_equal(node(&g, "a")->total, 15);
	assert_int_equal(node(&g, "b")->total, 15);
	assert_int_equal(node(&g, "b")->self, 10);
	assert_int_equal(node(&g, "a")->self, 5);
	assert_int_equal(edge(&g, "a", "b")->weight, 15);
	assert_int_equal(edge(&g, "b", "a")->weight, 15);
	assert_int_equal(edge(&g, "main", "a")->weight, 15);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

static void test_edge_fraction(void **state)
{
	struct kiln_prof *p = known();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;

	/* Cutoff 160 drops main->parse, render->helper (150), parse->lex
	 * (100); nodes stay. */
	build(&g, p, 0, 0.16, 0);
	assert_int_equal(g.edge_cutoff, 160);
	assert_int_equal(g.nnodes, 7);
	assert_int_equal(g.nedges, 4);
	assert_int_equal(g.edges_dropped, 3);
	assert_null(edge(&g, "render", "helper"));
	assert_int_equal(node(&g, "fib")->loop, 300);
	kiln_callgraph_release(&g);
	/* With a node limit the edges are trimmed before choosing; when no
	 * node goes they still count as dropped. */
	build(&g, p, 0, 0.16, 80);
	assert_int_equal(g.edges_dropped, 3);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

static void test_diff_and_args(void **state)
{
	struct kiln_prof *p = known(), *base = new_prof();
	struct kiln_callgraph_opts o = KILN_CALLGRAPH_OPTS_INIT;
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;

	add(base, "main;render;helper", 30);
	add(base, "main;parse;lex", 70);
	o.base = base;
	assert_int_equal(kiln_callgraph_build(&g, p, 0, &o), 0);
	assert_true(g.has_base);
	assert_int_equal(g.base_total, 100);
	assert_int_equal(node(&g, "helper")->base, 30);
	assert_int_equal(node(&g, "lex")->base, 70);
	assert_int_equal(node(&g, "fib")->base, 0);
	kiln_callgraph_release(&g);
	assert_int_equal(kiln_callgraph_build(&g, p, 1, NULL), -EINVAL);
	o.base = NULL;
	o.node_fraction = 2;
	assert_int_equal(kiln_callgraph_build(&g, p, 0, &o), -EINVAL);
	kiln_prof_free(base);
	kiln_prof_free(p);
}

static void test_dot_and_render(void **state)
{
	struct kiln_prof *p = known();
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
	struct kiln_callgraph_dot_opts d = { "title \"q\"", "/focus?f=" };
	struct kiln_buf dot = KILN_BUF_INIT, svg = KILN_BUF_INIT;

	build(&g, p, 0.005, 0.001, 80);
	assert_int_equal(kiln_callgraph_dot(&g, &d, &dot), 0);
	assert_non_null(strstr(dot.data, "digraph"));
	assert_non_null(strstr(dot.data, "title \\\"q\\\"\\l"));
	assert_non_null(strstr(dot.data, "label=\"main\\ntotal 100.00% (1000)\\nself 0.00% (0)\""));
	/* gprof2dot's scale: 100% saturated red, 10% dark blue. */
	assert_non_null(strstr(dot.data, "fillcolor=\"#ff0000\""));
	assert_non_null(strstr(dot.data, "URL=\"/focus?f=helper\""));
	assert_non_null(strstr(dot.data, "label=\" 60.00%\""));
	assert_int_equal(kiln_callgraph_render(dot.data, dot.len, "svg", &svg, NULL), 0);
	assert_non_null(strstr(svg.data, "<svg"));
	assert_non_null(strstr(svg.data, ">helper</text>"));
	assert_int_equal(kiln_callgraph_render(dot.data, dot.len, "nosuch", &svg, NULL),
			 -EINVAL);
	assert_int_equal(kiln_callgraph_render("digraph {", 9, "svg", &svg, NULL),
			 -EINVAL);
	kiln_buf_release(&dot);
	kiln_buf_release(&svg);
	kiln_callgraph_release(&g);
	kiln_prof_free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known),
		cmocka_unit_test(test_node_fraction),
		cmocka_unit_test(test_residual_by_count),
		cmocka_unit_test(test_entropy_chain),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_edge_fraction),
		cmocka_unit_test(test_diff_and_args),
		cmocka_unit_test(test_dot_and_render),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
