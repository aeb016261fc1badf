/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Collapsed ("folded") stacks (format stage): one line per stack, frames
 * root first and separated by ';', then a space and a count:
 *
 *     main;run;stage_a;burn_a 612
 *
 * as made by FlameGraph's stackcollapse-*.pl and inferno, and read by
 * flamegraph.pl, inferno-flamegraph and speedscope.  FlameGraph's frame
 * annotations are understood: "_[k]" marks a kernel frame (kiln gives it
 * the mapping "[kernel.kallsyms]"), "_[j]" JIT code (mapping "[jit]"),
 * "_[i]" an inlined and "_[w]" a waker frame; the suffix is removed from
 * the name.  The writer adds "_[k]" to kernel frames, as
 * stackcollapse-perf.pl --kernel does, so that the kind survives.
 *
 * Read leniently, as speedscope reads it: '#' and '//' comment lines,
 * CRLF line ends and a byte order mark are fine; a malformed line among
 * good ones is skipped and counted in one warning, while a file with as
 * many bad lines as good ones is refused with the first bad line.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "format/linecache.h"
#include "profile/profile.h"
#include "util/buf.h"
#include "util/diag.h"
#include "util/htab.h"

/* ---- the reader ---- */

struct creader {
	struct kiln_prof *p;
	struct kiln_linecache frames;	/* frame text -> location id */
	uint32_t kernel_map, jit_map;
	uint32_t *stack;
	size_t stack_alloc;
	uint64_t magnitude;	/* sum of |count| so far: kept in int64_t's range */
	/* Counts with decimals (flamegraph.pl takes "a;b 1.5"): every value
	 * is kept as count * 10^decimals, decimals the most seen so far. */
	unsigned decimals;
};

/* At most this many decimals are kept; further digits are rounded. */
#define MAX_DECIMALS 6

static uint32_t special_mapping(struct kiln_prof *p, uint32_t *cache,
				const char *file)
{
	struct kiln_mapping m;

	if (*cache)
		return *cache;
	memset(&m, 0, sizeof(m));
	m.file = kiln_prof_interns(p, file);
	m.has_functions = true;
	*cache = kiln_prof_mapping(p, &m);
	return *cache;
}

/* The location of one frame's text (annotation included). */
static uint32_t frame_loc(struct creader *r, const char *s, size_t n)
{
	struct kiln_prof *p = r->p;
	uint64_t h = kiln_linecache_hash(s, n);
	uint32_t loc = kiln_linecache_find(&r->frames, s, n, h);
	uint32_t mapping = 0, name, fn;
	size_t nl = n;
	struct kiln_line ln;

	if (loc)
		return loc;
	if (n >= 4 && s[n - 4] == '_' && s[n - 3] == '[' && s[n - 1] == ']') {
		switch (s[n - 2]) {
		case 'k':
			mapping = special_mapping(p, &r->kernel_map,
						  "[kernel.kallsyms]");
			nl = n - 4;
			break;
		case 'j':
			mapping = special_mapping(p, &r->jit_map, "[jit]");
			nl = n - 4;
			break;
		case 'i':
		case 'w':
			nl = n - 4;
			break;
		default:
			break;
		}
	}
	name = nl ? kiln_prof_intern(p, s, nl) : kiln_prof_interns(p, "[unknown]");
	fn = kiln_prof_function(p, name, name, 0, 0);
	if (!fn)
		return 0;
	ln.function = fn;
	ln.line = 0;
	loc = kiln_prof_location(p, mapping, 0, &ln, 1);
	if (loc && kiln_linecache_add(&r->frames, s, n, h, loc))
		p->err = -ENOMEM;
	return loc;
}

/*
 * Parses "[-]DIGITS[.DIGITS]" into *v as the number times 10^*dec, *dec
 * the decimals it has (at most MAX_DECIMALS: further ones round the
 * last); false if it is not a number or overflows.
 */
