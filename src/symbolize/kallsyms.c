/*
 * Kernel symbols from /proc/kallsyms (symbolize stage).
 */
#include "symbolize/kallsyms.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/file.h"

struct ksym {
	uint64_t addr;
	uint32_t name;		/* offset of the name in the text */
	uint32_t len;		/* bytes of it, to the end of its line */
};

/*
 * The text symbols point into the text they were parsed from; a name is
 * copied out (NUL-terminated, its module's tab made a space) the first
 * time a lookup lands on it.  Copying all 100,000 names up front cost a
 * third of the parse and a few megabytes of fresh memory, of which a
 * profile needs a few hundred names.
 */
struct kiln_kallsyms {
	struct ksym *syms;
	size_t n;
	const char *text;
	struct kiln_map own;	/* the text, when kiln_kallsyms_load() read it */
	char **names;		/* n of them, lazily */
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

struct kiln_kallsyms *kiln_kallsyms_parse(const char *text, size_t len)
{
	struct kiln_kallsyms *k = calloc(1, sizeof(*k));
	const char *p = text, *end = text + len;
	size_t alloc = 0;
	bool nonzero = false, sorted = true;

	if (!k)
		return NULL;
	if (len >= UINT32_MAX) {
		free(k);
		errno = EFBIG;
		return NULL;
	}
	k->text = text;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *e = nl ? nl : end, *q;
		unsigned long long addr = 0;
		char type;

		for (q = p; q < e; q++) {
			unsigned v = hexval[(unsigned char)*q];

			if (!v)
				break;
			addr = addr << 4 | (v - 1);
		}
		if (q + 3 >= e || *q != ' ' || q[2] != ' ')
			goto next;
		type = q[1];
		q += 3;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			goto next;
		if (k->n == alloc) {
			size_t na = alloc ? alloc * 2 : 65536;
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
	if (k->names)
		for (i = 0; i < k->n; i++)
			free(k->names[i]);
	free(k->names);
	free(k->syms);
	if (k->own.data)
		kiln_map_release(&k->own);
	free(k);
}

/* The name of symbol i: "name" or "name [module]".  NULL: out of memory. */
static const char *name_of(struct kiln_kallsyms *k, size_t i)
{
	const struct ksym *s = &k->syms[i];
	const char *q = k->text + s->name, *tab;
	char *n;

	if (!k->names) {
		k->names = calloc(k->n, sizeof(*k->names));
		if (!k->names)
			return NULL;
	}
	if (k->names[i])
		return k->names[i];
	n = malloc((size_t)s->len + 1);
	if (!n)
		return NULL;
	memcpy(n, q, s->len);
	n[s->len] = '\0';
	/* "name\t[module]" -> "name [module]" */
	tab = memchr(n, '\t', s->len);
	if (tab)
		n[tab - n] = ' ';
	k->names[i] = n;
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
