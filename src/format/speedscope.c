/* SPDX-License-Identifier: Apache-2.0 */
/*
 * speedscope JSON (format stage), the file format of speedscope.app
 * (https://www.speedscope.app/file-format-schema.json): a table of frames
 * shared by all profiles, and one "sampled" profile whose samples are
 * root-first lists of frame indexes, each with a weight.
 *
 * Frames are functions (name and source file, line = the function's first
 * line when known); inline frames are frames of their own; a location
 * without symbols is one frame named "[module]" (docs/symbols.md).  Each distinct
 * stack of the profile is one sample whose weight is its value.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"

/* Frame table: (name, file, line) -> index. */
struct ftab {
	struct {
		uint32_t name, file;
		int64_t line;
	} *v;
	size_t n, alloc;
	struct kiln_htab index;
};

struct fkey {
	const struct ftab *t;
	uint32_t name, file;
	int64_t line;
};

static bool fkey_eq(const void *ctx, uint32_t id)
{
	const struct fkey *k = ctx;

	return k->t->v[id - 1].name == k->name &&
	       k->t->v[id - 1].file == k->file &&
	       k->t->v[id - 1].line == k->line;
}

/* The frame index (0-based) of a frame, or -ENOMEM. */
static long frame_index(struct ftab *t, uint32_t name, uint32_t file,
			int64_t line)
{
	struct fkey k = { t, name, file, line };
	uint64_t key[2] = { name | (uint64_t)file << 32, (uint64_t)line };
	uint32_t hash = (uint32_t)kiln_hash(key, sizeof(key));
	uint32_t id = kiln_htab_find(&t->index, hash, fkey_eq, &k);

	if (id)
		return (long)id - 1;
	if (KILN_GROW(t->v, t->alloc, t->n + 1, 256))
		return -ENOMEM;
	t->v[t->n].name = name;
	t->v[t->n].file = file;
	t->v[t->n].line = line;
	if (kiln_htab_insert(&t->index, hash, (uint32_t)t->n + 1))
		return -ENOMEM;
	return (long)t->n++;
}

/* speedscope's units: none, nanoseconds, microseconds, milliseconds,
 * seconds, bytes. */
static const char *speedscope_unit(const char *unit)
{
	static const char *const known[] = { "nanoseconds", "microseconds",
					     "milliseconds", "seconds", "bytes" };
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(unit, known[i]))
			return known[i];
	return "none";
}

int kiln_speedscope_write(struct kiln_prof *p, int type, const char *name,
			  struct kiln_buf *out)
{
	struct ftab ft;
	struct kiln_buf samples = KILN_BUF_INIT, weights = KILN_BUF_INIT;
	struct kiln_frame *frames = NULL;
	size_t cap = 0, i, nout = 0;
	int64_t total = 0;
	char title[256];
	uint8_t *timed;
	int err = 0;

	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	memset(&ft, 0, sizeof(ft));
	kiln_htab_init(&ft.index);
	err = kiln_buf_addc(&samples, '[');
	if (!err)
		err = kiln_buf_addc(&weights, '[');
	timed = calloc(p->nsamples + 1, 1);
	if (!timed)
		err = -ENOMEM;
	/* The time column's events (in the order they came: speedscope's
	 * time order view), then the samples without any. */
	for (i = 0; i < p->nevents + p->nsamples && !err; i++) {
		bool ev = i < p->nevents;
		size_t si = ev ? p->events[i].sample : i - p->nevents;
		int64_t v = ev ? kiln_prof_event_values(p, i)[type] :
			kiln_prof_value(p, si, (size_t)type);
		long nf, j;

		if (ev)
			timed[si] = 1;
		if (v <= 0 || (!ev && timed[si]))
			continue;
		nf = kiln_prof_frames(p, &p->samples[si], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		err = kiln_buf_adds(&samples, nout ? ",[" : "[");
		/* Frames come leaf first; speedscope wants the root first. */
		for (j = nf - 1; j >= 0 && !err; j--) {
			const struct kiln_frame *f = &frames[j];
			const struct kiln_function *fn =
				f->function ? &p->functions[f->function] : NULL;
			long idx = frame_index(&ft, f->name, fn ? fn->filename : 0,
					       fn ? fn->start_line : 0);

			if (idx < 0) {
				err = (int)idx;
				break;
			}
			err = kiln_buf_addf(&samples, "%s%ld", j == nf - 1 ? "" : ",",
					    idx);
		}
		if (!err)
			err = kiln_buf_addc(&samples, ']');
		if (!err)
			err = kiln_buf_addf(&weights, "%s%" PRId64, nout ? "," : "",
					    v);
		total += v;
		nout++;
	}
	if (!err)
		err = kiln_buf_addc(&samples, ']');
	if (!err)
		err = kiln_buf_addc(&weights, ']');
	if (!err)
		err = kiln_buf_adds(out, "{\"$schema\":\"https://www.speedscope.app/"
				    "file-format-schema.json\",\n\"shared\":{\"frames\":[");
	for (i = 0; i < ft.n && !err; i++) {
		err = kiln_buf_adds(out, i ? ",\n{\"name\":" : "\n{\"name\":");
		if (!err)
			err = kiln_buf_add_json(out, kiln_prof_str(p, ft.v[i].name),
						kiln_prof_strlen(p, ft.v[i].name));
		if (!err && ft.v[i].file) {
			err = kiln_buf_adds(out, ",\"file\":");
			if (!err)
				err = kiln_buf_add_json(out,
					kiln_prof_str(p, ft.v[i].file),
					kiln_prof_strlen(p, ft.v[i].file));
		}
		if (!err && ft.v[i].line > 0)
			err = kiln_buf_addf(out, ",\"line\":%" PRId64, ft.v[i].line);
		if (!err)
			err = kiln_buf_addc(out, '}');
	}
	snprintf(title, sizeof(title), "%s %s",
		 name && *name ? name : "kiln profile",
		 kiln_prof_str(p, p->types[type].type));
	if (!err)
		err = kiln_buf_adds(out, "]},\n\"profiles\":[{\"type\":\"sampled\","
				    "\"name\":");
	if (!err)
		err = kiln_buf_add_json(out, title, strlen(title));
	if (!err)
		err = kiln_buf_addf(out, ",\"unit\":\"%s\",\"startValue\":0,"
				    "\"endValue\":%" PRId64 ",\n\"samples\":",
				    speedscope_unit(kiln_prof_str(p,
						p->types[type].unit)),
				    total);
	if (!err)
		err = kiln_buf_add(out, samples.data, samples.len);
	if (!err)
		err = kiln_buf_adds(out, ",\n\"weights\":");
	if (!err)
		err = kiln_buf_add(out, weights.data, weights.len);
	if (!err)
		err = kiln_buf_adds(out, "}],\n\"name\":");
	if (!err) {
		const char *n = name && *name ? name : "kiln profile";

		err = kiln_buf_add_json(out, n, strlen(n));
	}
	if (!err)
		err = kiln_buf_adds(out, ",\"activeProfileIndex\":0,"
				    "\"exporter\":\"kiln\"}\n");
	free(frames);
	free(timed);
	free(ft.v);
	kiln_htab_release(&ft.index);
	kiln_buf_release(&samples);
	kiln_buf_release(&weights);
	return err ? err : p->err;
}
