/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call tree (profile stage): aggregation of samples into a tree keyed by
 * (parent, frame name), for the flame graph renderer.  See tree.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "profile/tree.h"
#include "util/buf.h"

/* Lookup key of a child: its parent and its name's string id. */
struct tree_key {
	const struct kiln_tree *t;
	uint32_t parent, name;
};

static uint32_t key_hash(uint32_t parent, uint32_t name)
{
	uint32_t k[2] = { parent, name };

	return (uint32_t)kiln_hash(k, sizeof(k));
}

static bool key_eq(const void *ctx, uint32_t id)
{
	const struct tree_key *k = ctx;
	const struct kiln_tree_node *n = &k->t->nodes[id];

	return n->parent == k->parent && n->name == k->name;
}

/* Saturating addition: a sum of int64 sample values must not overflow. */
static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

void kiln_tree_init(struct kiln_tree *t)
{
	memset(t, 0, sizeof(*t));
	kiln_htab_init(&t->index);
}

void kiln_tree_release(struct kiln_tree *t)
{
	free(t->nodes);
	kiln_htab_release(&t->index);
	kiln_tree_init(t);
}

static uint32_t find_child(const struct kiln_tree *t, uint32_t parent,
			   uint32_t name)
{
	struct tree_key k = { t, parent, name };

	return kiln_htab_find(&t->index, key_hash(parent, name), key_eq, &k);
}

/* A new node, linked at the head of parent's children.  0 on ENOMEM (the
 * root, index 0, is never a child, so 0 cannot be a valid answer). */
static uint32_t new_node(struct kiln_tree *t, uint32_t parent, uint32_t name,
			 uint32_t kind, const struct kiln_frame *f)
{
	struct kiln_tree_node *n;
	uint32_t id;

	if (t->n == t->alloc) {
		uint32_t a = t->alloc ? t->alloc : 256;

		if (a > UINT32_MAX / 2)
			return 0;
		a *= 2;
		n = realloc(t->nodes, (size_t)a * sizeof(*n));
		if (!n)
			return 0;
		t->nodes = n;
		t->alloc = a;
	}
	id = t->n;
	if (id && kiln_htab_insert(&t->index, key_hash(parent, name), id))
		return 0;
	t->n++;
	n = &t->nodes[id];
	memset(n, 0, sizeof(*n));
	n->name = name;
	n->parent = parent;
	n->kind = kind;
	if (f) {
		n->location = f->location;
		n->function = f->function;
		n->line = f->line;
	}
	if (id) {
		n->depth = t->nodes[parent].depth + 1;
		n->next = t->nodes[parent].child;
		t->nodes[parent].child = id;
		if (n->depth > t->max_depth)
			t->max_depth = n->depth;
	}
	return id;
}

/* Orders two nodes by the bytes of their names, a prefix first. */
static int name_cmp(const void *a, const void *b, void *ctx)
{
	const struct kiln_tree *t = ctx;
	const struct kiln_tree_node *x = &t->nodes[*(const uint32_t *)a];
	const struct kiln_tree_node *y = &t->nodes[*(const uint32_t *)b];
	uint32_t xl = kiln_prof_strlen(t->prof, x->name);
	uint32_t yl = kiln_prof_strlen(t->prof, y->name);
	int c = memcmp(kiln_prof_str(t->prof, x->name),
		       kiln_prof_str(t->prof, y->name), xl < yl ? xl : yl);

	if (c)
		return c;
	return xl < yl ? -1 : xl > yl;
}

/* Relinks every node's children in name order. */
static int sort_children(struct kiln_tree *t)
{
	uint32_t *tmp = NULL, i, c, k, m;
	size_t cap = 0;

	for (i = 0; i < t->n; i++) {
		m = 0;
		for (c = t->nodes[i].child; c; c = t->nodes[c].next) {
			if (KILN_GROW(tmp, cap, m + 1, 64)) {
				free(tmp);
				return -ENOMEM;
			}
			tmp[m++] = c;
		}
		if (m < 2)
			continue;
		qsort_r(tmp, m, sizeof(*tmp), name_cmp, t);
		t->nodes[i].child = tmp[0];
		for (k = 0; k + 1 < m; k++)
			t->nodes[tmp[k]].next = tmp[k + 1];
		t->nodes[tmp[m - 1]].next = 0;
	}
	free(tmp);
	t->sorted = true;
	return 0;
}

