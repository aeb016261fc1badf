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

/* The first slot to probe for (parent, name): the high bits of a
 * multiplicative hash of the 64-bit key (Fibonacci hashing). */
static size_t key_slot(const struct kiln_tree *t, uint32_t parent, uint32_t name)
{
	uint64_t k = ((uint64_t)parent << 32 | name) * 0x9e3779b97f4a7c15ull;

	return (size_t)(k >> 32 ^ k >> 7) & t->mask;
}

/* The slot holding (parent, name), or the empty slot where it would go
 * (t->slots is not NULL). */
static struct kiln_tree_slot *slot_of(const struct kiln_tree *t,
				      uint32_t parent, uint32_t name)
{
	size_t i = key_slot(t, parent, name);

	for (;; i = (i + 1) & t->mask) {
		struct kiln_tree_slot *s = &t->slots[i];

		if (!s->id || (s->parent == parent && s->name == name))
			return s;
	}
}

/* Makes room for one more key: the load stays at most 1/2, so probes
 * stay short.  0 or -ENOMEM. */
static int index_reserve(struct kiln_tree *t)
{
	struct kiln_tree t2;
	size_t cap, i;

	if (t->slots && (t->count + 1) * 2 <= t->mask + 1)
		return 0;
	cap = t->slots ? (t->mask + 1) * 2 : 256;
	t2.slots = calloc(cap, sizeof(*t2.slots));
	if (!t2.slots)
		return -ENOMEM;
	t2.mask = cap - 1;
	for (i = 0; t->slots && i <= t->mask; i++)
		if (t->slots[i].id)
			*slot_of(&t2, t->slots[i].parent, t->slots[i].name) = t->slots[i];
	/* Nodes made without an index (kiln_tree_select()) get theirs now,
	 * before a node is added. */
	if (!t->slots && t->n > 1) {
		uint32_t id;

		while ((size_t)t->n * 2 > cap) {
			free(t2.slots);
			cap *= 2;
			t2.slots = calloc(cap, sizeof(*t2.slots));
			if (!t2.slots)
				return -ENOMEM;
			t2.mask = cap - 1;
		}
		for (id = 1; id < t->n; id++)
			*slot_of(&t2, t->nodes[id].parent, t->nodes[id].name) =
				(struct kiln_tree_slot){ t->nodes[id].parent,
							 t->nodes[id].name, id };
		t->count = t->n - 1;
	}
	free(t->slots);
	t->slots = t2.slots;
	t->mask = t2.mask;
	return 0;
}

void kiln_tree_init(struct kiln_tree *t)
{
	memset(t, 0, sizeof(*t));
}

void kiln_tree_release(struct kiln_tree *t)
{
	free(t->nodes);
	free(t->slots);
	kiln_tree_init(t);
}

size_t kiln_tree_bytes(const struct kiln_tree *t)
{
	return (size_t)t->alloc * sizeof(*t->nodes) +
	       (t->slots ? (t->mask + 1) * sizeof(*t->slots) : 0);
}

