/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof writer (format stage): the model into profile.proto, packed by
 * protobuf-c and gzipped.
 *
 * Writing maps the model 1:1: model string, function, mapping and location
 * ids are the pprof string indexes and ids.  The protobuf-c structs are
 * allocated in bulk (one array per record kind, pointer arrays into them,
 * sample values pointing into the model), so a profile with a million
 * samples costs a few large allocations, and the output depends only on
 * the model (same profile, same bytes).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "format/format.h"
#include "format/pprofint.h"
#include "profile/profile.h"
#include "util/buf.h"

/*
 * gzip level for written profiles.  Level 1 (what Go's runtime/pprof
 * uses) is several times faster than the default on big profiles and
 * protobuf's repetitive bytes still shrink well.
 */
#define PPROF_GZIP_LEVEL 1

/* The bulk arrays behind one Profile message. */
struct wr {
	pb_profile prof;
	pb_value_type *vt;		/* ntypes + 1: the last is period_type */
	pb_value_type **vtp;
	pb_sample *smp;
	pb_sample **smpp;
	uint64_t *locids;		/* a copy of p->stacks, widened */
	pb_label *lab;
	pb_label **labp;
	pb_mapping *map;
	pb_mapping **mapp;
	pb_location *loc;
	pb_location **locp;
	pb_line *line;
	pb_line **linep;
	pb_function *fn;
	pb_function **fnp;
	char **strs;
	int64_t *comments;
	/* The time column as samples (docs/formats.md, "Sample times"): one
	 * time label per event, label pointer runs, the samples' values
	 * beyond their events'. */
	pb_label *tlab;
	pb_label **tlabp;
	int64_t *rest;
	uint8_t *timed;		/* per sample: has events */
	size_t nsmp;		/* samples written */
	uint64_t k_time, k_ns;	/* string indexes */
};

static void wr_release(struct wr *w)
{
	free(w->vt);
	free(w->vtp);
	free(w->smp);
	free(w->smpp);
	free(w->locids);
	free(w->lab);
	free(w->labp);
	free(w->map);
	free(w->mapp);
	free(w->loc);
	free(w->locp);
	free(w->line);
	free(w->linep);
	free(w->fn);
	free(w->fnp);
	free(w->strs);
	free(w->comments);
	free(w->tlab);
	free(w->tlabp);
	free(w->rest);
	free(w->timed);
}

/* Allocates w's arrays for p (times: its events as samples too): 0 or
 * -ENOMEM. */
static int wr_alloc(struct wr *w, const struct kiln_prof *p, bool times)
{
	size_t nev = times ? p->nevents : 0, i, nlp = 0;

	for (i = 0; i < nev; i++) {
		uint32_t ls = p->samples[p->events[i].sample].labels;

		nlp += (ls ? p->labelsets[ls].n : 0) + 1;
	}
	w->tlab = bulk(nev, sizeof(*w->tlab));
	w->tlabp = bulk(nlp, sizeof(*w->tlabp));
	w->rest = bulk(nev ? p->nsamples * p->ntypes : 0, sizeof(*w->rest));
	w->timed = bulk(nev ? p->nsamples : 0, 1);
	w->vt = bulk(p->ntypes + 1, sizeof(*w->vt));
	w->vtp = bulk(p->ntypes, sizeof(*w->vtp));
	w->smp = bulk(p->nsamples + nev, sizeof(*w->smp));
	w->smpp = bulk(p->nsamples + nev, sizeof(*w->smpp));
	w->locids = bulk(p->nstacks, sizeof(*w->locids));
	w->lab = bulk(p->nlabels, sizeof(*w->lab));
	w->labp = bulk(p->nlabels, sizeof(*w->labp));
	w->map = bulk(p->nmappings, sizeof(*w->map));
	w->mapp = bulk(p->nmappings, sizeof(*w->mapp));
	w->loc = bulk(p->nlocations, sizeof(*w->loc));
	w->locp = bulk(p->nlocations, sizeof(*w->locp));
	w->line = bulk(p->nlines, sizeof(*w->line));
	w->linep = bulk(p->nlines, sizeof(*w->linep));
	w->fn = bulk(p->nfunctions, sizeof(*w->fn));
	w->fnp = bulk(p->nfunctions, sizeof(*w->fnp));
	w->strs = bulk(p->nstrs + 2, sizeof(*w->strs));
	w->comments = bulk(p->ncomments, sizeof(*w->comments));
	if (!w->vt || !w->vtp || !w->smp || !w->smpp || !w->locids ||
	    !w->lab || !w->labp || !w->map || !w->mapp || !w->loc ||
	    !w->locp || !w->line || !w->linep || !w->fn || !w->fnp ||
	    !w->strs || !w->comments || !w->tlab || !w->tlabp || !w->rest ||
	    !w->timed)
		return -ENOMEM;
	return 0;
}

