/* SPDX-License-Identifier: Apache-2.0 */
/*
 * In-process stack unwinding for the SIGPROF handler (unwind stage): see
 * cfi.h and docs/unwinding.md.
 *
 * Two halves that share only immutable, published memory (cfiint.h):
 *  - kiln_cfi_refresh() (a normal thread, allocation allowed; this file,
 *    the table sets): walks the loaded objects with dl_iterate_phdr and,
 *    for each new one, has cfi-parse.c read its .eh_frame_hdr / .eh_frame
 *    from memory while the loader lock keeps it mapped, run every FDE's
 *    CFA program and keep one 16-byte row per change of rule, sorted by pc
 *    (lazy tables: only the FDEs unwinds asked for, built in place).  A
 *    table set (modules, executable ranges) is published with an atomic
 *    pointer swap; the set it replaces is freed once the count of
 *    handlers inside the unwinder is seen at 0 (seq_cst; the argument is
 *    in docs/unwinding.md).
 *  - kiln_cfi_unwind() (the signal handler; cfi-walk.c, alone in its
 *    file): binary searches the ranges and the rows, and reads the stack
 *    only 8-byte aligned inside the bounds it was given.  No module memory
 *    is ever read there (lazy modules' FDE tables are copies), so a
 *    library unloaded meanwhile cannot fault it.
 */
#include "unwind/cfiint.h"
#include "util/buf.h"

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static void mod_put(struct cfi_mod *m)
{
	if (m && --m->refs == 0) {
		for (size_t i = 0; m->fde_rows && i < m->nfde; i++) {
			struct fde_rows *fr = atomic_load(&m->fde_rows[i]);

			if (fr != &kcfi_fde_none)
				free(fr);
		}
		free(m->fdes);
		free(m->fde_rows);
		free(m->fde_want);
		free(m->rows);
		free(m->index);
		free(m->name);
		free(m);
	}
}

static void set_free(struct cfi_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nmods; i++)
		mod_put(s->mods[i]);
	free(s->mods);
	free(s->ranges);
	free(s);
}

/* Frees the replaced sets if no handler is inside the unwinder now. */
static void reclaim(struct kiln_cfi *c)
{
	/*
	 * seq_cst pairs with the handler's increment-then-load: a handler
	 * that still reads a retired set incremented its stripe of `inside`
	 * before our swap, so we cannot read 0 there until it has left; one
	 * that increments after we read its stripe loads the new set.
	 */
	int i;

	if (!c->retired)
		return;
	for (i = 0; i < INSIDE_STRIPES; i++)
		if (atomic_load(&c->inside[i].n) != 0)
			return;
	while (c->retired) {
		struct cfi_set *s = c->retired;

		c->retired = s->next;
		set_free(s);
	}
	c->nretired = 0;
}