static bool parse_count(const char *s, const char *e, int64_t *v,
			unsigned *dec)
{
	bool neg = false, point = false, any = false;
	uint64_t x = 0;
	unsigned k = 0;

	if (s < e && *s == '-') {
		neg = true;
		s++;
	}
	for (; s < e; s++) {
		if (*s == '.' && !point) {
			point = true;
			continue;
		}
		if (*s < '0' || *s > '9')
			return false;
		any = true;
		if (point && k == MAX_DECIMALS) {
			/* Rounded at the last decimal kept; the rest must
			 * still be digits. */
			bool up = *s >= '5';

			for (; s < e; s++)
				if (*s < '0' || *s > '9')
					return false;
			if (up && x++ == (uint64_t)INT64_MAX)
				return false;
			break;
		}
		if (x > ((uint64_t)INT64_MAX - 9) / 10)
			return false;
		x = x * 10 + (uint64_t)(*s - '0');
		if (point)
			k++;
	}
	if (!any)
		return false;
	*v = neg ? -(int64_t)x : (int64_t)x;
	*dec = k;
	return true;
}

/* 10^n for a count's decimals (n <= MAX_DECIMALS). */
static int64_t pow10i(unsigned n)
{
	int64_t f = 1;

	while (n--)
		f *= 10;
	return f;
}

/* Multiplies every value read so far by 10^by (more decimals seen);
 * false if a value would overflow. */
static bool rescale(struct creader *r, unsigned by)
{
	struct kiln_prof *p = r->p;
	int64_t f = pow10i(by);
	size_t i;

	if (__builtin_mul_overflow(r->magnitude, (uint64_t)f, &r->magnitude) ||
	    r->magnitude > INT64_MAX)
		return false;
	for (i = 0; i < p->nsamples * p->ntypes; i++)
		p->values[i] *= f;
	return true;
}

/* One "a;b;c COUNT" line [s, e) (trimmed, not blank).  -EINVAL with d
 * filled for a malformed line, -EOVERFLOW (d filled) when the counts add
 * up past 64 bits, -ENOMEM. */
static int read_line(struct creader *r, const char *s, const char *e,
		     size_t lineno, struct kiln_diag *d)
{
	const char *sp = e, *fe, *f;
	int64_t count;
	unsigned dec;
	size_t depth = 0, n = 0;

	while (sp > s && sp[-1] != ' ' && sp[-1] != '\t')
		sp--;
	if (sp == s)
		return kiln_diag(d, "line %zu: no count at the end of the line "
				 "(expected 'frame;frame;... COUNT')", lineno);
	if (!parse_count(sp, e, &count, &dec)) {
		bool digits = true;
		int points = 0;
		const char *q;

		for (q = sp; q < e; q++)
			if (*q == '.' ? ++points > 1 :
			    (*q < '0' || *q > '9') && !(q == sp && *q == '-'))
				digits = false;
		/* All digits, yet no number: too many of them. */
		if (digits && e - sp > points + (*sp == '-'))
			return kiln_diag(d, "line %zu: the count '%.*s' is too "
					 "large", lineno, (int)(e - sp), sp);
		return kiln_diag(d, "line %zu: no count at the end of the line: "
				 "'%.*s' is not a number (expected 'frame;frame;"
				 "... COUNT')", lineno,
				 (int)(e - sp > 40 ? 40 : e - sp), sp);
	}
	fe = sp;
	while (fe > s && (fe[-1] == ' ' || fe[-1] == '\t'))
		fe--;
	if (fe == s)
		return kiln_diag(d, "line %zu: no frames before the count",
				 lineno);
	/* Both this count and what was read so far at the most decimals. */
	if (dec > r->decimals) {
		if (!rescale(r, dec - r->decimals)) {
			kiln_diag(d, "line %zu: the count '%.*s' has more decimals "
				  "than 64-bit totals can keep", lineno,
				  (int)(e - sp), sp);
			return -EOVERFLOW;
		}
		r->decimals = dec;
	}
	for (; dec < r->decimals; dec++)
		if (__builtin_mul_overflow(count, 10, &count)) {
			kiln_diag(d, "line %zu: the count '%.*s' is too large",
				  lineno, (int)(e - sp), sp);
			return -EOVERFLOW;
		}
	/* The model adds counts up in int64_t (merged stacks, totals; the
	 * pprof reader refuses the same): no sum may overflow.  Not a
	 * malformed line to skip: the file as a whole cannot be taken. */
	if (__builtin_add_overflow(r->magnitude,
				   count < 0 ? -(uint64_t)count : (uint64_t)count,
				   &r->magnitude) || r->magnitude > INT64_MAX) {
		kiln_diag(d, "line %zu: the count %lld makes the total "
			  "overflow 64 bits", lineno, (long long)count);
		return -EOVERFLOW;
	}
	for (f = s; f <= fe; f++)
		if (f == fe || *f == ';')
			depth++;
	if (depth > r->stack_alloc) {
		uint32_t *st = realloc(r->stack, depth * 2 * sizeof(*st));

		if (!st)
			return -ENOMEM;
		r->stack = st;
		r->stack_alloc = depth * 2;
	}
	/* Root first in the text, leaf first in the model. */
	for (f = s; f <= fe;) {
		const char *x = memchr(f, ';', (size_t)(fe - f));
		const char *xe = x ? x : fe;
		uint32_t loc = frame_loc(r, f, (size_t)(xe - f));

		if (!loc)
			return r->p->err ? r->p->err : -ENOMEM;
		r->stack[depth - 1 - n++] = loc;
		f = xe + 1;
	}
	kiln_prof_add_sample(r->p, r->stack, (uint32_t)depth, &count, 0);
	return r->p->err;
}