/* The string table and the sample types. */
static void wr_strings(struct wr *w, const struct kiln_prof *p, bool times)
{
	static const pb_value_type vt_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	pb_profile *pr = &w->prof;
	size_t i;

	/* Strings: pointers into the model (protobuf-c only reads them). */
	for (i = 0; i < p->nstrs; i++)
		w->strs[i] = (char *)kiln_prof_str(p, (uint32_t)i);
	pr->n_string_table = p->nstrs;
	pr->string_table = w->strs;
	/* The time label's key and unit, added where the model lacks them
	 * (readers of timed inputs intern them). */
	w->k_time = kiln_prof_find_str(p, "time", 4);
	w->k_ns = kiln_prof_find_str(p, "nanoseconds", 11);
	if (times && p->nevents && !w->k_time) {
		w->k_time = pr->n_string_table;
		w->strs[pr->n_string_table++] = "time";
	}
	if (times && p->nevents && !w->k_ns) {
		w->k_ns = pr->n_string_table;
		w->strs[pr->n_string_table++] = "nanoseconds";
	}

	for (i = 0; i < p->ntypes; i++) {
		w->vt[i] = vt_init;
		w->vt[i].type = p->types[i].type;
		w->vt[i].unit = p->types[i].unit;
		w->vtp[i] = &w->vt[i];
	}
	pr->n_sample_type = p->ntypes;
	pr->sample_type = w->vtp;
}

/* The labels and the samples. */
static void wr_samples(struct wr *w, const struct kiln_prof *p)
{
	static const pb_label lab_init = PERFTOOLS__PROFILES__LABEL__INIT;
	pb_profile *pr = &w->prof;
	size_t i;

	/* Labels: one Label per pooled model label; a sample points at the
	 * run of its label set, shared by all samples with that set. */
	for (i = 0; i < p->nlabels; i++) {
		const struct kiln_label *l = &p->labels[i];

		w->lab[i] = lab_init;
		w->lab[i].key = l->key;
		w->lab[i].str = l->str;
		w->lab[i].num = l->num;
		w->lab[i].num_unit = l->unit;
		w->labp[i] = &w->lab[i];
	}

	for (i = 0; i < p->nstacks; i++)
		w->locids[i] = p->stacks[i];
	pr->sample = w->smpp;
}

/* A sample of p's sample i's stack with values v and labels l[0..nl). */
static void wr_sample(struct wr *w, const struct kiln_prof *p, size_t i,
		      const int64_t *v, pb_label **l, size_t nl)
{
	static const pb_sample smp_init = PERFTOOLS__PROFILES__SAMPLE__INIT;
	const struct kiln_sample *s = &p->samples[i];
	pb_sample *o = &w->smp[w->nsmp];

	*o = smp_init;
	o->n_location_id = s->depth;
	o->location_id = s->depth ? w->locids + s->stack : NULL;
	o->n_value = p->ntypes;
	o->value = p->ntypes ? (int64_t *)v : NULL;
	o->n_label = nl;
	o->label = nl ? l : NULL;
	w->smpp[w->nsmp++] = o;
}

/*
 * The samples, each as one pprof sample with its labels; with times
 * (wr_events() did them), a sample with events only for what its events
 * leave (when anything).
 */
