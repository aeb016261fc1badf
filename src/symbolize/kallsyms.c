/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Kernel symbols from /proc/kallsyms (symbolize stage).
 */
#include "symbolize/kallsyms.h"

#include <errno.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/file.h"
#include "util/htab.h"

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset of the name in the text */
	uint32_t len;		/* bytes of it, to the end of its line */
};

/*
 * The text symbols point into the text they were parsed from; a name is
 * copied out (NUL-terminated, its module's tab made a space) the first
 * time a lookup lands on it, and kept in a small index by symbol.
 * Copying all 100,000 names up front cost a third of the parse and a few
 * megabytes of fresh memory, of which a profile needs a few hundred
 * names (as did an array of 100,000 name pointers, zeroed).
 */
struct kname {
	size_t sym;
	char *name;
};

struct kiln_kallsyms {
	struct ksym *syms;
	size_t n;
	const char *text;
	struct kiln_map own;	/* the text, when kiln_kallsyms_load() read it */
	struct kname *names;	/* copied names, nnames of them */
	size_t nnames, names_alloc;
	struct kiln_htab name_index;	/* symbol -> names[id - 1] */
};

static int cmp_ksym(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* A hexadecimal digit's value plus one; 0 for other bytes. */
static const unsigned char hexval[256] = {
	['0'] = 1, ['1'] = 2, ['2'] = 3, ['3'] = 4, ['4'] = 5, ['5'] = 6,
	['6'] = 7, ['7'] = 8, ['8'] = 9, ['9'] = 10,
	['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
	['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/*
 * The value of the 16 hexadecimal digits at p (either case), as the
 * digit-by-digit loop below gives it, 16 bytes at a time; false when one
 * of them is not a digit.  A 64-bit kernel writes every address so, and
 * the loop was most of the parse.
 */
#if defined(__SSE2__)
static bool hex16(const char *p, uint64_t *out)
{
	__m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
	__m128i lower = _mm_or_si128(x, _mm_set1_epi8(0x20));
	/* Signed compares: bytes of 0x80 and up are neither. */
	__m128i digit = _mm_and_si128(_mm_cmpgt_epi8(x, _mm_set1_epi8('0' - 1)),
				      _mm_cmplt_epi8(x, _mm_set1_epi8('9' + 1)));
	__m128i letter = _mm_and_si128(
		_mm_cmpgt_epi8(lower, _mm_set1_epi8('a' - 1)),
		_mm_cmplt_epi8(lower, _mm_set1_epi8('f' + 1)));
	__m128i v, pairs;
	uint64_t packed;

	if (_mm_movemask_epi8(_mm_or_si128(digit, letter)) != 0xffff)
		return false;
	/* Each byte its value; then each pair of bytes (first digit, low
	 * address) one byte, digit << 4 | next; the 8 bytes, first the most
	 * significant, big-endian. */
	v = _mm_or_si128(_mm_and_si128(digit, _mm_sub_epi8(x, _mm_set1_epi8('0'))),
			 _mm_and_si128(letter, _mm_sub_epi8(lower,
							    _mm_set1_epi8('a' - 10))));
	pairs = _mm_and_si128(_mm_or_si128(_mm_slli_epi16(v, 4),
					   _mm_srli_epi16(v, 8)),
			      _mm_set1_epi16(0xff));
	packed = (uint64_t)_mm_cvtsi128_si64(_mm_packus_epi16(pairs, pairs));
	*out = __builtin_bswap64(packed);
	return true;
}
#else
static bool hex16(const char *p, uint64_t *out)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 16; i++) {
		unsigned d = hexval[(unsigned char)p[i]];

		if (!d)
			return false;
		v = v << 4 | (d - 1);
	}
	*out = v;
	return true;
}
#endif

struct kiln_kallsyms *kiln_kallsyms_parse(const char *text, size_t len)
{
	struct kiln_kallsyms *k = calloc(1, sizeof(*k));
	const char *p = text, *end = text + len;
	size_t alloc;
	bool nonzero = false, sorted = true;

	if (!k)
		return NULL;
	if (len >= UINT32_MAX) {
		free(k);
		errno = EFBIG;
		return NULL;
	}
	k->text = text;
	kiln_htab_init(&k->name_index);
	/* Lines of a 64-bit kernel are 21 bytes or more ("ADDR t x\n", 16
	 * digits): room for each, so that the array is not copied as it
	 * grows (pages never written cost nothing). */
	alloc = len / 21 + 1;
	k->syms = malloc(alloc * sizeof(*k->syms));
	if (!k->syms)
		goto out_free;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *q;
		uint64_t addr = 0;
		char type;

		if (e - p >= 20 && p[16] == ' ' && p[18] == ' ' &&
		    hex16(p, &addr)) {
			q = p + 16;
		} else {
			for (q = p; q < e; q++) {
				unsigned v = hexval[(unsigned char)*q];

				if (!v)
					break;
				addr = addr << 4 | (v - 1);
			}
			if (q + 3 >= e || *q != ' ' || q[2] != ' ')
				goto next;
		}
		type = q[1];
		q += 3;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			goto next;
		if (k->n == alloc) {
			size_t na = alloc * 2;
			struct ksym *s = realloc(k->syms, na * sizeof(*s));

			if (!s)
				goto out_free;
			k->syms = s;
			alloc = na;
		}
		sorted &= !k->n || k->syms[k->n - 1].addr <= addr;
		k->syms[k->n].addr = addr;
		k->syms[k->n].name = (uint32_t)(q - text);
		k->syms[k->n].len = (uint32_t)(e - q);
		k->n++;
		nonzero |= addr != 0;
next:
		p = e + 1;
	}
	if (!nonzero) {
		errno = EACCES;
		goto out_free_keep_errno;
	}
	/* The kernel lists its symbols by address (modules after the core
	 * kernel, higher up): sorting 100,000 sorted entries cost half the
	 * parse. */
	if (!sorted)
		qsort(k->syms, k->n, sizeof(*k->syms), cmp_ksym);
	return k;
out_free:
	errno = ENOMEM;
out_free_keep_errno:
	free(k->syms);
	free(k);
	return NULL;
}

struct kiln_kallsyms *kiln_kallsyms_load(void)
{
	struct kiln_map m;
	struct kiln_kallsyms *k;
	int err = kiln_map_open(&m, "/proc/kallsyms");

	if (err) {
		errno = -err;
		return NULL;
	}
	k = kiln_kallsyms_parse(m.data, m.len);
	if (!k) {
		err = errno;
		kiln_map_release(&m);
		errno = err;
		return NULL;
	}
	k->own = m;
	return k;
}

void kiln_kallsyms_free(struct kiln_kallsyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->nnames; i++)
		free(k->names[i].name);
	free(k->names);
	kiln_htab_release(&k->name_index);
	free(k->syms);
	if (k->own.data)
		kiln_map_release(&k->own);
	free(k);
}

