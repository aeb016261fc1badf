/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the HTTP endpoints draw for a browser (libkiln stage): kiln's
 * flame graph SVG (render/) and kiln serve's page saved with the
 * profile's data (web/), handed to http/ (kiln_http_set_draw()) so that
 * the part does not reach into the CLI's stages: the .so is where they
 * meet.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "http/http.h"
#include "libkiln/life.h"
#include "profile/profile.h"
#include "render/flame.h"
#include "util/buf.h"
#include "web/web.h"

static int flame_svg(struct kiln_prof *p, int type, const char *title,
		     struct kiln_buf *out)
{
	struct kiln_flame_opts o = { 0 };

	o.title = title;
	return kiln_flame_svg(p, type, &o, out);
}

static const char *page_arg(void *ctx, const char *key)
{
	return !strcmp(key, "type") ? ctx : NULL;
}

/* kiln_web_save_html() on a copy of p (the page's model takes it). */
static int page(struct kiln_prof *p, int type, const char *title,
		struct kiln_buf *out)
{
	struct kiln_buf msg = KILN_BUF_INIT;
	struct kiln_web_req r = { "/api/download", page_arg, NULL, NULL, "" };
	struct kiln_prof *copy = kiln_prof_new();
	struct kiln_web_model *m;
	const char *fmt = "pprof";
	char ts[16];
	int status, err;

	if (!copy)
		return -ENOMEM;
	err = kiln_prof_merge(copy, p, NULL);
	if (err) {
		kiln_prof_free(copy);
		return err;
	}
	m = kiln_web_model_new(&copy, &title, &fmt, 1);	/* takes copy */
	if (!m)
		return -ENOMEM;
	snprintf(ts, sizeof(ts), "%d", type);
	r.ctx = ts;
	status = kiln_web_save_html(m, &r, out, &msg);
	kiln_web_model_free(m);
	kiln_buf_release(&msg);
	return status == 200 ? 0 : status == 500 ? -ENOMEM : -EINVAL;
}

void kiln_draw_install(void)
{
	static const struct kiln_http_draw d = { flame_svg, page };

	kiln_http_set_draw(&d);
}
