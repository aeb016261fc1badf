/* SPDX-License-Identifier: Apache-2.0 */
/* Libraries loaded on first use: see lazylib.h. */
#include "util/lazylib.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "util/diag.h"

static int try_open(struct kiln_lazylib *l)
{
	void *h;
	size_t i;

	/* RTLD_LOCAL: nothing else resolves against it; the library's own
	 * plugins (graphviz's) name it as their dependency. */
	h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();

		snprintf(l->why, sizeof(l->why), "%s", e ? e : "not found");
		return -ENOENT;
	}
	for (i = 0; i < l->n; i++) {
		/* Searches the library and what it depends on (graphviz's
		 * ag* functions are libcgraph's, loaded by libgvc). */
		l->slots[i] = dlsym(h, l->names[i]);
		if (!l->slots[i]) {
			snprintf(l->why, sizeof(l->why), "it has no %s "
				 "(another version than kiln was built with?)",
				 l->names[i]);
			dlclose(h);
			return -ENOENT;
		}
	}
	return 0;
}

int kiln_lazylib_open(struct kiln_lazylib *l, struct kiln_diag *d)
{
	int st = __atomic_load_n(&l->state, __ATOMIC_ACQUIRE);

	if (!st) {
		pthread_mutex_lock(&l->lock);
		st = l->state;
		if (!st) {
			st = try_open(l) ? -ENOENT : 1;
			__atomic_store_n(&l->state, st, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&l->lock);
	}
	if (st > 0)
		return 0;
	kiln_diag(d, "cannot load %s (%s); install it: apt install %s",
		  l->soname, l->why, l->package);
	return -ENOENT;
}
