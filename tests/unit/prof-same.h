/* SPDX-License-Identifier: Apache-2.0 */
/*
 * For unit tests of two ways to one model (test-perfscript-par: one
 * thread and several; test-transform: stacks rebuilt or passed as they
 * were): two profiles compared table by table, id for id.  Include after
 * <cmocka.h>.
 */
#ifndef KILN_TESTS_PROF_SAME_H
#define KILN_TESTS_PROF_SAME_H

#include "profile/profile.h"

/* Every table of a and b the same, in the same order (field by field:
 * the structs have padding). */
static inline void prof_same(const struct kiln_prof *a,
			     const struct kiln_prof *b)
{
	size_t i;

	assert_int_equal(a->nstrs, b->nstrs);
	for (i = 0; i < a->nstrs; i++)
		assert_string_equal(kiln_prof_str(a, (uint32_t)i),
				    kiln_prof_str(b, (uint32_t)i));
	assert_int_equal(a->nfunctions, b->nfunctions);
	for (i = 1; i <= a->nfunctions; i++) {
		const struct kiln_function *x = &a->functions[i], *y = &b->functions[i];

		assert_int_equal(x->name, y->name);
		assert_int_equal(x->system_name, y->system_name);
		assert_int_equal(x->filename, y->filename);
		assert_int_equal(x->start_line, y->start_line);
	}
	assert_int_equal(a->nmappings, b->nmappings);
	for (i = 1; i <= a->nmappings; i++) {
		const struct kiln_mapping *x = &a->mappings[i], *y = &b->mappings[i];

		assert_int_equal(x->file, y->file);
		assert_int_equal(x->start, y->start);
		assert_int_equal(x->kind, y->kind);
		assert_int_equal(x->has_functions, y->has_functions);
		assert_int_equal(x->has_filenames, y->has_filenames);
	}
	assert_int_equal(a->nlocations, b->nlocations);
	for (i = 1; i <= a->nlocations; i++) {
		const struct kiln_location *x = &a->locations[i], *y = &b->locations[i];

		assert_int_equal(x->address, y->address);
		assert_int_equal(x->mapping, y->mapping);
		assert_int_equal(x->line0, y->line0);
		assert_int_equal(x->nlines, y->nlines);
	}
	assert_int_equal(a->nlines, b->nlines);
	for (i = 0; i < a->nlines; i++) {
		assert_int_equal(a->lines[i].function, b->lines[i].function);
		assert_int_equal(a->lines[i].line, b->lines[i].line);
	}
	assert_int_equal(a->nlabelsets, b->nlabelsets);
	for (i = 1; i <= a->nlabelsets; i++) {
		assert_int_equal(a->labelsets[i].first, b->labelsets[i].first);
		assert_int_equal(a->labelsets[i].n, b->labelsets[i].n);
	}
	assert_int_equal(a->nlabels, b->nlabels);
	for (i = 0; i < a->nlabels; i++) {
		assert_int_equal(a->labels[i].key, b->labels[i].key);
		assert_int_equal(a->labels[i].str, b->labels[i].str);
		assert_int_equal(a->labels[i].num, b->labels[i].num);
	}
	assert_int_equal(a->ntypes, b->ntypes);
	for (i = 0; i < a->ntypes; i++) {
		assert_int_equal(a->types[i].type, b->types[i].type);
		assert_int_equal(a->types[i].unit, b->types[i].unit);
	}
	assert_int_equal(a->nsamples, b->nsamples);
	for (i = 0; i < a->nsamples; i++) {
		assert_int_equal(a->samples[i].stack, b->samples[i].stack);
		assert_int_equal(a->samples[i].depth, b->samples[i].depth);
		assert_int_equal(a->samples[i].labels, b->samples[i].labels);
	}
	for (i = 0; i < a->nsamples * a->ntypes; i++)
		assert_int_equal(a->values[i], b->values[i]);
	assert_int_equal(a->nstacks, b->nstacks);
	for (i = 0; i < a->nstacks; i++)
		assert_int_equal(a->stacks[i], b->stacks[i]);
	assert_int_equal(a->nevents, b->nevents);
	for (i = 0; i < a->nevents; i++) {
		assert_int_equal(a->events[i].time, b->events[i].time);
		assert_int_equal(a->events[i].sample, b->events[i].sample);
	}
	for (i = 0; i < a->nevents * a->ntypes; i++)
		assert_int_equal(a->ev_values[i], b->ev_values[i]);
	assert_int_equal(a->period, b->period);
	assert_int_equal(a->period_type.type, b->period_type.type);
	assert_int_equal(a->default_type, b->default_type);
	assert_int_equal(a->time_nanos, b->time_nanos);
	assert_int_equal(a->duration_nanos, b->duration_nanos);
}

#endif
