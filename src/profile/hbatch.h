/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch of calls to the heap analysis (profile stage): the events a
 * reader decoded, with the stack, maps and lost records met between them,
 * recorded in order and applied to a struct kiln_hprof at once
 * (kiln_hprof_apply()).  The heap trace reader fills one while it decodes
 * a frame's columns; applying it in the reader's thread or in another one
 * (format/heaptrace-pipe.c) gives the same analysis, call for call.
 */
#ifndef KILN_PROFILE_HBATCH_H
#define KILN_PROFILE_HBATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/hprof.h"

enum kiln_hprof_op_kind {
	KILN_HPROF_OP_STACK,	/* kiln_hprof_add_stack(id, pcs, depth) */
	KILN_HPROF_OP_MAPS,	/* kiln_hprof_add_maps(text, len) */
	KILN_HPROF_OP_LOST,	/* kiln_hprof_lost(count) */
};

/* A call other than an event, made before event `at` of the batch. */
struct kiln_hprof_op {
	size_t at;
	uint64_t arg;		/* STACK: the id; LOST: the count */
	size_t off, len;	/* STACK: pcs[off..off+len); MAPS: text[off..off+len) */
	enum kiln_hprof_op_kind kind;
};

struct kiln_hprof_batch {
	struct kiln_hprof_ev *ev;	/* cap of them, nev used */
	size_t nev, cap;
	struct kiln_hprof_op *op;
	size_t nop, op_alloc;
	uint64_t *pcs;
	size_t npcs, pcs_alloc;
	char *text;
	size_t ntext, text_alloc;
};

/* An empty batch of up to cap events.  0 or -ENOMEM. */
int kiln_hprof_batch_init(struct kiln_hprof_batch *b, size_t cap);
/* Frees what b holds; init it again to reuse it. */
void kiln_hprof_batch_release(struct kiln_hprof_batch *b);

static inline bool kiln_hprof_batch_full(const struct kiln_hprof_batch *b)
{
	return b->nev == b->cap;
}

/* The next event's room (the batch must not be full). */
static inline struct kiln_hprof_ev *kiln_hprof_batch_next(struct kiln_hprof_batch *b)
{
	return &b->ev[b->nev++];
}

/* Records a call to kiln_hprof_add_stack(), _add_maps() (the text is
 * copied) or _lost() after the events so far.  0 or -ENOMEM. */
int kiln_hprof_batch_stack(struct kiln_hprof_batch *b, uint32_t id,
			   const uint64_t *pcs, uint32_t depth);
int kiln_hprof_batch_maps(struct kiln_hprof_batch *b, const char *text,
			  size_t len);
int kiln_hprof_batch_lost(struct kiln_hprof_batch *b, uint64_t count);

/*
 * Makes b's calls on h in their order, and empties b (also on failure).
 * 0, or the first call's error: -ENOMEM, -EINVAL (a stack out of
 * sequence, an event with an undefined stack).
 */
int kiln_hprof_apply(struct kiln_hprof *h, struct kiln_hprof_batch *b);

#endif
