/* SPDX-License-Identifier: Apache-2.0 */
/*
 * /api/disasm (web stage): a function's instructions with the samples
 * the selection has at each, and the source lines they come from.
 *
 * The function's samples are the locations whose outermost frame (the
 * symbol the address is in) is named fn, with an address in a mapping of
 * a file: at the leaf they are its self time at that instruction, at any
 * depth its total (once per sample).  A caller's address is a return
 * address: its time goes to the instruction before it (the call).  The
 * file of the mapping with the most of the function's time is
 * disassembled (symbolize/disasm.c, registered by kiln serve:
 * kiln_web_enable_disasm()), its build ID checked against the mapping's;
 * time at addresses of other files or outside the symbol is counted as
 * "elsewhere".
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "symbolize/disasm.h"
#include "util/buf.h"
#include "web/call.h"

static kiln_web_disasm_fn disasm_at;
static void (*disasm_release)(struct kiln_disasm *);

void kiln_web_set_disasm(kiln_web_disasm_fn at,
			 void (*release)(struct kiln_disasm *))
{
	disasm_at = at;
	disasm_release = release;
}

/* One sampled address of the function: self time at the leaf, total
 * time at the leaf, total time as a caller (a return address). */
enum { HIT_SELF, HIT_LEAF, HIT_CALLER };
struct hit {
	uint32_t mapping;
	uint64_t addr;
	int kind;
	int64_t value;
};

static int hit_cmp(const void *a, const void *b)
{
	const struct hit *x = a, *y = b;

	if (x->mapping != y->mapping)
		return x->mapping < y->mapping ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->kind - y->kind;
}

/* Whether location loc is in function name (its outermost frame's). */
static bool in_fn(const struct kiln_prof *p, uint32_t loc, uint32_t name)
{
	const struct kiln_location *l = &p->locations[loc];

	return l->nlines &&
		p->functions[p->lines[l->line0 + l->nlines - 1].function].name == name;
}

/* The function's sampled addresses in v (sorted, one entry per mapping,
 * address and leaf-ness); *seen: whether any frame is of it at all. */
static int collect(const struct web_view *v, uint32_t name, struct hit **out,
		   size_t *n, bool *seen)
{
	const struct kiln_prof *p = v->prof;
	struct hit *h = NULL;
	size_t cap = 0, k = 0, i, j, w;

	*seen = false;
	for (i = 0; i < p->nsamples; i++) {
		const struct kiln_sample *s = &p->samples[i];
		const uint32_t *locs = kiln_prof_sample_locs(p, s);
		int64_t val = kiln_prof_value(p, i, (size_t)v->type);
		size_t first = k;

		for (j = 0; j < s->depth; j++) {
			const struct kiln_location *l = &p->locations[locs[j]];
			bool dup = false;

			if (!in_fn(p, locs[j], name))
				continue;
			*seen = true;
			if (!l->mapping || !l->address)
				continue;
			/* Total once per sample and address (recursion). */
			for (w = first; w < k && !dup; w++)
				dup = h[w].kind != HIT_SELF && h[w].addr == l->address &&
					h[w].mapping == l->mapping;
			if (dup)
				continue;
			if (KILN_GROW(h, cap, k + 2, 256)) {
				free(h);
				return -ENOMEM;
			}
			h[k++] = (struct hit){ l->mapping, l->address,
					       j ? HIT_CALLER : HIT_LEAF, val };
			if (!j)
				h[k++] = (struct hit){ l->mapping, l->address, HIT_SELF, val };
		}
	}
	if (k)
		qsort(h, k, sizeof(*h), hit_cmp);
	/* Merge equal entries. */
	for (i = 0, w = 0; i < k; i++) {
		if (w && !hit_cmp(&h[w - 1], &h[i]))
			h[w - 1].value += h[i].value;
		else
			h[w++] = h[i];
	}
	*out = h;
	*n = w;
	return 0;
}

/* The mapping with the most of the function's total, and in it the file
 * offset of an instruction of the function: its hottest address (less
 * one for a return address, which may be just past the function). */
static uint32_t hottest_mapping(const struct kiln_prof *p, const struct hit *h,
				size_t n, uint64_t *off)
{
	uint32_t best = 0, cur = 0;
	int64_t bestv = -1, curv = 0, top = -1;
	uint64_t curaddr = 0;
	size_t i;

	for (i = 0; i <= n; i++) {
		if (i == n || h[i].mapping != cur) {
			if (cur && curv > bestv) {
				best = cur;
				bestv = curv;
				*off = curaddr;
			}
			if (i == n)
				break;
			cur = h[i].mapping;
			curv = 0;
			top = -1;
		}
		if (h[i].kind != HIT_SELF) {
			curv += h[i].value;
			if (h[i].value > top) {
				const struct kiln_mapping *m = &p->mappings[cur];

				top = h[i].value;
				curaddr = h[i].addr - m->start + m->offset -
					(h[i].kind == HIT_CALLER);
			}
		}
	}
	return best;
}

/* The source files' lines the instructions name, with their text where
 * it can be read here. */
