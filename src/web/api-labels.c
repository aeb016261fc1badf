/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The label filter bar's data in kiln serve's API (web stage):
 * /api/labels, every label the selection's samples carry (pid, thread,
 * thread_name, comm, a pprof's custom labels; not "time", which the time
 * range selects), each with its values by the selected type's total,
 * heaviest first.  The filters themselves are the common arguments
 * labels= and group= (call.c, model.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "web/call.h"

#define LABELS_N_DEFAULT 100	/* values sent per key without n */

struct lval {
	uint32_t key, str;	/* string ids; str 0: numeric */
	int64_t num, total;
};

static int cmp_lval(const void *a, const void *b)
{
	const struct lval *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->str != y->str)
		return x->str < y->str ? -1 : 1;
	return x->num < y->num ? -1 : x->num > y->num;
}

/* By key name, then total (heaviest first), then value. */
static int cmp_shown(const void *a, const void *b, void *ctx)
{
	const struct kiln_prof *p = ctx;
	const struct lval *x = a, *y = b;
	int c = x->key == y->key ? 0 : strcmp(kiln_prof_str(p, x->key),
					     kiln_prof_str(p, y->key));

	if (c)
		return c;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return cmp_lval(a, b);
}

/* The (key, value) pairs of p's samples with their totals of `type`,
 * merged, in *out (n of them).  0 or -ENOMEM. */
static int collect(const struct kiln_prof *p, int type, struct lval **out,
		   size_t *n)
{
	int64_t *per = calloc(p->nlabelsets + 1, sizeof(*per));
	uint32_t ktime = kiln_prof_find_str(p, "time", 4);
	struct lval *v = NULL;
	size_t cap = 0, m = 0, i, j;

	if (!per)
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++)
		per[p->samples[i].labels] += kiln_prof_value(p, i, (size_t)type);
	for (i = 1; i <= p->nlabelsets; i++) {
		const struct kiln_labelset *ls = &p->labelsets[i];

		if (!per[i])
			continue;
		for (j = 0; j < ls->n; j++) {
			const struct kiln_label *l = &p->labels[ls->first + j];

			if (l->key == ktime)
				continue;
			if (kiln_array_grow((void **)&v, &cap, m + 1, sizeof(*v))) {
				free(v);
				free(per);
				return -ENOMEM;
			}
			v[m++] = (struct lval){ l->key, l->str, l->str ? 0 : l->num, per[i] };
		}
	}
	free(per);
	if (!m) {	/* no labels: and qsort() must not see NULL */
		*out = NULL;
		*n = 0;
		return 0;
	}
	qsort(v, m, sizeof(*v), cmp_lval);
	for (i = 0, j = 0; i < m; i++) {
		if (j && !cmp_lval(&v[j - 1], &v[i]))
			v[j - 1].total += v[i].total;
		else
			v[j++] = v[i];
	}
	qsort_r(v, j, sizeof(*v), cmp_shown, (void *)p);
	*out = v;
	*n = j;
	return 0;
}

int web_api_labels(struct call *c)
{
	struct web_view *v;
	struct lval *lv = NULL;
	size_t n = 0, i, shown = 0, more = 0, from;
	long max;
	char buf[32];
	int err;

	if (call_num_arg(c, "n", 1, 100000, LABELS_N_DEFAULT, &max) ||
	    call_selection(c, &v))
		return c->status;
	if (call_memo_get(c, v, WEB_MEMO_LABELS, max))
		return c->err ? 500 : 200;
	from = c->out->len;
	err = collect(v->prof, v->type, &lv, &n);
	if (err) {
		c->err = err;
		return 500;
	}
	call_add(c, "{\"type\":");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"keys\":[",
	    kiln_prof_total(v->prof, (size_t)v->type));
	for (i = 0; i < n; i++) {
		const struct lval *x = &lv[i];
		const struct kiln_label l = { x->key, x->str, x->num, 0 };
		bool first = !i || lv[i - 1].key != x->key;

		if (first) {
			if (i)
				call_add(c, "],\"more\":%zu},", more);
			call_add(c, "{\"key\":");
			call_add_str(c, kiln_prof_str(v->prof, x->key));
			call_add(c, ",\"values\":[");
			shown = more = 0;
		}
		if (shown >= (size_t)max) {
			more++;
			continue;
		}
		call_add(c, "%s[", shown++ ? "," : "");
		call_add_str(c, kiln_prof_label_text(v->prof, &l, buf, sizeof(buf)));
		call_add(c, ",%" PRId64 "]", x->total);
	}
	if (n)
		call_add(c, "],\"more\":%zu}", more);
	call_add(c, "]}\n");
	free(lv);
	call_memo_put(c, v, WEB_MEMO_LABELS, max, from);
	return c->err ? 500 : 200;
}
