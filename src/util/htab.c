/* SPDX-License-Identifier: Apache-2.0 */
/* Open-addressing hash index (util stage). */
#include "util/htab.h"

#include <errno.h>
#include <stdlib.h>

void kiln_htab_init(struct kiln_htab *h)
{
	h->slots = NULL;
	h->mask = 0;
	h->count = 0;
}

void kiln_htab_release(struct kiln_htab *h)
{
	free(h->slots);
	kiln_htab_init(h);
}

static void put(struct kiln_htab_slot *slots, size_t mask, uint32_t hash,
		uint32_t id)
{
	size_t i = hash & mask;

	while (slots[i].id)
		i = (i + 1) & mask;
	slots[i].hash = hash;
	slots[i].id = id;
}

int kiln_htab_insert(struct kiln_htab *h, uint32_t hash, uint32_t id)
{
	/* Keep the load under 1/2: probes stay short for the hot lookups. */
	if (!h->slots || (h->count + 1) * 2 > h->mask + 1) {
		size_t cap = h->slots ? (h->mask + 1) * 2 : 64;
		struct kiln_htab_slot *slots = calloc(cap, sizeof(*slots));
		size_t i;

		if (!slots)
			return -ENOMEM;
		for (i = 0; h->slots && i <= h->mask; i++)
			if (h->slots[i].id)
				put(slots, cap - 1, h->slots[i].hash,
				    h->slots[i].id);
		free(h->slots);
		h->slots = slots;
		h->mask = cap - 1;
	}
	put(h->slots, h->mask, hash, id);
	h->count++;
	return 0;
}
