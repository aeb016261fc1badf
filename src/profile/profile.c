/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The profile model (profile stage): interning tables and samples.
 * See profile.h for the rules on ids and ownership.
 */
#include "profile/profile.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/diag.h"
#include "util/buf.h"

/* Grows an array so that index `need - 1` fits; sets p->err on failure
 * (sticky: after a failed kiln_array_grow_from(), nothing more is tried). */
static bool grow(struct kiln_prof *p, void *arrp, size_t *alloc, size_t need,
		 size_t size)
{
	if (need <= *alloc)
		return true;
	if (p->err)
		return false;
	if (kiln_array_grow_from((void **)arrp, alloc, need, size, 16)) {
		p->err = -ENOMEM;
		return false;
	}
	return true;
}

#define GROW(p, arr, alloc, need) \
	grow((p), &(arr), &(alloc), (need), sizeof(*(arr)))

static bool index_add(struct kiln_prof *p, struct kiln_htab *h, uint32_t hash,
		      uint32_t id)
{
	if (kiln_htab_insert(h, hash, id)) {
		p->err = -ENOMEM;
		return false;
	}
	return true;
}

struct kiln_prof *kiln_prof_new(void)
{
	struct kiln_prof *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	/* Element 0 of each id-indexed table exists and is unused. */
	GROW(p, p->functions, p->functions_alloc, 1);
	GROW(p, p->mappings, p->mappings_alloc, 1);
	GROW(p, p->locations, p->locations_alloc, 1);
	GROW(p, p->labelsets, p->labelsets_alloc, 1);
	if (p->err) {
		kiln_prof_free(p);
		errno = ENOMEM;
		return NULL;
	}
	memset(&p->functions[0], 0, sizeof(p->functions[0]));
	memset(&p->mappings[0], 0, sizeof(p->mappings[0]));
	memset(&p->locations[0], 0, sizeof(p->locations[0]));
	memset(&p->labelsets[0], 0, sizeof(p->labelsets[0]));
	/* String 0 is "". */
	kiln_prof_intern(p, "x", 0);
	if (p->err) {
		kiln_prof_free(p);
		errno = ENOMEM;
		return NULL;
	}
	return p;
}

void kiln_prof_free(struct kiln_prof *p)
{
	if (!p)
		return;
	free(p->str_data);
	free(p->strs);
	free(p->functions);
	free(p->mappings);
	free(p->locations);
	free(p->lines);
	free(p->labelsets);
	free(p->labels);
	free(p->types);
	free(p->mag);
	free(p->samples);
	free(p->values);
	free(p->stacks);
	free(p->events);
	free(p->ev_values);
	free(p->ev_last);
	free(p->comments);
	free(p->mem_t);
	free(p->mem_bytes);
	kiln_htab_release(&p->str_index);
	kiln_htab_release(&p->func_index);
	kiln_htab_release(&p->map_index);
	kiln_htab_release(&p->loc_index);
	kiln_htab_release(&p->lset_index);
	kiln_htab_release(&p->sample_index);
	free(p);
}

void kiln_prof_swap(struct kiln_prof *a, struct kiln_prof *b)
{
	struct kiln_prof t = *a;

	*a = *b;
	*b = t;
}

/* ---- strings ---- */

struct str_key {
	const struct kiln_prof *p;
	const char *s;
	size_t len;
};

static bool str_eq(const void *ctx, uint32_t id)
{
	const struct str_key *k = ctx;
	const struct kiln_str *e = &k->p->strs[id - 1];

	return e->len == k->len && !memcmp(k->p->str_data + e->off, k->s, k->len);
}

uint32_t kiln_prof_find_str(const struct kiln_prof *p, const char *s,
			    size_t len)
{
	struct str_key k = { p, s, len };
	uint32_t id;

	if (!len)
		return 0;
	id = kiln_htab_find(&p->str_index, (uint32_t)kiln_hash(s, len),
			    str_eq, &k);
	return id ? id - 1 : 0;
}

const struct kiln_label *kiln_prof_label(const struct kiln_prof *p,
					 uint32_t lset, uint32_t key)
{
	uint32_t i;

	if (!lset || !key)
		return NULL;
	for (i = 0; i < p->labelsets[lset].n; i++) {
		const struct kiln_label *l = &p->labels[p->labelsets[lset].first + i];

		if (l->key == key)
			return l;
	}
	return NULL;
}

