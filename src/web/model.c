/*
 * The model behind kiln serve (web stage): the inputs, parsed once, and a
 * small cache of selections (input, sample type, focus, ignore) with their
 * trees and top tables, so that zooming, searching and switching views
 * re-use what the last request built.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "web/web.h"
#include "web/webint.h"

struct kiln_web_model *kiln_web_model_new(struct kiln_prof **profs,
					  const char *const *names,
					  const char *const *formats, size_t n)
{
	struct kiln_web_model *m = calloc(1, sizeof(*m));
	size_t i;

	if (m)
		m->in = calloc(n ? n : 1, sizeof(*m->in));
	if (!m || !m->in)
		goto out_free;
	for (i = 0; i < n; i++) {
		m->in[i].prof = profs[i];
		profs[i] = NULL;
		m->n++;
		m->in[i].name = strdup(names[i]);
		m->in[i].format = strdup(formats[i]);
		if (!m->in[i].name || !m->in[i].format)
			goto out_free;
	}
	return m;
out_free:
	kiln_web_model_free(m);
	for (i = 0; i < n; i++) {
		kiln_prof_free(profs[i]);
		profs[i] = NULL;
	}
	errno = ENOMEM;
	return NULL;
}

static void view_release(struct web_view *v)
{
	int i;

	for (i = 0; i < 2; i++) {
		kiln_tree_release(&v->tree[i]);
		kiln_top_release(&v->top[i]);
	}
	kiln_tree_release(&v->sw_callers);
	kiln_tree_release(&v->sw_callees);
	if (v->own)
		kiln_prof_free(v->prof);
	free(v->focus);
	free(v->ignore);
	memset(v, 0, sizeof(*v));
}

void kiln_web_model_free(struct kiln_web_model *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < WEB_VIEWS; i++)
		view_release(&m->views[i]);
	for (i = 0; m->in && i < m->n; i++) {
		kiln_prof_free(m->in[i].prof);
		free(m->in[i].name);
		free(m->in[i].format);
	}
	free(m->in);
	free(m);
}

static bool same(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

int kiln_web_view(struct kiln_web_model *m, unsigned p, int type,
		  const char *focus, const char *ignore,
		  struct web_view **out, struct kiln_diag *d)
{
	struct web_view *v, *slot = NULL;
	struct kiln_prof *copy;
	size_t i;
	int err;

	if (focus && !*focus)
		focus = NULL;
	if (ignore && !*ignore)
		ignore = NULL;
	for (i = 0; i < WEB_VIEWS; i++) {
		v = &m->views[i];
		if (v->used && v->p == p && v->type == type &&
		    same(v->focus, focus) && same(v->ignore, ignore)) {
			v->tick = ++m->tick;
			*out = v;
			return 0;
		}
		if (!slot || !v->used || (slot->used && v->tick < slot->tick))
			slot = v;
	}
	view_release(slot);
	slot->p = p;
	slot->type = type;
	slot->prof = m->in[p].prof;
	if (focus || ignore) {
		/* Filtering rewrites the samples: work on a copy, exactly as
		 * kiln top filters the profile it read. */
		copy = kiln_prof_new();
		if (!copy)
			return -ENOMEM;
		err = kiln_prof_merge(copy, m->in[p].prof, d);
		if (!err)
			err = kiln_prof_filter(copy, focus, ignore, d);
		if (err) {
			kiln_prof_free(copy);
			return err;
		}
		slot->prof = copy;
		slot->own = true;
		slot->focus = focus ? strdup(focus) : NULL;
		slot->ignore = ignore ? strdup(ignore) : NULL;
		if ((focus && !slot->focus) || (ignore && !slot->ignore)) {
			view_release(slot);
			return -ENOMEM;
		}
	}
	slot->used = true;
	slot->tick = ++m->tick;
	*out = slot;
	return 0;
}

int kiln_web_view_tree(struct web_view *v, bool reverse, struct kiln_tree **out)
{
	struct kiln_tree *t = &v->tree[reverse];
	int err;

	if (!t->n) {
		err = kiln_tree_build(t, v->prof, v->type, reverse);
		if (err)
			return err;
	}
	*out = t;
	return 0;
}

int kiln_web_view_top(struct web_view *v, bool by_line, struct kiln_top **out)
{
	int err;

	if (!v->top_built[by_line]) {
		err = kiln_top_build(&v->top[by_line], v->prof, v->type,
				     by_line, false);
		if (err)
			return err;
		v->top_built[by_line] = true;
	}
	*out = &v->top[by_line];
	return 0;
}

int kiln_web_model_warm(struct kiln_web_model *m)
{
	struct web_view *v;
	struct kiln_tree *t;
	size_t i;
	int type, err;

	for (i = 0; i < m->n && i < WEB_VIEWS; i++) {
		type = kiln_prof_type_index(m->in[i].prof, NULL, NULL);
		if (type < 0)
			continue;	/* no sample types: nothing to draw */
		err = kiln_web_view(m, (unsigned)i, type, NULL, NULL, &v, NULL);
		if (!err)
			err = kiln_web_view_tree(v, false, &t);
		if (err)
			return err;
	}
	return 0;
}