struct scan {
	struct kiln_cfi *c;
	const struct cfi_set *old;
	struct cfi_set *set;
	size_t cap_mods, cap_ranges;
	bool unchanged, nomem;
	bool force;		/* wanted modules: scan even if nothing moved */
};

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scan *sc = arg;
	struct cfi_set *set = sc->set;
	struct cfi_mod *mod = NULL;
	bool wanted = false;	/* a lazy module a handler needed */
	bool lazy;
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	bool counters = size >= offsetof(struct dl_phdr_info, dlpi_subs) +
				sizeof(info->dlpi_subs);

	if (counters && !set->nmods && sc->c->scanned && !sc->force &&
	    info->dlpi_adds == sc->c->adds && info->dlpi_subs == sc->c->subs) {
		sc->unchanged = true;
		return 1;
	}
	if (counters && !set->nmods) {
		sc->c->adds = info->dlpi_adds;
		sc->c->subs = info->dlpi_subs;
	}
	/* Same object as before: the same bias, headers and name. */
	for (size_t i = 0; sc->old && i < sc->old->nmods; i++) {
		struct cfi_mod *m = sc->old->mods[i];

		if (same_object(m, info)) {
			/* A lazy module a handler needed: built anew below. */
			wanted = m->pending && atomic_load(&m->wanted);
			if (!wanted)
				mod = m;
			break;
		}
	}
	if (KILN_GROW(set->mods, sc->cap_mods, set->nmods + 1, 32))
		goto nomem;
	if (mod) {
		mod->refs++;
	} else {
		mod = calloc(1, sizeof(*mod));
		if (!mod)
			goto nomem;
		mod->bias = info->dlpi_addr;
		mod->phdr = info->dlpi_phdr;
		mod->phnum = info->dlpi_phnum;
		mod->refs = 1;
		mod->name = strdup(name);
		/* Lazy: rows only for a module a handler asked for, and for
		 * the program itself (the first object), where most samples
		 * land from the start. */
		lazy = CFI_DWARF && sc->c->lazy && set->nmods > 0 && !wanted;
		if (!mod->name ||
		    (lazy && !kcfi_lazy_module(info, mod)) ||
		    (CFI_DWARF && !lazy && !kcfi_parse_module(info, mod))) {
			mod_put(mod);
			goto nomem;
		}
	}
	set->mods[set->nmods++] = mod;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X) || !ph->p_memsz)
			continue;
		if (KILN_GROW(set->ranges, sc->cap_ranges, set->nranges + 1, 32))
			goto nomem;
		set->ranges[set->nranges++] = (struct cfi_range){
			.lo = info->dlpi_addr + ph->p_vaddr,
			.hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz,
			.mod = mod,
		};
	}
	return 0;
nomem:
	sc->nomem = true;
	return 1;
}

static int range_cmp(const void *a, const void *b)
{
	const struct cfi_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

struct kiln_cfi *kiln_cfi_new(void)
{
	struct kiln_cfi *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	atomic_init(&c->cur, NULL);
	for (int i = 0; i < INSIDE_STRIPES; i++)
		atomic_init(&c->inside[i].n, 0);
	pthread_mutex_init(&c->lock, NULL);
	pthread_mutex_init(&c->fde_lock, NULL);
	return c;
}

void kiln_cfi_free(struct kiln_cfi *c)
{
	if (!c)
		return;
	set_free(atomic_exchange(&c->cur, NULL));
	while (c->retired) {
		struct cfi_set *s = c->retired;

		c->retired = s->next;
		set_free(s);
	}
	pthread_mutex_destroy(&c->lock);
	pthread_mutex_destroy(&c->fde_lock);
	free(c);
}

/* Whether a handler asked for the rows of a whole pending module
 * (fdes: or for some FDEs of a lazy one). */
static bool wanted_any(const struct cfi_set *s, bool fdes)
{
	for (size_t i = 0; s && i < s->nmods; i++)
		if ((s->mods[i]->pending || (fdes && s->mods[i]->fde_rows)) &&
		    atomic_load(&s->mods[i]->wanted))
			return true;
	return false;
}

/* dl_iterate_phdr callback: builds the wanted FDEs of the modules of the
 * set given that are still loaded (the loader lock keeps them so). */
static int build_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct cfi_set *set = arg;
	struct kiln_cfi *c = (struct kiln_cfi *)set->c;

	(void)size;
	for (size_t i = 0; i < set->nmods; i++) {
		struct cfi_mod *m = set->mods[i];

		if (m->fde_rows && same_object(m, info) &&
		    atomic_exchange(&m->wanted, false)) {
			kcfi_build_wanted(c, info, m);
			break;
		}
	}
	return 0;
}

void kiln_cfi_set_lazy(struct kiln_cfi *c, bool lazy, void (*wake)(void *),
		       void *arg)
{
	pthread_mutex_lock(&c->lock);
	c->lazy = lazy;
	c->wake = wake;
	c->wake_arg = arg;
	pthread_mutex_unlock(&c->lock);
}

