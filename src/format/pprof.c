/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof reader (format stage): profile.proto (package perftools.profiles),
 * the format of go tool pprof, Pyroscope and Parca, read through the
 * protobuf-c code generated from proto/profile.proto.  The writer is
 * pprof-write.c, the wire-format walker and checker pprof-wire.c.
 *
 * Reading walks the top-level fields of the Profile message itself (a
 * first pass interns the string table, which Go writes last, and checks
 * the framing), then unpacks each record -- sample, location, function,
 * mapping -- with protobuf-c into an arena that is reset after each, so
 * memory does not grow with the decoded message tree.  Every string
 * index and id is checked, and the profile is rebuilt through the
 * model's interning functions: sparse or unordered pprof ids are
 * remapped and duplicate stacks merge.  Errors say the byte offset of the
 * record and what is wrong with it ("byte 812: sample 12: location id 99
 * does not exist"); where protobuf-c rejects a record, a walker that
 * knows profile.proto finds the offending byte.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdalign.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "format/format.h"
#include "format/pprofint.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"

/* ---- reading: the unpack arena ---- */

/*
 * Each record (one sample, one location, ...) is unpacked by protobuf-c
 * into this bump allocator, used, and dropped with arena_reset(), so the
 * reader holds one decoded record at a time, never the whole tree (a
 * million samples would be hundreds of megabytes of small structs).
 * Blocks too big for a chunk are malloc'ed alone.
 */
#define ARENA_CHUNK (64u << 10)

struct arena_chunk {
	struct arena_chunk *next;
	alignas(max_align_t) char data[];
};

struct arena {
	struct arena_chunk *chunks;	/* newest first */
	char *cur;
	size_t left;
	void **big;
	size_t nbig, bigcap;
	bool oom;
};

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	size_t al = alignof(max_align_t);
	void *r;

	if (size > ARENA_CHUNK / 2) {
		if (KILN_GROW(a->big, a->bigcap, a->nbig + 1, 16))
			goto out_oom;
		r = malloc(size);
		if (!r)
			goto out_oom;
		a->big[a->nbig++] = r;
		return r;
	}
	size = (size + al - 1) & ~(al - 1);
	if (size > a->left) {
		struct arena_chunk *c = malloc(sizeof(*c) + ARENA_CHUNK);

		if (!c)
			goto out_oom;
		c->next = a->chunks;
		a->chunks = c;
		a->cur = c->data;
		a->left = ARENA_CHUNK;
	}
	r = a->cur;
	a->cur += size;
	a->left -= size;
	return r;
out_oom:
	a->oom = true;
	return NULL;
}

static void arena_free(void *data, void *ptr)
{
	struct arena *a = data;
	size_t i;

	/* Small blocks go with arena_reset(); big ones now. */
	for (i = a->nbig; i-- > 0;) {
		if (a->big[i] == ptr) {
			free(ptr);
			a->big[i] = a->big[--a->nbig];
			return;
		}
	}
}

/* Forgets every block but keeps one chunk for the next record. */
static void arena_reset(struct arena *a)
{
	struct arena_chunk *c, *next;

	while (a->nbig)
		free(a->big[--a->nbig]);
	if (!a->chunks)
		return;
	for (c = a->chunks->next; c; c = next) {
		next = c->next;
		free(c);
	}
	a->chunks->next = NULL;
	a->cur = a->chunks->data;
	a->left = ARENA_CHUNK;
}

static void arena_release(struct arena *a)
{
	arena_reset(a);
	free(a->chunks);
	free(a->big);
	memset(a, 0, sizeof(*a));
}

/* ---- reading: id remapping ---- */

/*
 * pprof id -> model id.  Ids are usually 1..n in order: a plain array
 * then; the first id too large for it turns the map into an
 * open-addressing table (sparse ids).  n, the number of records, is known
 * before the first id is added.
 */
struct idmap {
	size_t n;
	uint32_t *dense;	/* [0..ndense) while dense */
	size_t ndense;
	uint64_t *keys;		/* 0 = empty slot (pprof ids are nonzero) */
	uint32_t *vals;
	size_t mask;
};

