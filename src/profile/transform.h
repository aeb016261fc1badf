/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Stack transforms (profile stage): an ordered list of rewrites applied to
 * every sample's stack before any view aggregates it, as the Firefox
 * Profiler's transforms are (merge function, merge call node, focus on a
 * subtree or a function, collapse a library, collapse recursion, drop a
 * function).  kiln serve takes the list from its URL (tf=), the CLI from
 * --transform; both in the text form below (docs/kiln-serve.md,
 * "Transforms").
 *
 * Text form: items separated by ';', each CODE:ARG, applied in order.
 * ARG is a frame name (a function as the views name it, "[libfoo.so]" for
 * an unsymbolized frame), a module (a library's file name or its base
 * name) or, for the call-node codes, a path of frame names from the root,
 * separated by '/'.  '\' makes the next character plain (a name holding
 * ';', '/' or '\').
 *
 *   code  what                          ARG
 *   f     focus on subtree              path: the node becomes the root,
 *                                       samples not through it go
 *   ff    focus on function             name: its outermost frame becomes
 *                                       the root, samples without it go
 *   mf    merge function                name: its frames leave every
 *                                       stack, their self time to callers
 *   mcn   merge call node               path: that node alone leaves
 *   df    drop function                 name: samples with it go
 *   cl    collapse library              module: each run of its frames
 *                                       becomes one frame named by its
 *                                       base name ("libc.so.6")
 *   rec   collapse recursion            name: what runs between its
 *                                       outermost and innermost frames
 *                                       goes (callees of the innermost
 *                                       hang below the outermost)
 *   drec  collapse direct recursion     name: a frame of it called
 *                                       directly by itself goes
 */
#ifndef KILN_PROFILE_TRANSFORM_H
#define KILN_PROFILE_TRANSFORM_H

#include <stdbool.h>
#include <stddef.h>

struct kiln_prof;
struct kiln_diag;

enum kiln_tf_kind {
	KILN_TF_FOCUS_SUBTREE,
	KILN_TF_FOCUS_FUNCTION,
	KILN_TF_MERGE_FUNCTION,
	KILN_TF_MERGE_CALL_NODE,
	KILN_TF_DROP_FUNCTION,
	KILN_TF_COLLAPSE_LIB,
	KILN_TF_COLLAPSE_RECURSION,
	KILN_TF_COLLAPSE_DIRECT_RECURSION,
};

/* One transform: its kind and its argument, n names (a path from the
 * root for the call-node kinds, one name otherwise). */
struct kiln_tf {
	enum kiln_tf_kind kind;
	char **names;		/* into the list's buf */
	size_t n;
};

struct kiln_tf_list {
	struct kiln_tf *items;
	size_t n;
	char *buf;		/* the unescaped names, NUL-terminated */
	char **names;		/* every item's names, one array */
};

#define KILN_TF_LIST_INIT { 0 }

/*
 * Reads the text form into l (released first; an empty or NULL text is
 * an empty list).  0, -EINVAL (d filled: the item and why) or -ENOMEM.
 */
int kiln_tf_parse(struct kiln_tf_list *l, const char *text,
		  struct kiln_diag *d);
void kiln_tf_release(struct kiln_tf_list *l);

/* The code of a kind ("mf") and its words ("merge function"). */
const char *kiln_tf_code(enum kiln_tf_kind k);
const char *kiln_tf_words(enum kiln_tf_kind k);

/*
 * Rewrites every sample's stack of p by the list, in order.  Tables stay
 * (ids valid); a stack that changes gets locations with the frames it
 * keeps (a location keeps its mapping and address, so disassembly and
 * modules still see them), collapsed libraries one location each.
 * Samples whose stacks become equal add up.  0 or -ENOMEM.
 */
int kiln_prof_transform(struct kiln_prof *p, const struct kiln_tf_list *l);
/* For tests: every stack expanded and rebuilt, also those no transform
 * of the list looks at (which are otherwise passed as they were: the
 * model must be the same either way). */
extern bool kiln_tf_expand_every;

#endif