static void wr_plain(struct wr *w, const struct kiln_prof *p, bool times)
{
	size_t i, k;

	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const struct kiln_labelset *ls = s->labels ?
			&p->labelsets[s->labels] : NULL;
		const int64_t *v = p->values + i * p->ntypes;

		if (times && p->nevents) {
			int64_t *r = w->rest + i * p->ntypes;
			bool left = !w->timed[i];

			for (k = 0; k < p->ntypes; k++)
				left |= r[k] != 0;
			if (!left)
				continue;
			v = r;
		}
		wr_sample(w, p, i, v, ls ? w->labp + ls->first : NULL,
			  ls ? ls->n : 0);
	}
}

/*
 * The time column as pprof samples, as kiln wrote times before the
 * column: per event its sample's stack, the event's values and the
 * sample's labels with a numeric "time" label (nanoseconds) before any
 * "state" label, else last.  Fills w->rest with what is left of each
 * sample's values.
 */
static void wr_events(struct wr *w, const struct kiln_prof *p)
{
	static const pb_label lab_init = PERFTOOLS__PROFILES__LABEL__INIT;
	uint32_t k_state = kiln_prof_find_str(p, "state", 5);
	size_t i, k, nlp = 0;

	if (!p->nevents)
		return;
	for (i = 0; i < p->nsamples * p->ntypes; i++)
		w->rest[i] = p->values[i];
	for (i = 0; i < p->nevents; i++) {
		const struct kiln_prof_event *e = &p->events[i];
		const struct kiln_sample *s = &p->samples[e->sample];
		const struct kiln_labelset *ls = s->labels ?
			&p->labelsets[s->labels] : NULL;
		const int64_t *v = kiln_prof_event_values(p, i);
		pb_label **run = w->tlabp + nlp;
		uint32_t n = ls ? ls->n : 0, j, at = n;

		w->timed[e->sample] = 1;
		for (k = 0; k < p->ntypes; k++)
			w->rest[e->sample * p->ntypes + k] = (int64_t)(
				(uint64_t)w->rest[e->sample * p->ntypes + k] -
				(uint64_t)v[k]);
		w->tlab[i] = lab_init;
		w->tlab[i].key = (int64_t)w->k_time;
		w->tlab[i].num = e->time;
		w->tlab[i].num_unit = (int64_t)w->k_ns;
		for (j = 0; j < n; j++)
			if (k_state && p->labels[ls->first + j].key == k_state) {
				at = j;
				break;
			}
		for (j = 0; j < at; j++)
			run[j] = w->labp[ls->first + j];
		run[at] = &w->tlab[i];
		for (j = at; j < n; j++)
			run[j + 1] = w->labp[ls->first + j];
		nlp += n + 1;
		wr_sample(w, p, e->sample, v, run, n + 1);
	}
}

/* The mappings. */
static void wr_mappings(struct wr *w, const struct kiln_prof *p)
{
	static const pb_mapping map_init = PERFTOOLS__PROFILES__MAPPING__INIT;
	pb_profile *pr = &w->prof;
	size_t i;

	for (i = 0; i < p->nmappings; i++) {
		const struct kiln_mapping *m = &p->mappings[i + 1];
		pb_mapping *o = &w->map[i];

		*o = map_init;
		o->id = i + 1;
		o->memory_start = m->start;
		o->memory_limit = m->limit;
		o->file_offset = m->offset;
		o->filename = m->file;
		o->build_id = m->build_id;
		o->has_functions = m->has_functions;
		o->has_filenames = m->has_filenames;
		o->has_line_numbers = m->has_line_numbers;
		o->has_inline_frames = m->has_inline_frames;
		w->mapp[i] = o;
	}
	pr->n_mapping = p->nmappings;
	pr->mapping = w->mapp;
}

