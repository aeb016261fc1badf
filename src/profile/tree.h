/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Call tree (profile stage): the samples of one sample type aggregated
 * into a tree of frames, as a flame graph draws it.
 *
 * A node is keyed by (parent node, frame name string id): two stacks that
 * share a prefix of names share its nodes, whatever locations or lines
 * the frames came from.  Inline frames are frames of their own
 * (kiln_prof_frames() expands them).  Each node has its total (the value
 * of every sample whose stack passes through it) and its self value (the
 * samples that end there); total = self + the totals of its children.
 *
 * In the normal orientation the root's children are the outermost callers
 * (main, _start, thread entry points) and a path ends at the leaf that was
 * running.  In the reversed orientation the leaf is the root's child and a
 * path walks out through its callers, so a node's total says how much
 * time was spent in that function reached from that chain of callees.
 *
 * A tree may also carry the values of a second profile (the diff base):
 * base[] holds, for each node, the base profile's value along the same
 * path of names.  Paths only the base has are not added (the graph's
 * widths come from the new profile), but their values still count in the
 * base totals of the ancestors that both profiles share.  Base values are
 * kept raw; kiln_tree_base_scaled() normalises one to the new profile's
 * total, so that "grew" and "shrank" compare shares, not absolute values.
 *
 * Samples whose value is zero or negative are left out: a tree shows
 * positive cost (pprof diff profiles with negative values are better drawn
 * with a base profile).
 */
#ifndef KILN_PROFILE_TREE_H
#define KILN_PROFILE_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kiln_prof;
struct kiln_frame;

struct kiln_tree_node {
	uint32_t name;		/* string id in the profile, 0 for the root */
	uint32_t parent;	/* node index; the root is its own parent */
	uint32_t child;		/* first child, 0 for none */
	uint32_t next;		/* next sibling, 0 for none */
	uint32_t depth;		/* 0 for the root */
	uint32_t kind;		/* enum kiln_kind of the first frame seen */
	int64_t total;		/* value of the samples through this node */
	int64_t self;		/* value of the samples ending here */
	int64_t base;		/* diff base: raw total along the same path */
	/* Where the first frame seen at this node came from, for details
	 * on hover: its location, function (file name) and line. */
	uint32_t location;	/* location id */
	uint32_t function;	/* function id, 0 when unknown */
	int64_t line;
};

/* A slot of the tree's index: the key is kept in the slot, so that a
 * lookup reads one slot and not the node it names (a build looks up every
 * frame of every sample: the nodes are far bigger than the slots). */
struct kiln_tree_slot {
	uint32_t parent, name;
	uint32_t id;		/* node index, 0: empty */
};

struct kiln_tree {
	struct kiln_tree_node *nodes;	/* [0] is the root */
	uint32_t n, alloc;
	uint32_t max_depth;		/* deepest node's depth */
	bool reverse;			/* leaf-rooted */
	bool sorted;			/* children in name byte order */
	bool has_base;			/* kiln_tree_add_base() was called */
	/* Whether the base is compared by value (subtracted, as pprof's
	 * -base) by default, not by share: kiln_tree_add_base() sets it for
	 * heap types (kiln_type_diff_by_value()). */
	bool base_by_value;
	int64_t base_total;		/* the base profile's whole total */
	const struct kiln_prof *prof;	/* names live in its string table */
	/* (parent, name) -> node: open addressing, linear probing, load
	 * at most 1/2; mask + 1 slots (0 when none). */
	struct kiln_tree_slot *slots;
	size_t mask, count;
};

#define KILN_TREE_INIT { 0 }

void kiln_tree_init(struct kiln_tree *t);
/* Frees the nodes and the index; the tree is empty and reusable. */
void kiln_tree_release(struct kiln_tree *t);
/* The bytes t holds (nodes and index), for caches that bound memory. */
size_t kiln_tree_bytes(const struct kiln_tree *t);

/*
 * Builds the tree of sample type index `type` of p into t (released
 * first).  reverse: leaf-rooted.  p is not const because frames of
 * unsymbolized locations get their fallback names interned on first use;
 * the tree refers to p's strings, so p must outlive it.  Children are
 * sorted by the bytes of their names (shorter first on a common prefix),
 * so that the same profile always gives the same tree.
 * 0, -EINVAL (type out of range) or -ENOMEM.
 */
