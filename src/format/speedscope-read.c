/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Reading speedscope's JSON (format stage): the file format of
 * speedscope.app (jlfwong/speedscope src/lib/file-format-spec.ts), written
 * by speedscope itself, py-spy, rbspy, samply's exports and kiln.
 *
 * A table of frames ({name, file?, line?, col?}) is shared by all
 * profiles.  A "sampled" profile lists stacks (frame indexes, root first)
 * with a weight each; an "evented" one opens ("O") and closes ("C")
 * frames at times "at": each stretch between two events is a sample of
 * the frames open then, weighted by its length.  Units: "none" becomes
 * samples/count, the time units time/nanoseconds, "bytes" space/bytes;
 * with several profiles each sample has its profile's name as label
 * "thread_name" (they are threads, mostly).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/jsonread.h"
#include "profile/profile.h"
#include "util/diag.h"
#include "util/buf.h"

enum { T_COUNT, T_TIME, T_SPACE, T_KINDS };

static const char *const type_str[T_KINDS] = {
	"samples/count", "time/nanoseconds", "space/bytes",
};

struct sreader {
	struct kiln_prof *p;
	const json_t *frames;
	uint32_t *locs;		/* per frame, 0 until first used */
	size_t nframes;
	int index[T_KINDS];	/* sample type index of each kind, -1 none */
	uint64_t total[T_KINDS];
	int64_t *values;
	uint32_t *stack;
	size_t stack_alloc;
	uint32_t lset;
};

/* The kind and scale of a profile's unit. */
static int unit_kind(const char *unit, double *scale)
{
	static const struct { const char *name; double scale; } t[] = {
		{ "nanoseconds", 1 }, { "microseconds", 1e3 },
		{ "milliseconds", 1e6 }, { "seconds", 1e9 },
	};
	size_t i;

	*scale = 1;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (unit && !strcmp(unit, t[i].name)) {
			*scale = t[i].scale;
			return T_TIME;
		}
	return unit && !strcmp(unit, "bytes") ? T_SPACE : T_COUNT;
}

/* The location of frame i, made on first use; 0 with p->err on failure. */
static uint32_t frame_loc(struct sreader *r, size_t i)
{
	struct kiln_prof *p = r->p;
	const json_t *f = json_array_get(r->frames, i);
	const char *name = kiln_json_str(f, "name", NULL);
	const char *file = kiln_json_str(f, "file", "");
	const json_t *jl = json_object_get(f, "line");
	int64_t line = 0;
	uint32_t nm, fn;
	struct kiln_line ln;

	if (r->locs[i])
		return r->locs[i];
	if (!kiln_json_int(jl, &line) || line < 0 || line > INT32_MAX)
		line = 0;
	nm = kiln_prof_interns(p, name && *name ? name : "[unknown]");
	fn = kiln_prof_function(p, nm, nm, kiln_prof_interns(p, file), line);
	if (!fn)
		return 0;
	ln.function = fn;
	ln.line = line;
	r->locs[i] = kiln_prof_location(p, 0, 0, &ln, 1);
	return r->locs[i];
}

/* Adds one sample: frames (indexes, root first) weighing w in kind k. */
static int add(struct sreader *r, const size_t *frames, size_t depth, int k,
	       int64_t w, struct kiln_diag *d, const char *where)
{
	size_t i;

	if (!depth || !w)
		return 0;
	if (depth > r->stack_alloc) {
		uint32_t *s = realloc(r->stack, depth * 2 * sizeof(*s));

		if (!s)
			return -ENOMEM;
		r->stack = s;
		r->stack_alloc = depth * 2;
	}
	if (__builtin_add_overflow(r->total[k], (uint64_t)w, &r->total[k]) ||
	    r->total[k] > INT64_MAX)
		return kiln_diag(d, "%s: the weights add up past 64 bits", where);
	for (i = 0; i < depth; i++) {
		uint32_t loc = frame_loc(r, frames[i]);

		if (!loc)
			return r->p->err ? r->p->err : -ENOMEM;
		r->stack[depth - 1 - i] = loc;
	}
	memset(r->values, 0, r->p->ntypes * sizeof(*r->values));
	r->values[r->index[k]] = w;
	kiln_prof_add_sample(r->p, r->stack, (uint32_t)depth, r->values, r->lset);
	return r->p->err;
}