uint32_t kiln_prof_intern(struct kiln_prof *p, const char *s, size_t len)
{
	struct str_key k = { p, s, len };
	uint32_t hash, id;

	if (p->nstrs && !len)
		return 0;
	if (len > UINT32_MAX / 4 || p->str_used + len + 1 > UINT32_MAX) {
		p->err = -ENOMEM;
		return 0;
	}
	hash = (uint32_t)kiln_hash(s, len);
	id = kiln_htab_find(&p->str_index, hash, str_eq, &k);
	if (id)
		return id - 1;
	/* s may point into the pool itself, which may move as it grows. */
	if ((uintptr_t)s - (uintptr_t)p->str_data < p->str_cap) {
		size_t off = (uintptr_t)s - (uintptr_t)p->str_data;

		if (!GROW(p, p->str_data, p->str_cap, p->str_used + len + 1))
			return 0;
		s = p->str_data + off;
	}
	if (!GROW(p, p->str_data, p->str_cap, p->str_used + len + 1) ||
	    !GROW(p, p->strs, p->strs_alloc, p->nstrs + 1))
		return 0;
	memcpy(p->str_data + p->str_used, s, len);
	p->str_data[p->str_used + len] = '\0';
	p->strs[p->nstrs].off = (uint32_t)p->str_used;
	p->strs[p->nstrs].len = (uint32_t)len;
	p->str_used += len + 1;
	if (!index_add(p, &p->str_index, hash, (uint32_t)p->nstrs + 1))
		return 0;
	return (uint32_t)p->nstrs++;
}

uint32_t kiln_prof_interns(struct kiln_prof *p, const char *s)
{
	return kiln_prof_intern(p, s ? s : "", s ? strlen(s) : 0);
}

/* ---- functions, mappings ---- */

struct rec_key {
	const struct kiln_prof *p;
	const void *rec;
};

static bool func_eq(const void *ctx, uint32_t id)
{
	const struct rec_key *k = ctx;
	const struct kiln_function *a = &k->p->functions[id], *b = k->rec;

	return a->name == b->name && a->system_name == b->system_name &&
	       a->filename == b->filename && a->start_line == b->start_line;
}

uint32_t kiln_prof_function(struct kiln_prof *p, uint32_t name,
			    uint32_t system_name, uint32_t filename,
			    int64_t start_line)
{
	struct kiln_function f = { name, system_name, filename, start_line };
	struct rec_key k = { p, &f };
	uint32_t hash, id;
	uint64_t key[3] = { name | (uint64_t)system_name << 32, filename,
			    (uint64_t)start_line };

	hash = (uint32_t)kiln_hash(key, sizeof(key));
	id = kiln_htab_find(&p->func_index, hash, func_eq, &k);
	if (id)
		return id;
	if (!GROW(p, p->functions, p->functions_alloc, p->nfunctions + 2))
		return 0;
	id = (uint32_t)++p->nfunctions;
	p->functions[id] = f;
	if (!index_add(p, &p->func_index, hash, id)) {
		p->nfunctions--;
		return 0;
	}
	return id;
}

static bool map_eq(const void *ctx, uint32_t id)
{
	const struct rec_key *k = ctx;
	const struct kiln_mapping *a = &k->p->mappings[id], *b = k->rec;

	return a->start == b->start && a->limit == b->limit &&
	       a->offset == b->offset && a->file == b->file &&
	       a->build_id == b->build_id;
}

/* The kind of code a mapped file holds, by its name. */
static enum kiln_kind file_kind(const char *file)
{
	if (file[0] == '[') {
		if (!strncmp(file, "[kernel", 7) || !strcmp(file, "[vdso]") ||
		    !strcmp(file, "[vsyscall]"))
			return KILN_KIND_KERNEL;
		return KILN_KIND_OTHER;
	}
	if (strstr(file, ".ko") && strstr(file, "/lib/modules/"))
		return KILN_KIND_KERNEL;
	if (strstr(file, ".so"))
		return KILN_KIND_LIB;
	if (!strncmp(file, "/tmp/perf-", 10) || !strncmp(file, "//anon", 6) ||
	    !strncmp(file, "/memfd:", 7))
		return KILN_KIND_OTHER;
	return KILN_KIND_USER;
}

uint32_t kiln_prof_mapping(struct kiln_prof *p, const struct kiln_mapping *m)
{
	struct rec_key k = { p, m };
	uint64_t key[4] = { m->start, m->limit, m->offset,
			    m->file | (uint64_t)m->build_id << 32 };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key)), id;

	id = kiln_htab_find(&p->map_index, hash, map_eq, &k);
	if (id)
		return id;
	if (!GROW(p, p->mappings, p->mappings_alloc, p->nmappings + 2))
		return 0;
	id = (uint32_t)++p->nmappings;
	p->mappings[id] = *m;
	p->mappings[id].kind = m->file ? (uint8_t)file_kind(kiln_prof_str(p, m->file))
				       : KILN_KIND_OTHER;
	if (!index_add(p, &p->map_index, hash, id)) {
		p->nmappings--;
		return 0;
	}
	return id;
}

