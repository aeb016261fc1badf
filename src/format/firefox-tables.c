/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Firefox Profiler writer's shared tables (format stage; the writer is
 * format/firefox.c): strings, functions, frames (one per inline frame of
 * a location, the outermost at inline depth 0), resources and libraries
 * (one per mapped file, the breakpad id from the build id), sources (file
 * names) and the stack tree, parents first (prefixOffset), as version 70
 * of the processed format has them in profile.shared.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/firefoxint.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/htab.h"
/* The stringArray index of kiln string id, added on first use. */
long kiln_fftab_str(struct ff *f, uint32_t id)
{
	const struct kiln_prof *p = f->p;
	int err;

	if (f->str_of[id])
		return (long)f->str_of[id] - 1;
	err = kiln_buf_adds(&f->strings, f->nstrings ? ",\n" : "\n");
	if (!err)
		err = kiln_buf_add_json(&f->strings, kiln_prof_str(p, id),
					kiln_prof_strlen(p, id));
	if (err)
		return err;
	f->str_of[id] = ++f->nstrings;
	return (long)f->nstrings - 1;
}

/* The last path component of kiln string id, interned. */
static uint32_t base_name(struct kiln_prof *p, uint32_t id)
{
	const char *s = kiln_prof_str(p, id), *b = strrchr(s, '/');

	return b && b[1] ? kiln_prof_interns(p, b + 1) : id;
}

/* The resource (and library) of a mapped file, -1 for none. */
static long ff_res(struct ff *f, uint32_t mapping)
{
	struct kiln_prof *p = f->p;
	const struct kiln_mapping *m;
	uint32_t name;
	long s;

	if (!mapping || !p->mappings[mapping].file)
		return -1;
	m = &p->mappings[mapping];
	if (f->file_res[m->file])
		return (long)f->file_res[m->file] - 1;
	name = base_name(p, m->file);	/* interned by prepare() */
	if (p->err)
		return p->err;
	s = kiln_fftab_str(f, name);
	if (s < 0)
		return s;
	if (KILN_GROW(f->res, f->res_alloc, f->nres + 1, 16))
		return -ENOMEM;
	f->res[f->nres] = (struct fres){ (uint32_t)s, m->file, m->build_id };
	f->file_res[m->file] = (uint32_t)++f->nres;
	return (long)f->nres - 1;
}

static long ff_src(struct ff *f, uint32_t file)
{
	long s;

	if (!file)
		return -1;
	if (f->file_src[file])
		return (long)f->file_src[file] - 1;
	s = kiln_fftab_str(f, file);
	if (s < 0)
		return s;
	if (KILN_GROW(f->srcs, f->srcs_alloc, f->nsrcs + 1, 16))
		return -ENOMEM;
	f->srcs[f->nsrcs] = (uint32_t)s;
	f->file_src[file] = (uint32_t)++f->nsrcs;
	return (long)f->nsrcs - 1;
}

/* The function of a frame: by function id, or by name for a frame
 * without one ("[libfoo.so]"). */
static long ff_func(struct ff *f, const struct kiln_frame *k, long res)
{
	const struct kiln_prof *p = f->p;
	const struct kiln_function *fn = k->function ?
		&p->functions[k->function] : NULL;
	uint32_t *slot = fn ? &f->fn_func[k->function] : &f->name_func[k->name];
	long name, src;

	if (*slot)
		return (long)*slot - 1;
	name = kiln_fftab_str(f, k->name);
	if (name < 0)
		return name;
	src = fn ? ff_src(f, fn->filename) : -1;
	if (src < -1)
		return src;
	if (KILN_GROW(f->funcs, f->funcs_alloc, f->nfuncs + 1, 256))
		return -ENOMEM;
	f->funcs[f->nfuncs] = (struct ffunc){ (uint32_t)name, (int32_t)res,
					      (int32_t)src,
					      fn && fn->start_line > 0 ?
					      fn->start_line : 0 };
	*slot = (uint32_t)++f->nfuncs;
	return (long)f->nfuncs - 1;
}

static uint32_t kind_category(enum kiln_kind k)
{
	switch (k) {
	case KILN_KIND_USER: return CAT_USER;
	case KILN_KIND_LIB: return CAT_LIB;
	case KILN_KIND_KERNEL: return CAT_KERNEL;
	default: return CAT_OTHER;
	}
}