int kiln_tree_build(struct kiln_tree *t, struct kiln_prof *p, int type,
		    bool reverse)
{
	struct kiln_frame *frames = NULL;
	size_t cap = 0, i;
	int err = 0;

	kiln_tree_release(t);
	t->prof = p;
	t->reverse = reverse;
	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	/* The root: index 0, so new_node() cannot tell success. */
	new_node(t, 0, 0, KILN_KIND_OTHER, NULL);
	if (t->n != 1)
		return -ENOMEM;
	for (i = 0; i < p->nsamples; i++) {
		int64_t v = kiln_prof_value(p, i, (size_t)type);
		uint32_t cur = 0;
		long nf, k;

		if (v <= 0)
			continue;
		nf = kiln_prof_frames(p, &p->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			goto out;
		}
		t->nodes[0].total = sat_add(t->nodes[0].total, v);
		for (k = 0; k < nf; k++) {
			const struct kiln_frame *f =
				&frames[reverse ? k : nf - 1 - k];
			uint32_t id = find_child(t, cur, f->name);

			if (!id) {
				id = new_node(t, cur, f->name,
					      kiln_prof_loc_kind(p, f->location), f);
				if (!id) {
					err = -ENOMEM;
					goto out;
				}
			}
			t->nodes[id].total = sat_add(t->nodes[id].total, v);
			cur = id;
		}
		t->nodes[cur].self = sat_add(t->nodes[cur].self, v);
	}
	err = sort_children(t);
out:
	free(frames);
	if (err)
		kiln_tree_release(t);
	return err;
}

/* t's string id for base's string id s (0: t has no such string),
 * cached in map[s] + 1; frame names interned while expanding may be
 * newer than the map: those are looked up without caching. */
static uint32_t tree_name(const struct kiln_tree *t, const struct kiln_prof *base,
			  uint32_t s, uint32_t *map, size_t nstrs)
{
	uint32_t name;

	if (s < nstrs && map[s])
		return map[s] - 1;
	name = kiln_prof_find_str(t->prof, kiln_prof_str(base, s),
				  kiln_prof_strlen(base, s));
	if (s < nstrs)
		map[s] = name + 1;
	return name;
}

int kiln_tree_add_base(struct kiln_tree *t, struct kiln_prof *base, int type)
{
	struct kiln_frame *frames = NULL;
	uint32_t *map;		/* base string id -> t's string id + 1, 0 unknown */
	size_t cap = 0, i, nstrs = base->nstrs;
	int err = 0;

	if (!t->n || t->has_base || type < 0 || (size_t)type >= base->ntypes)
		return -EINVAL;
	map = calloc(nstrs + 1, sizeof(*map));
	if (!map)
		return -ENOMEM;
	for (i = 0; i < base->nsamples; i++) {
		int64_t v = kiln_prof_value(base, i, (size_t)type);
		uint32_t cur = 0;
		long nf, k;

		if (v <= 0)
			continue;
		nf = kiln_prof_frames(base, &base->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			goto out;
		}
		t->base_total = sat_add(t->base_total, v);
		t->nodes[0].base = sat_add(t->nodes[0].base, v);
		for (k = 0; k < nf; k++) {
			const struct kiln_frame *f =
				&frames[t->reverse ? k : nf - 1 - k];
			uint32_t name = tree_name(t, base, f->name, map, nstrs), id;

			if (!name)
				break;
			id = find_child(t, cur, name);
			if (!id)
				break;
			t->nodes[id].base = sat_add(t->nodes[id].base, v);
			cur = id;
		}
	}
	t->has_base = true;
	t->base_by_value = kiln_type_diff_by_value(
		kiln_prof_str(base, base->types[type].type),
		kiln_prof_str(base, base->types[type].unit));
out:
	free(map);
	free(frames);
	return err;
}

