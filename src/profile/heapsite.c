/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Names of heap allocation sites (profile stage), see heapsite.h.  Each
 * site starts at four frames with the leaf's file:line; while two labels
 * are equal, the sites of that label get one more caller each, then
 * every frame's file:line, then the leaf's address, then a number: ten
 * sites called through the same four functions no longer read alike.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "profile/heapsite.h"
#include "profile/hprof.h"
#include "profile/profile.h"
#include "util/buf.h"

#define FIRST_DEPTH 4

/* How far a site's label goes. */
struct level {
	struct kiln_frame *fr;	/* its frames, allocator frames skipped */
	long n;
	long depth;		/* frames shown */
	int detail;		/* 0; 1: file:line on every frame; 2: address;
				 * 3: number */
	size_t number;
	uint64_t addr;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static bool allocator_frame(const char *name)
{
	return !strncmp(name, "operator new", 12) ||
	       !strncmp(name, "operator delete", 15);
}

static int frames_of(struct kiln_prof *p, long s, struct level *l)
{
	struct kiln_frame *fr = NULL;
	size_t cap = 0;
	long n, first = 0;

	if (s < 0)
		return 0;
	n = kiln_prof_frames(p, &p->samples[s], &fr, &cap);
	if (n < 0) {
		free(fr);
		return (int)n;
	}
	while (first + 1 < n && allocator_frame(kiln_prof_str(p, fr[first].name)))
		first++;
	if (first)
		memmove(fr, fr + first, (size_t)(n - first) * sizeof(*fr));
	l->fr = fr;
	l->n = n - first;
	l->depth = l->n < FIRST_DEPTH ? l->n : FIRST_DEPTH;
	if (l->n)
		l->addr = p->locations[fr[0].location].address;
	return 0;
}

static char *label_of(struct kiln_prof *p, long s, const struct level *l)
{
	struct kiln_buf b = KILN_BUF_INIT;
	long i;

	if (s < 0)
		kiln_buf_adds(&b, "?");
	else if (!l->n)
		kiln_buf_adds(&b, "[no stack]");
	for (i = 0; i < l->depth; i++) {
		const struct kiln_frame *f = &l->fr[i];

		if (i)
			kiln_buf_adds(&b, " <- ");
		kiln_buf_adds(&b, kiln_prof_str(p, f->name));
		if ((!i || l->detail) && f->function && f->line > 0) {
			uint32_t file = p->functions[f->function].filename;

			if (file)
				kiln_buf_addf(&b, " (%s:%" PRId64 ")",
					      base_name(kiln_prof_str(p, file)), f->line);
		}
	}
	if (l->depth < l->n)
		kiln_buf_adds(&b, " <- ...");
	if (l->detail >= 2)
		kiln_buf_addf(&b, " [0x%" PRIx64 "]", l->addr);
	if (l->detail >= 3)
		kiln_buf_addf(&b, " #%zu", l->number);
	return b.data;
}

void kiln_heapsite_labels_free(char **labels, size_t n)
{
	size_t i;

	if (!labels)
		return;
	for (i = 0; i < n; i++)
		free(labels[i]);
	free(labels);
}

/* One round: the sites whose label another shares go one step further.
 * True when any label changed. */
static bool widen(char **lab, struct level *lv, size_t n, bool *dup)
{
	size_t i, j;
	bool any = false;

	memset(dup, 0, n * sizeof(*dup));
	for (i = 0; i < n; i++)
		for (j = i + 1; j < n; j++)
			if (!strcmp(lab[i], lab[j]))
				dup[i] = dup[j] = true;
	for (i = 0; i < n; i++) {
		size_t k = 0;

		if (!dup[i])
			continue;
		/* Every site of the label takes the same step. */
		for (j = 0; j < n; j++)
			if (j != i && dup[j] && !strcmp(lab[i], lab[j]) &&
			    lv[j].depth < lv[j].n)
				k = 1;
		if (lv[i].depth < lv[i].n)
			lv[i].depth++;
		else if (!k && lv[i].detail < 3)
			lv[i].detail++;
		else
			continue;
		any = true;
	}
	return any;
}

int kiln_heapsite_labels(struct kiln_prof *p, const long *samples, size_t n,
			 char ***out)
{
	struct level *lv = calloc(n + 1, sizeof(*lv));
	char **lab = calloc(n + 1, sizeof(*lab));
	bool *dup = calloc(n + 1, sizeof(*dup));
	size_t i;
	int err = 0;

	*out = NULL;
	if (!lv || !lab || !dup)
		err = -ENOMEM;
	for (i = 0; i < n && !err; i++) {
		lv[i].number = i + 1;
		err = frames_of(p, samples[i], &lv[i]);
	}
	/* Each round widens at least one label; a label has at most
	 * depth + 3 steps. */
	while (!err) {
		for (i = 0; i < n; i++) {
			free(lab[i]);
			lab[i] = label_of(p, samples[i], &lv[i]);
			if (!lab[i])
				err = -ENOMEM;
		}
		if (err || !widen(lab, lv, n, dup))
			break;
	}
	for (i = 0; lv && i < n; i++)
		free(lv[i].fr);
	free(lv);
	free(dup);
	if (err) {
		kiln_heapsite_labels_free(lab, n);
		return err;
	}
	*out = lab;
	return 0;
}

struct ranked {
	uint32_t site;
	double v;
};

static int by_value(const void *a, const void *b)
{
	const struct ranked *x = a, *y = b;

	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;
	return x->site < y->site ? -1 : x->site > y->site;
}

long kiln_heapsite_top(const struct kiln_hprof *h, size_t n, uint32_t *ids)
{
	struct ranked *rk = malloc((h->nsites + 1) * sizeof(*rk));
	size_t i, j, k = 0;

	if (!rk)
		return -ENOMEM;
	for (i = 1; i <= h->nsites; i++) {
		const struct kiln_hprof_site *s = &h->sites[i];
		double mx = 0;

		for (j = 0; j < s->nhist; j++)
			if (s->hist[j].at_max > mx)
				mx = s->hist[j].at_max;
		if (mx > 0) {
			rk[k].site = (uint32_t)i;
			rk[k].v = mx;
			k++;
		}
	}
	if (k)
		qsort(rk, k, sizeof(*rk), by_value);
	for (i = 0; i < k && i < n; i++)
		ids[i] = rk[i].site;
	free(rk);
	return (long)k;
}