/*
 * The frames of location k[0].location, whose n inline frames (innermost
 * first) are k[0..n): made once, consecutive, the outermost at inline
 * depth 0.  Returns the index of the frame of k[0].
 */
static long ff_frames(struct ff *f, const struct kiln_frame *k, size_t n)
{
	struct kiln_prof *p = f->p;
	const struct kiln_location *l = &p->locations[k->location];
	const struct kiln_mapping *m = l->mapping ? &p->mappings[l->mapping] : NULL;
	uint32_t cat = kind_category(kiln_prof_loc_kind(p, k->location));
	int64_t addr = -1;
	long res, fn;
	size_t j;

	if (f->loc_frame[k->location])
		return (long)f->loc_frame[k->location] - 1;
	res = ff_res(f, l->mapping);
	if (res < -1)
		return res;
	/* Library-relative: the file offset, as perf prints it. */
	if (res >= 0 && m && m->limit > m->start && l->address >= m->start)
		addr = (int64_t)(l->address - m->start + m->offset);
	if (KILN_GROW(f->frames, f->frames_alloc, f->nframes + n, 256))
		return -ENOMEM;
	for (j = 0; j < n; j++) {
		fn = ff_func(f, &k[j], res);
		if (fn < 0)
			return fn;
		f->frames[f->nframes + j] = (struct fframe){
			addr, (int32_t)res, (uint32_t)(n - 1 - j), cat,
			(uint32_t)fn, k[j].line > 0 ? k[j].line : 0 };
	}
	f->loc_frame[k->location] = (uint32_t)f->nframes + 1;
	f->nframes += n;
	return (long)f->nframes - (long)n;
}

struct skey {
	const struct ff *f;
	struct fstack s;
};

static bool skey_eq(const void *ctx, uint32_t id)
{
	const struct skey *k = ctx;
	const struct fstack *s = &k->f->stacks[id - 1];

	return s->frame == k->s.frame && s->prefix == k->s.prefix;
}

static long ff_stack_node(struct ff *f, int32_t prefix, uint32_t frame)
{
	struct skey k = { f, { frame, prefix } };
	uint32_t hash = (uint32_t)kiln_hash(&k.s, sizeof(k.s));
	uint32_t id = kiln_htab_find(&f->stack_index, hash, skey_eq, &k);

	if (id)
		return (long)id - 1;
	if (KILN_GROW(f->stacks, f->stacks_alloc, f->nstacks + 1, 256))
		return -ENOMEM;
	f->stacks[f->nstacks] = k.s;
	if (kiln_htab_insert(&f->stack_index, hash, (uint32_t)f->nstacks + 1))
		return -ENOMEM;
	return (long)f->nstacks++;
}

/* The stack of sample i (its leaf node), -1 for a sample without frames. */
long kiln_fftab_stack(struct ff *f, size_t i)
{
	struct kiln_prof *p = f->p;
	long nf, j, first, fr, node = -1;
	size_t n;

	if (f->sample_stack[i])
		return (long)f->sample_stack[i] - 1;
	/* The names it interns ("[libfoo.so]") prepare() interned. */
	nf = kiln_prof_frames(p, &p->samples[i], &f->fr, &f->fr_cap);
	if (nf < 0)
		return nf;
	for (j = nf - 1; j >= 0; j = first - 1) {
		/* The frames of one location, first..j: as many as its lines
		 * (kiln_prof_frames()), not as many alike in a row, which a
		 * recursion through one call site also gives. */
		const struct kiln_location *l = &p->locations[f->fr[j].location];

		n = l->nlines ? l->nlines : 1;
		first = j - (long)n + 1;
		if (first < 0)
			return -EINVAL;
		fr = ff_frames(f, &f->fr[first], n);
		if (fr < 0)
			return fr;
		/* Root first: the outermost (last) frame of the location. */
		for (; n > 0; n--) {
			node = ff_stack_node(f, (int32_t)node, (uint32_t)fr + (uint32_t)n - 1);
			if (node < 0)
				return node;
		}
	}
	f->sample_stack[i] = (int32_t)node + 1;
	return node;
}

/*
 * Interns what writing will name, so that the tables indexed by string id
 * can be sized once: the base names of mapped files and the names of
 * frames without a function.
 */