static void sources(struct call *c, const struct kiln_disasm *x)
{
	size_t f, i;

	call_add(c, ",\"sources\":[");
	for (f = 0; f < x->nfiles && !c->err; f++) {
		struct web_source src;
		const char *why = NULL;
		char found[PATH_MAX];
		int err = kiln_web_source_find(c->m, x->files[f], found, &why);
		bool first = true;

		memset(&src, 0, sizeof(src));
		if (!err && !why)
			err = kiln_web_source_read(found, &src, &why);
		if (err) {
			c->err = err;
			break;
		}
		call_add(c, "%s{\"file\":", f ? "," : "");
		call_add_str(c, x->files[f]);
		call_add(c, ",\"why\":");
		if (why)
			call_add_str(c, why);
		else
			call_add(c, "null");
		call_add(c, ",\"lines\":{");
		for (i = 0; i < x->n && src.text; i++) {
			size_t len;
			const char *t;

			/* Each line once: where it first appears. */
			if (x->insns[i].file != f + 1 || x->insns[i].line <= 0)
				continue;
			if (i && x->insns[i - 1].file == f + 1 &&
			    x->insns[i - 1].line == x->insns[i].line)
				continue;
			t = kiln_web_source_line(&src, (size_t)x->insns[i].line, &len);
			if (!t)
				continue;
			call_add(c, "%s\"%d\":", first ? "" : ",", x->insns[i].line);
			first = false;
			if (kiln_buf_add_json(c->out, t, len))
				c->err = -ENOMEM;
		}
		call_add(c, "}}");
		kiln_web_source_release(&src);
	}
	call_add(c, "]");
}

/* The answer: the instructions with their self and total. */
static void answer(struct call *c, const struct web_view *v, const char *fn,
		   const char *path, const struct kiln_disasm *x,
		   const struct hit *h, size_t n, uint32_t map)
{
	const struct kiln_mapping *m = &v->prof->mappings[map];
	int64_t *self = calloc(x->n + 1, sizeof(*self));
	int64_t *tot = calloc(x->n + 1, sizeof(*tot));
	int64_t fself = 0, ftot = 0, eself = 0, etot = 0;
	size_t i;

	if (!self || !tot) {
		c->err = -ENOMEM;
		goto out;
	}
	for (i = 0; i < n; i++) {
		uint64_t off = h[i].addr - m->start + m->offset;
		bool leaf = h[i].kind == HIT_SELF;
		const struct kiln_insn *in = h[i].mapping != map ? NULL :
			kiln_disasm_find(x, off - (h[i].kind == HIT_CALLER));

		if (leaf)
			fself += h[i].value;
		else
			ftot += h[i].value;
		if (!in) {
			*(leaf ? &eself : &etot) += h[i].value;
			continue;
		}
		(leaf ? self : tot)[in - x->insns] += h[i].value;
	}
	call_add(c, "{\"fn\":");
	call_add_str(c, fn);
	call_add(c, ",\"symbol\":");
	call_add_str(c, x->symbol);
	call_add(c, ",\"file\":");
	call_add_str(c, path);
	call_add(c, ",\"build_id\":");
	call_add_str(c, x->build_id ? x->build_id : "");
	call_add(c, ",\"arch\":\"%s\",\"start\":\"0x%" PRIx64 "\",\"end\":\"0x%" PRIx64
		 "\",\"truncated\":%s,\"type\":", x->arch, x->start, x->end,
		 x->truncated ? "true" : "false");
	call_add_str(c, call_type_name(v->prof, v->type));
	call_add(c, ",\"unit\":");
	call_add_str(c, call_unit_name(v->prof, v->type));
	call_add(c, ",\"total\":%" PRId64 ",\"self\":%" PRId64 ",\"cum\":%" PRId64
		 ",\"elsewhere_self\":%" PRId64 ",\"elsewhere_cum\":%" PRId64 ",\"insns\":[",
		 kiln_prof_total(v->prof, (size_t)v->type), fself, ftot, eself, etot);
	for (i = 0; i < x->n; i++) {
		call_add(c, "%s[\"0x%" PRIx64 "\",", i ? "," : "", x->insns[i].addr);
		call_add_str(c, x->insns[i].text);
		call_add(c, ",%" PRId64 ",%" PRId64 ",%d,%d]", self[i], tot[i],
			 (int)x->insns[i].file - 1, x->insns[i].line);
	}
	call_add(c, "]");
	sources(c, x);
	call_add(c, "}\n");
out:
	free(self);
	free(tot);
}

int web_api_disasm(struct call *c)
{
	const char *fn = call_arg(c, "fn");
	struct kiln_disasm x = { 0 };
	struct web_view *v;
	struct hit *h = NULL;
	size_t n = 0;
	uint64_t off = 0;
	uint32_t name, map;
	bool seen;
	const char *path;
	int err, status = 200;

	if (!fn || !*fn)
		return call_fail(c, 400, "fn: which function to disassemble");
	if (call_selection(c, &v))
		return c->status;
	if (!disasm_at)
		return call_fail(c, 404, "no disassembler here (capstone is not loaded)");
	name = kiln_prof_find_str(v->prof, fn, strlen(fn));
	err = name ? collect(v, name, &h, &n, &seen) : 0;
	if (err) {
		c->err = err;
		return 500;
	}
	map = name ? hottest_mapping(v->prof, h, n, &off) : 0;
	if (!map || !v->prof->mappings[map].file) {
		free(h);
		return call_fail(c, 404, name && seen ?
				 "the samples of '%s' carry no addresses in a file "
				 "(collapsed stacks and some converted formats have none; "
				 "kiln record keeps them)" :
				 "no function '%s' with samples in this selection", fn);
	}
	{
		const struct kiln_mapping *m = &v->prof->mappings[map];

		path = kiln_prof_str(v->prof, m->file);
		err = disasm_at(path, kiln_prof_str(v->prof, m->build_id), off,
				&x, &c->d);
	}
	if (err == -ENOMEM) {
		c->err = err;
		status = 500;
	} else if (err) {
		status = call_fail(c, err == -ESTALE ? 409 : err == -ENOTSUP ? 501 : 404,
				   "%s", c->d.msg);
	} else {
		answer(c, v, fn, path, &x, h, n, map);
		disasm_release(&x);
	}
	free(h);
	return status;
}