int kiln_tree_build(struct kiln_tree *t, struct kiln_prof *p, int type,
		    bool reverse);
/*
 * As kiln_tree_build() with w[i] as sample i's value instead of its
 * value of `type` (w: p->nsamples weights, kiln_prof_weights(); NULL:
 * the values): the tree of a selection made without a copy of its
 * samples, equal to the tree of the copy.
 */
int kiln_tree_build_w(struct kiln_tree *t, struct kiln_prof *p, int type,
		      bool reverse, const int64_t *w);

/*
 * The tree of every sample of p, each counted 1, with the node each
 * sample's path ends at (leaf[i]; 0: an empty stack) and the sample that
 * made each node (first[n]): what kiln_tree_select() makes the tree of a
 * selection from, without looking up a frame.  Built once for a profile
 * that many selections are made of (kiln serve's inputs).
 */
struct kiln_tree_all {
	struct kiln_tree t;
	uint32_t *leaf;		/* [nsamples] */
	uint32_t *first;	/* [t.n] */
	size_t nsamples;
};
int kiln_tree_all_build(struct kiln_tree_all *a, struct kiln_prof *p,
			bool reverse);
void kiln_tree_all_release(struct kiln_tree_all *a);
size_t kiln_tree_all_bytes(const struct kiln_tree_all *a);

/* kiln_tree_select()'s working arrays, five of a's node count: kept by
 * a caller that makes many selections of one tree (kiln serve), so that
 * each is not memory touched for the first time.  Zeroed: empty. */
struct kiln_tree_sel {
	int64_t *self, *total;
	uint32_t *claim;	/* the first kept sample through a node, or
				 * UINT32_MAX: not reached */
	uint32_t *order;	/* the reached nodes in kiln_tree_build()'s order */
	uint32_t *newid;	/* a's node -> t's */
	uint32_t *chain;	/* [depth] */
	size_t n, depth;	/* what the arrays are for */
};
void kiln_tree_sel_release(struct kiln_tree_sel *s);

/*
 * Into t (released first), the tree kiln_tree_build_w(p, w) gives --
 * the same nodes in the same order, values and first frames -- made from
 * a (the tree of every sample of p, same orientation): each sample's
 * weight added at its leaf, totals summed, the nodes reached kept, and
 * a node's first frame taken from the first sample of the selection that
 * reaches it (expanded only where that is not a's).  t has no index: a
 * child is found by reading its parent's children until a node is added.
 * scratch: working arrays to use (and keep) for a's size, or NULL (made
 * and freed here).  0 or -ENOMEM.
 */
int kiln_tree_select(struct kiln_tree *t, const struct kiln_tree_all *a,
		     struct kiln_prof *p, const int64_t *w,
		     struct kiln_tree_sel *scratch);

/*
 * Adds the values of base's sample type `type` as the diff base of every
 * node whose path of names exists in t (same orientation).  Names are
 * matched by their bytes, so base may come from another file.  Call after
 * kiln_tree_build(); may be called once.  0, -EINVAL or -ENOMEM.
 */
int kiln_tree_add_base(struct kiln_tree *t, struct kiln_prof *base, int type);

/*
 * As kiln_tree_add_base(), matching by function instead of by path (the
 * CLI's --diff-by function): a function's base total (each sample once)
 * is spread over the function's nodes in proportion to their totals, so
 * that a node's change of share is its part of its function's change,
 * whichever callers the function had in either profile (a caller renamed
 * between the profiles does not make everything under it "new").
 */
int kiln_tree_add_base_by_function(struct kiln_tree *t, struct kiln_prof *base,
				   int type);

/*
 * The base value of node i scaled to the new profile's total:
 * base * root.total / base_total (0 when the base is empty).
 */
double kiln_tree_base_scaled(const struct kiln_tree *t, uint32_t i);

/*
 * Whether a diff of this sample type compares values (heap sizes and
 * counts: what is held or was allocated, pprof's -base subtracts) rather
 * than shares (CPU time and samples, whose totals follow the run's
 * length).  The default of every diff view.
 */