/*
 * Counts had decimals: the values are whole numbers (as pprof's are)
 * 10^decimals times the counts, which keeps every share exact.  Said in
 * the profile's comments and in the warning (after any other one).
 */
static int note_decimals(struct kiln_prof *p, unsigned decimals,
			 struct kiln_diag *d)
{
	char note[128];

	snprintf(note, sizeof(note), "counts with decimals, scaled by %" PRId64
		 " to whole numbers (shares unchanged)", pow10i(decimals));
	if (d) {
		size_t n = strlen(d->warn);

		snprintf(d->warn + n, sizeof(d->warn) - n, "%s%s",
			 n ? "; " : "", note);
	}
	return kiln_prof_add_comment(p, note);
}

int kiln_collapsed_read(struct kiln_prof *p, const char *data, size_t len,
			struct kiln_diag *d)
{
	static const char *const types[] = { "samples/count" };
	struct kiln_text_skips skips;
	struct kiln_diag bad = { "" };
	struct creader r;
	const char *s = data, *end = data + len;
	size_t lineno = 0, nlines = 0;
	int err;

	err = kiln_text_check(data, len, d);
	if (err)
		return err;
	/* kiln_read_profile() has taken the byte order mark off already;
	 * callers of the reader itself may not have. */
	if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
		s += 3;
	memset(&r, 0, sizeof(r));
	memset(&skips, 0, sizeof(skips));
	r.p = p;
	err = kiln_prof_set_types_str(p, types, 1);
	if (err)
		return err;
	p->period_type = p->types[0];
	p->period = 1;
	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		const char *e = nl ? nl : end, *b = s;

		lineno++;
		while (e > s && (e[-1] == '\r' || e[-1] == ' ' || e[-1] == '\t'))
			e--;
		while (b < e && (*b == ' ' || *b == '\t'))
			b++;
		/* Comments: '#' (FlameGraph's tools), '//' (some exporters;
		 * speedscope's own samples have them). */
		if (b < e && *b != '#' && !(e - b >= 2 && b[0] == '/' && b[1] == '/')) {
			err = read_line(&r, b, e, lineno, &bad);
			if (err == -EINVAL) {
				/* Malformed: skipped and counted; a file that
				 * is mostly so is refused at the end. */
				kiln_text_skip(&skips, lineno, &bad);
				err = 0;
			} else if (err == -EOVERFLOW) {
				if (d)
					memcpy(d->msg, bad.msg, sizeof(d->msg));
				err = -EINVAL;
				goto out;
			} else if (err) {
				goto out;
			} else {
				nlines++;
			}
		}
		s = nl ? nl + 1 : end;
	}
	if (!nlines && !skips.n)
		err = kiln_diag(d, "line %zu: no stacks (expected lines like "
				"'main;f;g 12')", lineno ? lineno : 1);
	else
		err = kiln_text_skips_end(&skips, nlines, d);
	if (!err && r.decimals)
		err = note_decimals(p, r.decimals, d);
out:
	free(r.stack);
	kiln_linecache_release(&r.frames);
	return err ? err : p->err;
}

/* ---- the writer ---- */

/* Distinct stack strings with their summed values. */
struct stacks {
	struct kiln_buf keys;		/* NUL-terminated keys */
	struct {
		size_t off;
		uint32_t len;
		int64_t value;
	} *v;
	size_t n, alloc;
	struct kiln_htab index;
};

struct skey {
	const struct stacks *st;
	const char *s;
	size_t len;
};

