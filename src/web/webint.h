/*
 * Internals of kiln serve (web stage) shared by model.c and api.c: the
 * inputs and the cache of selections built from them.
 */
#ifndef KILN_WEB_WEBINT_H
#define KILN_WEB_WEBINT_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/top.h"
#include "profile/tree.h"

/* Selections kept built at once: a few views open side by side. */
#define WEB_VIEWS 6

struct web_input {
	char *name;
	char *format;
	struct kiln_prof *prof;
};

/*
 * One selection: input p filtered by focus/ignore, for sample type type,
 * with what the views need built on first use.
 */
struct web_view {
	bool used;
	unsigned p;
	int type;
	char *focus, *ignore;		/* NULL for none */
	struct kiln_prof *prof;		/* the input's, or a filtered copy */
	bool own;			/* prof is a copy */
	struct kiln_prof *base;		/* the diff base, filtered alike, or NULL */
	bool base_own;
	int base_type;			/* the view's type in the base, -1 none */
	struct kiln_tree tree[2];	/* [reverse]; n == 0 until built */
	struct kiln_top top[2];		/* [by_line] */
	bool top_built[2];
	/* The last sandwich: function name string id (0: none) and trees. */
	uint32_t sw_name;
	struct kiln_tree sw_callers, sw_callees;
	unsigned long tick;		/* last use, for eviction */
};

struct kiln_web_model {
	struct web_input *in;
	size_t n;
	struct web_input base;		/* --diff BASE; prof NULL when none */
	struct web_view views[WEB_VIEWS];
	unsigned long tick;
};

/*
 * The view of input p, type, focus, ignore (NULL or "" for none), built
 * or found in the cache.  0, -EINVAL (bad regex, d filled) or -ENOMEM.
 */
int kiln_web_view(struct kiln_web_model *m, unsigned p, int type,
		  const char *focus, const char *ignore,
		  struct web_view **out, struct kiln_diag *d);
/* The view's tree (built on first use), with the diff base's values
 * added when diff is set.  0, -EINVAL (no base, or the base lacks the
 * view's sample type: d filled) or -ENOMEM. */
int kiln_web_view_tree(struct web_view *v, bool reverse, bool diff,
		       struct kiln_tree **out, struct kiln_diag *d);
/* The view's top table, flat order (built on first use).  0 or -ENOMEM. */
int kiln_web_view_top(struct web_view *v, bool by_line,
		      struct kiln_top **out);

#endif