/* ---- locations ---- */

struct loc_key {
	const struct kiln_prof *p;
	uint32_t mapping;
	uint64_t address;
	const struct kiln_line *lines;
	uint32_t n;
};

static bool loc_eq(const void *ctx, uint32_t id)
{
	const struct loc_key *k = ctx;
	const struct kiln_location *l = &k->p->locations[id];
	uint32_t i;

	if (l->mapping != k->mapping || l->address != k->address ||
	    l->nlines != k->n)
		return false;
	for (i = 0; i < k->n; i++) {
		const struct kiln_line *a = &k->p->lines[l->line0 + i];

		if (a->function != k->lines[i].function ||
		    a->line != k->lines[i].line)
			return false;
	}
	return true;
}

static uint32_t loc_hash(uint32_t mapping, uint64_t address,
			 const struct kiln_line *lines, uint32_t n)
{
	uint64_t h = kiln_hash(&address, sizeof(address)) ^ mapping;
	uint32_t i;

	for (i = 0; i < n; i++) {
		uint64_t v[2] = { lines[i].function, (uint64_t)lines[i].line };

		h = kiln_hash_seed(v, sizeof(v), h);
	}
	return (uint32_t)h;
}

uint32_t kiln_prof_location(struct kiln_prof *p, uint32_t mapping,
			    uint64_t address, const struct kiln_line *lines,
			    uint32_t n)
{
	struct loc_key k = { p, mapping, address, lines, n };
	uint32_t hash = loc_hash(mapping, address, lines, n), id;
	struct kiln_location *l;

	id = kiln_htab_find(&p->loc_index, hash, loc_eq, &k);
	if (id)
		return id;
	if (!GROW(p, p->locations, p->locations_alloc, p->nlocations + 2) ||
	    !GROW(p, p->lines, p->lines_alloc, p->nlines + n))
		return 0;
	id = (uint32_t)p->nlocations + 1;
	l = &p->locations[id];
	memset(l, 0, sizeof(*l));
	l->address = address;
	l->mapping = mapping;
	l->line0 = (uint32_t)p->nlines;
	l->nlines = n;
	if (n)
		memcpy(p->lines + p->nlines, lines, n * sizeof(*lines));
	if (!index_add(p, &p->loc_index, hash, id))
		return 0;
	p->nlines += n;
	p->nlocations++;
	return id;
}

int kiln_prof_set_lines(struct kiln_prof *p, uint32_t loc,
			const struct kiln_line *lines, uint32_t n)
{
	struct kiln_location *l;

	if (!loc || loc > p->nlocations || p->locations[loc].nlines)
		return -EINVAL;
	if (!n)
		return 0;
	if (!GROW(p, p->lines, p->lines_alloc, p->nlines + n))
		return p->err;
	l = &p->locations[loc];
	/* The old index entry (hashed without lines) no longer matches in
	 * loc_eq(), so it is harmless; add one under the new hash. */
	if (!index_add(p, &p->loc_index,
		       loc_hash(l->mapping, l->address, lines, n), loc))
		return p->err;
	memcpy(p->lines + p->nlines, lines, n * sizeof(*lines));
	l->line0 = (uint32_t)p->nlines;
	l->nlines = n;
	l->fallback = 0;
	p->nlines += n;
	return 0;
}

/* ---- label sets ---- */

struct lset_key {
	const struct kiln_prof *p;
	const struct kiln_label *l;
	uint32_t n;
};

static bool lset_eq(const void *ctx, uint32_t id)
{
	const struct lset_key *k = ctx;
	const struct kiln_labelset *s = &k->p->labelsets[id];
	uint32_t i;

	if (s->n != k->n)
		return false;
	for (i = 0; i < k->n; i++) {
		const struct kiln_label *a = &k->p->labels[s->first + i];
		const struct kiln_label *b = &k->l[i];

		if (a->key != b->key || a->str != b->str || a->num != b->num ||
		    a->unit != b->unit)
			return false;
	}
	return true;
}