static int idmap_init(struct idmap *m, size_t n)
{
	memset(m, 0, sizeof(*m));
	m->n = n;
	m->ndense = 2 * n + 1024;
	m->dense = calloc(m->ndense, sizeof(*m->dense));
	return m->dense ? 0 : -ENOMEM;
}

static void idmap_release(struct idmap *m)
{
	free(m->dense);
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static size_t idmap_slot(const struct idmap *m, uint64_t id)
{
	size_t i = (size_t)((id * 0x9e3779b97f4a7c15ull) >> 24) & m->mask;

	while (m->keys[i] && m->keys[i] != id)
		i = (i + 1) & m->mask;
	return i;
}

/* The model id for pprof id, 0 if unknown. */
static inline uint32_t idmap_get(const struct idmap *m, uint64_t id)
{
	if (m->dense)
		return id < m->ndense ? m->dense[id] : 0;
	return id ? m->vals[idmap_slot(m, id)] : 0;
}

/* Moves the dense array into a hash table with room for all n ids. */
static int idmap_to_hash(struct idmap *m)
{
	size_t cap = 16, id;

	while (cap < 2 * m->n + 2)
		cap *= 2;
	m->keys = calloc(cap, sizeof(*m->keys));
	m->vals = calloc(cap, sizeof(*m->vals));
	if (!m->keys || !m->vals)
		return -ENOMEM;
	m->mask = cap - 1;
	for (id = 1; id < m->ndense; id++) {
		if (m->dense[id]) {
			size_t i = idmap_slot(m, id);

			m->keys[i] = id;
			m->vals[i] = m->dense[id];
		}
	}
	free(m->dense);
	m->dense = NULL;
	return 0;
}

/* Records id -> val (id, val != 0): 0, -EEXIST or -ENOMEM. */
static int idmap_put(struct idmap *m, uint64_t id, uint32_t val)
{
	size_t i;

	if (m->dense && id >= m->ndense && idmap_to_hash(m))
		return -ENOMEM;
	if (m->dense) {
		if (m->dense[id])
			return -EEXIST;
		m->dense[id] = val;
		return 0;
	}
	i = idmap_slot(m, id);
	if (m->keys[i])
		return -EEXIST;
	m->keys[i] = id;
	m->vals[i] = val;
	return 0;
}

/* ---- reading: the profile ---- */

struct rd {
	struct kiln_prof *p;
	struct kiln_diag *d;
	const uint8_t *b;
	size_t len;
	struct arena a;
	ProtobufCAllocator alloc;

	uint32_t *smap;		/* pprof string index -> model string id */
	size_t nstr, smap_cap;
	size_t count[15];	/* top-level fields seen, by number */
	int64_t scalar[15];	/* the last value of each scalar field */
	size_t scalar_at[15];
	struct wf_item period_type;
	struct comment { int64_t idx; size_t at; } *comments;
	size_t ncomments, comments_cap;
	struct idmap maps, funcs, locs;

	/* Scratch reused from record to record. */
	struct kiln_value_type *types;
	uint64_t *magnitude;	/* per sample type: the sum of |value| */
	struct kiln_line *lines;
	size_t lines_cap;
	uint32_t *stack;
	size_t stack_cap;
	struct kiln_label *labels;
	size_t labels_cap;
};

/* Fills d with "byte AT: ..." and returns -EINVAL. */
static int __attribute__((format(printf, 3, 4)))
rd_err(struct rd *r, size_t at, const char *fmt, ...)
{
	char msg[sizeof(r->d->msg)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return kiln_diag(r->d, "byte %zu: %s", at, msg);
}

/* Makes room for n elements in a scratch array. */
static int scratch(void **arr, size_t *cap, size_t n, size_t size)
{
	void *q;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / 2 / size)
		return -ENOMEM;
	q = realloc(*arr, 2 * n * size);
	if (!q)
		return -ENOMEM;
	*arr = q;
	*cap = 2 * n;
	return 0;
}

#define SCRATCH(arr, cap, n) scratch((void **)&(arr), &(cap), (n), sizeof(*(arr)))

/* True when idx is a valid string index; *out gets the model id. */
static inline bool str_ok(const struct rd *r, int64_t idx, uint32_t *out)
{
	if (idx < 0 || (uint64_t)idx >= r->nstr)
		return false;
	*out = r->smap[idx];
	return true;
}

#define BAD_STR "%s %zu: %s %" PRId64 " is not in the string table (%zu strings)"

/* Keeps a comment's string index for rd_rest().  0 or -ENOMEM. */
static int rd_comment(struct rd *r, int64_t idx, size_t at)
{
	if (SCRATCH(r->comments, r->comments_cap, r->ncomments + 1))
		return -ENOMEM;
	r->comments[r->ncomments].idx = idx;
	r->comments[r->ncomments++].at = at;
	return 0;
}

/*
 * First pass over the top-level fields: checks their framing, interns
 * the string table, keeps the scalars and counts the records.
 */
static int rd_scan(struct rd *r)
{
	size_t pos = 0;
	struct wf_item it;
	int rc;

	while ((rc = kiln_pprof_wf_next(r->b, &pos, r->len,
					&kiln_pprof_wf_profile, &it,
					"not a pprof profile: ", r->d)) > 0) {
		if (it.num < 15)
			r->count[it.num]++;
		switch (it.num) {
		case 6:
			if (r->nstr == 0 && it.len)
				return rd_err(r, it.at, "string_table[0] is \"%.*s\" "
					      "but must be empty",
					      (int)(it.len < 40 ? it.len : 40),
					      (const char *)r->b + it.off);
			if (SCRATCH(r->smap, r->smap_cap, r->nstr + 1))
				return -ENOMEM;
			r->smap[r->nstr++] = kiln_prof_intern(r->p,
				(const char *)r->b + it.off, it.len);
			if (r->p->err)
				return r->p->err;
			break;
		case 7: case 8: case 9: case 10: case 12: case 14:
			r->scalar[it.num] = (int64_t)it.v;
			r->scalar_at[it.num] = it.at;
			break;
		case 11:
			r->period_type = it;
			break;
		case 13:
			if (it.wt == 0) {
				if (rd_comment(r, (int64_t)it.v, it.at))
					return -ENOMEM;
			} else {
				size_t q = it.off, end = it.off + it.len;
				uint64_t v = 0;

				if (kiln_pprof_wf_packed(r->b, &it, "Profile",
							 "not a pprof profile: ",
							 r->d))
					return -EINVAL;
				while (q < end) {
					wf_varint(r->b, &q, end, &v);
					if (rd_comment(r, (int64_t)v, it.at))
						return -ENOMEM;
				}
			}
			break;
		default:
			break;
		}
	}
	if (rc)
		return rc;
	if (!r->nstr)
		return kiln_diag(r->d, "byte 0: not a pprof profile: it has no "
				 "string table");
	return 0;
}

typedef int (*rd_fn)(struct rd *r, size_t idx, size_t at, const void *msg);

/*
 * Unpacks every top-level field number num with protobuf-c, one at a
 * time, and hands it to fn as record idx (0-based) at byte at.
 */
static int rd_each(struct rd *r, uint32_t num,
		   const ProtobufCMessageDescriptor *desc, const char *what,
		   rd_fn fn)
{
	size_t pos = 0, idx = 0;
	struct wf_item it;
	int rc;

	/* rd_scan() checked the framing: kiln_pprof_wf_next() cannot fail. */
	while ((rc = kiln_pprof_wf_next(r->b, &pos, r->len,
					&kiln_pprof_wf_profile, &it, "",
					r->d)) > 0) {
		ProtobufCMessage *m;
		char ctx[64];
		int err;

		if (it.num != num)
			continue;
		m = protobuf_c_message_unpack(desc, &r->alloc, it.len,
					      r->b + it.off);
		if (!m) {
			if (r->a.oom)
				return -ENOMEM;
			snprintf(ctx, sizeof(ctx), "%s %zu: ", what, idx);
			err = kiln_pprof_wf_check(r->b, it.off, it.off + it.len,
						  it.f->sub, ctx, r->d);
			return err ? err : rd_err(r, it.at, "%s %zu: the protobuf "
						  "message is corrupt", what, idx);
		}
		err = fn(r, idx, it.at, m);
		arena_reset(&r->a);
		if (err)
			return err;
		idx++;
	}
	return rc;
}

static int rd_type(struct rd *r, size_t idx, size_t at, const void *msg)
{
	const pb_value_type *v = msg;

	if (!str_ok(r, v->type, &r->types[idx].type))
		return rd_err(r, at, BAD_STR, "sample_type", idx, "type", v->type,
			      r->nstr);
	if (!str_ok(r, v->unit, &r->types[idx].unit))
		return rd_err(r, at, BAD_STR, "sample_type", idx, "unit", v->unit,
			      r->nstr);
	return 0;
}

/* Records a pprof id, refusing 0 and duplicates. */
static int rd_id(struct rd *r, struct idmap *m, const char *what, size_t idx,
		 size_t at, uint64_t id, uint32_t model_id)
{
	int err;

	if (!model_id)
		return r->p->err ? r->p->err : -ENOMEM;
	if (!id)
		return rd_err(r, at, "%s %zu: id 0 is reserved", what, idx);
	err = idmap_put(m, id, model_id);
	if (err == -EEXIST)
		return rd_err(r, at, "%s %zu: id %" PRIu64 " is used twice",
			      what, idx, id);
	return err;
}

static int rd_mapping(struct rd *r, size_t idx, size_t at, const void *msg)
{
	const pb_mapping *m = msg;
	struct kiln_mapping km = {
		.start = m->memory_start,
		.limit = m->memory_limit,
		.offset = m->file_offset,
		.has_functions = m->has_functions,
		.has_filenames = m->has_filenames,
		.has_line_numbers = m->has_line_numbers,
		.has_inline_frames = m->has_inline_frames,
	};

	if (!str_ok(r, m->filename, &km.file))
		return rd_err(r, at, BAD_STR, "mapping", idx, "filename",
			      m->filename, r->nstr);
	if (!str_ok(r, m->build_id, &km.build_id))
		return rd_err(r, at, BAD_STR, "mapping", idx, "build_id",
			      m->build_id, r->nstr);
	return rd_id(r, &r->maps, "mapping", idx, at, m->id,
		     kiln_prof_mapping(r->p, &km));
}

static int rd_function(struct rd *r, size_t idx, size_t at, const void *msg)
{
	const pb_function *f = msg;
	uint32_t name, sys, file;

	if (!str_ok(r, f->name, &name))
		return rd_err(r, at, BAD_STR, "function", idx, "name", f->name,
			      r->nstr);
	if (!str_ok(r, f->system_name, &sys))
		return rd_err(r, at, BAD_STR, "function", idx, "system_name",
			      f->system_name, r->nstr);
	if (!str_ok(r, f->filename, &file))
		return rd_err(r, at, BAD_STR, "function", idx, "filename",
			      f->filename, r->nstr);
	return rd_id(r, &r->funcs, "function", idx, at, f->id,
		     kiln_prof_function(r->p, name, sys, file, f->start_line));
}

static int rd_location(struct rd *r, size_t idx, size_t at, const void *msg)
{
	const pb_location *l = msg;
	uint32_t map = 0, id;
	size_t j;

	if (l->mapping_id) {
		map = idmap_get(&r->maps, l->mapping_id);
		if (!map)
			return rd_err(r, at, "location %zu: mapping id %" PRIu64
				      " does not exist", idx, l->mapping_id);
	}
	if (l->n_line > UINT32_MAX)
		return rd_err(r, at, "location %zu: too many lines", idx);
	if (SCRATCH(r->lines, r->lines_cap, l->n_line))
		return -ENOMEM;
	for (j = 0; j < l->n_line; j++) {
		const pb_line *ln = l->line[j];

		r->lines[j].line = ln->line;
		r->lines[j].function = 0;
		/* function_id 0: a line of an unknown function. */
		if (ln->function_id) {
			r->lines[j].function = idmap_get(&r->funcs, ln->function_id);
			if (!r->lines[j].function)
				return rd_err(r, at, "location %zu: line %zu: "
					      "function id %" PRIu64 " does not "
					      "exist", idx, j, ln->function_id);
		}
	}
	id = kiln_prof_location(r->p, map, l->address, r->lines,
				(uint32_t)l->n_line);
	if (id && l->is_folded)
		r->p->locations[id].is_folded = true;
	return rd_id(r, &r->locs, "location", idx, at, l->id, id);
}

static int rd_sample(struct rd *r, size_t idx, size_t at, const void *msg)
{
	const pb_sample *s = msg;
	uint32_t lset = 0;
	int64_t time = 0;
	bool timed = false;
	size_t j;

	if (s->n_value != r->p->ntypes)
		return rd_err(r, at, "sample %zu: %zu values for %zu sample types",
			      idx, s->n_value, r->p->ntypes);
	/* The model adds values up (merged stacks, totals) in int64_t: keep
	 * the sum of magnitudes in range so that no sum can overflow. */
	for (j = 0; j < s->n_value; j++) {
		int64_t v = s->value[j];
		uint64_t mag = v < 0 ? -(uint64_t)v : (uint64_t)v;

		if (__builtin_add_overflow(r->magnitude[j], mag, &r->magnitude[j]) ||
		    r->magnitude[j] > INT64_MAX)
			return rd_err(r, at, "sample %zu: value %" PRId64 " makes "
				      "the total of '%s' overflow 64 bits", idx,
				      v, kiln_prof_str(r->p, r->p->types[j].type));
	}
	if (s->n_location_id > UINT32_MAX || s->n_label > UINT32_MAX)
		return rd_err(r, at, "sample %zu: too many locations or labels",
			      idx);
	if (SCRATCH(r->stack, r->stack_cap, s->n_location_id))
		return -ENOMEM;
	for (j = 0; j < s->n_location_id; j++) {
		r->stack[j] = idmap_get(&r->locs, s->location_id[j]);
		if (!r->stack[j])
			return rd_err(r, at, "sample %zu: location id %" PRIu64
				      " does not exist", idx, s->location_id[j]);
	}
	if (s->n_label) {
		uint32_t kt = kiln_prof_find_str(r->p, "time", 4);
		uint32_t kns = kiln_prof_find_str(r->p, "nanoseconds", 11);
		uint32_t n = 0;

		if (SCRATCH(r->labels, r->labels_cap, s->n_label))
			return -ENOMEM;
		for (j = 0; j < s->n_label; j++) {
			const pb_label *l = s->label[j];
			struct kiln_label *k = &r->labels[n];
			int64_t bad;

			if (!str_ok(r, bad = l->key, &k->key) ||
			    !str_ok(r, bad = l->str, &k->str) ||
			    !str_ok(r, bad = l->num_unit, &k->unit))
				return rd_err(r, at, "sample %zu: label %zu: string "
					      "index %" PRId64 " is not in the "
					      "string table (%zu strings)", idx,
					      j, bad, r->nstr);
			k->num = l->num;
			/* A time label (kiln's, docs/formats.md) goes to the
			 * time column. */
			if (kt && !timed && k->key == kt && !k->str &&
			    k->unit == kns) {
				time = k->num;
				timed = true;
				continue;
			}
			n++;
		}
		if (n) {
			lset = kiln_prof_labelset(r->p, r->labels, n);
			if (!lset)
				return r->p->err ? r->p->err : -ENOMEM;
		}
	}
	if (timed ? kiln_prof_add_timed(r->p, r->stack,
					    (uint32_t)s->n_location_id,
					    s->value, lset, time) < 0 :
	    kiln_prof_add_sample(r->p, r->stack, (uint32_t)s->n_location_id,
				 s->value, lset) < 0)
		return r->p->err ? r->p->err : -ENOMEM;
	return 0;
}

/* Period type, scalars with string indexes, comments. */
static int rd_rest(struct rd *r)
{
	static const struct { uint32_t num; const char *name; } strs[] = {
		{ 7, "drop_frames" }, { 8, "keep_frames" },
		{ 14, "default_sample_type" },
	};
	struct kiln_prof *p = r->p;
	uint32_t ids[3];
	size_t i;
	int err;

	if (r->period_type.len) {
		const struct wf_item *it = &r->period_type;
		pb_value_type *v = perftools__profiles__value_type__unpack(
			&r->alloc, it->len, r->b + it->off);

		if (!v) {
			if (r->a.oom)
				return -ENOMEM;
			err = kiln_pprof_wf_check(r->b, it->off,
						  it->off + it->len,
						  &kiln_pprof_wf_value_type,
						  "period_type: ", r->d);
			return err ? err : rd_err(r, it->at, "period_type: the "
						  "protobuf message is corrupt");
		}
		if (!str_ok(r, v->type, &p->period_type.type) ||
		    !str_ok(r, v->unit, &p->period_type.unit)) {
			err = rd_err(r, it->at, "period_type: string index %" PRId64
				     " is not in the string table (%zu strings)",
				     str_ok(r, v->type, &ids[0]) ? v->unit : v->type,
				     r->nstr);
			arena_reset(&r->a);
			return err;
		}
		arena_reset(&r->a);
	}
	for (i = 0; i < 3; i++)
		if (!str_ok(r, r->scalar[strs[i].num], &ids[i]))
			return rd_err(r, r->scalar_at[strs[i].num], "%s: string "
				      "index %" PRId64 " is not in the string table "
				      "(%zu strings)", strs[i].name,
				      r->scalar[strs[i].num], r->nstr);
	p->drop_frames = ids[0];
	p->keep_frames = ids[1];
	p->default_type = ids[2];
	p->time_nanos = r->scalar[9];
	p->duration_nanos = r->scalar[10];
	p->period = r->scalar[12];
	for (i = 0; i < r->ncomments; i++) {
		uint32_t id;
		char *c;

		if (!str_ok(r, r->comments[i].idx, &id))
			return rd_err(r, r->comments[i].at, "comment %zu: string "
				      "index %" PRId64 " is not in the string table "
				      "(%zu strings)", i, r->comments[i].idx,
				      r->nstr);
		/* A copy: kiln_prof_add_comment() interns its argument, which
		 * must not point into the string pool it may move (a string
		 * with a NUL inside is new once cut at the NUL). */
		c = strdup(kiln_prof_str(p, id));
		if (!c)
			return -ENOMEM;
		err = kiln_prof_add_comment(p, c);
		free(c);
		if (err)
			return err;
	}
	return 0;
}

int kiln_pprof_read(struct kiln_prof *p, const char *data, size_t len,
		    struct kiln_diag *d)
{
	struct rd r;
	int err;

	memset(&r, 0, sizeof(r));
	r.p = p;
	r.d = d;
	r.b = (const uint8_t *)data;
	r.len = len;
	r.alloc = (ProtobufCAllocator){ arena_alloc, arena_free, &r.a };

	/* Strings and scalars first: records refer to them wherever they
	 * are in the file (Go writes the string table last).  Then each
	 * kind of record in the order of their references. */
	err = rd_scan(&r);
	if (!err) {
		r.types = bulk(r.count[1], sizeof(*r.types));
		r.magnitude = bulk(r.count[1], sizeof(*r.magnitude));
		err = r.types && r.magnitude ? 0 : -ENOMEM;
	}
	if (!err)
		err = rd_each(&r, 1, &perftools__profiles__value_type__descriptor,
			      "sample_type", rd_type);
	if (!err)
		err = kiln_prof_set_types(p, r.types, r.count[1]);
	if (!err)
		err = idmap_init(&r.maps, r.count[3]);
	if (!err)
		err = rd_each(&r, 3, &perftools__profiles__mapping__descriptor,
			      "mapping", rd_mapping);
	if (!err)
		err = idmap_init(&r.funcs, r.count[5]);
	if (!err)
		err = rd_each(&r, 5, &perftools__profiles__function__descriptor,
			      "function", rd_function);
	if (!err)
		err = idmap_init(&r.locs, r.count[4]);
	if (!err)
		err = rd_each(&r, 4, &perftools__profiles__location__descriptor,
			      "location", rd_location);
	if (!err)
		err = rd_each(&r, 2, &perftools__profiles__sample__descriptor,
			      "sample", rd_sample);
	if (!err)
		err = rd_rest(&r);
	if (!err)
		err = p->err ? p->err : kiln_prof_events_tidy(p);

	idmap_release(&r.maps);
	idmap_release(&r.funcs);
	idmap_release(&r.locs);
	free(r.smap);
	free(r.comments);
	free(r.types);
	free(r.magnitude);
	free(r.lines);
	free(r.stack);
	free(r.labels);
	arena_release(&r.a);
	return err;
}
