/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A batch of calls to the heap analysis (profile stage), see hbatch.h:
 * the events go to kiln_hprof_events() in runs between the other calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/hbatch.h"
#include "profile/hprof.h"
#include "util/buf.h"

int kiln_hprof_batch_init(struct kiln_hprof_batch *b, size_t cap)
{
	memset(b, 0, sizeof(*b));
	b->ev = malloc(cap * sizeof(*b->ev));
	if (!b->ev)
		return -ENOMEM;
	b->cap = cap;
	return 0;
}

void kiln_hprof_batch_release(struct kiln_hprof_batch *b)
{
	free(b->ev);
	free(b->op);
	free(b->pcs);
	free(b->text);
	memset(b, 0, sizeof(*b));
}

static struct kiln_hprof_op *add_op(struct kiln_hprof_batch *b,
				    enum kiln_hprof_op_kind kind)
{
	struct kiln_hprof_op *o;

	if (KILN_GROW(b->op, b->op_alloc, b->nop + 1, 16))
		return NULL;
	o = &b->op[b->nop++];
	memset(o, 0, sizeof(*o));
	o->kind = kind;
	o->at = b->nev;
	return o;
}

int kiln_hprof_batch_stack(struct kiln_hprof_batch *b, uint32_t id,
			   const uint64_t *pcs, uint32_t depth)
{
	struct kiln_hprof_op *o;

	if (KILN_GROW(b->pcs, b->pcs_alloc, b->npcs + depth + 1, 256))
		return -ENOMEM;
	o = add_op(b, KILN_HPROF_OP_STACK);
	if (!o)
		return -ENOMEM;
	o->arg = id;
	o->off = b->npcs;
	o->len = depth;
	if (depth)
		memcpy(b->pcs + b->npcs, pcs, depth * sizeof(*pcs));
	b->npcs += depth;
	return 0;
}

int kiln_hprof_batch_maps(struct kiln_hprof_batch *b, const char *text,
			  size_t len)
{
	struct kiln_hprof_op *o;

	if (KILN_GROW(b->text, b->text_alloc, b->ntext + len + 1, 4096))
		return -ENOMEM;
	o = add_op(b, KILN_HPROF_OP_MAPS);
	if (!o)
		return -ENOMEM;
	o->off = b->ntext;
	o->len = len;
	memcpy(b->text + b->ntext, text, len);
	b->ntext += len;
	return 0;
}

int kiln_hprof_batch_lost(struct kiln_hprof_batch *b, uint64_t count)
{
	struct kiln_hprof_op *o = add_op(b, KILN_HPROF_OP_LOST);

	if (!o)
		return -ENOMEM;
	o->arg = count;
	return 0;
}

static int apply_op(struct kiln_hprof *h, const struct kiln_hprof_batch *b,
		    const struct kiln_hprof_op *o)
{
	switch (o->kind) {
	case KILN_HPROF_OP_STACK:
		return kiln_hprof_add_stack(h, (uint32_t)o->arg, b->pcs + o->off,
					    (uint32_t)o->len);
	case KILN_HPROF_OP_MAPS:
		return kiln_hprof_add_maps(h, b->text + o->off, o->len);
	case KILN_HPROF_OP_LOST:
		kiln_hprof_lost(h, o->arg);
		return 0;
	}
	return -EINVAL;
}

int kiln_hprof_apply(struct kiln_hprof *h, struct kiln_hprof_batch *b)
{
	size_t done = 0, i;
	int err = 0;

	for (i = 0; i < b->nop && !err; i++) {
		const struct kiln_hprof_op *o = &b->op[i];

		err = kiln_hprof_events(h, b->ev + done, o->at - done);
		done = o->at;
		if (!err)
			err = apply_op(h, b, o);
	}
	if (!err)
		err = kiln_hprof_events(h, b->ev + done, b->nev - done);
	b->nev = b->nop = b->npcs = b->ntext = 0;
	return err;
}