/* A frame index: false (d filled) when it is none. */
static bool frame_index(struct sreader *r, const json_t *j, size_t *out,
			struct kiln_diag *d, const char *where)
{
	int64_t v;

	if (!kiln_json_int(j, &v) || v < 0 || (uint64_t)v >= r->nframes) {
		kiln_diag(d, "%s: frame index out of range (%zu frames)", where,
			  r->nframes);
		return false;
	}
	*out = (size_t)v;
	return true;
}

static int read_sampled(struct sreader *r, const json_t *prof, size_t pi,
			int k, double scale, struct kiln_diag *d)
{
	const json_t *samples = json_object_get(prof, "samples");
	const json_t *weights = json_object_get(prof, "weights");
	size_t i, j, *frames = NULL, cap = 0;
	char where[96];
	int err = 0;

	if (!json_is_array(samples))
		return kiln_diag(d, "profile %zu: a sampled profile without "
				 "\"samples\"", pi);
	if (weights && (!json_is_array(weights) ||
			json_array_size(weights) != json_array_size(samples)))
		return kiln_diag(d, "profile %zu: \"weights\" is not an array "
				 "as long as \"samples\"", pi);
	for (i = 0; i < json_array_size(samples) && !err; i++) {
		const json_t *st = json_array_get(samples, i);
		size_t depth = json_array_size(st);
		int64_t w = 1;

		snprintf(where, sizeof(where), "profile %zu, sample %zu", pi, i);
		if (!json_is_array(st)) {
			err = kiln_diag(d, "%s: not an array of frame indexes",
					where);
			break;
		}
		if (weights && !kiln_json_value(json_array_get(weights, i),
						scale, &w)) {
			err = kiln_diag(d, "%s: the weight is not a number from "
					"0 to 2^62", where);
			break;
		}
		if (depth > cap) {
			size_t *f = realloc(frames, depth * 2 * sizeof(*f));

			if (!f) {
				err = -ENOMEM;
				break;
			}
			frames = f;
			cap = depth * 2;
		}
		for (j = 0; j < depth; j++)
			if (!frame_index(r, json_array_get(st, j), &frames[j], d,
					 where)) {
				err = -EINVAL;
				break;
			}
		if (!err)
			err = add(r, frames, depth, k, w, d, where);
	}
	free(frames);
	return err;
}

static int read_evented(struct sreader *r, const json_t *prof, size_t pi,
			int k, double scale, struct kiln_diag *d)
{
	const json_t *events = json_object_get(prof, "events");
	size_t i, depth = 0, cap = 0, *open = NULL;
	double last = 0;
	char where[96];
	int err = 0;

	if (!json_is_array(events))
		return kiln_diag(d, "profile %zu: an evented profile without "
				 "\"events\"", pi);
	for (i = 0; i < json_array_size(events) && !err; i++) {
		const json_t *ev = json_array_get(events, i);
		const char *type = kiln_json_str(ev, "type", "");
		const json_t *at = json_object_get(ev, "at");
		size_t f;
		int64_t w;

		snprintf(where, sizeof(where), "profile %zu, event %zu", pi, i);
		if (!json_is_number(at) || !frame_index(r, json_object_get(ev,
						"frame"), &f, d, where)) {
			err = json_is_number(at) ? -EINVAL :
			      kiln_diag(d, "%s: no time \"at\"", where);
			break;
		}
		if (i && json_number_value(at) < last) {
			err = kiln_diag(d, "%s: out of order (at %g after %g)",
					where, json_number_value(at), last);
			break;
		}
		/* The stretch since the last event, for the frames open. */
		if (i && depth) {
			double x = (json_number_value(at) - last) * scale + 0.5;

			/* Checked before the conversion, which is undefined
			 * beyond int64_t's range. */
			if (!(x >= 0 && x <= 4611686018427387904.0)) {
				err = kiln_diag(d, "%s: a stretch of time beyond "
						"2^62", where);
				break;
			}
			w = (int64_t)x;
			err = add(r, open, depth, k, w, d, where);
			if (err)
				break;
		}
		last = json_number_value(at);
		if (!strcmp(type, "O")) {
			if (KILN_GROW(open, cap, depth + 1, 64)) {
				err = -ENOMEM;
				break;
			}
			open[depth++] = f;
		} else if (!strcmp(type, "C")) {
			/* speedscope refuses a close of a frame that is not
			 * the innermost open one. */
			if (!depth || open[depth - 1] != f) {
				err = kiln_diag(d, "%s: closes frame %zu, which is "
						"not the innermost open frame",
						where, f);
				break;
			}
			depth--;
		} else {
			err = kiln_diag(d, "%s: type '%.20s' is neither \"O\" "
					"nor \"C\"", where, type);
		}
	}
	free(open);
	return err;
}

