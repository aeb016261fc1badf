/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Flat and cumulative aggregation (profile stage).
 */
#include "profile/top.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"

struct row_key {
	const struct kiln_top_row *rows;
	uint32_t name, file;
	int64_t line;
	uint32_t location;
};

static bool row_eq(const void *ctx, uint32_t id)
{
	const struct row_key *k = ctx;
	const struct kiln_top_row *r = &k->rows[id - 1];

	return r->name == k->name && r->file == k->file && r->line == k->line &&
	       r->location == k->location;
}

/* The order of the rows: qsort_r's context, not a global (kiln serve
 * builds tables of several profiles at once, each in its thread). */
struct sorter {
	const struct kiln_prof *p;
	bool by_cum;
};

static int cmp_rows(const void *a, const void *b, void *ctx)
{
	const struct sorter *sort_ctx = ctx;
	const struct kiln_top_row *x = a, *y = b;
	int64_t xa = sort_ctx->by_cum ? x->cum : x->flat;
	int64_t ya = sort_ctx->by_cum ? y->cum : y->flat;
	int c;

	if (xa != ya)
		return xa > ya ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	c = strcmp(kiln_prof_str(sort_ctx->p, x->name),
		   kiln_prof_str(sort_ctx->p, y->name));
	if (c)
		return c;
	c = strcmp(kiln_prof_str(sort_ctx->p, x->file),
		   kiln_prof_str(sort_ctx->p, y->file));
	if (c)
		return c;
	if (x->line != y->line)
		return x->line < y->line ? -1 : 1;
	return x->address < y->address ? -1 : x->address > y->address;
}

/* The rows of each location's frames, found once (see kiln_top_build()). */
struct loc_rows {
	uint32_t *first;	/* by location id: index in ids, + 1 (0: not yet) */
	uint32_t *count;	/* by location id */
	uint32_t *ids;		/* row ids */
	size_t nids, ids_alloc;
};

/* The row of frame f (added when new); 0 when out of memory. */
static uint32_t row_of(struct kiln_top *t, struct kiln_prof *p,
		       struct kiln_htab *index, uint32_t **seen, size_t *alloc,
		       const struct kiln_frame *f, enum kiln_top_by by)
{
	struct row_key k = { t->rows, f->name, 0, 0, 0 };
	uint32_t hash, id;

	if (by == KILN_TOP_LINES) {
		k.file = f->function ? p->functions[f->function].filename : 0;
		k.line = f->line;
	} else if (by == KILN_TOP_ADDRESSES) {
		k.location = f->location;
	}
	hash = (uint32_t)kiln_hash(&k.name, sizeof(k.name) * 2) ^
	       (uint32_t)(k.line * 2654435761u) ^ (k.location * 40503u);
	id = kiln_htab_find(index, hash, row_eq, &k);
	if (id)
		return id;
	/* Rows and their seen marks side by side: one capacity. */
	if (t->n == *alloc) {
		size_t rows_cap = *alloc, seen_cap = *alloc;

		if (KILN_GROW(t->rows, rows_cap, t->n + 1, 256) ||
		    KILN_GROW(*seen, seen_cap, t->n + 1, 256))
			return 0;
		*alloc = rows_cap;
	}
	id = (uint32_t)++t->n;
	t->rows[id - 1] = (struct kiln_top_row){
		.name = k.name, .file = k.file, .line = k.line,
		.location = k.location,
		.address = k.location ? p->locations[k.location].address : 0,
	};
	(*seen)[id - 1] = 0;
	if (kiln_htab_insert(index, hash, id))
		return 0;
	return id;
}

/*
 * Every sample's value goes to the rows of its frames: flat to its leaf's,
 * cum to each row once.  A location's frames (and so its rows) are the
 * same in every sample: they are expanded and looked up once per location,
 * not once per sample (a perf.data's thousands of samples share a few
 * hundred locations).
 */
int kiln_top_build(struct kiln_top *t, struct kiln_prof *p, int type,
		   enum kiln_top_by by, bool by_cum)
{
	return kiln_top_build_w(t, p, type, by, by_cum, NULL);
}

int kiln_top_build_w(struct kiln_top *t, struct kiln_prof *p, int type,
		     enum kiln_top_by by, bool by_cum, const int64_t *w)
{
	struct kiln_htab index = KILN_HTAB_INIT;
	struct kiln_frame *frames = NULL;
	struct loc_rows lr = { 0 };
	uint32_t *seen = NULL;	/* row id -> last sample that counted it */
	size_t cap = 0, alloc = 0, i;
	int err = 0;