int kiln_tree_add_base_by_function(struct kiln_tree *t, struct kiln_prof *base,
				   int type)
{
	struct kiln_frame *frames = NULL;
	size_t cap = 0, i, nstrs = base->nstrs, nt = t->prof->nstrs;
	uint32_t *map = NULL, *stamp = NULL;
	int64_t *btot = NULL, *ntot = NULL;
	int err = 0;

	if (!t->n || t->has_base || type < 0 || (size_t)type >= base->ntypes)
		return -EINVAL;
	map = calloc(nstrs + 1, sizeof(*map));
	stamp = calloc(nt + 1, sizeof(*stamp));
	btot = calloc(nt + 1, sizeof(*btot));
	ntot = calloc(nt + 1, sizeof(*ntot));
	if (!map || !stamp || !btot || !ntot) {
		err = -ENOMEM;
		goto out;
	}
	/* The base's total per function name, each sample counted once
	 * however often the name is on its stack. */
	for (i = 0; i < base->nsamples; i++) {
		int64_t v = kiln_prof_value(base, i, (size_t)type);
		long nf, k;

		if (v <= 0)
			continue;
		nf = kiln_prof_frames(base, &base->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			goto out;
		}
		t->base_total = sat_add(t->base_total, v);
		for (k = 0; k < nf; k++) {
			uint32_t name = tree_name(t, base, frames[k].name, map, nstrs);

			if (!name || name > nt || stamp[name] == i + 1)
				continue;
			stamp[name] = (uint32_t)(i + 1);
			btot[name] = sat_add(btot[name], v);
		}
	}
	/* The new profile's total per name: the nodes of that name with no
	 * ancestor of the same name (recursion counted once). */
	for (i = 1; i < t->n; i++) {
		const struct kiln_tree_node *nd = &t->nodes[i];
		uint32_t a = nd->parent;

		if (nd->name > nt)
			continue;
		while (a && t->nodes[a].name != nd->name)
			a = t->nodes[a].parent;
		if (!a)
			ntot[nd->name] = sat_add(ntot[nd->name], nd->total);
	}
	/* Each node gets its function's base total in proportion to its
	 * part of the function's new total: a node's change of share is
	 * then its part of its function's change, wherever it is called. */
	t->nodes[0].base = t->base_total;
	for (i = 1; i < t->n; i++) {
		struct kiln_tree_node *nd = &t->nodes[i];

		if (nd->name <= nt && ntot[nd->name] > 0)
			nd->base = (int64_t)((double)btot[nd->name] *
					     (double)nd->total /
					     (double)ntot[nd->name] + 0.5);
	}
	t->has_base = true;
	t->base_by_value = kiln_type_diff_by_value(
		kiln_prof_str(base, base->types[type].type),
		kiln_prof_str(base, base->types[type].unit));
out:
	free(map);
	free(stamp);
	free(btot);
	free(ntot);
	free(frames);
	return err;
}

bool kiln_type_diff_by_value(const char *type, const char *unit)
{
	return !strcmp(unit, "bytes") || strstr(type, "objects") ||
	       strstr(type, "space") || !strcmp(type, "allocations");
}

static double pct_of(double v, int64_t total)
{
	return total > 0 ? 100.0 * v / (double)total : 0;
}

double kiln_tree_change(const struct kiln_tree *t, int64_t v, int64_t base,
			bool by_value)
{
	int64_t total = t->nodes[0].total;

	if (by_value)
		return pct_of((double)v - (double)base,
			      total > t->base_total ? total : t->base_total);
	return pct_of((double)v, total) - pct_of((double)base, t->base_total);
}

double kiln_tree_base_scaled(const struct kiln_tree *t, uint32_t i)
{
	if (t->base_total <= 0)
		return 0;
	return (double)t->nodes[i].base * (double)t->nodes[0].total /
	       (double)t->base_total;
}

int kiln_tree_start(struct kiln_tree *t, const struct kiln_prof *p,
		    bool reverse)
{
	kiln_tree_release(t);
	t->prof = p;
	t->reverse = reverse;
	new_node(t, 0, 0, KILN_KIND_OTHER, NULL);
	return t->n == 1 ? 0 : -ENOMEM;
}

uint32_t kiln_tree_child(struct kiln_tree *t, uint32_t parent,
			 const struct kiln_frame *f)
{
	uint32_t id = find_child(t, parent, f->name);

	if (id)
		return id;
	return new_node(t, parent, f->name,
			f->location ? kiln_prof_loc_kind(t->prof, f->location) :
				      KILN_KIND_OTHER, f);
}

int kiln_tree_sort(struct kiln_tree *t)
{
	return sort_children(t);
}

uint32_t kiln_tree_find(const struct kiln_tree *t, uint32_t parent,
			const char *name)
{
	uint32_t id;

	if (!t->n)
		return 0;
	id = kiln_prof_find_str(t->prof, name, strlen(name));
	return id ? find_child(t, parent, id) : 0;
}