bool kiln_type_diff_by_value(const char *type, const char *unit);

/*
 * The change of a value v against its base value, in percentage points:
 * by value (by_value, t->base_by_value by default), (v - base) in percent
 * of the larger of the two totals; else the change of share, v's percent
 * of the tree's total less base's of the base's.  Red/blue colours are
 * scaled on it.
 */
double kiln_tree_change(const struct kiln_tree *t, int64_t v, int64_t base,
			bool by_value);

/*
 * For trees built from something other than samples (the sandwich view
 * merges parts of a tree): kiln_tree_start() makes t an empty tree (root
 * only) over p's strings; kiln_tree_child() returns the child of parent
 * named f->name, adding it (with f's function, location and line) when
 * missing, 0 on ENOMEM; the caller adds to total and self; then
 * kiln_tree_sort() orders children as kiln_tree_build() does.
 * 0 or -ENOMEM.
 */
int kiln_tree_start(struct kiln_tree *t, const struct kiln_prof *p,
		    bool reverse);
uint32_t kiln_tree_child(struct kiln_tree *t, uint32_t parent,
			 const struct kiln_frame *f);
int kiln_tree_sort(struct kiln_tree *t);

/*
 * The child of node parent named by the string `name` (bytes), or 0.
 * For tests and callers that walk a known path.
 */
uint32_t kiln_tree_find(const struct kiln_tree *t, uint32_t parent,
			const char *name);

/*
 * The stacks of a profile's samples as frame names, for trees made a
 * level at a time (kiln serve's call tree of a big selection sends a few
 * levels per request: building all of a 300k-stack profile's 900k nodes
 * costs far more than the levels asked).  Stack i (the samples of one
 * sample type with a positive value, in sample order) has names
 * [off[i], off[i + 1]) from the tree's root side (outermost caller first,
 * or the leaf first when reverse), value[i] and came from sample
 * sample[i].  total: the values' sum (the root's total).
 */
/* Saturating addition: a sum of int64 sample values must not overflow. */
static inline int64_t kiln_sat_add(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

struct kiln_tree_paths {
	uint32_t *names, *off, *sample;
	int64_t *value;
	size_t n;
	int64_t total;
	bool reverse;
};

/* Fills ps (released first) from p's samples of type `type`.  p is read
 * only where every location's name is made (kiln_prof_name_all()).
 * 0, -EINVAL (type out of range) or -ENOMEM. */
int kiln_tree_paths_build(struct kiln_tree_paths *ps, struct kiln_prof *p,
			  int type, bool reverse);
/* The same with w[i] as sample i's value (NULL: the values), as
 * kiln_tree_build_w(). */
int kiln_tree_paths_build_w(struct kiln_tree_paths *ps, struct kiln_prof *p,
			    int type, bool reverse, const int64_t *w);
void kiln_tree_paths_release(struct kiln_tree_paths *ps);
/* The bytes ps holds. */
size_t kiln_tree_paths_bytes(const struct kiln_tree_paths *ps);

/*
 * Of the stacks sel[0..n) (indexes into ps, each with at least depth
 * names), keeps in sel, in order, those whose name at depth `depth` is
 * `name`; returns how many.
 */
size_t kiln_tree_paths_narrow(const struct kiln_tree_paths *ps, uint32_t *sel,
			      size_t n, uint32_t depth, uint32_t name);

/*
 * A level of a partial tree t (kiln_tree_start() over ps's profile p,
 * same orientation): adds the children of node (at depth d) made by the
 * stacks sel[0..n), which must be every stack through node, in order,
 * with their totals and self values and, as kiln_tree_build() gives them,
 * the kind, location, function and line of the first frame seen; and
 * their own children by name only (so each child's children are
 * counted).  Then sorts t's children as kiln_tree_build() does.  The
 * children and their totals equal those of kiln_tree_build()'s tree at
 * the same path.  Call once per node.  0 or -ENOMEM.
 */
int kiln_tree_expand(struct kiln_tree *t, struct kiln_prof *p,
		     const struct kiln_tree_paths *ps, uint32_t node,
		     const uint32_t *sel, size_t n);

#endif