	t->rows = NULL;
	t->n = 0;
	t->total = 0;
	lr.first = calloc(p->nlocations + 1, sizeof(*lr.first));
	lr.count = calloc(p->nlocations + 1, sizeof(*lr.count));
	if (!lr.first || !lr.count) {
		err = -ENOMEM;
		goto out_free;
	}
	for (i = 0; i < p->nsamples; i++) {
		int64_t v = kiln_prof_weight(p, i, type, w);
		const struct kiln_sample *smp = &p->samples[i];
		bool leaf = true;
		uint32_t d;

		if (!v)
			continue;
		t->total += v;
		for (d = 0; d < smp->depth; d++) {
			uint32_t loc = p->stacks[smp->stack + d], c;

			if (loc > p->nlocations) {
				err = -EINVAL;
				goto out_free;
			}
			if (!lr.first[loc]) {
				struct kiln_sample one = { smp->stack + d, 1, 0 };
				long nf = kiln_prof_frames(p, &one, &frames, &cap);
				long j;

				if (nf < 0) {
					err = (int)nf;
					goto out_free;
				}
				if (kiln_array_grow((void **)&lr.ids, &lr.ids_alloc,
						    lr.nids + (size_t)nf,
						    sizeof(*lr.ids))) {
					err = -ENOMEM;
					goto out_free;
				}
				for (j = 0; j < nf; j++) {
					uint32_t id = row_of(t, p, &index, &seen,
							     &alloc, &frames[j],
							     by);

					if (!id) {
						err = -ENOMEM;
						goto out_free;
					}
					lr.ids[lr.nids + (size_t)j] = id;
				}
				lr.first[loc] = (uint32_t)lr.nids + 1;
				lr.count[loc] = (uint32_t)nf;
				lr.nids += (size_t)nf;
			}
			for (c = 0; c < lr.count[loc]; c++) {
				uint32_t id = lr.ids[lr.first[loc] - 1 + c];

				if (leaf)
					t->rows[id - 1].flat += v;
				leaf = false;
				/* Recursion: count a sample once per row. */
				if (seen[id - 1] != i + 1) {
					seen[id - 1] = (uint32_t)(i + 1);
					t->rows[id - 1].cum += v;
				}
			}
		}
	}
	if (t->n) {
		struct sorter sort_ctx = { p, by_cum };

		qsort_r(t->rows, t->n, sizeof(*t->rows), cmp_rows, &sort_ctx);
	}
out_free:
	if (err)
		kiln_top_release(t);
	kiln_htab_release(&index);
	free(frames);
	free(seen);
	free(lr.first);
	free(lr.count);
	free(lr.ids);
	return err;
}

void kiln_top_release(struct kiln_top *t)
{
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
	t->total = 0;
}

static void scaled(char *buf, size_t n, double v, const char *suffix)
{
	double a = v < 0 ? -v : v;

	if (a >= 100 || a == (int64_t)a)
		snprintf(buf, n, "%.0f%s", v, suffix);
	else if (a >= 10)
		snprintf(buf, n, "%.1f%s", v, suffix);
	else
		snprintf(buf, n, "%.2f%s", v, suffix);
}

void kiln_value_str(int64_t v, const char *unit, char *buf, size_t n)
{
	double a = (double)(v < 0 ? -v : v);

	if (!strcmp(unit, "nanoseconds")) {
		if (a >= 1e9)
			scaled(buf, n, (double)v / 1e9, "s");
		else if (a >= 1e6)
			scaled(buf, n, (double)v / 1e6, "ms");
		else if (a >= 1e3)
			scaled(buf, n, (double)v / 1e3, "us");
		else
			snprintf(buf, n, "%" PRId64 "ns", v);
	} else if (!strcmp(unit, "bytes")) {
		if (a >= 1024.0 * 1024 * 1024)
			scaled(buf, n, (double)v / (1024.0 * 1024 * 1024), "GB");
		else if (a >= 1024.0 * 1024)
			scaled(buf, n, (double)v / (1024.0 * 1024), "MB");
		else if (a >= 1024.0)
			scaled(buf, n, (double)v / 1024.0, "kB");
		else
			snprintf(buf, n, "%" PRId64 "B", v);
	} else {
		snprintf(buf, n, "%" PRId64, v);
	}
}