uint32_t kiln_prof_labelset(struct kiln_prof *p, const struct kiln_label *l,
			    uint32_t n)
{
	struct lset_key k = { p, l, n };
	uint64_t h = n;
	uint32_t i, id, hash;

	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		uint64_t v[3] = { l[i].key | (uint64_t)l[i].str << 32,
				  (uint64_t)l[i].num, l[i].unit };

		h = kiln_hash_seed(v, sizeof(v), h);
	}
	hash = (uint32_t)h;
	id = kiln_htab_find(&p->lset_index, hash, lset_eq, &k);
	if (id)
		return id;
	if (!GROW(p, p->labelsets, p->labelsets_alloc, p->nlabelsets + 2) ||
	    !GROW(p, p->labels, p->labels_alloc, p->nlabels + n))
		return 0;
	id = (uint32_t)p->nlabelsets + 1;
	p->labelsets[id].first = (uint32_t)p->nlabels;
	p->labelsets[id].n = n;
	memcpy(p->labels + p->nlabels, l, n * sizeof(*l));
	if (!index_add(p, &p->lset_index, hash, id))
		return 0;
	p->nlabels += n;
	p->nlabelsets++;
	return id;
}

/* ---- sample types and samples ---- */

int kiln_prof_set_types(struct kiln_prof *p, const struct kiln_value_type *t,
			size_t n)
{
	struct kiln_value_type *c;
	uint64_t *m;

	if (p->nsamples)
		return -EBUSY;
	c = calloc(n ? n : 1, sizeof(*c));
	m = calloc(n ? n : 1, sizeof(*m));
	if (!c || !m) {
		free(c);
		free(m);
		return -ENOMEM;
	}
	memcpy(c, t, n * sizeof(*t));
	free(p->types);
	free(p->mag);
	p->types = c;
	p->mag = m;
	p->ntypes = n;
	return 0;
}

int kiln_prof_set_types_str(struct kiln_prof *p, const char *const *pairs,
			    size_t n)
{
	struct kiln_value_type *t = calloc(n ? n : 1, sizeof(*t));
	size_t i;
	int err;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		/* The last '/': a type may hold one (perf's PMU events,
		 * "cpu_core/cycles/count"). */
		const char *slash = strrchr(pairs[i], '/');
		size_t tl = slash ? (size_t)(slash - pairs[i]) : strlen(pairs[i]);

		t[i].type = kiln_prof_intern(p, pairs[i], tl);
		t[i].unit = slash ? kiln_prof_interns(p, slash + 1) : 0;
	}
	err = p->err ? p->err : kiln_prof_set_types(p, t, n);
	free(t);
	return err;
}

struct sample_key {
	const struct kiln_prof *p;
	const uint32_t *locs;
	uint32_t depth;
	uint32_t labels;
};

static bool sample_eq(const void *ctx, uint32_t id)
{
	const struct sample_key *k = ctx;
	const struct kiln_sample *s = &k->p->samples[id - 1];

	return s->depth == k->depth && s->labels == k->labels &&
	       (!k->depth || !memcmp(k->p->stacks + s->stack, k->locs,
				     k->depth * sizeof(*k->locs)));
}

/* Puts every sample in sample_index again, after appends that left
 * it behind (kiln_prof_append_sample()). */
static bool index_samples(struct kiln_prof *p)
{
	size_t i;

	kiln_htab_release(&p->sample_index);
	kiln_htab_init(&p->sample_index);
	p->sample_index_stale = false;
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		uint32_t hash = (uint32_t)kiln_hash_seed(p->stacks + s->stack,
							 s->depth * sizeof(uint32_t),
							 s->labels);

		if (!index_add(p, &p->sample_index, hash, (uint32_t)i + 1))
			return false;
	}
	return true;
}

/* A new sample at the end, not indexed.  Its index or -1. */
static long append(struct kiln_prof *p, const uint32_t *locs, uint32_t depth,
		   const int64_t *values, uint32_t labelset)
{
	size_t idx;

	if (!GROW(p, p->stacks, p->stacks_alloc, p->nstacks + depth))
		return -1;
	if (p->nsamples + 1 > p->samples_alloc) {
		size_t old = p->samples_alloc;
		int64_t *v;

		if (!GROW(p, p->samples, p->samples_alloc, p->nsamples + 1))
			return -1;
		v = realloc(p->values, p->samples_alloc * (p->ntypes ? p->ntypes : 1) *
					       sizeof(*v));
		if (!v) {
			p->samples_alloc = old;
			p->err = -ENOMEM;
			return -1;
		}
		p->values = v;
	}
	idx = p->nsamples;
	p->samples[idx].stack = (uint32_t)p->nstacks;
	p->samples[idx].depth = depth;
	p->samples[idx].labels = labelset;
	if (depth)
		memcpy(p->stacks + p->nstacks, locs, depth * sizeof(*locs));
	if (p->ntypes) {
		kiln_prof_note_mag(p, values);
		memcpy(p->values + idx * p->ntypes, values,
		       p->ntypes * sizeof(*values));
	}
	p->nstacks += depth;
	p->nsamples++;
	return (long)idx;
}