int kiln_fftab_init(struct ff *f, struct kiln_prof *p, int type)
{
	size_t i;

	memset(f, 0, sizeof(*f));
	f->p = p;
	kiln_htab_init(&f->stack_index);
	kiln_htab_init(&f->thread_index);

	for (i = 1; i <= p->nmappings; i++)
		if (p->mappings[i].file)
			base_name(p, p->mappings[i].file);
	for (i = 0; i < p->nsamples && !p->err; i++)
		if (kiln_prof_value(p, i, (size_t)type) > 0 &&
		    kiln_prof_frames(p, &p->samples[i], &f->fr, &f->fr_cap) < 0)
			return -ENOMEM;
	if (p->err)
		return p->err;
	f->str_of = calloc(p->nstrs + 1, sizeof(*f->str_of));
	f->name_func = calloc(p->nstrs + 1, sizeof(*f->name_func));
	f->file_res = calloc(p->nstrs + 1, sizeof(*f->file_res));
	f->file_src = calloc(p->nstrs + 1, sizeof(*f->file_src));
	f->fn_func = calloc(p->nfunctions + 1, sizeof(*f->fn_func));
	f->loc_frame = calloc(p->nlocations + 1, sizeof(*f->loc_frame));
	f->sample_stack = calloc(p->nsamples + 1, sizeof(*f->sample_stack));
	if (!f->str_of || !f->name_func || !f->file_res || !f->file_src ||
	    !f->fn_func || !f->loc_frame || !f->sample_stack)
		return -ENOMEM;
	return 0;
}

/* The samples of the chosen type as records, in thread and time order. */

/*
 * A Linux library's breakpad id from its ELF build id (hex): the first 16
 * bytes as a GUID, its first three fields byte-swapped, then age 0.
 */
static void breakpad_id(const char *hex, char *out, size_t size)
{
	unsigned char b[16] = { 0 };
	static const int order[16] = { 3, 2, 1, 0, 5, 4, 7, 6,
				       8, 9, 10, 11, 12, 13, 14, 15 };
	size_t i, n = strlen(hex) / 2;
	unsigned int v;

	out[0] = '\0';
	if (!n || size < 34)
		return;
	for (i = 0; i < n && i < 16; i++) {
		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return;
		b[i] = (unsigned char)v;
	}
	for (i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02X", b[order[i]]);
	out[32] = '0';
	out[33] = '\0';
}

int kiln_fftab_libs(struct ff *f, struct kiln_buf *out)
{
	const struct kiln_prof *p = f->p;
	char bp[40];
	size_t i;
	int err = kiln_buf_adds(out, "\"libs\":[");

	for (i = 0; i < f->nres && !err; i++) {
		const struct fres *r = &f->res[i];
		const char *path = kiln_prof_str(p, r->path);
		const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
		const char *build = kiln_prof_str(p, r->build);

		breakpad_id(build, bp, sizeof(bp));
		err = kiln_buf_addf(out, "%s\n{\"arch\":\"\",\"name\":", i ? "," : "");
		if (!err)
			err = kiln_buf_add_json(out, base, strlen(base));
		if (!err)
			err = kiln_buf_adds(out, ",\"path\":");
		if (!err)
			err = kiln_buf_add_json(out, path, strlen(path));
		if (!err)
			err = kiln_buf_adds(out, ",\"debugName\":");
		if (!err)
			err = kiln_buf_add_json(out, base, strlen(base));
		if (!err)
			err = kiln_buf_adds(out, ",\"debugPath\":");
		if (!err)
			err = kiln_buf_add_json(out, path, strlen(path));
		if (!err)
			err = kiln_buf_addf(out, ",\"breakpadId\":\"%s\",\"codeId\":", bp);
		if (!err && *build)
			err = kiln_buf_add_json(out, build, strlen(build));
		else if (!err)
			err = kiln_buf_adds(out, "null");
		if (!err)
			err = kiln_buf_addc(out, '}');
	}
	return err ? err : kiln_buf_adds(out, "],\n");
}

/* An int64 column of a table of n rows; null where it is `none`. */
#define COL(name, n, expr, none) do {					\
	err = err ? err : kiln_buf_adds(out, "\"" name "\":[");		\
	for (i = 0; i < (n) && !err; i++) {				\
		int64_t v_ = (int64_t)(expr);				\
		err = v_ == (none) ?					\
			kiln_buf_adds(out, i ? ",null" : "null") :	\
			kiln_buf_addf(out, "%s%" PRId64, i ? "," : "", v_); \
	}								\
	err = err ? err : kiln_buf_adds(out, "],");			\
} while (0)