static bool skey_eq(const void *ctx, uint32_t id)
{
	const struct skey *k = ctx;
	const struct stacks *st = k->st;

	return st->v[id - 1].len == k->len &&
	       !memcmp(st->keys.data + st->v[id - 1].off, k->s, k->len);
}

/* Adds value to the stack key s (not NUL-terminated). */
static int stacks_add(struct stacks *st, const char *s, size_t len,
		      int64_t value)
{
	struct skey k = { st, s, len };
	uint32_t hash = (uint32_t)kiln_hash(s, len), id;
	int err;

	id = kiln_htab_find(&st->index, hash, skey_eq, &k);
	if (id) {
		st->v[id - 1].value += value;
		return 0;
	}
	if (KILN_GROW(st->v, st->alloc, st->n + 1, 256))
		return -ENOMEM;
	st->v[st->n].off = st->keys.len;
	st->v[st->n].len = (uint32_t)len;
	st->v[st->n].value = value;
	err = kiln_buf_add(&st->keys, s, len);
	if (!err)
		err = kiln_buf_addc(&st->keys, '\0');
	if (!err)
		err = kiln_htab_insert(&st->index, hash, (uint32_t)st->n + 1);
	if (err)
		return err;
	st->n++;
	return 0;
}

static int cmp_stack(const void *a, const void *b, void *ctx)
{
	const struct stacks *st = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return strcmp(st->keys.data + st->v[x].off, st->keys.data + st->v[y].off);
}

/* Appends a frame name, with the separators of the format replaced. */
static int add_name(struct kiln_buf *b, const char *s)
{
	/* Most names have none: found at the speed of strcspn. */
	size_t first = strcspn(s, ";\n\r"), i = b->len + first;
	int err = kiln_buf_add(b, s, first + strlen(s + first));

	if (err)
		return err;
	for (; i < b->len; i++)
		if (b->data[i] == ';')
			b->data[i] = ':';
		else if (b->data[i] == '\n' || b->data[i] == '\r')
			b->data[i] = ' ';
	return 0;
}

int kiln_collapsed_write(struct kiln_prof *p, int type, struct kiln_buf *out)
{
	struct stacks st;
	struct kiln_buf line = KILN_BUF_INIT;
	struct kiln_frame *frames = NULL;
	uint32_t *order = NULL;
	size_t cap = 0, i;
	int err = 0;

	if (type < 0 || (size_t)type >= p->ntypes)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	kiln_buf_init(&st.keys);
	kiln_htab_init(&st.index);
	for (i = 0; i < p->nsamples && !err; i++) {
		int64_t v = kiln_prof_value(p, i, (size_t)type);
		long nf, j;

		if (!v)
			continue;
		nf = kiln_prof_frames(p, &p->samples[i], &frames, &cap);
		if (nf < 0) {
			err = (int)nf;
			break;
		}
		if (!nf)
			continue;
		kiln_buf_reset(&line);
		/* Frames come leaf first; the line is root first. */
		for (j = nf - 1; j >= 0 && !err; j--) {
			const char *name = kiln_prof_str(p, frames[j].name);

			err = add_name(&line, name);
			if (!err && kiln_prof_loc_kind(p, frames[j].location) ==
					    KILN_KIND_KERNEL) {
				size_t nl = strlen(name);

				if (nl < 4 || strcmp(name + nl - 4, "_[k]"))
					err = kiln_buf_adds(&line, "_[k]");
			}
			if (!err && j)
				err = kiln_buf_addc(&line, ';');
		}
		if (!err)
			err = stacks_add(&st, line.data, line.len, v);
	}
	if (!err && st.n) {
		order = malloc(st.n * sizeof(*order));
		if (!order)
			err = -ENOMEM;
	}
	if (!err && st.n) {
		for (i = 0; i < st.n; i++)
			order[i] = (uint32_t)i;
		qsort_r(order, st.n, sizeof(*order), cmp_stack, &st);
		for (i = 0; i < st.n && !err; i++) {
			if (!st.v[order[i]].value)
				continue;
			err = kiln_buf_adds(out, st.keys.data + st.v[order[i]].off);
			if (!err)
				err = kiln_buf_addf(out, " %" PRId64 "\n",
						    st.v[order[i]].value);
		}
	}
	free(order);
	free(frames);
	free(st.v);
	kiln_buf_release(&line);
	kiln_buf_release(&st.keys);
	kiln_htab_release(&st.index);
	return err ? err : p->err;
}