long kiln_prof_add_sample(struct kiln_prof *p, const uint32_t *locs,
			  uint32_t depth, const int64_t *values,
			  uint32_t labelset)
{
	struct sample_key k = { p, locs, depth, labelset };
	uint32_t hash, id;
	size_t i;
	long idx;

	if (p->err || (p->sample_index_stale && !index_samples(p)))
		return -1;
	hash = (uint32_t)kiln_hash_seed(locs, depth * sizeof(*locs), labelset);
	id = kiln_htab_find(&p->sample_index, hash, sample_eq, &k);
	if (id) {
		int64_t *v = p->values + (size_t)(id - 1) * p->ntypes;

		kiln_prof_note_mag(p, values);
		/* Wrapping, not undefined, on absurd inputs (and refused:
		 * p->err). */
		for (i = 0; i < p->ntypes; i++)
			v[i] = (int64_t)((uint64_t)v[i] + (uint64_t)values[i]);
		return p->err ? -1 : (long)id - 1;
	}
	idx = append(p, locs, depth, values, labelset);
	if (idx < 0 || !index_add(p, &p->sample_index, hash, (uint32_t)idx + 1))
		return -1;
	return idx;
}

long kiln_prof_append_sample(struct kiln_prof *p, const uint32_t *locs,
			     uint32_t depth, const int64_t *values,
			     uint32_t labelset)
{
	if (p->err)
		return -1;
	p->sample_index_stale = true;
	return append(p, locs, depth, values, labelset);
}

int kiln_prof_add_comment(struct kiln_prof *p, const char *s)
{
	uint32_t id = kiln_prof_interns(p, s);
	size_t n = p->ncomments + 1;
	uint32_t *c;

	if (p->err)
		return p->err;
	c = realloc(p->comments, n * sizeof(*c));
	if (!c)
		return -ENOMEM;
	c[p->ncomments] = id;
	p->comments = c;
	p->ncomments = n;
	return 0;
}

int kiln_prof_set_memory(struct kiln_prof *p, const int64_t *t,
			 const int64_t *bytes, size_t n)
{
	int64_t *nt = NULL, *nb = NULL;

	if (n) {
		nt = malloc(n * sizeof(*nt));
		nb = malloc(n * sizeof(*nb));
		if (!nt || !nb) {
			free(nt);
			free(nb);
			return -ENOMEM;
		}
		memcpy(nt, t, n * sizeof(*nt));
		memcpy(nb, bytes, n * sizeof(*nb));
	}
	free(p->mem_t);
	free(p->mem_bytes);
	p->mem_t = nt;
	p->mem_bytes = nb;
	p->nmem = n;
	return 0;
}

int kiln_prof_type_index(const struct kiln_prof *p, const char *name,
			 struct kiln_diag *d)
{
	char known[512];
	size_t i, kl = 0;

	if (!p->ntypes)
		return kiln_diag(d, "the profile has no sample types");
	if (!name || !*name) {
		if (p->default_type)
			for (i = 0; i < p->ntypes; i++)
				if (p->types[i].type == p->default_type)
					return (int)i;
		return (int)p->ntypes - 1;
	}
	for (i = 0; i < p->ntypes; i++) {
		const char *t = kiln_prof_str(p, p->types[i].type);
		const char *u = kiln_prof_str(p, p->types[i].unit);
		size_t tl = strlen(t);

		if (!strcmp(name, t))
			return (int)i;
		if (!strncmp(name, t, tl) && name[tl] == '/' &&
		    !strcmp(name + tl + 1, u))
			return (int)i;
	}
	if (name[strspn(name, "0123456789")] == '\0' && strlen(name) < 9) {
		unsigned long v = strtoul(name, NULL, 10);

		if (v < p->ntypes)
			return (int)v;
	}
	known[0] = '\0';
	for (i = 0; i < p->ntypes && kl < sizeof(known) - 1; i++) {
		int n = snprintf(known + kl, sizeof(known) - kl, "%s%s",
				 i ? ", " : "",
				 kiln_prof_str(p, p->types[i].type));

		if (n < 0)
			break;
		kl += (size_t)n;
	}
	return kiln_diag(d, "no sample type '%s' (the profile has: %s)", name,
			 known);
}

int64_t kiln_prof_total(const struct kiln_prof *p, size_t type)
{
	int64_t t = 0;
	size_t i;

	for (i = 0; i < p->nsamples; i++)
		t = (int64_t)((uint64_t)t + (uint64_t)p->values[i * p->ntypes + type]);
	return t;
}

/* ---- frames ---- */