struct name_key {
	const struct kiln_kallsyms *k;
	size_t sym;
};

static bool name_eq(const void *ctx, uint32_t id)
{
	const struct name_key *key = ctx;

	return key->k->names[id - 1].sym == key->sym;
}

/* The name of symbol i: "name" or "name [module]".  NULL: out of memory. */
static const char *name_of(struct kiln_kallsyms *k, size_t i)
{
	const struct ksym *s = &k->syms[i];
	const char *q = k->text + s->name, *tab;
	struct name_key key = { k, i };
	uint64_t i64 = i;
	uint32_t hash = (uint32_t)kiln_hash(&i64, sizeof(i64)), id;
	char *n;

	id = kiln_htab_find(&k->name_index, hash, name_eq, &key);
	if (id)
		return k->names[id - 1].name;
	if (k->nnames == k->names_alloc) {
		size_t na = k->names_alloc ? 2 * k->names_alloc : 64;
		struct kname *nn = realloc(k->names, na * sizeof(*nn));

		if (!nn)
			return NULL;
		k->names = nn;
		k->names_alloc = na;
	}
	n = malloc((size_t)s->len + 1);
	if (!n)
		return NULL;
	memcpy(n, q, s->len);
	n[s->len] = '\0';
	/* "name\t[module]" -> "name [module]" */
	tab = memchr(n, '\t', s->len);
	if (tab)
		n[tab - n] = ' ';
	if (kiln_htab_insert(&k->name_index, hash, (uint32_t)k->nnames + 1)) {
		free(n);
		return NULL;
	}
	k->names[k->nnames].sym = i;
	k->names[k->nnames].name = n;
	k->nnames++;
	return n;
}

const char *kiln_kallsyms_lookup(struct kiln_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!k || !k->n || addr < k->syms[0].addr)
		return NULL;
	hi = k->n;
	/* The last symbol starting at or before addr. */
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	return name_of(k, lo);
}