void kiln_cfi_fork_child(struct kiln_cfi *c)
{
	/* A thread of the parent may have been building an FDE: it is not
	 * in the child, and its FDE, never published, is built again. */
	pthread_mutex_init(&c->fde_lock, NULL);
}

void kiln_cfi_set_skip(struct kiln_cfi *c, uint64_t lo, uint64_t hi)
{
	c->skip_lo = lo;
	c->skip_hi = hi;
}

void kiln_cfi_set_build_now(struct kiln_cfi *c, bool now)
{
	pthread_mutex_lock(&c->lock);
	c->build_now = now;
	pthread_mutex_unlock(&c->lock);
}

bool kiln_cfi_wanted(struct kiln_cfi *c)
{
	bool w;

	pthread_mutex_lock(&c->lock);
	w = wanted_any(atomic_load(&c->cur), true);
	pthread_mutex_unlock(&c->lock);
	return w;
}

int kiln_cfi_refresh(struct kiln_cfi *c)
{
	struct scan sc = { .c = c };
	unsigned long long adds, subs;
	struct cfi_set *old;
	int err = 0;

	pthread_mutex_lock(&c->lock);
	reclaim(c);
	sc.old = atomic_load(&c->cur);
	/* FDEs handlers asked for: built in place, no new set. */
	if (wanted_any(sc.old, true))
		dl_iterate_phdr(build_one, (void *)sc.old);
	sc.set = calloc(1, sizeof(*sc.set));
	if (!sc.set) {
		err = -ENOMEM;
		goto out_unlock;
	}
	adds = c->adds;
	subs = c->subs;
	sc.force = wanted_any(sc.old, false);
	dl_iterate_phdr(scan_one, &sc);
	if (sc.unchanged) {
		set_free(sc.set);
		goto out_unlock;
	}
	if (sc.nomem) {
		/* Scan again next time: the counters were not honoured. */
		c->adds = adds;
		c->subs = subs;
		set_free(sc.set);
		err = -ENOMEM;
		goto out_unlock;
	}
	if (sc.set->nranges)
		qsort(sc.set->ranges, sc.set->nranges, sizeof(*sc.set->ranges),
		      range_cmp);
	c->scanned = true;
	/* Before the set is published: kiln_cfi_chain_find() reads it. */
	sc.set->gen = __atomic_add_fetch(&c->generation, 1, __ATOMIC_SEQ_CST);
	sc.set->c = c;
	old = atomic_exchange(&c->cur, sc.set);
	if (old) {
		old->next = c->retired;
		c->retired = old;
		c->nretired++;
	}
	reclaim(c);
out_unlock:
	pthread_mutex_unlock(&c->lock);
	return err;
}

void kiln_cfi_stats(struct kiln_cfi *c, struct kiln_cfi_stats *st)
{
	const struct cfi_set *s;

	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&c->lock);
	pthread_mutex_lock(&c->fde_lock);
	s = atomic_load(&c->cur);
	if (s) {
		st->modules = s->nmods;
		st->bytes = sizeof(*s) + s->nmods * sizeof(*s->mods) +
			    s->nranges * sizeof(*s->ranges);
		for (size_t i = 0; i < s->nmods; i++) {
			const struct cfi_mod *m = s->mods[i];

			st->rows += m->nrows + m->fde_nrows;
			st->modules_cfi += m->nrows + m->fde_nrows > 0;
			st->fdes_skipped += m->fdes_skipped;
			st->fdes_built += m->fdes_built;
			st->bytes += sizeof(*m) +
				     m->nrows * sizeof(struct cfi_row) +
				     m->nindex * sizeof(uint32_t) +
				     m->nfde * (sizeof(*m->fdes) +
						sizeof(*m->fde_rows)) +
				     m->fdes_built * sizeof(struct fde_rows) +
				     m->fde_nrows * sizeof(struct cfi_row);
		}
	}
	st->generation = c->generation;
	st->retired = c->nretired;
	pthread_mutex_unlock(&c->fde_lock);
	pthread_mutex_unlock(&c->lock);
}