/* A column of n copies of text (null, false, ...). */
static int const_col(struct kiln_buf *out, const char *name, size_t n,
		     const char *text)
{
	size_t i;
	int err = kiln_buf_addf(out, "\"%s\":[", name);

	for (i = 0; i < n && !err; i++)
		err = kiln_buf_addf(out, "%s%s", i ? "," : "", text);
	return err ? err : kiln_buf_adds(out, "],");
}

int kiln_fftab_shared(struct ff *f, struct kiln_buf *out)
{
	size_t i;
	int err = kiln_buf_adds(out, "\"shared\":{\n\"stackTable\":{");

	COL("frame", f->nstacks, f->stacks[i].frame, -2);
	COL("prefixOffset", f->nstacks, f->stacks[i].prefix < 0 ? 0 :
	    (int64_t)i - f->stacks[i].prefix, -2);
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"frameTable\":{",
					f->nstacks);
	COL("address", f->nframes, f->frames[i].addr, -2);
	COL("lib", f->nframes, f->frames[i].lib, -2);
	COL("inlineDepth", f->nframes, f->frames[i].depth, -2);
	COL("category", f->nframes, f->frames[i].cat, -2);
	COL("subcategory", f->nframes, 0, -2);
	COL("func", f->nframes, f->frames[i].func, -2);
	COL("line", f->nframes, f->frames[i].line, 0);
	err = err ? err : const_col(out, "nativeSymbol", f->nframes, "null");
	err = err ? err : const_col(out, "innerWindowID", f->nframes, "null");
	err = err ? err : const_col(out, "column", f->nframes, "null");
	err = err ? err : const_col(out, "originalLocation", f->nframes, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"funcTable\":{",
					f->nframes);
	COL("name", f->nfuncs, f->funcs[i].name, -2);
	err = err ? err : const_col(out, "isJS", f->nfuncs, "false");
	err = err ? err : const_col(out, "relevantForJS", f->nfuncs, "false");
	COL("resource", f->nfuncs, f->funcs[i].res, -2);
	COL("source", f->nfuncs, f->funcs[i].src, -1);
	COL("lineNumber", f->nfuncs, f->funcs[i].line, 0);
	err = err ? err : const_col(out, "columnNumber", f->nfuncs, "null");
	err = err ? err : const_col(out, "originalLocation", f->nfuncs, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"resourceTable\":{",
					f->nfuncs);
	COL("name", f->nres, f->res[i].name, -2);
	err = err ? err : const_col(out, "host", f->nres, "null");
	err = err ? err : const_col(out, "type", f->nres, "1");	/* library */
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n\"nativeSymbols\":"
		"{\"libIndex\":[],\"address\":[],\"name\":[],\"functionSize\":[],"
		"\"length\":0},\n\"sources\":{", f->nres);
	err = err ? err : const_col(out, "id", f->nsrcs, "null");
	COL("filename", f->nsrcs, f->srcs[i], -2);
	err = err ? err : const_col(out, "startLine", f->nsrcs, "1");
	err = err ? err : const_col(out, "startColumn", f->nsrcs, "1");
	err = err ? err : const_col(out, "sourceMapURL", f->nsrcs, "null");
	err = err ? err : const_col(out, "content", f->nsrcs, "null");
	err = err ? err : kiln_buf_addf(out, "\"length\":%zu},\n"
		"\"sourceLocationTable\":{\"source\":[],\"line\":[],\"column\":[],"
		"\"length\":0},\n\"stringArray\":[", f->nsrcs);
	if (!err && f->strings.len)
		err = kiln_buf_add(out, f->strings.data, f->strings.len);
	return err ? err : kiln_buf_adds(out, "]},\n");
}

void kiln_fftab_release(struct ff *f)
{
	kiln_buf_release(&f->strings);
	free(f->str_of);
	free(f->fn_func);
	free(f->name_func);
	free(f->file_res);
	free(f->file_src);
	free(f->loc_frame);
	free(f->sample_stack);
	free(f->funcs);
	free(f->res);
	free(f->srcs);
	free(f->frames);
	free(f->stacks);
	kiln_htab_release(&f->stack_index);
	free(f->threads);
	kiln_htab_release(&f->thread_index);
	free(f->fr);
}