/* The lines, the locations and the functions. */
static void wr_locations(struct wr *w, const struct kiln_prof *p)
{
	static const pb_location loc_init = PERFTOOLS__PROFILES__LOCATION__INIT;
	static const pb_line line_init = PERFTOOLS__PROFILES__LINE__INIT;
	static const pb_function fn_init = PERFTOOLS__PROFILES__FUNCTION__INIT;
	pb_profile *pr = &w->prof;
	size_t i;

	for (i = 0; i < p->nlines; i++) {
		w->line[i] = line_init;
		w->line[i].function_id = p->lines[i].function;
		w->line[i].line = p->lines[i].line;
		w->linep[i] = &w->line[i];
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct kiln_location *l = &p->locations[i + 1];
		pb_location *o = &w->loc[i];

		*o = loc_init;
		o->id = i + 1;
		o->mapping_id = l->mapping;
		o->address = l->address;
		o->n_line = l->nlines;
		o->line = l->nlines ? w->linep + l->line0 : NULL;
		o->is_folded = l->is_folded;
		w->locp[i] = o;
	}
	pr->n_location = p->nlocations;
	pr->location = w->locp;

	for (i = 0; i < p->nfunctions; i++) {
		const struct kiln_function *f = &p->functions[i + 1];
		pb_function *o = &w->fn[i];

		*o = fn_init;
		o->id = i + 1;
		o->name = f->name;
		o->system_name = f->system_name;
		o->filename = f->filename;
		o->start_line = f->start_line;
		w->fnp[i] = o;
	}
	pr->n_function = p->nfunctions;
	pr->function = w->fnp;
}

/* Fills w->prof from p; every pointer refers to w's arrays or to p. */
static int wr_build(struct wr *w, const struct kiln_prof *p, bool times)
{
	static const pb_profile prof_init = PERFTOOLS__PROFILES__PROFILE__INIT;
	static const pb_value_type vt_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	pb_profile *pr = &w->prof;
	size_t i;
	int err;

	*pr = prof_init;
	err = wr_alloc(w, p, times);
	if (err)
		return err;
	wr_strings(w, p, times);
	wr_samples(w, p);
	if (times)
		wr_events(w, p);
	wr_plain(w, p, times);
	w->prof.n_sample = w->nsmp;
	wr_mappings(w, p);
	wr_locations(w, p);

	if (p->period_type.type || p->period_type.unit) {
		w->vt[p->ntypes] = vt_init;
		w->vt[p->ntypes].type = p->period_type.type;
		w->vt[p->ntypes].unit = p->period_type.unit;
		pr->period_type = &w->vt[p->ntypes];
	}
	pr->period = p->period;
	pr->time_nanos = p->time_nanos;
	pr->duration_nanos = p->duration_nanos;
	pr->drop_frames = p->drop_frames;
	pr->keep_frames = p->keep_frames;
	pr->default_sample_type = p->default_type;
	for (i = 0; i < p->ncomments; i++)
		w->comments[i] = p->comments[i];
	pr->n_comment = p->ncomments;
	pr->comment = w->comments;
	return 0;
}

int kiln_pprof_write(const struct kiln_prof *p, struct kiln_buf *out,
		     bool compress)
{
	return kiln_pprof_write_times(p, out, compress, true);
}

int kiln_pprof_write_times(const struct kiln_prof *p, struct kiln_buf *out,
			   bool compress, bool times)
{
	struct wr w;
	size_t size;
	uint8_t *tmp;
	int err;

	if (p->err)
		return p->err;
	memset(&w, 0, sizeof(w));
	err = wr_build(&w, p, times);
	if (err)
		goto out_release;
	size = perftools__profiles__profile__get_packed_size(&w.prof);
	if (compress) {
		tmp = malloc(size ? size : 1);
		if (!tmp) {
			err = -ENOMEM;
			goto out_release;
		}
		perftools__profiles__profile__pack(&w.prof, tmp);
		err = kiln_gzip(tmp, size, PPROF_GZIP_LEVEL, out);
		free(tmp);
	} else {
		err = kiln_buf_grow(out, size + 1);
		if (err)
			goto out_release;
		perftools__profiles__profile__pack(&w.prof,
						   (uint8_t *)out->data + out->len);
		out->len += size;
		out->data[out->len] = '\0';
	}
out_release:
	wr_release(&w);
	return err;
}
