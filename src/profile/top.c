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
#include "util/htab.h"

struct row_key {
	const struct kiln_top_row *rows;
	uint32_t name, file;
	int64_t line;
};

static bool row_eq(const void *ctx, uint32_t id)
{
	const struct row_key *k = ctx;
	const struct kiln_top_row *r = &k->rows[id - 1];

	return r->name == k->name && r->file == k->file && r->line == k->line;
}

struct sorter {
	const struct kiln_prof *p;
	bool by_cum;
};

static struct sorter sort_ctx;

static int cmp_rows(const void *a, const void *b)
{
	const struct kiln_top_row *x = a, *y = b;
	int64_t xa = sort_ctx.by_cum ? x->cum : x->flat;
	int64_t ya = sort_ctx.by_cum ? y->cum : y->flat;
	int c;

	if (xa != ya)
		return xa > ya ? -1 : 1;
	if (x->cum != y->cum)
		return x->cum > y->cum ? -1 : 1;
	if (x->flat != y->flat)
		return x->flat > y->flat ? -1 : 1;
	c = strcmp(kiln_prof_str(sort_ctx.p, x->name),
		   kiln_prof_str(sort_ctx.p, y->name));
	if (c)
		return c;
	c = strcmp(kiln_prof_str(sort_ctx.p, x->file),
		   kiln_prof_str(sort_ctx.p, y->file));
	if (c)
		return c;
	return x->line < y->line ? -1 : x->line > y->line;
}

int kiln_top_build(struct kiln_top *t, struct kiln_prof *p, int type,
		   bool by_line, bool by_cum)
{
	struct kiln_htab index = KILN_HTAB_INIT;
	struct kiln_frame *frames = NULL;
	uint32_t *seen = NULL;	/* row id -> last sample that counted it */
	size_t cap = 0, alloc = 0, i;
	int err = 0;

	t->rows = NULL;
	t->n = 0;
	t->total = 0;
	for (i = 0; i < p->nsamples; i++) {
		int64_t v = kiln_prof_value(p, i, (size_t)type);
		long nf, j;

		if (!v)
			continue;
		t->total += v;
		nf = kiln_prof_frames(p, &p->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			goto out_free;
		}
		for (j = 0; j < nf; j++) {
			const struct kiln_frame *f = &frames[j];
			struct row_key k = { t->rows, f->name, 0, 0 };
			uint32_t hash, id;

			if (by_line) {
				k.file = f->function ?
					p->functions[f->function].filename : 0;
				k.line = f->line;
			}
			hash = (uint32_t)kiln_hash(&k.name, sizeof(k.name) * 2) ^
			       (uint32_t)(k.line * 2654435761u);
			id = kiln_htab_find(&index, hash, row_eq, &k);
			if (!id) {
				if (t->n == alloc) {
					size_t na = alloc ? alloc * 2 : 256;
					struct kiln_top_row *r;
					uint32_t *s;

					r = realloc(t->rows, na * sizeof(*r));
					if (!r) {
						err = -ENOMEM;
						goto out_free;
					}
					t->rows = r;
					s = realloc(seen, na * sizeof(*s));
					if (!s) {
						err = -ENOMEM;
						goto out_free;
					}
					seen = s;
					alloc = na;
				}
				id = (uint32_t)++t->n;
				t->rows[id - 1] = (struct kiln_top_row){
					k.name, k.file, k.line, 0, 0 };
				seen[id - 1] = 0;
				if (kiln_htab_insert(&index, hash, id)) {
					err = -ENOMEM;
					goto out_free;
				}
			}
			if (j == 0)
				t->rows[id - 1].flat += v;
			/* Recursion: count a sample once per row. */
			if (seen[id - 1] != i + 1) {
				seen[id - 1] = (uint32_t)(i + 1);
				t->rows[id - 1].cum += v;
			}
		}
	}
	sort_ctx.p = p;
	sort_ctx.by_cum = by_cum;
	if (t->n)
		qsort(t->rows, t->n, sizeof(*t->rows), cmp_rows);
out_free:
	if (err)
		kiln_top_release(t);
	kiln_htab_release(&index);
	free(frames);
	free(seen);
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
