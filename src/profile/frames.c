/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A profile's frames (profile stage): locations expanded into frames,
 * inline ones innermost first, and the names of frames without a
 * function ("[libfoo.so]").  See profile.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "util/buf.h"

/*
 * The name of a location nothing names: its module in brackets, as
 * FlameGraph's stackcollapse-perf.pl and perf report name such frames
 * ("[libfoo.so]", "[perf-1234.map]"; "[vdso]" and other bracketed
 * mappings as they are), "[unknown]" only without a module.  One name per
 * module, not per address, so that a flame graph shows a stripped library
 * or a JIT region as one frame, not hundreds of slivers; the address stays
 * in the location for views by address (kiln top --addresses).
 */
static uint32_t fallback_name(struct kiln_prof *p, uint32_t loc)
{
	struct kiln_location *l = &p->locations[loc];
	const char *file = NULL, *base;
	char tmp[512];

	if (l->fallback)
		return l->fallback;
	if (l->mapping && p->mappings[l->mapping].file)
		file = kiln_prof_str(p, p->mappings[l->mapping].file);
	if (!file || !*file) {
		l->fallback = kiln_prof_interns(p, "[unknown]");
		return l->fallback;
	}
	if (file[0] == '[') {
		/* [kernel.kallsyms], [vdso], [unknown]: already a name. */
		l->fallback = kiln_prof_interns(p, file);
		return l->fallback;
	}
	base = strrchr(file, '/');
	base = base && base[1] ? base + 1 : file;
	snprintf(tmp, sizeof(tmp), "[%s]", base);
	l->fallback = kiln_prof_interns(p, tmp);
	return l->fallback;
}

int kiln_prof_name_all(struct kiln_prof *p)
{
	size_t i;
	uint32_t j;

	for (i = 1; i <= p->nlocations && !p->err; i++) {
		const struct kiln_location *l = &p->locations[i];
		bool bare = !l->nlines;

		for (j = 0; j < l->nlines && !bare; j++)
			bare = !p->functions[p->lines[l->line0 + j].function].name;
		if (bare)
			fallback_name(p, (uint32_t)i);
	}
	return p->err;
}

/* Appends location loc's frames to *frames from index n (grown as
 * needed).  The new count, or -ENOMEM. */
static long loc_frames(struct kiln_prof *p, uint32_t loc,
		       struct kiln_frame **frames, size_t *cap, size_t n)
{
	const struct kiln_location *l = &p->locations[loc];
	uint32_t nl = l->nlines ? l->nlines : 1, j;

	if (KILN_GROW(*frames, *cap, n + nl, 64))
		return -ENOMEM;
	if (!l->nlines) {
		struct kiln_frame *f = &(*frames)[n++];

		f->name = fallback_name(p, loc);
		f->function = 0;
		f->location = loc;
		f->line = 0;
		return p->err ? p->err : (long)n;
	}
	for (j = 0; j < l->nlines; j++) {
		const struct kiln_line *ln = &p->lines[l->line0 + j];
		struct kiln_frame *f = &(*frames)[n++];
		uint32_t name = p->functions[ln->function].name;

		f->function = ln->function;
		f->location = loc;
		f->line = ln->line;
		f->name = name ? name : fallback_name(p, loc);
		/* fallback_name() may move p->locations. */
		l = &p->locations[loc];
	}
	return (long)n;
}

long kiln_prof_frames(struct kiln_prof *p, const struct kiln_sample *s,
		      struct kiln_frame **frames, size_t *cap)
{
	const uint32_t *locs = kiln_prof_sample_locs(p, s);
	long n = 0;
	uint32_t i;

	for (i = 0; i < s->depth && n >= 0; i++)
		n = loc_frames(p, locs[i], frames, cap, (size_t)n);
	return n;
}

long kiln_prof_loc_frames(struct kiln_prof *p, uint32_t loc,
			  struct kiln_frame **frames, size_t *cap)
{
	return loc_frames(p, loc, frames, cap, 0);
}

enum kiln_kind kiln_prof_loc_kind(const struct kiln_prof *p, uint32_t loc)
{
	const struct kiln_location *l = &p->locations[loc];

	if (l->address >= 0xffff800000000000ull)
		return KILN_KIND_KERNEL;
	if (!l->mapping || !p->mappings[l->mapping].file)
		return KILN_KIND_OTHER;
	/* Per frame in every writer: the name was judged once, when the
	 * mapping was added. */
	return (enum kiln_kind)p->mappings[l->mapping].kind;
}
