/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Firefox Profiler writer's tables (format stage, internal to
 * format/firefox.c and format/firefox-tables.c): the state of one write,
 * the tables shared by all threads (profile.shared) and the threads.
 */
#ifndef KILN_FORMAT_FIREFOXINT_H
#define KILN_FORMAT_FIREFOXINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"

/* meta.categories, by index; frames take theirs from their code's kind. */
enum { CAT_OTHER, CAT_USER, CAT_LIB, CAT_KERNEL, CAT_STATE };

struct ffunc {
	uint32_t name;		/* stringArray index */
	int32_t res, src;	/* -1: none */
	int64_t line;		/* 0: none */
};

struct fres {
	uint32_t name;		/* stringArray index (base name) */
	uint32_t path, build;	/* kiln string ids */
};

struct fframe {
	int64_t addr;		/* -1: none */
	int32_t lib;		/* = resource index, -1: none */
	uint32_t depth, cat, func;
	int64_t line;		/* 0: none */
};

struct fstack {
	uint32_t frame;
	int32_t prefix;		/* -1: a root */
};

struct fthread {
	int64_t pid, tid;
	uint32_t name;		/* kiln string id, 0: none */
};

struct frec {
	uint32_t thread;
	int64_t time;		/* ns since time_nanos, -1: none */
	size_t sample;
	size_t ord;		/* its place in the model: events, then samples */
	const int64_t *v;	/* its values: the event's, or the sample's */
};

struct ff {
	struct kiln_prof *p;
	struct kiln_buf strings;	/* stringArray's body */
	uint32_t nstrings;
	uint32_t *str_of;	/* kiln string id -> index + 1 */
	uint32_t *fn_func;	/* kiln function id -> func + 1 */
	uint32_t *name_func;	/* kiln string id (unnamed frames) -> func + 1 */
	uint32_t *file_res;	/* kiln string id of a file -> resource + 1 */
	uint32_t *file_src;	/* kiln string id of a file -> source + 1 */
	uint32_t *loc_frame;	/* location id -> first frame + 1 */
	int32_t *sample_stack;	/* sample -> stack + 1 */
	struct ffunc *funcs;
	size_t nfuncs, funcs_alloc;
	struct fres *res;
	size_t nres, res_alloc;
	uint32_t *srcs;		/* stringArray index of the file name */
	size_t nsrcs, srcs_alloc;
	struct fframe *frames;
	size_t nframes, frames_alloc;
	struct fstack *stacks;
	size_t nstacks, stacks_alloc;
	struct kiln_htab stack_index;
	struct fthread *threads;
	size_t nthreads, threads_alloc;
	struct kiln_htab thread_index;
	struct kiln_frame *fr;	/* kiln_prof_frames()'s buffer */
	size_t fr_cap;
};


/* Allocates f's tables for writing the samples of type `type` of p,
 * interning first what the write will name.  0 or -ENOMEM. */
int kiln_fftab_init(struct ff *f, struct kiln_prof *p, int type);
/* Frees f's contents. */
void kiln_fftab_release(struct ff *f);
/* The stringArray index of kiln string id, added on first use; or a
 * negative errno. */
long kiln_fftab_str(struct ff *f, uint32_t id);
/* The stack (leaf node) of sample i, added with its frames, functions and
 * libraries on first use; -1 for a sample without frames, or a negative
 * errno below -1. */
long kiln_fftab_stack(struct ff *f, size_t i);
/* Appends "libs":[...], and "shared":{...}, (the tables as they are). */
int kiln_fftab_libs(struct ff *f, struct kiln_buf *out);
int kiln_fftab_shared(struct ff *f, struct kiln_buf *out);

#endif