int kiln_speedscope_read(struct kiln_prof *p, const char *data, size_t len,
			 struct kiln_diag *d)
{
	struct sreader r;
	const json_t *profiles, *shared;
	json_t *root;
	size_t i, ntypes = 0, nprof;
	uint32_t k_name;
	int k, err;

	root = kiln_json_load(data, len, &err, d);
	if (!root)
		return err;
	memset(&r, 0, sizeof(r));
	r.p = p;
	shared = json_object_get(root, "shared");
	profiles = json_object_get(root, "profiles");
	r.frames = json_object_get(shared, "frames");
	if (!json_is_object(root) || !json_is_array(profiles) ||
	    !json_is_array(r.frames)) {
		err = kiln_diag(d, "line 1: not speedscope's format: no "
				"\"profiles\" array and \"shared\": {\"frames\"}");
		goto out;
	}
	nprof = json_array_size(profiles);
	r.nframes = json_array_size(r.frames);
	for (i = 0; i < r.nframes; i++)
		if (!json_is_string(json_object_get(json_array_get(r.frames, i),
						    "name"))) {
			err = kiln_diag(d, "frame %zu: no \"name\"", i);
			goto out;
		}
	/* The sample types: one per kind of unit the profiles use. */
	for (k = 0; k < T_KINDS; k++)
		r.index[k] = -1;
	for (i = 0; i < nprof; i++) {
		double scale;

		k = unit_kind(kiln_json_str(json_array_get(profiles, i), "unit",
					    "none"), &scale);
		if (r.index[k] < 0)
			r.index[k] = 0;
	}
	for (k = 0; k < T_KINDS; k++)
		if (r.index[k] >= 0)
			r.index[k] = (int)ntypes++;
	if (!ntypes) {
		r.index[T_COUNT] = 0;
		ntypes = 1;
	}
	{
		const char *pairs[T_KINDS];
		size_t n = 0;

		for (k = 0; k < T_KINDS; k++)
			if (r.index[k] >= 0)
				pairs[n++] = type_str[k];
		err = kiln_prof_set_types_str(p, pairs, n);
		if (err)
			goto out;
	}
	p->period_type = p->types[0];
	p->period = 1;
	r.locs = calloc(r.nframes + 1, sizeof(*r.locs));
	r.values = calloc(ntypes, sizeof(*r.values));
	if (!r.locs || !r.values) {
		err = -ENOMEM;
		goto out;
	}
	k_name = kiln_prof_interns(p, "thread_name");
	for (i = 0; i < nprof && !err; i++) {
		const json_t *prof = json_array_get(profiles, i);
		const char *type = kiln_json_str(prof, "type", "");
		double scale;

		k = unit_kind(kiln_json_str(prof, "unit", "none"), &scale);
		r.lset = 0;
		if (nprof > 1) {
			struct kiln_label l;
			char def[32];

			snprintf(def, sizeof(def), "profile %zu", i);
			memset(&l, 0, sizeof(l));
			l.key = k_name;
			l.str = kiln_prof_interns(p, kiln_json_str(prof, "name", def));
			r.lset = kiln_prof_labelset(p, &l, 1);
		}
		if (!strcmp(type, "sampled"))
			err = read_sampled(&r, prof, i, k, scale, d);
		else if (!strcmp(type, "evented"))
			err = read_evented(&r, prof, i, k, scale, d);
		else
			err = kiln_diag(d, "profile %zu: type '%.20s' is neither "
					"\"sampled\" nor \"evented\"", i, type);
	}
	if (!err && !p->nsamples && !p->err)
		err = kiln_diag(d, "no samples in %zu profile%s", nprof,
				nprof == 1 ? "" : "s");
out:
	free(r.locs);
	free(r.values);
	free(r.stack);
	json_decref(root);
	return err ? err : p->err;
}
