/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The call graph view's drawing (web stage): kiln callgraph's engine, its
 * DOT text laid out by graphviz's library.  Kept apart from api.c and
 * registered at run time (kiln_web_enable_callgraph) so that a program
 * linking the web stage without calling it, the agent inside other
 * programs, never loads graphviz.
 */
#include "render/callgraph.h"
#include "util/buf.h"
#include "web/web.h"

static int draw(struct kiln_prof *p, int type, const struct kiln_callgraph_opts *o,
		const char *title, const char *href, struct kiln_buf *out)
{
	struct kiln_callgraph_dot_opts dopts = { title, href };
	struct kiln_callgraph g = KILN_CALLGRAPH_INIT;
	struct kiln_buf dot = KILN_BUF_INIT;
	int err = kiln_callgraph_build(&g, p, type, o);

	if (!err)
		err = kiln_callgraph_dot(&g, &dopts, &dot);
	if (!err)
		err = kiln_callgraph_render(dot.data, dot.len, "svg", out, NULL);
	kiln_callgraph_release(&g);
	kiln_buf_release(&dot);
	return err;
}

void kiln_web_enable_callgraph(void)
{
	kiln_web_set_callgraph(draw);
}