static uint32_t find_child(const struct kiln_tree *t, uint32_t parent,
			   uint32_t name)
{
	uint32_t c;

	if (t->slots)
		return slot_of(t, parent, name)->id;
	/* A selection's tree made without an index (kiln_tree_select()):
	 * its few lookups (a path asked by name) read the children. */
	for (c = parent < t->n ? t->nodes[parent].child : 0; c; c = t->nodes[c].next)
		if (t->nodes[c].name == name)
			return c;
	return 0;
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
	if (id) {
		struct kiln_tree_slot *s;

		if (index_reserve(t))
			return 0;
		s = slot_of(t, parent, name);
		*s = (struct kiln_tree_slot){ parent, name, id };
		t->count++;
	}
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

/* Each node's total from the self values: total = self + the totals of
 * its children.  Children come after their parents in the node array, so
 * one pass from the end adds every finished total to its parent. */
static void sum_totals(struct kiln_tree *t)
{
	uint32_t i;

	for (i = 0; i < t->n; i++)
		t->nodes[i].total = t->nodes[i].self;
	for (i = t->n; i-- > 1;) {
		struct kiln_tree_node *pa = &t->nodes[t->nodes[i].parent];

		pa->total = kiln_sat_add(pa->total, t->nodes[i].total);
	}
}

/* Samples looked up side by side (tree_batch()). */
#define TREE_LANES 32

/* A sample of a batch: its frames in the batch's array, value, and how
 * far the lookups of existing nodes got (node cur at frame k). */
struct lane {
	size_t f0;		/* first frame in the batch's array */
	long nf, k;
	int64_t v;
	uint32_t cur;
	uint32_t sample;
};

/* Each location's frames, expanded once per build, on first use:
 * location l's are fr[first[l] - 1 .. + count[l]) (first[l] 0: not
 * yet). */
struct loc_frames {
	uint32_t *first, *count;
	struct kiln_frame *fr, *one;
	size_t n, cap, one_cap;
};

/* Expands location l if not yet: 0, or -ENOMEM. */
static int expand_loc(struct kiln_prof *p, struct loc_frames *lf, uint32_t l)
{
	long n;

	if (lf->first[l])
		return 0;
	n = kiln_prof_loc_frames(p, l, &lf->one, &lf->one_cap);
	if (n < 0)
		return (int)n;
	if (lf->n + (size_t)n >= UINT32_MAX ||
	    KILN_GROW(lf->fr, lf->cap, lf->n + (size_t)n, 1024))
		return -ENOMEM;
	memcpy(lf->fr + lf->n, lf->one, (size_t)n * sizeof(*lf->fr));
	lf->first[l] = (uint32_t)lf->n + 1;
	lf->count[l] = (uint32_t)n;
	lf->n += (size_t)n;
	return 0;
}

/* The batch's frames: each sample's, one after another, as indexes
 * into the locations' expanded frames (lf->fr, which may move while the
 * batch is filled). */
struct batch {
	struct lane lane[TREE_LANES];
	size_t n;
	const struct loc_frames *lf;
	uint32_t *fi;
	size_t nfr, cap;
	struct kiln_tree_all *rec;	/* the tree of every sample: leaf and
					 * first recorded, or NULL */
	size_t first_cap;
};

/* Frame k of lane l from the root's side of the tree. */
static const struct kiln_frame *lane_frame(const struct kiln_tree *t,
					   const struct batch *b,
					   const struct lane *l, long k)
{
	return &b->lf->fr[b->fi[l->f0 + (size_t)(t->reverse ? k : l->nf - 1 - k)]];
}

/*
 * Walks the batch's samples down the nodes that exist already, side by
 * side: each round prefetches the next slot of every sample still going,
 * then reads them, so that up to TREE_LANES cache misses are in flight
 * instead of one (a walk is a chain: each lookup needs the node found by
 * the one before).  Read only: nodes are never removed, so what it finds
 * is what a walk of each sample in turn finds.
 */
static void batch_walk(const struct kiln_tree *t, struct batch *b)
{
	uint8_t live[TREE_LANES];
	size_t j, nlive = 0;

	for (j = 0; j < b->n; j++) {
		live[j] = b->lane[j].nf > 0;
		nlive += live[j];
	}
	while (nlive) {
		for (j = 0; j < b->n; j++) {
			const struct lane *l = &b->lane[j];

			if (live[j])
				__builtin_prefetch(&t->slots[key_slot(t, l->cur,
					lane_frame(t, b, l, l->k)->name)]);
		}
		for (j = 0; j < b->n; j++) {
			struct lane *l = &b->lane[j];
			uint32_t id;

			if (!live[j])
				continue;
			id = slot_of(t, l->cur, lane_frame(t, b, l, l->k)->name)->id;
			if (id) {
				l->cur = id;
				l->k++;
			}
			if (!id || l->k == l->nf) {
				live[j] = 0;
				nlive--;
			}
		}
	}
}

/*
 * Adds the batch's samples in order: from where batch_walk() stopped,
 * each looks up the rest of its frames and makes the nodes missing (an
 * earlier sample of the batch may have made some), then adds its value
 * as the self value of its last node.  0 or -ENOMEM.
 */
static int batch_add(struct kiln_tree *t, struct batch *b)
{
	size_t j;

	for (j = 0; j < b->n; j++) {
		struct lane *l = &b->lane[j];
		uint32_t cur = l->cur;
		long k;

		for (k = l->k; k < l->nf; k++) {
			const struct kiln_frame *f = lane_frame(t, b, l, k);
			uint32_t id = slot_of(t, cur, f->name)->id;

			if (!id) {
				id = new_node(t, cur, f->name,
					      kiln_prof_loc_kind(t->prof, f->location), f);
				if (!id)
					return -ENOMEM;
				if (b->rec) {
					if (KILN_GROW(b->rec->first, b->first_cap,
						      (size_t)id + 1, 1024))
						return -ENOMEM;
					b->rec->first[id] = l->sample;
				}
			}
			cur = id;
		}
		t->nodes[cur].self = kiln_sat_add(t->nodes[cur].self, l->v);
		if (b->rec)
			b->rec->leaf[l->sample] = cur;
	}
	return 0;
}

int kiln_tree_build(struct kiln_tree *t, struct kiln_prof *p, int type,
		    bool reverse)
{
	return kiln_tree_build_w(t, p, type, reverse, NULL);
}

/* kiln_tree_build_w(), or with rec the tree of every sample, each of
 * value 1, its leaves and first samples recorded in rec. */
static int build(struct kiln_tree *t, struct kiln_prof *p, int type,
		 bool reverse, const int64_t *w, struct kiln_tree_all *rec)
{
	struct loc_frames lf = { 0 };
	struct batch b = { .n = 0, .lf = &lf, .rec = rec };
	size_t i;
	int err = 0;

	kiln_tree_release(t);
	t->prof = p;
	t->reverse = reverse;
	if (!rec && (type < 0 || (size_t)type >= p->ntypes))
		return -EINVAL;
	/* The root: index 0, so new_node() cannot tell success. */
	new_node(t, 0, 0, KILN_KIND_OTHER, NULL);
	lf.first = calloc(p->nlocations + 1, sizeof(*lf.first));
	lf.count = malloc((p->nlocations + 1) * sizeof(*lf.count));
	if (t->n != 1 || index_reserve(t) || !lf.first || !lf.count) {
		free(lf.first);
		free(lf.count);
		kiln_tree_release(t);
		return -ENOMEM;
	}
	/*
	 * One lookup per frame, in the index only (the key is in the slot),
	 * TREE_LANES samples at a time (batch_walk()): the nodes are touched
	 * where they are made and where a stack ends (its self value); the
	 * totals are summed once at the end.  A 300k-stack profile makes 3
	 * million lookups, nearly each a cache miss: one after the other,
	 * they cost 0.4 s.  The samples are still added in their order, so
	 * the nodes, their order and what each keeps of its first frame are
	 * those of adding each sample in turn.
	 */
	for (i = 0; i <= p->nsamples && !err; i++) {
		int64_t v = i >= p->nsamples ? 0 : rec ? 1 :
			    kiln_prof_weight(p, i, type, w);
		long nf;

		if (b.n == TREE_LANES || (i == p->nsamples && b.n)) {
			batch_walk(t, &b);
			err = batch_add(t, &b);
			b.n = b.nfr = 0;
		}
		if (v <= 0)
			continue;
		/* The sample's frames as kiln_prof_frames() gives them, each
		 * location's expanded once per build. */
		{
			const struct kiln_sample *s = &p->samples[i];
			const uint32_t *locs = kiln_prof_sample_locs(p, s);
			uint32_t d;

			nf = 0;
			for (d = 0; d < s->depth && !err; d++) {
				uint32_t l = locs[d], f, j;

				if (l > p->nlocations) {
					err = -EINVAL;
					break;
				}
				err = expand_loc(p, &lf, l);
				if (!err && KILN_GROW(b.fi, b.cap, b.nfr + (size_t)nf +
						      lf.count[l], 256))
					err = -ENOMEM;
				if (err)
					break;
				f = lf.first[l] - 1;
				for (j = 0; j < lf.count[l]; j++)
					b.fi[b.nfr + (size_t)nf++] = f + j;
			}
			if (err)
				break;
		}
		b.lane[b.n++] = (struct lane){ b.nfr, nf, 0, v, 0, (uint32_t)i };
		b.nfr += (size_t)nf;
	}
	if (!err) {
		sum_totals(t);
		err = sort_children(t);
	}
	free(b.fi);
	free(lf.first);
	free(lf.count);
	free(lf.fr);
	free(lf.one);
	if (err)
		kiln_tree_release(t);
	return err;
}

int kiln_tree_build_w(struct kiln_tree *t, struct kiln_prof *p, int type,
		      bool reverse, const int64_t *w)
{
	return build(t, p, type, reverse, w, NULL);
}

int kiln_tree_all_build(struct kiln_tree_all *a, struct kiln_prof *p,
			bool reverse)
{
	int err;

	memset(a, 0, sizeof(*a));
	if (p->nsamples >= UINT32_MAX)
		return -ENOMEM;
	a->leaf = calloc(p->nsamples + 1, sizeof(*a->leaf));
	if (!a->leaf)
		return -ENOMEM;
	a->nsamples = p->nsamples;
	err = build(&a->t, p, 0, reverse, NULL, a);
	/* (first[0], the root's, is never read.) */
	if (!err && !a->first && !(a->first = calloc(1, sizeof(*a->first))))
		err = -ENOMEM;
	if (err)
		kiln_tree_all_release(a);
	return err;
}

void kiln_tree_all_release(struct kiln_tree_all *a)
{
	kiln_tree_release(&a->t);
	free(a->leaf);
	free(a->first);
	memset(a, 0, sizeof(*a));
}

size_t kiln_tree_all_bytes(const struct kiln_tree_all *a)
{
	return kiln_tree_bytes(&a->t) +
	       a->nsamples * sizeof(*a->leaf) + a->t.n * sizeof(*a->first);
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
		t->base_total = kiln_sat_add(t->base_total, v);
		t->nodes[0].base = kiln_sat_add(t->nodes[0].base, v);
		for (k = 0; k < nf; k++) {
			const struct kiln_frame *f =
				&frames[t->reverse ? k : nf - 1 - k];
			uint32_t name = tree_name(t, base, f->name, map, nstrs), id;

			if (!name)
				break;
			id = find_child(t, cur, name);
			if (!id)
				break;
			t->nodes[id].base = kiln_sat_add(t->nodes[id].base, v);
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
		t->base_total = kiln_sat_add(t->base_total, v);
		for (k = 0; k < nf; k++) {
			uint32_t name = tree_name(t, base, frames[k].name, map, nstrs);

			if (!name || name > nt || stamp[name] == i + 1)
				continue;
			stamp[name] = (uint32_t)(i + 1);
			btot[name] = kiln_sat_add(btot[name], v);
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
			ntot[nd->name] = kiln_sat_add(ntot[nd->name], nd->total);
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

/* ---- trees made a level at a time ---- */

/* A node of a partial tree made by name only (its first frame, if it
 * becomes a child of an expanded node, is found later).  0 on ENOMEM. */
static uint32_t name_node(struct kiln_tree *t, uint32_t parent, uint32_t name)
{
	uint32_t id = find_child(t, parent, name);

	return id ? id : new_node(t, parent, name, KILN_KIND_OTHER, NULL);
}

int kiln_tree_expand(struct kiln_tree *t, struct kiln_prof *p,
		     const struct kiln_tree_paths *ps, uint32_t node,
		     const uint32_t *sel, size_t n)
{
	struct { uint32_t node, e; } *first = NULL;
	struct kiln_frame *frames = NULL;
	size_t nfirst = 0, fcap = 0, cap = 0, i;
	uint32_t d = t->nodes[node].depth;
	int err = 0;

	for (i = 0; i < n && !err; i++) {
		uint32_t e = sel[i], o = ps->off[e], len = ps->off[e + 1] - o, ch;
		struct kiln_tree_node *c;

		if (len <= d)
			continue;
		ch = name_node(t, node, ps->names[o + d]);
		if (!ch) {
			err = -ENOMEM;
			break;
		}
		c = &t->nodes[ch];
		/* First through it: its frame is this stack's (the samples
		 * are in order, as kiln_tree_build() adds them). */
		if (!c->total && !c->location) {
			if (KILN_GROW(first, fcap, nfirst + 1, 64)) {
				err = -ENOMEM;
				break;
			}
			first[nfirst].node = ch;
			first[nfirst++].e = e;
		}
		c->total = kiln_sat_add(c->total, ps->value[e]);
		if (len == d + 1)
			c->self = kiln_sat_add(c->self, ps->value[e]);
		else if (!name_node(t, ch, ps->names[o + d + 1]))
			err = -ENOMEM;
	}
	for (i = 0; i < nfirst && !err; i++) {
		uint32_t s = ps->sample[first[i].e];
		long nf = kiln_prof_frames(p, &p->samples[s], &frames, &cap);
		struct kiln_tree_node *c = &t->nodes[first[i].node];
		const struct kiln_frame *f;

		if (nf < 0) {
			err = (int)nf;
			break;
		}
		f = &frames[ps->reverse ? d : (uint32_t)nf - 1 - d];
		c->location = f->location;
		c->function = f->function;
		c->line = f->line;
		c->kind = kiln_prof_loc_kind(p, f->location);
	}
	free(first);
	free(frames);
	return err ? err : sort_children(t);
}
