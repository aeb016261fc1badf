/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CFI unwinder's internals (unwind stage), shared by its three files
 * and by nothing else (tests/unit/test-cfi.c aside):
 *  - cfi-parse.c: .eh_frame and .eh_frame_hdr read from module memory,
 *    CFA programs run into rows (a normal thread, allocation allowed);
 *  - cfi.c: the table sets: modules scanned with dl_iterate_phdr, sets
 *    published and reclaimed, the public setup and refresh functions;
 *  - cfi-walk.c: the walk over the published tables, async-signal-safe
 *    (it runs in the SIGPROF handler and the malloc hooks), a file that
 *    holds nothing else.
 * The walker reads these structures only once they are published (and
 * sets a lazy module's atomic want bits); see cfi.h and
 * docs/unwinding.md.
 */
#ifndef KILN_CAPTURE_CFIINT_H
#define KILN_CAPTURE_CFIINT_H

#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "unwind/cfi.h"

#if defined(__x86_64__)
#define CFI_DWARF 1	/* tables are built and used */
#else
#define CFI_DWARF 0	/* checked frame pointers only */
#endif

/* One row: the rule from pc (offset from the module's load bias) on. */
struct cfi_row {
	uint32_t pc;
	int32_t cfa_off;
	int16_t ra_off;
	int16_t fp_off;		/* 0: rbp unchanged; FP_LOST: unknown */
	uint8_t kind;		/* enum kiln_cfi_kind */
	uint8_t cfa_reg;
	uint8_t plt_at;
	uint8_t pad;
};
#define FP_LOST INT16_MIN
#define BUCKET_SHIFT 10		/* 1 KiB of code per index entry */

/* A loaded object; shared by the sets that contain it (refs). */
struct cfi_mod {
	uint64_t bias;
	const void *phdr;
	int phnum;
	char *name;
	struct cfi_row *rows;
	size_t nrows;
	/*
	 * index[b]: the first row with pc >= rows[0].pc + b * BUCKET, for b
	 * in [0, nindex]; narrows the binary search to one bucket.
	 */
	uint32_t *index;
	size_t nindex;
	size_t fdes_skipped;
	int refs;		/* sets holding it; changed under c->lock */
	/*
	 * Lazy tables (kiln_cfi_set_lazy()), for a module whose
	 * .eh_frame_hdr has a search table: the table is copied (fdes, by
	 * pc), and the rows of its i-th FDE are built only once a handler
	 * needed them: it finds fde_rows[i] NULL, sets bit i of fde_want and
	 * `wanted`, and walks that frame by frame pointers; the next refresh
	 * builds the wanted FDEs in place (or, with build_now, the cached
	 * unwinder at once; published with a release store, freed with the
	 * module).  Without a search table the whole module
	 * is `pending`: the next refresh after a want builds all of it into
	 * a new module object.
	 */
	struct cfi_fde *fdes;
	size_t nfde;
	_Atomic(struct fde_rows *) *fde_rows;
	_Atomic uint64_t *fde_want;
	size_t fdes_built, fde_nrows;	/* under c->fde_lock */
	bool pending;
	_Atomic bool wanted;
};

/* An entry of a copied .eh_frame_hdr search table. */
struct cfi_fde {
	uint32_t pc;			/* its first pc, from the bias */
	int32_t at;			/* the FDE, from .eh_frame_hdr */
};

/* The rows of one FDE, the last one its end (KILN_CFI_NONE). */
struct fde_rows {
	uint32_t n;
	struct cfi_row rows[];
};

/* An executable PT_LOAD segment [lo, hi) of mod. */
struct cfi_range {
	uint64_t lo, hi;
	const struct cfi_mod *mod;
};

/* An immutable table set, as the handler sees it. */
struct cfi_set {
	struct cfi_range *ranges;	/* sorted by lo, disjoint */
	size_t nranges;
	struct cfi_mod **mods;
	size_t nmods;
	struct cfi_set *next;		/* c->retired list */
	uint64_t gen;			/* c->generation when published */
	const struct kiln_cfi *c;	/* its owner (outlives it) */
};

/*
 * Handlers inside the unwinder, counted in stripes picked by thread so
 * that threads unwinding at once (malloc hooks on every allocation) do
 * not fight over one cache line; reclaim() reads them all.
 */
#define INSIDE_STRIPES 16
struct inside {
	_Alignas(64) atomic_long n;
};

struct kiln_cfi {
	_Atomic(struct cfi_set *) cur;
	struct inside inside[INSIDE_STRIPES];
	pthread_mutex_t lock;		/* serializes refresh, stats, free */
	struct cfi_set *retired;	/* replaced, not yet freed */
	size_t nretired;
	unsigned long long adds, subs;	/* dl_iterate_phdr counters seen */
	bool scanned;
	bool lazy;			/* build a module's rows when needed */
	bool build_now;			/* ... by the cached unwinder itself */
	void (*wake)(void *);		/* a lazy module was first wanted */
	uint64_t skip_lo, skip_hi;	/* return addresses never stored */
	void *wake_arg;
	uint64_t generation;
	/* Serializes building lazy modules' FDEs (taken inside
	 * dl_iterate_phdr, never around it: after the loader lock). */
	pthread_mutex_t fde_lock;
	/* FDEs of the lazy modules built whole so far (cfi-parse.c
	 * WHOLE_BUDGET), under fde_lock. */
	size_t whole_fdes;
};

/* Whether m is the object info describes: the same bias, program
 * headers and name (another object may reuse an unloaded one's address). */
static inline bool same_object(const struct cfi_mod *m,
			       const struct dl_phdr_info *info)
{
	return m->bias == info->dlpi_addr && m->phdr == info->dlpi_phdr &&
	       m->phnum == info->dlpi_phnum &&
	       !strcmp(m->name, info->dlpi_name ? info->dlpi_name : "");
}

/*
 * Shared between the three files, hidden: not part of libkiln.so's or
 * kiln_core's interface.
 */
#pragma GCC visibility push(hidden)

/* ---- cfi-parse.c: normal context, allocation allowed ---- */

/* fde_rows[i] of an FDE built without usable rows. */
extern struct fde_rows kcfi_fde_none;

/*
 * Builds the rows of a loaded object from its PT_GNU_EH_FRAME segment.
 * Runs inside dl_iterate_phdr, so the object stays mapped.  An object
 * without (usable) .eh_frame_hdr simply gets no rows.  false: no memory.
 */
bool kcfi_parse_module(const struct dl_phdr_info *info, struct cfi_mod *mod);

/*
 * Sets up a lazy module: its search table copied (the handler may not
 * read module memory), no rows yet; without a table the whole module
 * waits (pending).  false: no memory.
 */
bool kcfi_lazy_module(const struct dl_phdr_info *info, struct cfi_mod *mod);

/* Builds the FDEs handlers asked for in lazy module m (c->lock held,
 * inside dl_iterate_phdr with m's object as info). */
void kcfi_build_wanted(struct kiln_cfi *c, const struct dl_phdr_info *info,
		       struct cfi_mod *m);

/*
 * Builds lazy module m's FDE i on the spot (kiln_cfi_set_build_now();
 * called by the cached unwinder of cfi-walk.c, never in a signal handler:
 * it takes the loader lock and allocates).
 */
void kcfi_build_now(const struct cfi_set *set, const struct cfi_mod *m,
		    size_t i);

#pragma GCC visibility pop

#endif
